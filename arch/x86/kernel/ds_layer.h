/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What ds.c, which owns the hardware and the consumers, offers the other
 * files of the Debug Store layer: ds_annotate.c (markers and the other
 * annotations staged among the branches) and ds_maps.c.
 */
#ifndef __X86_KERNEL_DS_LAYER_H
#define __X86_KERNEL_DS_LAYER_H

#include <linux/irq_work.h>
#include <linux/percpu.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <uapi/linux/bts.h>
#include <asm/ds.h>

#include "ds_core.h"

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
 * @ds: the DS save area, as the hardware addresses it
 * @staging: the staging buffer, in the cpu_entry_area
 * @pages: the staging buffer's pages, or NULL
 * @set: the CPU's consumers
 * @ring: the consumer the hardware serves directly, writing the whole
 *	staging buffer as a ring (see ds_ring_candidate()), or NULL
 * @owner: the task whose records are staged: current, except in
 *	__switch_to() between the switch of current and __ds_switch_to()
 * @pause: nesting depth of ds_pause(); the hardware is off while non-zero
 * @armed: @ds points at @staging
 * @pmi_gen: counts the sub-buffers drained: the threshold PMI the hardware
 *	raises belongs to the sub-buffer armed when it reached the threshold
 * @pmi_owed_gen: the last sub-buffer a drain took past its threshold; its
 *	PMI may arrive after the drain
 * @pmi_claimed_gen: the last sub-buffer whose PMI an NMI claimed; a PMI
 *	is owed while it differs from @pmi_owed_gen
 * @in_callback: the consumer whose overflow callback runs here, tracing
 *	paused
 * @nmi_paused: __ds_nmi_enter() stopped the hardware for this NMI
 * @nmi_bits: the layer's DEBUGCTL bits the NMI found, to restore
 * @frozen: ds_freeze_local(): the hardware stays off whatever asks
 */
struct ds_cpu {
	struct debug_store	*ds;
	struct ds_staging	staging;
	struct page		*pages;
	struct ds_set __rcu	*set;
	struct ds_consumer	*ring;
	struct task_struct	*owner;
	int			pause;
	bool			armed;
	u64			pmi_gen;
	u64			pmi_owed_gen;
	u64			pmi_claimed_gen;
	struct ds_consumer	*in_callback;
	bool			nmi_paused;
	u64			nmi_bits;
	bool			frozen;
};

DECLARE_PER_CPU(struct ds_cpu, ds_cpu);

/*
 * The active consumers of @dc and @task (NULL: none), whose streams the
 * records written now go to, into @cons (room for 2 * DS_MAX_CONSUMERS).
 * Context: interrupts off, or RCU-sched otherwise.
 */
unsigned int ds_streams(struct ds_cpu *dc, struct task_struct *task,
			struct ds_consumer **cons);

/*
 * Write @nr records where the hardware writes its next one on @dc.
 * Context: interrupts off, on @dc's CPU, not paused.
 */
void ds_stage(struct ds_cpu *dc, const struct bts_record *rec,
	      unsigned int nr);

/* Whether a consumer takes address-space changes (DS_BTS_MAPS). */
bool ds_maps_wanted(void);

/*
 * Stage @nr records for the streams of the current task and this CPU that
 * take @flag's annotations, in order with the task's branches.
 * Context: not NMI; preemption may be on.
 */
void ds_append_optional(const struct bts_record *rec, unsigned int nr,
			u32 flag);

#endif /* __X86_KERNEL_DS_LAYER_H */
