// SPDX-License-Identifier: GPL-2.0
/*
 * bts: a per-CPU branch flight recorder, on the x86 Debug Store layer.
 *
 * With "echo bts > current_tracer" every CPU keeps its last N branches, a
 * ring consumer of the DS layer per CPU (asm/ds.h).  While nothing else
 * traces a CPU the hardware writes its buffer as that ring, with no
 * interrupt and no copy; next to other consumers the layer splays into it.
 * Opening "trace" (or per_cpu/cpuN/trace) stops every CPU's recorder,
 * copies what each recorded since the last copy into that CPU's ftrace
 * buffer as TRACE_BTS entries, and starts the recorders again; so does
 * turning tracing off, which then keeps them stopped.  The file shows each
 * CPU's branches, the task that ran them, symbolized.
 *
 * With options/bts-continuous every branch goes into the ftrace buffer
 * instead: each CPU's recorder is a continuous consumer whose overflow
 * callback moves its records, TRACE_BTS_CHUNK_RECORDS to an entry, into
 * the buffer, for trace_pipe and trace-cmd to stream.
 *
 * With options/bts-markers, the user_events applications write are markers
 * in the records, where each was written, decoded (the user_events bridge,
 * CONFIG_USER_EVENTS_BTS); the tracer listens to every event, in every
 * process, as ftrace does when an event is enabled.
 *
 * The bts_snapshot event trigger copies the last branches of the CPU an
 * event fires on into the ftrace buffer, there and then: the branches that
 * led to the event.
 *
 * An oops or a panic freezes the crashing CPU's ring first thing (the
 * layer's ds_freeze_local(), from oops_begin() and arch_panic_begin()),
 * and the tracer prints its last branches (bts_dump_records) to the
 * console from the die or panic notifier, before the machine dies; with
 * ftrace_dump_on_oops they go into the ftrace buffer too, so that its dump
 * shows them among the other events.
 *
 * See Documentation/trace/bts.rst.
 */
#include <linux/cpu.h>
#include <linux/fs.h>
#include <linux/kdebug.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/panic_notifier.h>
#include <linux/seq_buf.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/tracefs.h>
#include <linux/uaccess.h>
#include <linux/user_events.h>
#include <linux/workqueue.h>
#include <asm/ds.h>

#include "trace_bts.h"

static struct tracer_opt trace_bts_opts[] = {
	{ TRACER_OPT(bts-kernel, TRACE_BTS_OPT_KERNEL) },
	{ TRACER_OPT(bts-user, TRACE_BTS_OPT_USER) },
	{ TRACER_OPT(bts-raw, TRACE_BTS_OPT_RAW) },
	{ TRACER_OPT(bts-continuous, TRACE_BTS_OPT_CONTINUOUS) },
	{ TRACER_OPT(bts-markers, TRACE_BTS_OPT_MARKERS) },
	{ }
};

struct tracer_flags trace_bts_flags = {
	.val	= TRACE_BTS_OPT_KERNEL | TRACE_BTS_OPT_USER,
	.opts	= trace_bts_opts,
};

/*
 * The default N fits the staging buffer (about 2,700 records), so that a
 * CPU nothing else traces records with no copy at all.
 */
#define TRACE_BTS_DEFAULT_RECORDS	2048

/*
 * Records per TRACE_BTS_CHUNK entry in continuous mode.  The trace file
 * prints an entry at once, into trace_seq's 8 KiB: 32 lines fit even with
 * long symbols, and the entry's header costs 4% of its size.
 */
#define TRACE_BTS_CHUNK_RECORDS		32

/*
 * A continuous recorder's stream takes what its CPU produces while the
 * overflow callback, an interrupt, cannot run: a drain of the staging
 * buffer (about 2,700 records) at once, and more with interrupts off.  A
 * CPU spinning on a lock with interrupts off, while the holder's CPU
 * drains its own records in an NMI, makes a record a loop: 10,000 to
 * 17,000 of them were seen in the VM before the callback ran.  The stream
 * holds at least this many records, whatever N, and the callback is called
 * at a quarter of it (or at TRACE_BTS_WAKEUP_MAX, so that it moves about
 * that many with interrupts off, whatever N).
 */
#define TRACE_BTS_STREAM_MIN		32768
#define TRACE_BTS_WAKEUP_MAX		512

/**
 * struct trace_bts_cpu - one CPU's recorder
 * @c: its ring or continuous consumer, NULL while the tracer is off
 * @cpu: the CPU it records
 * @dump: where a crash copies the ring's last records to, TRACE_BTS_DUMP_MAX
 *	of them: no allocation then
 * @snap: the same for a bts_snapshot trigger, which a crash may interrupt
 * @snapping: a bts_snapshot trigger runs on the CPU; one that interrupts it
 *	(from an NMI) takes none
 * @copied: the ring's records ever produced when it was last copied
 * @task: who ran the last record copied, or streamed
 * @lock: continuous mode: one reader of @c at a time, its overflow callback
 *	or a flush (opening trace, tracing off); both keep interrupts off
 */
struct trace_bts_cpu {
	struct ds_consumer	*c;
	int			cpu;
	struct bts_record	*dump;
	struct bts_record	*snap;
	int			snapping;
	u64			copied;
	struct trace_bts_task	task;
	raw_spinlock_t		lock;
};

/* The most records an oops, a panic or a snapshot shows of a CPU's ring. */
#define TRACE_BTS_DUMP_MAX		1024
#define TRACE_BTS_DUMP_DEFAULT		64

/*
 * Protects everything below: the recorders, N, the copies.  A crash dump
 * and a snapshot, which take no lock, read trace_bts_tr and the recorders
 * once trace_bts_recording says they are there.
 */
static DEFINE_MUTEX(trace_bts_lock);
static DEFINE_PER_CPU(struct trace_bts_cpu, trace_bts_cpus);
static struct trace_array *trace_bts_tr;
static u32 trace_bts_records = TRACE_BTS_DEFAULT_RECORDS;
/*
 * Every possible CPU has its recorder (trace_bts_request_all()).  A crash
 * dump, which takes no lock, reads it too: set once the recorders exist,
 * cleared a grace period before they go.
 */
static bool trace_bts_recording;
/* The recorders are stopped: tracing is off. */
static bool trace_bts_suspended;
/* The recorders are continuous consumers (options/bts-continuous). */
static bool trace_bts_continuous;
/*
 * The subscription to every user_event, everywhere, while the recorders
 * take markers: taken and dropped by trace_bts_markers_work, since the
 * tracer's callbacks run under trace_types_lock, which the user_events
 * bridge's event_mutex must precede.  Only the work touches it.
 */
static struct user_event_markers *trace_bts_markers;
/* Whether it is wanted: set under trace_bts_lock, read by the work. */
static bool trace_bts_markers_wanted;
/* How many records a crash or a snapshot shows: bts_dump_records. */
static u64 trace_bts_dump_records = TRACE_BTS_DUMP_DEFAULT;
static u64 trace_bts_dump_min = 1, trace_bts_dump_max = TRACE_BTS_DUMP_MAX;

static enum ds_priv trace_bts_priv(u32 flags)
{
	return (flags & TRACE_BTS_OPT_KERNEL ? DS_PRIV_KERNEL : 0) |
	       (flags & TRACE_BTS_OPT_USER ? DS_PRIV_USER : 0);
}

static void trace_bts_markers_fn(struct work_struct *work)
{
	bool want = READ_ONCE(trace_bts_markers_wanted);
	struct user_event_markers *markers;

	if (want && !trace_bts_markers) {
		markers = user_events_markers_get("*", true);
		if (IS_ERR(markers))
			pr_warn("bts: no markers: user_events: %ld\n",
				PTR_ERR(markers));
		else
			trace_bts_markers = markers;
	} else if (!want && trace_bts_markers) {
		user_events_markers_put(trace_bts_markers);
		trace_bts_markers = NULL;
	}
}

static DECLARE_WORK(trace_bts_markers_work, trace_bts_markers_fn);

/*
 * Subscribe to every user_event or end that, moments later: a write made
 * meanwhile has no marker.  A work item runs once at a time, and again if
 * queued while it runs, so the last call wins.
 */
static void trace_bts_subscribe(bool want)
{
	WRITE_ONCE(trace_bts_markers_wanted, want);
	schedule_work(&trace_bts_markers_work);
}

static void trace_bts_release_all(void)
{
	int cpu;

	/* A dump that saw the recorders runs with interrupts off: wait. */
	if (trace_bts_recording) {
		WRITE_ONCE(trace_bts_recording, false);
		synchronize_rcu();
	}
	for_each_possible_cpu(cpu) {
		struct trace_bts_cpu *bc = per_cpu_ptr(&trace_bts_cpus, cpu);

		if (bc->c)
			ds_release_bts(bc->c);
		kfree(bc->dump);
		kfree(bc->snap);
		bc->c = NULL;
		bc->dump = NULL;
		bc->snap = NULL;
	}
	trace_bts_subscribe(false);
}

static const struct ds_bts_ops trace_bts_stream_ops;

/*
 * A recorder on every possible CPU, a ring or with @flags' continuous
 * option a continuous stream: the layer arms a CPU as it comes online, so
 * a CPU brought up later records too.  With the markers option, they take
 * every user_event: a ring that takes markers is the layer's, not the
 * hardware's buffer (ds_append_marker() stages them among the branches).
 */
static int trace_bts_request_all(u32 flags)
{
	bool continuous = flags & TRACE_BTS_OPT_CONTINUOUS;
	struct ds_bts_config cfg = {
		.priv		= trace_bts_priv(flags),
		.mode		= DS_MODE_RING,
		.nr_records	= trace_bts_records,
		.flags		= trace_bts_suspended ? DS_BTS_SUSPENDED : 0,
	};
	int cpu;

	lockdep_assert_held(&trace_bts_lock);
	if (continuous) {
		cfg.mode = DS_MODE_CONTINUOUS;
		cfg.nr_records = max(trace_bts_records, TRACE_BTS_STREAM_MIN);
		cfg.wakeup = min(cfg.nr_records / 4, TRACE_BTS_WAKEUP_MAX);
		cfg.ops = &trace_bts_stream_ops;
	}
	trace_bts_continuous = continuous;
	if (flags & TRACE_BTS_OPT_MARKERS) {
		trace_bts_subscribe(true);
		cfg.flags |= DS_BTS_MARKERS;
	}
	for_each_possible_cpu(cpu) {
		struct trace_bts_cpu *bc = per_cpu_ptr(&trace_bts_cpus, cpu);
		struct ds_consumer *c;

		cfg.cpu = cpu;
		cfg.data = bc;
		*bc = (struct trace_bts_cpu) { .cpu = cpu, .task = { -1, -1 } };
		raw_spin_lock_init(&bc->lock);
		bc->dump = kcalloc_node(TRACE_BTS_DUMP_MAX, sizeof(*bc->dump),
					GFP_KERNEL, cpu_to_node(cpu));
		bc->snap = kcalloc_node(TRACE_BTS_DUMP_MAX, sizeof(*bc->snap),
					GFP_KERNEL, cpu_to_node(cpu));
		c = bc->dump && bc->snap ? ds_request_bts(&cfg) : ERR_PTR(-ENOMEM);
		if (IS_ERR(c)) {
			trace_bts_release_all();
			return PTR_ERR(c);
		}
		bc->c = c;
	}
	/* Pairs with the crash dump's acquire: the recorders are there. */
	smp_store_release(&trace_bts_recording, true);
	return 0;
}

/*
 * Put one record of CPU @cpu, run by @task, into the current CPU's ftrace
 * buffer.  The entry's common_pid is that thread when known, so that
 * trace-cmd and perf show it; else the thread that copies.
 */
static void trace_bts_put(struct trace_buffer *buffer, int cpu,
			  const struct trace_bts_task *task,
			  const struct bts_record *r)
{
	struct ring_buffer_event *event;
	struct bts_entry *entry;

	event = trace_buffer_lock_reserve(buffer, TRACE_BTS, sizeof(*entry),
					  tracing_gen_ctx());
	if (!event)
		return;
	entry = ring_buffer_event_data(event);
	if (task->tid >= 0)
		entry->ent.pid = task->tid;
	entry->from = r->from;
	entry->to = r->to;
	entry->flags = r->flags;
	entry->cpu = cpu;
	entry->tid = task->tid;
	entry->tgid = task->tgid;
	trace_buffer_unlock_commit_nostack(buffer, event);
}

/*
 * Reserve a TRACE_BTS_CHUNK entry for @n records of CPU @cpu, the first
 * run by @task; NULL if the buffer refuses.
 */
static struct bts_chunk_entry *
trace_bts_reserve_chunk(struct trace_buffer *buffer,
			struct ring_buffer_event **event, int cpu,
			const struct trace_bts_task *task, u32 n)
{
	struct bts_chunk_entry *entry;

	*event = trace_buffer_lock_reserve(buffer, TRACE_BTS_CHUNK,
					   struct_size(entry, records, 3 * n),
					   tracing_gen_ctx());
	if (!*event)
		return NULL;
	entry = ring_buffer_event_data(*event);
	if (task->tid >= 0)
		entry->ent.pid = task->tid;
	entry->cpu = cpu;
	entry->tid = task->tid;
	entry->tgid = task->tgid;
	entry->nr = n;
	return entry;
}

/*
 * Put @n records of CPU @cpu into @buffer, a record an entry, their task
 * known from @task and their task switches; but a marker with its
 * payload's details before it in one TRACE_BTS_CHUNK entry, so that it is
 * shown with its payload.
 */
static void trace_bts_put_records(struct trace_buffer *buffer, int cpu,
				  struct trace_bts_task *task,
				  const struct bts_record *recs, u32 n)
{
	struct ring_buffer_event *event;
	struct bts_chunk_entry *entry;
	u32 i, j;

	for (i = 0; i < n; i = j) {
		for (j = i; j < n && trace_bts_is_marker_detail(recs[j].from);)
			j++;
		if (j > i && j < n && trace_bts_is_marker(recs[j].from)) {
			j++;
			entry = trace_bts_reserve_chunk(buffer, &event, cpu,
							task, j - i);
			if (!entry)
				continue;
			memcpy(entry->records, &recs[i], (j - i) * sizeof(*recs));
			trace_buffer_unlock_commit_nostack(buffer, event);
			continue;
		}
		j = i + 1;
		trace_bts_follow(task, &recs[i]);
		trace_bts_put(buffer, cpu, task, &recs[i]);
	}
}

/* Record @k of the two runs ds_peek_bts() gave. */
static const struct bts_record *trace_bts_nth(const struct bts_record *runs[2],
					      const u32 nrs[2], u32 k)
{
	return k < nrs[0] ? &runs[0][k] : &runs[1][k - nrs[0]];
}

/*
 * How many of the next @n records of @c's stream to move as one chunk:
 * not the details of a marker that did not fit with them, which go with
 * it into the next chunk, so that it is shown with its payload.
 */
static u32 trace_bts_chunk_size(struct ds_consumer *c, u32 n)
{
	const struct bts_record *runs[2];
	u32 nrs[2], keep = n;

	if (ds_peek_bts(c, runs, nrs, n) < n)
		return n;
	while (keep &&
	       trace_bts_is_marker_detail(trace_bts_nth(runs, nrs,
							keep - 1)->from))
		keep--;
	/* A chunk of nothing but details: no marker that fits with them. */
	return keep ?: n;
}

/*
 * Move up to @max records of @c, @bc's continuous stream, into @buffer (the
 * current CPU's part of it), TRACE_BTS_CHUNK_RECORDS an entry, straight
 * from the stream into the reserved entry.  What the buffer refuses
 * (tracing off) stays in the stream, which counts in-stream what it then
 * cannot hold.  @max bounds the work: a flush that records its own
 * branches would otherwise chase them.  Returns the number moved.
 * Context: @bc->lock held, interrupts off.
 */
static u32 trace_bts_stream(struct trace_buffer *buffer,
			    struct trace_bts_cpu *bc, struct ds_consumer *c,
			    u64 max)
{
	struct ring_buffer_event *event;
	struct bts_chunk_entry *entry;
	struct bts_record *recs;
	struct ds_bts_status st;
	u32 moved = 0, i, n;

	lockdep_assert_held(&bc->lock);
	ds_bts_status(c, &st);
	max = min(max, st.pending);
	while (moved < max) {
		n = min_t(u64, max - moved, TRACE_BTS_CHUNK_RECORDS);
		n = trace_bts_chunk_size(c, n);
		entry = trace_bts_reserve_chunk(buffer, &event, bc->cpu,
						&bc->task, n);
		if (!entry)
			break;
		recs = (struct bts_record *)entry->records;
		/* The only reader: the @n pending are there. */
		entry->nr = ds_consume_bts(c, recs, n);
		for (i = 0; i < entry->nr; i++)
			trace_bts_follow(&bc->task, &recs[i]);
		trace_buffer_unlock_commit_nostack(buffer, event);
		moved += entry->nr;
		if (entry->nr < n)
			break;
	}
	return moved;
}

/*
 * A continuous recorder's stream reached its wakeup mark: into the buffer
 * with it, on the CPU that produced the records, tracing paused.
 */
static enum ds_overflow_action trace_bts_overflow(struct ds_consumer *c,
						  void *data)
{
	struct trace_array *tr = READ_ONCE(trace_bts_tr);
	struct trace_bts_cpu *bc = data;

	/*
	 * @c, not @bc->c: the callback may run before the request that made
	 * @c returned and trace_bts_request_all() stored it.
	 */
	raw_spin_lock(&bc->lock);
	trace_bts_stream(tr->array_buffer.buffer, bc, c, U64_MAX);
	raw_spin_unlock(&bc->lock);
	return DS_OVERFLOW_CONTINUE;
}

static const struct ds_bts_ops trace_bts_stream_ops = {
	.overflow	= trace_bts_overflow,
};

struct trace_bts_copy {
	struct trace_buffer	*buffer;
	struct bts_record	*buf;
	int			cpu;
};

/*
 * Move what CPU @cp->cpu's continuous recorder holds into that CPU's
 * ftrace buffer, a chunk at a time with interrupts off.  Runs on the CPU
 * (work_on_cpu()), its recorder stopped.
 */
static long trace_bts_flush_cpu(void *arg)
{
	struct trace_bts_copy *cp = arg;
	struct trace_bts_cpu *bc = per_cpu_ptr(&trace_bts_cpus, cp->cpu);
	struct ds_bts_status st;
	unsigned long flags;
	u64 left;
	u32 moved;

	ds_bts_status(bc->c, &st);
	for (left = st.pending; left; left -= moved) {
		raw_spin_lock_irqsave(&bc->lock, flags);
		moved = trace_bts_stream(cp->buffer, bc, bc->c,
					 min_t(u64, left, TRACE_BTS_CHUNK_RECORDS));
		raw_spin_unlock_irqrestore(&bc->lock, flags);
		if (!moved)
			break;
	}
	return 0;
}

/*
 * Copy what CPU @cp->cpu's ring recorded since the last copy into that
 * CPU's ftrace buffer, the task of each record with it.  What the ring no
 * longer holds shows as one BTS_PSEUDO_LOST record of that many.  Runs on
 * the CPU (work_on_cpu()), its recorder stopped.
 */
static long trace_bts_copy_cpu(void *arg)
{
	struct trace_bts_copy *cp = arg;
	struct trace_bts_cpu *bc = per_cpu_ptr(&trace_bts_cpus, cp->cpu);
	int cpu = cp->cpu;
	struct ds_bts_status st;
	u32 n;
	u64 new;

	ds_bts_status(bc->c, &st);
	new = st.produced - bc->copied;
	n = ds_read_last_bts(bc->c, cp->buf, min_t(u64, new,
						   trace_bts_records));
	if (new > n) {
		struct bts_record lost = {
			.from	= BTS_PSEUDO(BTS_PSEUDO_LOST, 0),
			.to	= new - n,
		};

		/* Who ran the first record kept is unknown now. */
		bc->task = (struct trace_bts_task) { -1, -1 };
		trace_bts_put(cp->buffer, cpu, &bc->task, &lost);
	}
	trace_bts_put_records(cp->buffer, cpu, &bc->task, cp->buf, n);
	bc->copied = st.produced;
	return 0;
}

/*
 * Copy every online CPU's new records into its ftrace buffer, the
 * recorders stopped meanwhile so that the copies show one instant; in
 * continuous mode, flush what the streams hold.  Leaves the recorders
 * stopped with @stay_stopped.
 */
static void trace_bts_copy_all(bool stay_stopped)
{
	struct trace_bts_copy cp = {
		.buffer = trace_bts_tr->array_buffer.buffer,
	};
	int cpu;

	lockdep_assert_held(&trace_bts_lock);
	if (!trace_bts_recording)
		return;
	if (!trace_bts_continuous) {
		cp.buf = kvmalloc_array(trace_bts_records, sizeof(*cp.buf),
					GFP_KERNEL);
		if (!cp.buf)
			return;
	}
	/* Their staged records go into their streams. */
	for_each_possible_cpu(cpu)
		ds_suspend_bts(per_cpu(trace_bts_cpus, cpu).c);
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		cp.cpu = cpu;
		work_on_cpu(cpu, trace_bts_continuous ? trace_bts_flush_cpu :
			    trace_bts_copy_cpu, &cp);
	}
	cpus_read_unlock();
	if (!stay_stopped)
		for_each_possible_cpu(cpu)
			ds_resume_bts(per_cpu(trace_bts_cpus, cpu).c);
	kvfree(cp.buf);
}

static void trace_bts_open(struct trace_iterator *iter)
{
	/* The snapshot file shows the copy taken then. */
	if (iter->snapshot)
		return;
	guard(mutex)(&trace_bts_lock);
	if (iter->tr == trace_bts_tr && !trace_bts_suspended)
		trace_bts_copy_all(false);
}

static int trace_bts_init(struct trace_array *tr)
{
	int ret;

	/* The recorders are the CPUs': one trace array at a time. */
	if (trace_bts_tr)
		return -EBUSY;
	if (!ds_bts_available())
		return -ENODEV;
	guard(mutex)(&trace_bts_lock);
	trace_bts_suspended = !tracer_tracing_is_on(tr);
	/* Set before the recorders are published: a crash dump reads it. */
	WRITE_ONCE(trace_bts_tr, tr);
	ret = trace_bts_request_all(trace_bts_flags.val);
	if (ret)
		WRITE_ONCE(trace_bts_tr, NULL);
	return ret;
}

static void trace_bts_reset(struct trace_array *tr)
{
	guard(mutex)(&trace_bts_lock);
	trace_bts_release_all();
	WRITE_ONCE(trace_bts_tr, NULL);
}

static void trace_bts_start(struct trace_array *tr)
{
	int cpu;

	guard(mutex)(&trace_bts_lock);
	if (tr != trace_bts_tr || !trace_bts_suspended)
		return;
	trace_bts_suspended = false;
	if (!trace_bts_recording)
		return;
	for_each_possible_cpu(cpu)
		ds_resume_bts(per_cpu(trace_bts_cpus, cpu).c);
}

/*
 * Tracing turned off: the rings' last records go into the ftrace buffer
 * now, as the tracer's last events, so that what reads the buffer later
 * (cat trace, trace-cmd) gets them.  The buffer is off already; it is let
 * write for the copy alone.
 */
static void trace_bts_stop(struct trace_array *tr)
{
	struct trace_buffer *buffer = tr->array_buffer.buffer;

	guard(mutex)(&trace_bts_lock);
	if (tr != trace_bts_tr || trace_bts_suspended)
		return;
	trace_bts_suspended = true;
	ring_buffer_record_on(buffer);
	trace_bts_copy_all(true);
	ring_buffer_record_off(buffer);
}

/*
 * Record with other options or another N from now on: what the rings hold
 * goes into the ftrace buffer first.  On failure the old ones stay.
 */
static int trace_bts_restart(u32 flags, u32 records)
{
	u32 old_records = trace_bts_records;
	int ret;

	lockdep_assert_held(&trace_bts_lock);
	trace_bts_copy_all(true);
	trace_bts_release_all();
	trace_bts_records = records;
	ret = trace_bts_request_all(flags);
	if (ret) {
		trace_bts_records = old_records;
		WARN_ON_ONCE(trace_bts_request_all(trace_bts_flags.val));
	}
	return ret;
}

static int trace_bts_set_flag(struct trace_array *tr, u32 old_flags, u32 bit,
			      int set)
{
	u32 flags = set ? old_flags | bit : old_flags & ~bit;

	if (bit == TRACE_BTS_OPT_RAW)
		return 0;
	/* The user_events bridge: CONFIG_USER_EVENTS_BTS. */
	if (bit == TRACE_BTS_OPT_MARKERS && set &&
	    !IS_ENABLED(CONFIG_USER_EVENTS_BTS))
		return -EOPNOTSUPP;
	if (!trace_bts_priv(flags))
		return -EINVAL;
	guard(mutex)(&trace_bts_lock);
	if (trace_bts_tr != tr)
		return 0;
	return trace_bts_restart(flags, trace_bts_records);
}

/*
 * Put @n records of this CPU's ring, read while it was frozen, into @tr's
 * buffer after a line, from @ip, that says what they are.  Their task is
 * known from their first task switch on.  Context: any, NMI included.
 */
static void trace_bts_put_local(struct trace_array *tr, unsigned long ip,
				const char *what, const struct bts_record *buf,
				u32 n)
{
	struct trace_bts_task task = { -1, -1 };
	int cpu = smp_processor_id();
	char line[80];
	u32 i;

	i = scnprintf(line, sizeof(line), "%s: CPU %d's last %u records follow\n",
		      what, cpu, n);
	__trace_array_puts(tr, ip, line, i);
	trace_bts_put_records(tr->array_buffer.buffer, cpu, &task, buf, n);
}

/**
 * trace_bts_snapshot() - the last branches of this CPU into the trace
 * @tr: the trace array of the event whose bts_snapshot trigger fired
 *
 * When the bts tracer records in @tr, the newest bts_dump_records records
 * of this CPU's ring go into @tr's buffer there and then, after a line
 * that says so: the branches that led to the event.  The ring is frozen
 * meanwhile, so the snapshot's own branches are in no one's trace, as the
 * layer's own are not; it goes on recording after.  Records a snapshot
 * shows show again in the next copy of the ring (opening trace, tracing
 * off).  A trigger that fires in the middle of another on the same CPU
 * (from an NMI) takes no snapshot, and leaves a line that says so.
 *
 * Context: any, NMI included (an event trigger, after the event's commit):
 * no locks, no sleeping, no allocation.
 */
void trace_bts_snapshot(struct trace_array *tr)
{
	struct trace_bts_cpu *bc = this_cpu_ptr(&trace_bts_cpus);
	bool froze;
	u32 n;

	/*
	 * Pairs with the release in trace_bts_request_all(); the recorders
	 * stay a grace period after the flag goes, and a trigger runs with
	 * preemption off.
	 */
	if (!smp_load_acquire(&trace_bts_recording) ||
	    READ_ONCE(trace_bts_tr) != tr || trace_bts_continuous)
		return;
	if (this_cpu_inc_return(trace_bts_cpus.snapping) == 1) {
		n = min_t(u64, READ_ONCE(trace_bts_dump_records),
			  TRACE_BTS_DUMP_MAX);
		froze = ds_freeze_local();
		n = ds_read_last_local(bc->c, bc->snap, n);
		if (froze)
			ds_thaw_local();
		trace_bts_put_local(tr, _THIS_IP_, "snapshot", bc->snap, n);
	} else {
		trace_bts_put_local(tr, _THIS_IP_,
				    "snapshot in a snapshot, none taken", NULL, 0);
	}
	this_cpu_dec(trace_bts_cpus.snapping);
}

/* @n records of CPU @cpu's on the console, as trace shows them. */
static void trace_bts_print_dump(int cpu, const char *what,
				 const struct bts_record *buf, u32 n)
{
	struct trace_bts_payload pl = { };
	struct seq_buf sb;
	char line[256];
	u32 i;

	pr_emerg("bts: the last %u branches of CPU %d %s, oldest first:\n",
		 n, cpu, what);
	for (i = 0; i < n; i++) {
		trace_bts_gather(&pl, &buf[i]);
		if (!trace_bts_is_detail(buf[i].from)) {
			seq_buf_init(&sb, line, sizeof(line));
			trace_bts_describe(&sb, &buf[i], &pl, false, false);
			pr_emerg("bts: %s\n", seq_buf_str(&sb));
		}
		trace_bts_gathered(&pl, &buf[i]);
	}
	pr_emerg("bts: end of CPU %d's branches\n", cpu);
}

/*
 * The crash dump into the ftrace buffer too, for ftrace_dump_on_oops to
 * print next.  oops_enter() turned tracing off (tracing_off()) before the
 * die notifiers run: the buffer is let write for the dump alone, as
 * trace_bts_stop() does.  Lock-free, as the rest of the dump.
 */
static void trace_bts_put_dump(struct trace_array *tr, const char *why,
			       const struct bts_record *buf, u32 n)
{
	struct trace_buffer *buffer = tr->array_buffer.buffer;
	bool off = !ring_buffer_record_is_set_on(buffer);

	if (off)
		ring_buffer_record_on(buffer);
	trace_bts_put_local(tr, _THIS_IP_, why, buf, n);
	if (off)
		ring_buffer_record_off(buffer);
}

/*
 * The crashing CPU's last records on the console, as trace shows them,
 * and with ftrace_dump_on_oops in the ftrace buffer too, which is dumped
 * next (trace.c's notifiers come after ours).  Its ring was frozen first
 * thing in the oops or panic; no lock, no sleeping, no allocation, and
 * nothing of the other CPUs, which may be stuck anywhere (a panic shows
 * them once panic() stopped them: trace_bts_dump_stopped()).  An oops that
 * panics (panic_on_oops) prints them twice: the ring stays frozen from
 * the oops on.
 */
static void trace_bts_dump_local(const char *why)
{
	struct trace_bts_cpu *bc = this_cpu_ptr(&trace_bts_cpus);
	int cpu = smp_processor_id();
	char what[32];
	u32 n;

	/* Pairs with the release in trace_bts_request_all(). */
	if (!smp_load_acquire(&trace_bts_recording))
		return;
	if (trace_bts_continuous) {
		pr_emerg("bts: CPU %d recorded continuously: its branches are in the ftrace buffer\n",
			 cpu);
		return;
	}
	n = min_t(u64, READ_ONCE(trace_bts_dump_records), TRACE_BTS_DUMP_MAX);
	n = ds_read_last_local(bc->c, bc->dump, n);
	if (ftrace_dump_on_oops_enabled())
		trace_bts_put_dump(READ_ONCE(trace_bts_tr), why, bc->dump, n);
	snprintf(what, sizeof(what), "before the %s", why);
	trace_bts_print_dump(cpu, what, bc->dump, n);
}

/*
 * In a panic, after the crashing CPU's: the other CPUs', which panic()
 * has stopped by the time its notifiers run (smp_send_stop()): each is
 * offline and halted, its ring still; their newest records are those of
 * the stop.  A CPU that did not stop is left alone; one that was offline
 * before the panic has nothing of it to show.  Each CPU's own dump
 * buffer holds its records: nothing else runs there now.
 */
static void trace_bts_dump_stopped(void)
{
	struct trace_bts_cpu *bc;
	int cpu, this = smp_processor_id();
	u32 n;

	/* Pairs with the release in trace_bts_request_all(). */
	if (!smp_load_acquire(&trace_bts_recording) || trace_bts_continuous)
		return;
	for_each_possible_cpu(cpu) {
		bc = per_cpu_ptr(&trace_bts_cpus, cpu);
		if (cpu == this || !bc->c)
			continue;
		if (cpu_online(cpu)) {
			pr_emerg("bts: CPU %d did not stop: its branches are not shown\n",
				 cpu);
			continue;
		}
		n = min_t(u64, READ_ONCE(trace_bts_dump_records),
			  TRACE_BTS_DUMP_MAX);
		n = ds_read_last_stopped(bc->c, bc->dump, n);
		/* None: offline before the panic, or nothing drained. */
		if (n)
			trace_bts_print_dump(cpu, "stopped by the panic",
					     bc->dump, n);
	}
}

static int trace_bts_die(struct notifier_block *nb, unsigned long val,
			 void *data)
{
	if (val == DIE_OOPS)
		trace_bts_dump_local("oops");
	return NOTIFY_DONE;
}

static int trace_bts_panic(struct notifier_block *nb, unsigned long val,
			   void *data)
{
	trace_bts_dump_local("panic");
	trace_bts_dump_stopped();
	return NOTIFY_DONE;
}

/* Before trace.c's, which dump the ftrace buffer (ftrace_dump_on_oops). */
static struct notifier_block trace_bts_die_nb = {
	.notifier_call	= trace_bts_die,
	.priority	= INT_MAX,
};

static struct notifier_block trace_bts_panic_nb = {
	.notifier_call	= trace_bts_panic,
	.priority	= INT_MAX,
};

static struct tracer trace_bts_tracer __read_mostly = {
	.name		= "bts",
	.init		= trace_bts_init,
	.reset		= trace_bts_reset,
	.start		= trace_bts_start,
	.stop		= trace_bts_stop,
	.open		= trace_bts_open,
	.print_line	= trace_bts_print_line,
	.print_header	= trace_bts_print_header,
	.flags		= &trace_bts_flags,
	.set_flag	= trace_bts_set_flag,
	.allow_instances = true,
};

static ssize_t trace_bts_records_read(struct file *filp, char __user *ubuf,
				      size_t cnt, loff_t *ppos)
{
	char buf[16];
	int len;

	len = snprintf(buf, sizeof(buf), "%u\n", READ_ONCE(trace_bts_records));
	return simple_read_from_buffer(ubuf, cnt, ppos, buf, len);
}

/* A new N takes effect at once: what the old rings hold is copied first. */
static ssize_t trace_bts_records_write(struct file *filp,
				       const char __user *ubuf, size_t cnt,
				       loff_t *ppos)
{
	u32 val;
	int ret;

	ret = kstrtou32_from_user(ubuf, cnt, 0, &val);
	if (ret)
		return ret;
	if (val < 2 || val > BTS_MAX_RECORDS)
		return -EINVAL;
	guard(mutex)(&trace_bts_lock);
	if (!trace_bts_tr) {
		trace_bts_records = val;
		return cnt;
	}
	ret = trace_bts_restart(trace_bts_flags.val, val);
	return ret ?: cnt;
}

static struct trace_min_max_param trace_bts_dump_param = {
	.lock	= &trace_bts_lock,
	.val	= &trace_bts_dump_records,
	.min	= &trace_bts_dump_min,
	.max	= &trace_bts_dump_max,
};

static const struct file_operations trace_bts_records_fops = {
	.open	= tracing_open_generic,
	.read	= trace_bts_records_read,
	.write	= trace_bts_records_write,
	.llseek	= generic_file_llseek,
};

/*
 * bts_stats: each recorder's counters from the layer, so that what the
 * trace says was lost can be checked against what was, even when the
 * ftrace buffer overwrote the lines that said so.
 */
static int trace_bts_stats_show(struct seq_file *m, void *v)
{
	struct ds_bts_status st;
	int cpu;

	guard(mutex)(&trace_bts_lock);
	for_each_possible_cpu(cpu) {
		struct trace_bts_cpu *bc = per_cpu_ptr(&trace_bts_cpus, cpu);

		if (!bc->c)
			continue;
		ds_bts_status(bc->c, &st);
		seq_printf(m, "cpu%d produced %llu lost %llu pending %llu\n",
			   cpu, st.produced, st.lost, st.pending);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(trace_bts_stats);

static __init int trace_bts_init_tracer(void)
{
	int ret;

	if (!ds_bts_available())
		return 0;
	ret = trace_bts_register_events();
	if (ret)
		return ret;
	ret = register_tracer(&trace_bts_tracer);
	if (ret)
		return ret;
	if (!tracing_init_dentry()) {
		trace_create_file("bts_records", TRACE_MODE_WRITE, NULL, NULL,
				  &trace_bts_records_fops);
		trace_create_file("bts_dump_records", TRACE_MODE_WRITE, NULL,
				  &trace_bts_dump_param, &trace_min_max_fops);
		trace_create_file("bts_stats", TRACE_MODE_READ, NULL, NULL,
				  &trace_bts_stats_fops);
	}
	register_die_notifier(&trace_bts_die_nb);
	atomic_notifier_chain_register(&panic_notifier_list,
				       &trace_bts_panic_nb);
	return 0;
}
late_initcall(trace_bts_init_tracer);
