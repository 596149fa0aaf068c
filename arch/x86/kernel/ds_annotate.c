// SPDX-License-Identifier: GPL-2.0
/*
 * The x86 Debug Store layer: annotations staged among the branches.
 *
 * A marker (an application's event, ds_append_marker()) or another
 * annotation (an address-space change, ds_append_optional()) is written
 * where the hardware writes its next record on the CPU, so that it reaches
 * the streams in order with the branches around it, and only the streams
 * that take it: a marker is preceded by one recipient record per stream
 * whose glob matches (ds_core.h, DS_STAGED_RECIPIENT), and ds_splay()
 * gives it to those only.
 */
#define pr_fmt(fmt) "x86/ds: " fmt

#include <linux/glob.h>
#include <linux/irqflags.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/unaligned.h>

#include <kunit/visibility.h>

#include <asm/ds.h>

#include "ds_core.h"
#include "ds_layer.h"

/* The first @n bytes of little-endian @v, the others zero; @n < 8. */
static u64 ds_le_bytes(u64 v, unsigned int n)
{
	return v & (BIT_ULL(8 * n) - 1);
}

/* The records of @m: its payload's details, then the marker. */
static unsigned int ds_marker_records(const struct ds_marker *m,
				      struct bts_record *rec)
{
	unsigned int len = min_t(u32, m->len, BTS_MARKER_PAYLOAD_MAX);
	unsigned int flags = m->flags, i, nr = DIV_ROUND_UP(len, 16), left;
	u64 lo, hi;

	if (m->len > len)
		flags |= BTS_MARKER_TRUNCATED;
	for (i = 0; i < nr; i++) {
		/* Whole words: @payload has BTS_MARKER_PAYLOAD_MAX bytes. */
		lo = get_unaligned_le64(m->payload + 16 * i);
		hi = get_unaligned_le64(m->payload + 16 * i + 8);
		left = len - 16 * i;
		/* A last chunk short of 16 bytes is padded with zeroes. */
		if (left < 8) {
			lo = ds_le_bytes(lo, left);
			hi = 0;
		} else if (left < 16) {
			hi = ds_le_bytes(hi, left - 8);
		}
		rec[i] = (struct bts_record) {
			.from	= BTS_PSEUDO(BTS_PSEUDO_DETAIL,
					     BTS_DETAIL_ARG(BTS_PSEUDO_MARKER,
							    BTS_DETAIL_MARKER_PAYLOAD,
							    i)),
			.to	= lo,
			.flags	= hi,
		};
	}
	rec[nr] = (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_MARKER,
				     BTS_MARKER_ARG(m->source, flags, len)),
		.to	= m->addr,
		.flags	= (u64)m->gen << 32 | m->id,
	};
	return nr + 1;
}

/*
 * Whether a stream of the current task or of this CPU takes what @flag
 * asks for.  Context: interrupts off.
 */
static bool ds_taken_here(struct ds_cpu *dc, u32 flag)
{
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS] __uninitialized;
	unsigned int i, n;

	lockdep_assert_irqs_disabled();
	n = dc->st.mode != DS_STATE_OFF ? ds_streams(dc, current, cons) : 0;
	for (i = 0; i < n; i++)
		if (cons[i]->cfg.flags & flag)
			return true;
	return false;
}

/*
 * Stage an annotation that the streams asking for @flag's records take
 * (ds_splay() leaves it out of the others), where the hardware writes its
 * next record on this CPU: it follows every branch the current task took
 * before and precedes every later one.  Only if such a stream is here.
 */
void ds_append_optional(const struct bts_record *rec, unsigned int nr,
			u32 flag)
{
	unsigned long irqf;
	struct ds_cpu *dc;

	local_irq_save(irqf);
	dc = this_cpu_ptr(&ds_cpu);
	if (ds_taken_here(dc, flag))
		ds_state_stage(&dc->st, rec, nr, current);
	local_irq_restore(irqf);
}

/* Whether @c takes markers by this name: DS_BTS_MARKERS and its glob. */
static bool ds_wants_marker(const struct ds_consumer *c, const char *name)
{
	return (c->cfg.flags & DS_BTS_MARKERS) &&
	       (!c->cfg.markers || glob_match(c->cfg.markers, name));
}

/*
 * ds_wants_marker() for the marker @m written here, the glob matched once
 * per event: an application writes the same events again and again.
 * Context: interrupts off, @c a consumer of this CPU or of current.
 */
static bool ds_wants_marker_here(struct ds_consumer *c,
				 const struct ds_marker *m)
{
	if (!(c->cfg.flags & DS_BTS_MARKERS) || !c->cfg.markers)
		return c->cfg.flags & DS_BTS_MARKERS;
	if (!c->marker_cached || c->marker_id != m->id ||
	    c->marker_gen != m->gen) {
		c->marker_wanted = glob_match(c->cfg.markers, m->name);
		c->marker_id = m->id;
		c->marker_gen = m->gen;
		c->marker_cached = true;
	}
	return c->marker_wanted;
}

/**
 * ds_task_takes_marker() - does a consumer of a task take these markers?
 * @task: the task
 * @name: the markers' name, as ds_marker::name
 *
 * Whether a consumer that traces @task (its own, not a CPU's) takes the
 * markers @name names, suspended or not: for the user_events bridge, which
 * enables an event in the processes that a branch trace listens to.
 *
 * Context: any but NMI.
 * Return: true if one does.
 */
bool ds_task_takes_marker(struct task_struct *task, const char *name)
{
	const struct ds_set *set;
	unsigned int i;
	bool ret = false;

	/* A released consumer is freed after a grace period. */
	rcu_read_lock();
	set = rcu_dereference(task->thread.ds_consumers);
	for (i = 0; set && i < set->nr && !ret; i++)
		ret = ds_wants_marker(set->c[i], name);
	rcu_read_unlock();
	return ret;
}

/**
 * ds_append_marker() - put an application's event into the branch traces
 * @m: the event
 *
 * Stages the marker where the hardware writes its next record on this CPU,
 * so that it follows every branch the current task took before the call and
 * precedes every later one, in the streams of the current task and of this
 * CPU that take markers by that name (DS_BTS_MARKERS and
 * ds_bts_config::markers); the others never see it.  No drain: the marker
 * reaches the streams with the branches around it.  So a task's stream gets
 * only the markers the task wrote.
 *
 * Context: process or interrupt, not NMI; preemption may be on.
 */
void ds_append_marker(const struct ds_marker *m)
{
	struct bts_record rec[2 * DS_MAX_CONSUMERS +
			      BTS_MARKER_PAYLOAD_MAX / 16 + 1] __uninitialized;
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS] __uninitialized;
	unsigned int i, n, nr = 0;
	unsigned long irqf;
	struct ds_cpu *dc;

	if (!static_branch_unlikely(&ds_active))
		return;
	local_irq_save(irqf);
	dc = this_cpu_ptr(&ds_cpu);
	n = dc->st.mode != DS_STATE_OFF ? ds_streams(dc, current, cons) : 0;
	/* Each stream that takes it names itself; see DS_STAGED_RECIPIENT. */
	for (i = 0; i < n; i++)
		if (ds_wants_marker_here(cons[i], m)) {
			rec[nr] = DS_RECIPIENT(nr, cons[i]->stream.marker_key);
			nr++;
		}
	/* Built only for a stream that takes it: the write path is hot. */
	if (nr)
		ds_state_stage(&dc->st, rec, nr + ds_marker_records(m, rec + nr),
			       current);
	local_irq_restore(irqf);
}
EXPORT_SYMBOL_IF_KUNIT(ds_append_marker);
