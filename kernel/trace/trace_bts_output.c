// SPDX-License-Identifier: GPL-2.0
/*
 * bts: how the flight recorder's records read, in trace and on the console
 * at a crash: "CPU TID/PID FROM -> TO", kernel addresses symbolized, user
 * addresses as "[user] 0x...", and a "-- " line for each pseudo-record
 * (task switches, losses, stretches on the side not recorded, markers
 * decoded by the user_events bridge).  The recording is trace_bts.c's.
 */
#include <linux/kallsyms.h>
#include <linux/seq_buf.h>
#include <linux/unaligned.h>
#include <linux/user_events.h>

#include "trace_bts.h"
#include "trace_output.h"

/* An address: a kernel symbol, or a user address with no symbol here. */
static void trace_bts_addr(struct seq_buf *sb, u64 addr, bool raw)
{
	if (!addr)
		seq_buf_puts(sb, "?");
	else if (raw)
		seq_buf_printf(sb, "0x%llx", addr);
	else if ((s64)addr < 0)
		seq_buf_printf(sb, "%pS", (void *)(unsigned long)addr);
	else
		seq_buf_printf(sb, "[user] 0x%llx", addr);
}

/*
 * Keep @r's part of the next marker's payload, if it is one; after a record
 * that is no detail, start again.  Call before printing @r.
 */
void trace_bts_gather(struct trace_bts_payload *pl, const struct bts_record *r)
{
	u32 i = BTS_DETAIL_VAL(r->from);

	if (!trace_bts_is_marker_detail(r->from) ||
	    BTS_DETAIL_LAYOUT(r->from) != BTS_DETAIL_MARKER_PAYLOAD ||
	    i >= BTS_MARKER_PAYLOAD_MAX / 16)
		return;
	put_unaligned_le64(r->to, &pl->bytes[16 * i]);
	put_unaligned_le64(r->flags, &pl->bytes[16 * i + 8]);
	pl->chunks |= BIT(i);
}

/* Call after printing @r: a payload belongs to the marker after it only. */
void trace_bts_gathered(struct trace_bts_payload *pl,
			const struct bts_record *r)
{
	if (!trace_bts_is_detail(r->from))
		pl->chunks = 0;
}

/*
 * "-- event u:NAME FIELD=VALUE... at ADDR": marker @r, its payload from @pl
 * (NULL: none seen), decoded by the user_events bridge.
 */
static void trace_bts_describe_marker(struct seq_buf *sb,
				      const struct bts_record *r,
				      const struct trace_bts_payload *pl,
				      bool raw)
{
	u32 flags = BTS_MARKER_FLAGS(r->from), len = BTS_MARKER_LEN(r->from);
	u32 id = BTS_MARKER_ID(r->flags), gen = BTS_MARKER_GEN(r->flags);
	/* What the details before it gave, from the payload's start. */
	u32 have = pl ? 16 * ffz(pl->chunks) : 0;

	seq_buf_puts(sb, "-- event ");
	if (!user_events_marker_print(sb, id, gen, pl ? pl->bytes : NULL,
				      min(len, have)))
		seq_buf_printf(sb, "id %u generation %u (no longer known)",
			       id, gen);
	if (flags & BTS_MARKER_NOT_CAPTURED)
		seq_buf_puts(sb, " (payload not captured)");
	else if (have < len)
		seq_buf_puts(sb, " (payload not kept)");
	else if (flags & BTS_MARKER_TRUNCATED)
		seq_buf_printf(sb, " (first %u bytes)", len);
	seq_buf_puts(sb, " at ");
	trace_bts_addr(sb, r->to, raw);
}

/*
 * "FROM -> TO", or for a pseudo-record what it stands for: the line of a
 * record in trace and in a crash's dump, without CPU and task.  A count of
 * lost records in a copy of a ring (@streamed false) is the tracer's: the
 * records before the last N; in a stream, the layer's: records the stream
 * had no room for.  A marker's payload is in @pl, NULL if none was seen.
 */
void trace_bts_describe(struct seq_buf *sb, const struct bts_record *r,
			const struct trace_bts_payload *pl, bool raw,
			bool streamed)
{
	u32 type = BTS_PSEUDO_TYPE(r->from), arg = BTS_PSEUDO_ARG(r->from);

	if (!BTS_RECORD_IS_PSEUDO(r->from)) {
		trace_bts_addr(sb, r->from, raw);
		seq_buf_puts(sb, " -> ");
		trace_bts_addr(sb, r->to, raw);
		return;
	}
	switch (type) {
	case BTS_PSEUDO_SWITCH:
		seq_buf_printf(sb, "-- switch to %lld/%lld", (long long)r->to,
			       (long long)r->flags);
		break;
	case BTS_PSEUDO_LOST:
		if (arg == BTS_LOST_OVERRUN)
			seq_buf_puts(sb, "-- records lost: the hardware's buffer overran");
		else if (arg == BTS_LOST_UNTRACED)
			seq_buf_puts(sb, "-- records lost: the CPU could not trace");
		else if (streamed)
			seq_buf_printf(sb, "-- %llu records lost: the recorder fell behind",
				       r->to);
		else
			seq_buf_printf(sb, "-- %llu older records not kept",
				       r->to);
		break;
	case BTS_PSEUDO_USER:
	case BTS_PSEUDO_KERNEL:
		/* A stretch on the side not recorded: where it began, ended. */
		seq_buf_printf(sb, "-- %s from ",
			       type == BTS_PSEUDO_USER ? "user mode" : "kernel");
		trace_bts_addr(sb, r->flags, raw);
		seq_buf_puts(sb, " back at ");
		trace_bts_addr(sb, r->to, raw);
		break;
	case BTS_PSEUDO_MARKER:
		trace_bts_describe_marker(sb, r, pl, raw);
		break;
	default:
		seq_buf_printf(sb, "-- pseudo-record type %u arg %u: 0x%llx 0x%llx",
			       type, arg, r->to, r->flags);
		break;
	}
}

/* The line of record @r of CPU @cpu, run by @task; @pl as for describe. */
static void trace_bts_print_record(struct trace_seq *s, unsigned int cpu,
				   const struct trace_bts_task *task,
				   const struct bts_record *r,
				   const struct trace_bts_payload *pl,
				   bool streamed)
{
	bool raw = trace_bts_flags.val & TRACE_BTS_OPT_RAW;

	/* Details belong to the record after them; bts-raw shows them. */
	if (trace_bts_is_detail(r->from) && !raw)
		return;
	trace_seq_printf(s, "%3u ", cpu);
	if (task->tid >= 0)
		trace_seq_printf(s, "%7d/%-7d ", task->tid, task->tgid);
	else
		trace_seq_printf(s, "%15s ", "?");
	/* An overflow shows in trace_handle_return(), as for trace_seq's. */
	trace_bts_describe(&s->seq, r, pl, raw, streamed);
	trace_seq_putc(s, '\n');
}

static enum print_line_t trace_bts_print(struct trace_iterator *iter,
					 int flags, struct trace_event *event)
{
	struct bts_record r;
	struct bts_entry *e;

	trace_assign_type(e, iter->ent);
	r = (struct bts_record) { e->from, e->to, e->flags };
	trace_bts_print_record(&iter->seq, e->cpu,
			       &(struct trace_bts_task) { e->tid, e->tgid }, &r,
			       NULL, false);
	return trace_handle_return(&iter->seq);
}

/* A continuous recorder's chunk: a line per record, as for TRACE_BTS. */
static enum print_line_t trace_bts_print_chunk(struct trace_iterator *iter,
					       int flags,
					       struct trace_event *event)
{
	struct trace_bts_payload pl = { };
	struct trace_bts_task task;
	struct bts_chunk_entry *e;
	struct bts_record r;
	u32 i, nr;

	trace_assign_type(e, iter->ent);
	task = (struct trace_bts_task) { e->tid, e->tgid };
	/* No more than the entry holds, whatever @nr says. */
	nr = min_t(u32, e->nr, (iter->ent_size - sizeof(*e)) / sizeof(r));
	for (i = 0; i < nr; i++) {
		memcpy(&r, &e->records[3 * i], sizeof(r));
		trace_bts_follow(&task, &r);
		trace_bts_gather(&pl, &r);
		trace_bts_print_record(&iter->seq, e->cpu, &task, &r, &pl,
				       true);
		trace_bts_gathered(&pl, &r);
	}
	return trace_handle_return(&iter->seq);
}

enum print_line_t trace_bts_print_line(struct trace_iterator *iter)
{
	switch (iter->ent->type) {
	case TRACE_BTS:
		return trace_bts_print(iter, 0, NULL);
	case TRACE_BTS_CHUNK:
		return trace_bts_print_chunk(iter, 0, NULL);
	default:
		return TRACE_TYPE_UNHANDLED;
	}
}

void trace_bts_print_header(struct seq_file *m)
{
	seq_puts(m, "# CPU    TID/PID     FROM -> TO\n");
	seq_puts(m, "#  |      |   |        |      |\n");
}

static struct trace_event_functions trace_bts_funcs = {
	.trace	= trace_bts_print,
};

static struct trace_event trace_bts_event = {
	.type	= TRACE_BTS,
	.funcs	= &trace_bts_funcs,
};

static struct trace_event_functions trace_bts_chunk_funcs = {
	.trace	= trace_bts_print_chunk,
};

static struct trace_event trace_bts_chunk_event = {
	.type	= TRACE_BTS_CHUNK,
	.funcs	= &trace_bts_chunk_funcs,
};

/* The TRACE_BTS and TRACE_BTS_CHUNK entries, as trace shows them. */
int trace_bts_register_events(void)
{
	if (!register_trace_event(&trace_bts_event) ||
	    !register_trace_event(&trace_bts_chunk_event))
		return -ENOMEM;
	return 0;
}
