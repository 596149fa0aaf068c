// SPDX-License-Identifier: GPL-2.0
/*
 * The state machine of a CPU's BTS hardware; see ds_state.h for the
 * states and their transitions.
 *
 * All of it runs on the CPU, with interrupts off or in NMI, so the only
 * concurrency is an NMI between any two steps.  The rules that make that
 * safe:
 *
 * - The hardware never runs while the CPU is paused.  ds_state_pause()
 *   stops it before the pause begins and ds_state_restart() restarts it
 *   after the pause ends, so that an NMI that finds the CPU paused can
 *   leave the records to the pauser, who has yet to drain them or has
 *   drained them already, while one that does not holds the hardware as it
 *   finds it and drains a full sub-buffer itself.
 * - An NMI never changes the mode, nor re-evaluates what the consumers
 *   want: the code it interrupted may be in the middle of its own
 *   read-modify-write of DEBUGCTL or of the DS save area, which must find
 *   them as it read them.  It restarts the hardware exactly as it was.
 * - Each threshold PMI is claimed once (ds_state_nmi_pmi()): the NMI
 *   handlers of other drivers decide about theirs, and an NMI nobody
 *   claims is reported as unknown.
 * - What an NMI does change, it changes as a drain does: where the
 *   hardware writes (the other sub-buffer, a lender's next window or,
 *   out of windows, the staging buffer: @spent), which code that is not
 *   paused never reads.
 *
 * The compiler barriers order each step against an NMI on the same CPU,
 * which sees the CPU's own stores in program order; nothing here is shared
 * with other CPUs.
 */
#include "ds_state.h"

#if !defined(__KERNEL__)
/* The harness: the model's, always. */
static inline const struct ds_state_ops *ds_ops(const struct ds_state *s)
{
	return s->ops;
}
#else
/*
 * The CPU's: a constant, so that the compiler makes the calls through it
 * direct ones, with no indirect call in the NMI paths.
 */
static const struct ds_state_ops ds_hw_ops = {
	.stop	= ds_hw_stop,
	.write	= ds_hw_write,
	.wanted	= ds_hw_wanted,
	.ring	= ds_hw_ring,
	.lender	= ds_hw_lender,
	.window	= ds_hw_window,
	.splay	= ds_hw_splay,
};

/* The KUnit suite's model where it gave ops (DS_STATE_MODEL). */
static inline const struct ds_state_ops *ds_ops(const struct ds_state *s)
{
#ifdef DS_STATE_MODEL
	if (s->ops)
		return s->ops;
#endif
	return &ds_hw_ops;
}
#endif

static void ds_state_set_mode(struct ds_state *s, enum ds_state_mode mode)
{
	/* An NMI never changes the mode: see the rules above. */
	WARN_ON_ONCE(s->nmi);
	s->mode = mode;
}

/*
 * Set DEBUGCTL's layer bits; a frozen CPU keeps its last records.  @bits is
 * zero only while the hardware's are, which lets an NMI on a CPU that runs
 * an untraced task leave DEBUGCTL alone (ds_state_hold()): it is set before
 * a write that starts the hardware and follows one that stops it.  An NMI
 * between the two reads the hardware, restarts it as the write left it and
 * stores the same.
 */
static void ds_state_write(struct ds_state *s, u64 bits)
{
	if (unlikely(READ_ONCE(s->frozen)))
		bits = 0;
	if (bits)
		s->bits = bits;
	/* Pairs with the NMI's read of @bits in ds_state_hold(): same CPU. */
	barrier();
	ds_ops(s)->write(s, bits);
	barrier();
	s->bits = bits;
}

/*
 * What the consumers want; a ring overwrites its oldest record only with
 * BTINT clear.
 */
static u64 ds_state_wanted(struct ds_state *s, struct task_struct *task)
{
	u64 bits;

	if (s->mode == DS_STATE_OFF)
		return 0;
	bits = ds_ops(s)->wanted(s, task);
	if (s->mode == DS_STATE_RING)
		bits &= ~DS_DEBUGCTL_BTINT;
	return bits;
}

/**
 * ds_state_init() - give a CPU's state its hardware and staging buffer
 * @s:     the state, DS_STATE_OFF and not paused
 * @ops:   the model's hardware and consumers, or NULL: the CPU's (ds.c)
 * @area:  the BTS fields of the CPU's DS save area
 * @buf:   the staging buffer, 2 * @nr records
 * @nr:    records per sub-buffer
 * @slack: records between the threshold and the end of a sub-buffer
 */
void ds_state_init(struct ds_state *s, const struct ds_state_ops *ops,
		   struct ds_bts_area *area, struct bts_record *buf, u32 nr,
		   u32 slack)
{
#ifdef DS_STATE_MODEL
	s->ops = ops;
#endif
	s->area = area;
	ds_staging_init(&s->staging, buf, nr, slack);
}

/**
 * ds_state_pause() - stop the hardware for the layer's own work
 * @s: the CPU's state
 *
 * Pauses nest; ds_state_unpause() or ds_state_restart() ends one.
 */
void ds_state_pause(struct ds_state *s)
{
	if (!s->pause)
		ds_state_write(s, 0);
	/* An NMI from here on leaves the records to us. */
	barrier();
	s->pause++;
}

/**
 * ds_state_restart() - end a pause, restarting the hardware with @bits
 * @s:    the CPU's state
 * @bits: DEBUGCTL's layer bits, if this ends the outermost pause
 *
 * Without a look at the consumers: for code that stopped the hardware with
 * ds_state_hold() and restarts it as it was.
 */
void ds_state_restart(struct ds_state *s, u64 bits)
{
	barrier();
	if (--s->pause)
		return;
	/* An NMI from here on holds the hardware and drains. */
	barrier();
	ds_state_write(s, bits);
}

/**
 * ds_state_hold() - stop the hardware, to restart it exactly as it was
 * @s: the CPU's state, not paused
 *
 * For NMI and interrupt code, which may have interrupted someone's
 * read-modify-write of DEBUGCTL: end it with ds_state_restart() and the
 * bits returned, which does not re-evaluate the mix of consumers as
 * ds_state_unpause() does.
 *
 * Return: DEBUGCTL's layer bits as they were; without a look at the
 * hardware when the state machine last cleared them (ds_state_write()).
 */
u64 ds_state_hold(struct ds_state *s)
{
	u64 bits = READ_ONCE(s->bits) ? ds_ops(s)->stop(s) : 0;

	barrier();
	s->pause++;
	return bits;
}

/* Point the hardware at a lender's window; it is not writing. */
static bool ds_state_window_arm(struct ds_state *s,
				const struct ds_bts_window *w)
{
	u64 base = (u64)(unsigned long)w->base;
	u64 rec = sizeof(struct bts_record);

	/* Its PMI would come too late to save a record. */
	if (WARN_ON_ONCE(w->nr <= s->staging.slack))
		return false;
	s->area->base = base;
	s->area->index = base;
	s->area->max = base + w->nr * rec;
	s->area->threshold = s->area->max - s->staging.slack * rec;
	return true;
}

/* The records the hardware wrote into the window, and whether it was full. */
static u32 ds_state_window_written(const struct ds_bts_area *hw,
				   bool *overran)
{
	u64 index = READ_ONCE(hw->index);

	*overran = index >= hw->max;
	return (min(index, hw->max) - hw->base) / sizeof(struct bts_record);
}

/*
 * The PMI of the sub-buffer or window the hardware writes is owed if it
 * reached its threshold, unless an NMI claims it, before this (with the
 * same generation) or after.  Paused: the index stays put.  An NMI may run
 * between any two of these steps; see ds_state_pmi_claim().
 */
static void ds_state_pmi_owed(struct ds_state *s)
{
	if (READ_ONCE(s->area->index) >= s->area->threshold)
		s->pmi_owed_gen = s->pmi_gen;
	barrier();
}

/* Splay the sub-buffer the hardware writes; it is not writing. */
static void ds_state_splay_drain(struct ds_state *s, struct task_struct *task)
{
	const struct bts_record *recs;
	bool overran;
	u32 nr;

	ds_state_pmi_owed(s);
	nr = ds_staging_take(&s->staging, s->area, &recs, &overran);
	barrier();
	s->pmi_gen++;
	/* Even without records: a stream may owe a loss record. */
	ds_ops(s)->splay(s, task, recs, nr, overran);
}

/*
 * The lender takes what its window got (a spent one has had its last),
 * and the hardware goes back to sub-buffers.
 */
static void ds_state_direct_leave(struct ds_state *s,
				  struct task_struct *task)
{
	bool overran;
	u32 written;

	if (s->spent) {
		ds_state_splay_drain(s, task);
	} else {
		ds_state_pmi_owed(s);
		written = ds_state_window_written(s->area, &overran);
		ds_ops(s)->window(s, s->lender, written, overran, NULL);
		ds_staging_arm(&s->staging, s->area);
		barrier();
		s->pmi_gen++;
	}
	s->lender = NULL;
	s->spent = false;
	ds_state_set_mode(s, DS_STATE_SPLAY);
}

/*
 * Lend the hardware to @lender, if it has a window: a drained CPU, in
 * DS_STATE_SPLAY.
 */
static void ds_state_direct_enter(struct ds_state *s,
				  struct ds_consumer *lender)
{
	struct ds_bts_window w;

	if (!ds_ops(s)->window(s, lender, 0, false, &w) ||
	    !ds_state_window_arm(s, &w))
		return;
	s->lender = lender;
	ds_state_set_mode(s, DS_STATE_DIRECT);
}

/* Hand the hardware's ring to its consumer's stream; back to sub-buffers. */
static void ds_state_ring_leave(struct ds_state *s)
{
	const struct bts_record *segs[2];
	u32 nrs[2];

	ds_staging_take_ring(&s->staging, s->area, segs, nrs);
	ds_splay(segs[0], nrs[0], &s->ring, 1);
	ds_splay(segs[1], nrs[1], &s->ring, 1);
	s->ring = NULL;
	ds_state_set_mode(s, DS_STATE_SPLAY);
}

/**
 * ds_state_drain() - splay what the hardware wrote into the streams
 * @s:    the CPU's state, paused
 * @task: who ran while the records were written
 *
 * In DS_STATE_RING the ring's records go to its stream, in DS_STATE_DIRECT
 * the lender takes its window's, and the hardware goes back to
 * sub-buffers: the consumer is about to look, or another joins it.
 */
void ds_state_drain(struct ds_state *s, struct task_struct *task)
{
	switch (s->mode) {
	case DS_STATE_OFF:
		break;
	case DS_STATE_RING:
		ds_state_ring_leave(s);
		break;
	case DS_STATE_DIRECT:
		ds_state_direct_leave(s, task);
		break;
	default:
		ds_state_splay_drain(s, task);
	}
}

/**
 * ds_state_lent() - whether the hardware writes a lender's window
 * @s: the CPU's state, paused
 *
 * Its records then are the lender's alone, and no drain is needed to say
 * whose they are.
 */
bool ds_state_lent(const struct ds_state *s)
{
	return s->mode == DS_STATE_DIRECT && !s->spent;
}

/**
 * ds_state_unpause() - end a pause, the hardware doing what the consumers
 * now want
 * @s:    the CPU's state, paused
 * @task: who runs now
 *
 * Ending the outermost pause, drains what the hardware wrote and restarts
 * it as a ring for a lone ring consumer, or in the windows of a lender,
 * either of which keeps going untouched while it stays alone, or with
 * sub-buffers.
 */
void ds_state_unpause(struct ds_state *s, struct task_struct *task)
{
	u64 bits = 0;

	if (s->pause == 1 && s->mode != DS_STATE_OFF) {
		struct ds_consumer *lender = ds_ops(s)->lender(s, task);
		struct ds_stream *ring = lender ? NULL : ds_ops(s)->ring(s, task);

		if (!(ring && ring == s->ring) &&
		    !(lender && lender == s->lender && !s->spent)) {
			ds_state_drain(s, task);
			if (ring) {
				ds_staging_arm_ring(&s->staging, s->area);
				s->ring = ring;
				ds_state_set_mode(s, DS_STATE_RING);
			} else if (lender) {
				ds_state_direct_enter(s, lender);
			}
		}
		bits = ds_state_wanted(s, task);
	}
	ds_state_restart(s, bits);
}

/**
 * ds_state_release() - end the hold a consumer's callback ran in
 * @s:       the CPU's state, held by ds_state_hold()
 * @task:    who runs now
 * @bits:    what ds_state_hold() returned
 * @changed: the callback changed what the consumers want (it suspended
 *	its consumer)
 *
 * The hardware restarts as it was, but for what the callback may have
 * changed.  A sub-buffer that records software wrote, or the hardware
 * while its PMI was held back, took past its threshold is drained: no PMI
 * comes for it.  (A ring never reaches its threshold; a lender's window,
 * only with the hardware running, when its PMI comes.)  A lender the
 * hardware does not write (it had no window, or spent its turn) is asked
 * again: its callback may have made room.  And if @changed, the hardware
 * does what the consumers now want, as after ds_state_unpause().
 *
 * Context: interrupts off, not NMI.
 */
void ds_state_release(struct ds_state *s, struct task_struct *task, u64 bits,
		      bool changed)
{
	if (s->pause == 1 && s->mode != DS_STATE_OFF &&
	    (changed || (!ds_state_lent(s) && ds_ops(s)->lender(s, task)))) {
		ds_state_unpause(s, task);
		return;
	}
	if ((s->mode == DS_STATE_SPLAY || s->spent) &&
	    READ_ONCE(s->area->index) >= READ_ONCE(s->area->threshold))
		ds_state_drain(s, task);
	ds_state_restart(s, bits);
}

/**
 * ds_state_arm() - point the hardware at the staging buffer
 * @s:    the CPU's state, DS_STATE_OFF
 * @task: who runs now
 */
void ds_state_arm(struct ds_state *s, struct task_struct *task)
{
	ds_state_pause(s);
	ds_staging_arm(&s->staging, s->area);
	ds_state_set_mode(s, DS_STATE_SPLAY);
	ds_state_unpause(s, task);
}

/**
 * ds_state_disarm() - drain, then leave the hardware off and unpointed
 * @s:    the CPU's state
 * @task: who runs now
 */
void ds_state_disarm(struct ds_state *s, struct task_struct *task)
{
	ds_state_pause(s);
	ds_state_drain(s, task);
	ds_state_set_mode(s, DS_STATE_OFF);
	memset(s->area, 0, sizeof(*s->area));
	ds_state_unpause(s, task);
}

/**
 * ds_state_offline() - forget the hardware of a CPU that went offline
 * @s: the CPU's state
 *
 * Context: not on the CPU, which runs no more.
 */
void ds_state_offline(struct ds_state *s)
{
	s->ring = NULL;
	s->lender = NULL;
	s->spent = false;
	s->bits = 0;
	ds_state_set_mode(s, DS_STATE_OFF);
}

/*
 * Whether the hardware writes no record while the CPU runs in the kernel,
 * an NMI's handler included: it is off, or it leaves out CPL 0.  @bits is
 * set before a write that starts the hardware (ds_state_write()), and an
 * NMI restores the hardware's as it found them.
 */
static bool ds_state_kernel_unrecorded(const struct ds_state *s)
{
	u64 bits = READ_ONCE(s->bits);

	return !bits || (bits & DS_DEBUGCTL_BTS_OFF_OS);
}

/**
 * ds_state_stage() - write records where the hardware writes its next one
 * @s:    the CPU's state, armed and not paused
 * @rec:  the records, pseudo-records
 * @nr:   how many
 * @task: who runs now
 *
 * They reach the streams in order with the branches around them: through
 * the staging buffer, or the ring of a lone ring consumer.  A lender takes
 * only the hardware's records, so in DS_STATE_DIRECT they are for a
 * consumer that has yet to be synced in, and are not its.
 */
void ds_state_stage(struct ds_state *s, const struct bts_record *rec,
		    unsigned int nr, struct task_struct *task)
{
	unsigned int i;
	u64 bits;

	/*
	 * A hardware that records nothing in the kernel leaves the index to
	 * us and the NMIs' drains: no DEBUGCTL access (two reads and two
	 * writes) at each system call of a user-only consumer's task.
	 */
	if (s->mode == DS_STATE_SPLAY && ds_state_kernel_unrecorded(s) &&
	    ds_staging_try_append(&s->staging, s->area, rec, nr))
		return;
	bits = ds_state_hold(s);
	if (s->mode == DS_STATE_DIRECT) {
		ds_state_restart(s, bits);
		return;
	}
	if (s->mode == DS_STATE_RING) {
		for (i = 0; i < nr; i++)
			ds_staging_ring_append(&s->staging, s->area, &rec[i]);
		ds_state_restart(s, bits);
		return;
	}
	ds_staging_append(&s->staging, s->area, rec, nr);
	ds_state_restart(s, bits);
	/*
	 * No PMI comes for a record software wrote: drain a sub-buffer the
	 * records took to its threshold now.  An NMI after the hold ended
	 * drained it already.  The unpause drains, and may enter a ring.
	 */
	if (READ_ONCE(s->area->index) >= READ_ONCE(s->area->threshold)) {
		ds_state_pause(s);
		ds_state_unpause(s, task);
	}
}

/**
 * ds_state_nmi_enter() - stop tracing for an NMI
 * @s: the CPU's state
 *
 * Every NMI runs untraced, so that neither its handlers nor a drain fill
 * the slack of the sub-buffer, and no handler's branches reach a stream.
 * A paused CPU's hardware is off already, and its pauser drains.
 */
void ds_state_nmi_enter(struct ds_state *s)
{
	s->nmi++;
	barrier();
	if (s->mode == DS_STATE_OFF || s->pause)
		return;
	s->nmi_bits = ds_state_hold(s);
	s->nmi_held = true;
}

/*
 * Whether an NMI is the threshold PMI: for the sub-buffer armed now, which
 * reached its threshold, or owed for one a drain took past it before the
 * PMI arrived.  Claims it, so that it is claimed once.  A ring raises no
 * PMI: its threshold lies past its end.
 */
static bool ds_state_pmi_claim(struct ds_state *s)
{
	if (READ_ONCE(s->area->index) >= READ_ONCE(s->area->threshold)) {
		s->pmi_claimed_gen = s->pmi_gen;
		return true;
	}
	if (s->pmi_owed_gen != s->pmi_claimed_gen) {
		s->pmi_claimed_gen = s->pmi_owed_gen;
		return true;
	}
	return false;
}

/*
 * The lender takes its window's records and lends the next, or the
 * staging buffer takes over until the mode is next looked at.  In NMI.
 */
static void ds_state_window_next(struct ds_state *s)
{
	struct ds_bts_window w;
	bool overran, lent;
	u32 written;

	ds_state_pmi_owed(s);
	written = ds_state_window_written(s->area, &overran);
	lent = ds_ops(s)->window(s, s->lender, written, overran, &w);
	if (!lent || !ds_state_window_arm(s, &w)) {
		ds_staging_arm(&s->staging, s->area);
		s->spent = true;
	}
	barrier();
	s->pmi_gen++;
}

/**
 * ds_state_nmi_pmi() - the layer's NMI handler
 * @s:    the CPU's state, between ds_state_nmi_enter() and _exit()
 * @task: whose records are staged, NULL if not known (mid-switch: the
 *	switch drains them)
 *
 * Drains the full sub-buffer of its threshold PMI, or hands a full window
 * to its lender, unless the layer had the hardware paused, when the pauser
 * drains.  Never changes the mode.
 *
 * Return: whether the NMI was the layer's PMI.
 */
bool ds_state_nmi_pmi(struct ds_state *s, struct task_struct *task)
{
	bool full;

	if (s->mode == DS_STATE_OFF)
		return false;
	/* Not a ring, then: a ring never reaches its threshold. */
	full = READ_ONCE(s->area->index) >= READ_ONCE(s->area->threshold);
	if (!ds_state_pmi_claim(s))
		return false;
	/* An owed PMI's sub-buffer or window was drained already. */
	if (!full || !s->nmi_held)
		return true;
	/* A lender's records are its own, whoever ran. */
	if (ds_state_lent(s))
		ds_state_window_next(s);
	else if (task)
		ds_state_splay_drain(s, task);
	return true;
}

/**
 * ds_state_nmi_exit() - restart tracing after an NMI, exactly as it was
 * @s: the CPU's state
 */
void ds_state_nmi_exit(struct ds_state *s)
{
	if (s->nmi_held) {
		s->nmi_held = false;
		/* Found off, left off: no DEBUGCTL access for an NMI then. */
		if (s->nmi_bits) {
			ds_state_restart(s, s->nmi_bits);
		} else {
			barrier();
			s->pause--;
		}
	}
	barrier();
	s->nmi--;
}

/**
 * ds_state_freeze() - stop the hardware until ds_state_thaw()
 * @s: the CPU's state
 *
 * Whatever runs next (an unpause, a switch, the end of an NMI) leaves it
 * off, so that a crash keeps the branches that led to it.
 *
 * Return: true if this call froze the CPU, false if it was frozen already.
 */
bool ds_state_freeze(struct ds_state *s)
{
	if (s->frozen)
		return false;
	WRITE_ONCE(s->frozen, true);
	/* The flag first: an NMI from here on restarts nothing. */
	barrier();
	ds_state_write(s, 0);
	return true;
}

/**
 * ds_state_thaw() - let the hardware run again after a freeze
 * @s:    the CPU's state
 * @task: who runs now
 *
 * At once, or when whoever holds it paused restarts it.
 */
void ds_state_thaw(struct ds_state *s, struct task_struct *task)
{
	if (!s->frozen)
		return;
	WRITE_ONCE(s->frozen, false);
	barrier();
	if (!s->pause)
		ds_state_write(s, ds_state_wanted(s, task));
}

/**
 * ds_state_drain_frozen() - drain a frozen CPU's sub-buffer, from anywhere
 * @s:    the CPU's state, frozen
 * @task: whose records are staged
 *
 * Safe in NMI: a paused CPU's records are left to its pauser, and a ring
 * is left as it is (an NMI never changes the mode).
 */
void ds_state_drain_frozen(struct ds_state *s, struct task_struct *task)
{
	if (s->mode != DS_STATE_SPLAY || s->pause)
		return;
	/* Paused without ds_state_pause(): the hardware is off already. */
	s->pause++;
	barrier();
	ds_state_drain(s, task);
	barrier();
	s->pause--;
}
