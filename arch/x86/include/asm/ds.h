/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The x86 Debug Store layer: the one owner of the DS save area, of
 * IA32_DS_AREA and of DEBUGCTL's branch trace bits.  It drains the
 * hardware's branch trace store (BTS) and splays the records to any number
 * of consumers, each with its own scope, privilege filter and buffer mode.
 *
 * See Documentation/arch/x86/ds.rst for the model; the record format is in
 * include/uapi/linux/bts.h.
 *
 * The detach contract: when ds_release_bts() returns, no callback of that
 * consumer is running or will run, and the consumer's records are gone; a
 * module that registered callbacks may unload right after.
 */
#ifndef _ASM_X86_DS_H
#define _ASM_X86_DS_H

#include <linux/types.h>
#include <linux/err.h>
#include <linux/jump_label.h>
#include <uapi/linux/bts.h>
#include <asm/cpu_entry_area.h>
#include <linux/cpufeature.h>
#include <asm/ds_entry.h>
#include <asm/ds_types.h>
#include <asm/msr.h>

struct task_struct;
struct debug_store;
struct ds_consumer;

/**
 * enum ds_overflow_action - what a consumer wants after an overflow callback
 * @DS_OVERFLOW_CONTINUE: keep tracing; the callback took what it wanted with
 *	ds_consume_bts() (a continuous stream that stays full counts losses)
 * @DS_OVERFLOW_SUSPEND: stop tracing for this consumer until
 *	ds_resume_bts(); its records stay readable
 */
enum ds_overflow_action {
	DS_OVERFLOW_CONTINUE,
	DS_OVERFLOW_SUSPEND,
};

/**
 * struct ds_bts_ops - callbacks of a BTS consumer
 * @overflow: a continuous stream holds at least its wakeup mark of
 *	records.  Context: hard interrupt (irq_work) on a CPU that produced
 *	records, interrupts off, branch tracing paused; may take the records
 *	with ds_consume_bts() or, without copying, ds_swap_bts_buffer(), and
 *	may stop tracing by returning DS_OVERFLOW_SUSPEND.  Never runs
 *	concurrently with itself for one consumer.  Optional.
 * @task_exit: the traced task is exiting; no record follows.  Context:
 *	process, the exiting task, may sleep.  Optional.
 * @task_fork: with DS_BTS_INHERIT, the traced task created a thread or a
 *	process (with DS_BTS_INHERIT_THREADS, a thread of its process),
 *	traced by @child, a new consumer like @c that the callback now owns;
 *	ds_bts_task() tells which task.  Returns the data that @child's
 *	callbacks get.  @child is NULL when the new task could not be traced
 *	(no memory, the hardware busy).  Context: process, the parent in
 *	clone() once the clone cannot fail, before the child runs; may
 *	sleep.  Required with either flag.
 * @window: zero copy.  While a CPU consumer that records the kernel, and
 *	takes no markers or maps, is the CPU's only active consumer and PTI
 *	is off, the layer may let the hardware write memory of the
 *	consumer's own, one window at a time.  The hardware wrote @written
 *	records into the window lent last (0 on the first call of a stay),
 *	and dropped more if @overran; they never reach the stream, and come
 *	after what it held at the first call.  Fill @next with the next
 *	window and return true, or return false: the records go to the
 *	stream meanwhile, and the layer asks again at its next look at the
 *	CPU's consumers (after the overflow callback, for one).  @next is
 *	NULL when the hardware leaves: a consumer joined, or this one is
 *	suspended, flushed, or gone.
 *	Context: on the CPU, interrupts off, branch tracing stopped; in NMI
 *	at the window's threshold PMI.  Optional.
 */
struct ds_bts_ops {
	enum ds_overflow_action (*overflow)(struct ds_consumer *c, void *data);
	void (*task_exit)(struct ds_consumer *c, void *data);
	void *(*task_fork)(struct ds_consumer *c, struct ds_consumer *child,
			   void *data);
	bool (*window)(struct ds_consumer *c, void *data, u32 written,
		       bool overran, struct ds_bts_window *next);
};

/* ds_bts_config.flags: */
/* Continuous user-only streams: the traced task waits rather than loses. */
#define DS_BTS_LOSSLESS		BIT(0)
/* Start suspended: nothing is recorded before ds_resume_bts(). */
#define DS_BTS_SUSPENDED	BIT(1)
/* Task scope: trace the threads and processes it creates, see task_fork. */
#define DS_BTS_INHERIT		BIT(2)
/* Take the markers ds_append_marker() puts into the trace, see @markers. */
#define DS_BTS_MARKERS		BIT(3)
/* Take the task's address-space changes (BTS_PSEUDO_MAP), see ds_maps.c. */
#define DS_BTS_MAPS		BIT(4)
/*
 * Task scope: trace the threads the task creates (and they create), not
 * the processes it forks (as a debugger follows its inferior); see
 * task_fork.  Not with DS_BTS_INHERIT.
 */
#define DS_BTS_INHERIT_THREADS	BIT(5)

/**
 * struct ds_marker - an application's event, for ds_append_marker()
 * @source: who wrote it, enum bts_marker_source
 * @name: the event's name, which consumers choose markers by
 * @flags: BTS_MARKER_TRUNCATED, BTS_MARKER_NOT_CAPTURED
 * @id: the event's id
 * @gen: the generation of @id; markers of equal @id and @gen are of one
 *	event, with one @name (the layer matches globs once per event)
 * @addr: the user address of the instruction that wrote the event, or 0
 * @payload: the event's data as captured, the first @len bytes of it
 *	(BTS_MARKER_PAYLOAD_MAX at most) in a buffer of BTS_MARKER_PAYLOAD_MAX,
 *	which the layer reads in whole words
 * @len: bytes at @payload; past BTS_MARKER_PAYLOAD_MAX they are cut, and
 *	the marker says BTS_MARKER_TRUNCATED
 */
struct ds_marker {
	u8		source;
	const char	*name;
	u8		flags;
	u32		id;
	u32		gen;
	u64		addr;
	const void	*payload;
	u32		len;
};

/**
 * struct ds_bts_config - what a BTS consumer asks for
 * @task: trace this task wherever it runs, or NULL for a CPU
 * @cpu: with @task NULL, trace everything this CPU runs
 * @priv: which side of the privilege boundary to record
 * @mode: ring (the last @nr_records) or continuous
 * @flags: DS_BTS_*
 * @nr_records: stream size in records, the last N of a ring
 * @wakeup: continuous mode: call @ops->overflow when this many records are
 *	pending; 0 means half of @nr_records
 * @markers: with DS_BTS_MARKERS, the markers whose name this glob
 *	matches (glob_match()), NULL for all; the consumer keeps a copy
 * @ops: callbacks, or NULL
 * @data: passed to the callbacks
 */
struct ds_bts_config {
	struct task_struct	*task;
	int			cpu;
	enum ds_priv		priv;
	enum ds_mode		mode;
	u32			flags;
	u32			nr_records;
	u32			wakeup;
	const char		*markers;
	const struct ds_bts_ops	*ops;
	void			*data;
};

/**
 * struct ds_bts_status - a consumer's counters
 * @produced: records ever put in the stream, pseudo-records included
 * @pending: continuous mode: records not yet consumed
 * @lost: records lost to a full stream (also reported in-stream)
 * @throttled: lossless mode: times the traced task waited for the consumer
 */
struct ds_bts_status {
	u64	produced;
	u64	pending;
	u64	lost;
	u64	throttled;
};

/**
 * struct ds_bts_swapped - storage ds_swap_bts_buffer() handed back
 * @buf: the storage, @size records
 * @size: its size in records
 * @first: the slot of the oldest record in it
 * @count: how many records it holds, from @first on, wrapping at @size
 */
struct ds_bts_swapped {
	struct bts_record	*buf;
	u32			size;
	u32			first;
	u32			count;
};

#ifdef CONFIG_X86_DS

bool ds_bts_available(void);
bool ds_kernel_recording_allowed(void);
struct ds_consumer *ds_request_bts(const struct ds_bts_config *cfg);
size_t ds_bts_bytes(const struct ds_bts_config *cfg);
void ds_release_bts(struct ds_consumer *c);
void ds_release_bts_many(struct ds_consumer **cs, unsigned int n);
void ds_suspend_bts(struct ds_consumer *c);
void ds_suspend_bts_many(struct ds_consumer **cs, unsigned int n);
void ds_resume_bts(struct ds_consumer *c);
void ds_suspend_local(struct ds_consumer *c);
void ds_resume_local(struct ds_consumer *c);
void ds_flush_local(struct ds_consumer *c);
u32 ds_read_last_bts(struct ds_consumer *c, struct bts_record *out, u32 n);
bool ds_freeze_local(void);
void ds_thaw_local(void);
u32 ds_read_last_local(struct ds_consumer *c, struct bts_record *out, u32 n);
u32 ds_read_last_stopped(struct ds_consumer *c, struct bts_record *out, u32 n);
u32 ds_peek_bts(struct ds_consumer *c, const struct bts_record *runs[2],
		u32 nrs[2], u32 n);
void ds_discard_bts(struct ds_consumer *c, u32 n);
u32 ds_consume_bts(struct ds_consumer *c, struct bts_record *out, u32 n);
void ds_bts_status(struct ds_consumer *c, struct ds_bts_status *st);
u32 ds_bts_buffer_records(struct ds_consumer *c);
struct task_struct *ds_bts_task(struct ds_consumer *c);
int ds_swap_bts_buffer(struct ds_consumer *c, struct bts_record *buf,
		       struct ds_bts_swapped *old);
void ds_append_marker(const struct ds_marker *m);
bool ds_task_takes_marker(struct task_struct *task, const char *name);

void ds_cpu_shutdown(void);

/* Hooks of the x86 core, not for consumers; the entry code's: ds_entry.h. */
void __ds_switch_to(struct task_struct *prev, struct task_struct *next);
void __ds_nmi_enter(void);
void __ds_nmi_exit(void);
void ds_exit_thread(struct task_struct *tsk);
void ds_fork_thread(struct task_struct *child);
void ds_exec_mapped(void);

/* Nothing on the context switch path unless a consumer exists. */
static __always_inline void ds_switch_to(struct task_struct *prev,
					 struct task_struct *next)
{
	if (static_branch_unlikely(&ds_active))
		__ds_switch_to(prev, next);
}

/* Around the handlers of every NMI: nothing is traced in between. */
static __always_inline void ds_nmi_enter(void)
{
	if (static_branch_unlikely(&ds_active))
		__ds_nmi_enter();
}

static __always_inline void ds_nmi_exit(void)
{
	if (static_branch_unlikely(&ds_active))
		__ds_nmi_exit();
}

#else /* !CONFIG_X86_DS */

static inline bool ds_bts_available(void) { return false; }
static inline bool ds_kernel_recording_allowed(void) { return false; }
static inline struct ds_consumer *
ds_request_bts(const struct ds_bts_config *cfg)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline void ds_append_marker(const struct ds_marker *m) { }
static inline bool ds_task_takes_marker(struct task_struct *task,
					const char *name)
{
	return false;
}

static inline bool ds_freeze_local(void) { return false; }
static inline void ds_thaw_local(void) { }
static inline void ds_switch_to(struct task_struct *prev,
				struct task_struct *next) { }
static inline void ds_nmi_enter(void) { }
static inline void ds_nmi_exit(void) { }
static inline void ds_exit_thread(struct task_struct *tsk) { }
static inline void ds_fork_thread(struct task_struct *child) { }
static inline void ds_exec_mapped(void) { }

static inline void ds_cpu_shutdown(void) { }

#endif /* CONFIG_X86_DS */

#endif /* _ASM_X86_DS_H */
