// SPDX-License-Identifier: GPL-2.0
/*
 * plugin_bts: libtraceevent's reading of the bts tracer's events
 * (kernel/trace/trace_bts.c), for trace-cmd report and every other tool
 * on libtraceevent.
 *
 * ftrace/bts is one record and ftrace/bts_chunk (continuous mode) up to
 * 32; their print formats show the first as hex or as %pS and the second
 * not at all, since a format cannot loop over a trailing array.  Each
 * record is shown here as the tracer's trace file shows it: "CPU TID/PID
 * FROM -> TO", kernel addresses as symbol+offset from the kallsyms the
 * trace carries (no size: the trace does not have it), user addresses as
 * "[user] 0x...", and pseudo-records (include/uapi/linux/bts.h) as what
 * they stand for, a line each.
 */
#include <stdint.h>
#include <stdio.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>
#include <linux/bts.h>

/* Who ran the records: from the entry, then from each task switch. */
struct bts_task {
	long long tid;
	long long tgid;
};

static void bts_addr(struct trace_seq *s, struct tep_handle *tep,
		     unsigned long long addr)
{
	const char *name = (long long)addr < 0 ?
			   tep_find_function(tep, addr) : NULL;

	if (!addr)
		trace_seq_puts(s, "?");
	else if ((long long)addr >= 0)
		trace_seq_printf(s, "[user] 0x%llx", addr);
	else if (name)
		trace_seq_printf(s, "%s+0x%llx", name,
				 addr - tep_find_function_address(tep, addr));
	else
		trace_seq_printf(s, "0x%llx", addr);
}

/* One record, its line without the end of line; details print nothing. */
static void bts_record(struct trace_seq *s, struct tep_handle *tep,
		       unsigned int cpu, struct bts_task *task,
		       uint64_t from, uint64_t to, uint64_t flags, int streamed)
{
	unsigned int type = BTS_PSEUDO_TYPE(from), arg = BTS_PSEUDO_ARG(from);
	int pseudo = BTS_RECORD_IS_PSEUDO(from);

	if (pseudo && type == BTS_PSEUDO_SWITCH) {
		task->tid = (int32_t)to;
		task->tgid = (int32_t)flags;
	}
	trace_seq_printf(s, "%3u ", cpu);
	if (task->tid >= 0)
		trace_seq_printf(s, "%7lld/%-7lld ", task->tid, task->tgid);
	else
		trace_seq_printf(s, "%15s ", "?");
	if (!pseudo) {
		bts_addr(s, tep, from);
		trace_seq_puts(s, " -> ");
		bts_addr(s, tep, to);
		return;
	}
	switch (type) {
	case BTS_PSEUDO_SWITCH:
		trace_seq_printf(s, "-- switch to %lld/%lld", task->tid,
				 task->tgid);
		break;
	case BTS_PSEUDO_LOST:
		if (arg == BTS_LOST_OVERRUN)
			trace_seq_puts(s, "-- records lost: the hardware's buffer overran");
		else if (arg == BTS_LOST_UNTRACED)
			trace_seq_puts(s, "-- records lost: the CPU could not trace");
		else if (streamed)
			trace_seq_printf(s, "-- %llu records lost: the recorder fell behind",
					 (unsigned long long)to);
		else
			trace_seq_printf(s, "-- %llu older records not kept",
					 (unsigned long long)to);
		break;
	case BTS_PSEUDO_USER:
	case BTS_PSEUDO_KERNEL:
		trace_seq_printf(s, "-- %s from ",
				 type == BTS_PSEUDO_USER ? "user mode" : "kernel");
		bts_addr(s, tep, flags);
		trace_seq_puts(s, " back at ");
		bts_addr(s, tep, to);
		break;
	case BTS_PSEUDO_MARKER:
		/* The event's format is the kernel's (trace shows it decoded). */
		trace_seq_printf(s, "-- event id %u generation %u, %u bytes at ",
				 BTS_MARKER_ID(flags), BTS_MARKER_GEN(flags),
				 BTS_MARKER_LEN(from));
		bts_addr(s, tep, to);
		break;
	default:
		trace_seq_printf(s, "-- pseudo-record type %u arg %u: 0x%llx 0x%llx",
				 type, arg, (unsigned long long)to,
				 (unsigned long long)flags);
		break;
	}
}

static int bts_is_detail(uint64_t from)
{
	return BTS_RECORD_IS_PSEUDO(from) &&
	       BTS_PSEUDO_TYPE(from) == BTS_PSEUDO_DETAIL;
}

/* The entry's cpu, tid and tgid fields; -1 when one is missing. */
static int bts_header(struct trace_seq *s, struct tep_event *event,
		      struct tep_record *record, unsigned long long *cpu,
		      struct bts_task *task)
{
	unsigned long long tid, tgid;

	if (tep_get_field_val(s, event, "cpu", record, cpu, 1) ||
	    tep_get_field_val(s, event, "tid", record, &tid, 1) ||
	    tep_get_field_val(s, event, "tgid", record, &tgid, 1))
		return -1;
	task->tid = (int32_t)tid;
	task->tgid = (int32_t)tgid;
	return 0;
}

static int bts_handler(struct trace_seq *s, struct tep_record *record,
		       struct tep_event *event, void *context)
{
	unsigned long long cpu, from, to, flags;
	struct bts_task task;

	if (bts_header(s, event, record, &cpu, &task) ||
	    tep_get_field_val(s, event, "from", record, &from, 1) ||
	    tep_get_field_val(s, event, "to", record, &to, 1) ||
	    tep_get_field_val(s, event, "flags", record, &flags, 1))
		return 0;
	bts_record(s, event->tep, cpu, &task, from, to, flags, 0);
	return 0;
}

/* A chunk: its records a line each, the detail records left out. */
static int bts_chunk_handler(struct trace_seq *s, struct tep_record *record,
			     struct tep_event *event, void *context)
{
	struct tep_format_field *field = tep_find_field(event, "records");
	unsigned long long cpu, nr, i;
	const unsigned char *recs;
	struct bts_task task;
	int lines = 0;

	if (!field || bts_header(s, event, record, &cpu, &task) ||
	    tep_get_field_val(s, event, "nr", record, &nr, 1))
		return 0;
	/* No more than the entry holds, whatever nr says. */
	if (record->size < field->offset)
		return 0;
	if (nr > (unsigned long long)(record->size - field->offset) / 24)
		nr = (record->size - field->offset) / 24;
	recs = (const unsigned char *)record->data + field->offset;
	for (i = 0; i < nr; i++) {
		const unsigned char *r = recs + 24 * i;
		uint64_t from = tep_read_number(event->tep, r, 8);

		if (bts_is_detail(from))
			continue;
		if (lines++)
			trace_seq_putc(s, '\n');
		bts_record(s, event->tep, cpu, &task, from,
			   tep_read_number(event->tep, r + 8, 8),
			   tep_read_number(event->tep, r + 16, 8), 1);
	}
	return 0;
}

int TEP_PLUGIN_LOADER(struct tep_handle *tep)
{
	tep_register_event_handler(tep, -1, "ftrace", "bts", bts_handler, NULL);
	tep_register_event_handler(tep, -1, "ftrace", "bts_chunk",
				   bts_chunk_handler, NULL);
	return 0;
}

void TEP_PLUGIN_UNLOADER(struct tep_handle *tep)
{
	tep_unregister_event_handler(tep, -1, "ftrace", "bts", bts_handler,
				     NULL);
	tep_unregister_event_handler(tep, -1, "ftrace", "bts_chunk",
				     bts_chunk_handler, NULL);
}
