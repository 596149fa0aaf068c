/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the Debug Store layer share: ds.c, which owns the
 * hardware and produces the streams; ds_consumer.c, the consumers' side;
 * ds_annotate.c (markers and the other annotations staged among the
 * branches) and ds_maps.c.
 */
#ifndef __X86_KERNEL_DS_LAYER_H
#define __X86_KERNEL_DS_LAYER_H

#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <uapi/linux/bts.h>
#include <asm/ds.h>
#include <asm/intel_ds.h>

#include "ds_core.h"
#include "ds_state.h"

/* Consumers per CPU and per task. */
#define DS_MAX_CONSUMERS	8

/**
 * struct ds_consumer - one consumer of branch records
 * @stream: its records
 * @cfg: what it asked for; @cfg.task holds a task reference
 * @notify: runs @cfg.ops->overflow on the producing CPU
 * @throttle: lossless mode: makes the traced task wait at return to user
 * @wait: the traced task waits here for the consumer to drain
 * @refs: the requester's, plus one while @throttle is queued and one per
 *	task_exit or task_fork call under way
 * @callbacks: task_exit and task_fork calls under way; release waits for 0
 * @suspended: record nothing; read by producers without a lock
 * @dead: released; a waiting task stops waiting
 * @notified: @notify is queued or running
 * @notify_missed: a producer found @notified set and did not queue
 * @throttle_queued: @throttle is queued
 * @throttled: times the traced task waited
 * @limit: lossless mode: pending records beyond which the task waits
 * @untraced: a task's stream told of its run on a CPU that cannot trace
 *	(ds_untraced()); written where the task is switched in
 * @marker_id: with @marker_gen, the last event ds_append_marker() asked
 *	about, @marker_wanted whether the glob takes it (valid once
 *	@marker_cached); written by the writer of the event, the task or on
 *	the CPU the consumer traces, with interrupts off
 * @marker_gen: see @marker_id
 * @marker_wanted: see @marker_id
 * @marker_cached: see @marker_id
 * @named: a task's stream that takes maps has its task's name, which
 *	the first resume writes (ds_name_stream())
 * @memcg: the memory cgroup its memory is charged to, and that of the
 *	consumers made from it for the children of its task (a reference)
 * @rcu: frees the consumer a grace period after its last reference went:
 *	ds_task_takes_marker() reads the consumers of sets it found before
 *	their task exited
 */
struct ds_consumer {
	struct ds_stream	stream;
	struct ds_bts_config	cfg;
	struct irq_work		notify;
	struct callback_head	throttle;
	wait_queue_head_t	wait;
	refcount_t		refs;
	atomic_t		callbacks;
	bool			suspended;
	bool			dead;
	atomic_t		notified;
	atomic_t		notify_missed;
	atomic_t		throttle_queued;
	atomic64_t		throttled;
	u32			limit;
	bool			untraced;
	u32			marker_id;
	u32			marker_gen;
	bool			marker_wanted;
	bool			marker_cached;
	bool			named;
	struct mem_cgroup	*memcg;
	struct rcu_head		rcu;
};

/**
 * struct ds_set - the consumers of one CPU or one task
 * @rcu: frees a replaced set
 * @nr: entries in @c
 * @c: the consumers
 */
struct ds_set {
	struct rcu_head		rcu;
	unsigned int		nr;
	struct ds_consumer	*c[DS_MAX_CONSUMERS];
};

/**
 * struct ds_cpu - a CPU's side of the layer
 * @st: its hardware's state (ds_state.h): mode, pauses, PMIs, freeze
 * @ds: the DS save area, as the hardware addresses it
 * @pages: the staging buffer's pages, or NULL
 * @persist: with bts_persist=, the staging buffer's place in the region
 *	that outlives a reset (ds_persist.c), used in place of new pages;
 *	else 0
 * @set: the CPU's consumers
 * @owner: the task whose records are staged: current, except in
 *	__switch_to() between the switch of current and __ds_switch_to()
 * @in_callback: the consumer whose overflow callback runs here, tracing
 *	paused
 * @pmi_claimed: the NMI under way is the layer's PMI, whose delivery
 *	masked the LVT entry
 */
struct ds_cpu {
	struct ds_state		st;
	struct debug_store	*ds;
	struct page		*pages;
	phys_addr_t		persist;
	struct ds_set __rcu	*set;
	struct task_struct	*owner;
	struct ds_consumer	*in_callback;
	bool			pmi_claimed;
};

DECLARE_PER_CPU(struct ds_cpu, ds_cpu);

void ds_persist_init(void);

/* Records per staging sub-buffer: half the cpu_entry_area slot. */
#define DS_STAGING_RECORDS	(DS_STAGING_SIZE / sizeof(struct bts_record) / 2)

/*
 * Lossless streams get room beyond their size for what a task can produce
 * between the drain that finds the stream full and the task's return to
 * user mode, where it waits: at most two sub-buffers.
 */
#define DS_LOSSLESS_HEADROOM	(2 * DS_STAGING_RECORDS)

/* Records of a stretch in the kernel: BTS_PSEUDO_KERNEL and its detail. */
#define DS_KERNEL_TIME_RECORDS	2

/**
 * struct ds_hw_caps - what the CPUs have
 * @bts: BTS into a 64-bit DS save area
 * @ds_cpl: privilege filtering (DS-CPL)
 * @pebs: PEBS, for the boot log (perf's PEBS code makes its own choices
 *	from the same bits)
 * @pebs_format: PEBS's record format, likewise
 */
struct ds_hw_caps {
	bool	bts;
	bool	ds_cpl;
	bool	pebs;
	u8	pebs_format;
};

extern struct ds_hw_caps ds_hw;

/* Serializes requests, releases and hotplug. */
extern struct mutex ds_mutex;
/* Consumers in existence: the hardware side is up while non-zero. */
extern unsigned int ds_nr_consumers;

static inline bool ds_consumer_on(const struct ds_consumer *c)
{
	return !READ_ONCE(c->suspended);
}

/*
 * Bring up the hardware side for the first consumer; arm the CPUs @cfg
 * needs that are not (a hotplug allocation failed); let it go after the
 * last.  Context: ds_mutex, cpus_read_lock (ds_stop(): ds_mutex).
 */
int ds_start(void);
int ds_arm_missing(const struct ds_bts_config *cfg);
void ds_stop(void);

/* What ds_sync() does on the producing CPU, between drain and restart. */
enum ds_sync_change {
	DS_SYNC_NONE,
	DS_SYNC_SUSPEND,
	DS_SYNC_RESUME,
};

struct ds_sync_arg {
	struct ds_consumer	*c;
	enum ds_sync_change	change;
	bool			done;
};

/*
 * Bring a consumer's stream up to date and apply @change at that point of
 * its trace: ds_sync() from anywhere (may sleep), ds_sync_fn() on the
 * producing CPU with interrupts off, ds_sync_local() for all of this CPU's
 * streams.
 */
void ds_sync(struct ds_consumer *c, enum ds_sync_change change);
void ds_sync_fn(void *arg);
void ds_sync_local(void *unused);

/* The overflow callback's irq_work, on the producing CPU. */
void ds_notify_fn(struct irq_work *work);

/* Drop a reference to @c; the last frees it. */
void ds_consumer_put(struct ds_consumer *c);
/* Whether this runs in one of @c's callbacks, where it cannot be released. */
bool ds_in_own_callback(const struct ds_consumer *c);

/*
 * The records of current's stretch in the kernel that ends at @resume_to;
 * forget its entry from user mode (the stretch went unseen).
 */
void ds_kernel_time(u64 resume_to,
		    struct bts_record rec[DS_KERNEL_TIME_RECORDS]);
void ds_entry_unseen(struct thread_struct *t);

/*
 * The active consumers of @dc and @task (NULL: none), whose streams the
 * records written now go to, into @cons (room for 2 * DS_MAX_CONSUMERS).
 * Callers declare @cons __uninitialized: only the entries returned are
 * read, and they run at each system call of a traced thread, each switch
 * and each drain, where CONFIG_INIT_STACK_ALL_ZERO would clear the array.
 * Context: interrupts off, or RCU-sched otherwise.
 */
unsigned int ds_streams(struct ds_cpu *dc, struct task_struct *task,
			struct ds_consumer **cons);

/* Whether a consumer takes address-space changes (DS_BTS_MAPS). */
bool ds_maps_wanted(void);
bool ds_task_takes_maps(struct task_struct *tsk);
bool ds_lenders_exist(void);

/*
 * Stage @nr records for the streams of the current task and this CPU that
 * take @flag's annotations, in order with the task's branches.
 * Context: not NMI; preemption may be on.
 */
void ds_append_optional(const struct bts_record *rec, unsigned int nr,
			u32 flag);
void ds_name_stream(struct ds_consumer *c);

/* What the tests count (ds_debugfs.c), nothing without X86_DS_DEBUGFS. */
#ifdef CONFIG_X86_DS_DEBUGFS
extern bool ds_audit;
DECLARE_PER_CPU(u64, ds_windows);
void ds_audit_staged(const struct bts_record *recs, u32 nr);

static inline void ds_debugfs_staged(const struct bts_record *recs, u32 nr)
{
	if (unlikely(READ_ONCE(ds_audit)))
		ds_audit_staged(recs, nr);
}

static inline void ds_debugfs_window_lent(void)
{
	this_cpu_inc(ds_windows);
}
#else
static inline void ds_debugfs_staged(const struct bts_record *recs, u32 nr) { }
static inline void ds_debugfs_window_lent(void) { }
#endif

#endif /* __X86_KERNEL_DS_LAYER_H */
