// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the DS layer's state machine (ds_state.c) on a model of
 * the BTS hardware, also run in user space by tools/testing/ds.
 *
 * The model raises an NMI wherever a test asks: after any one call the
 * state machine makes into the hardware or the consumers (every position
 * in turn, one per run), or after each call at random.  At every NMI it
 * checks what the rules of ds_state.c promise: the NMI runs untraced and
 * leaves the mode, the pause and DEBUGCTL exactly as it found them.  At
 * every branch: the hardware never records while the CPU is paused or
 * frozen, and writes the memory the mode says (the staging buffer, or the
 * window a lender lent).  After every step of a scenario: DEBUGCTL holds
 * exactly the bits the consumers want, none when nobody wants any.  At the
 * end: every record the hardware wrote
 * reached the streams or its lender once, in order, and every threshold
 * PMI it raised was claimed.
 *
 * A self-test runs the same checks against deliberately broken models,
 * each of which they must catch.
 */
#include <kunit/test.h>
#include "ds_state.h"

/* Records per sub-buffer of the model's staging buffer. */
#define DS_ST_NR		(DS_STAGING_SLACK + 16)
#define DS_ST_THRESHOLD		(DS_ST_NR - DS_STAGING_SLACK)
/* Records of a lender's window, and the threshold the layer puts in it. */
#define DS_ST_WIN_NR		(DS_STAGING_SLACK + 12)
#define DS_ST_WIN_THRESHOLD	(DS_ST_WIN_NR - DS_STAGING_SLACK)
/* Slots of the lone ring consumer's stream: more than the hardware ring. */
#define DS_ST_RING_SLOTS	(2 * DS_ST_NR + 1)
/* Records the checks can follow. */
#define DS_ST_MAX_RECORDS	4096
/*
 * The address of the n-th branch the hardware records, and of the n-th
 * record staged by software: two sequences, each in order in the streams.
 */
#define DS_ST_ADDR(n)		(0x400000ULL + (n))
#define DS_ST_STAGED(n)		(0x800000ULL + (n))
#define DS_ST_ON		(DS_DEBUGCTL_TR | DS_DEBUGCTL_BTS)

/**
 * enum ds_st_fault - a fault planted in the model, for the self-test
 * @DS_ST_SOUND: none
 * @DS_ST_IGNORE_STOP: the first write of 0 that would stop tracing is lost
 * @DS_ST_LOSE_RECORD: the consumers lose the first record splayed
 * @DS_ST_NMI_TRACED: the NMI's handlers turn tracing back on
 * @DS_ST_SILENT_PMI: the hardware raises one threshold PMI that never
 *	arrives, and the layer must not claim its absence either
 * @DS_ST_LOSE_WINDOW_RECORD: the lender takes one record fewer than the
 *	layer says its first window got
 * @DS_ST_BLIND_SWITCH: a switch between untraced tasks leaves the hardware
 *	alone without asking the state machine whether it is quiet
 * @DS_ST_SUSPEND_UNSEEN: a callback's release is not told that the
 *	callback suspended its consumer
 */
enum ds_st_fault {
	DS_ST_SOUND,
	DS_ST_IGNORE_STOP,
	DS_ST_LOSE_RECORD,
	DS_ST_NMI_TRACED,
	DS_ST_SILENT_PMI,
	DS_ST_LOSE_WINDOW_RECORD,
	DS_ST_BLIND_SWITCH,
	DS_ST_SUSPEND_UNSEEN,
};

/**
 * struct ds_st_rig - one CPU of the model, with its consumers
 * @test: the case
 * @s: the state under test
 * @area: the BTS fields of the DS save area
 * @staging: the staging buffer, 2 * DS_ST_NR records
 * @debugctl: the model's DEBUGCTL (the layer's bits)
 * @wanted: what the consumers want
 * @lone_ring: the ring consumer is the CPU's only one
 * @lone_lender: the lender is the CPU's only consumer
 * @windows_left: windows the lender lends before it declines
 * @lent: the lender's memory, two windows, lent in turn
 * @window: the window lent last, at @lent or @lent + DS_ST_WIN_NR; NULL
 *	when none is out
 * @ring: its stream, DS_ST_RING_SLOTS slots at @ring_buf
 * @ring_buf: the slots
 * @scratch: DS_ST_RING_SLOTS records to read the ring's stream into
 * @task: who runs; the task pointer is never dereferenced
 * @owner_known: an NMI knows whose records are staged (not mid-switch)
 * @written: branches the hardware recorded, each at DS_ST_ADDR(its number)
 * @staged: records software staged, each at DS_ST_STAGED(its number)
 * @seen: how often branch n reached the consumers, for n < @written
 * @seen_staged: the same for staged record n
 * @ringed: branch n was written into the hardware ring, which overwrites
 *	its oldest records by design
 * @last: the number of the last branch and of the last staged record the
 *	splay op got, -1 before the first
 * @pmis_raised: threshold PMIs the hardware raised
 * @pmis_claimed: NMIs the layer claimed
 * @nmis: NMIs raised
 * @nmi_hw_calls: DEBUGCTL reads and writes made in NMI
 * @soft_crossings: a staged record took a sub-buffer to its threshold,
 *	where no PMI comes but the drain cannot tell and owes one
 * @full_nmis: NMIs of other drivers that found the sub-buffer at or past
 *	its threshold, which the layer claims: the SDM's "matches or
 *	exceeds" lets the hardware raise a PMI for each record past it
 * @calls: steps into and out of the calls the state machine made into the
 *	model
 * @inject_at: raise an NMI at this step, or -1
 * @rnd: xorshift state for NMIs at random, 0 for none
 * @in_nmi: an NMI is under way
 * @frozen: between the return of ds_state_freeze() and the thaw
 * @fault: enum ds_st_fault
 * @planted: the fault happened
 * @faults: what the checks found wrong
 * @step: what the scenario is doing, for messages
 */
struct ds_st_rig {
	struct kunit		*test;
	struct ds_state		s;
	struct ds_bts_area	area;
	struct bts_record	*staging;
	u64			debugctl;
	u64			wanted;
	bool			lone_ring;
	bool			lone_lender;
	u32			windows_left;
	struct bts_record	*lent;
	struct bts_record	*window;
	struct ds_stream	ring;
	struct bts_record	*ring_buf;
	struct bts_record	*scratch;
	struct task_struct	*task;
	bool			owner_known;
	u32			written;
	u32			staged;
	u8			*seen;
	u8			*seen_staged;
	u8			*ringed;
	s64			last[2];
	u32			pmis_raised;
	u32			pmis_claimed;
	u32			nmis;
	u32			nmi_hw_calls;
	u32			soft_crossings;
	u32			full_nmis;
	int			calls;
	int			inject_at;
	u64			rnd;
	bool			in_nmi;
	bool			frozen;
	u8			fault;
	bool			planted;
	u32			faults;
	const char		*step;
};

static void ds_st_fault(struct ds_st_rig *rig, const char *what, u64 a,
			u64 b)
{
	rig->faults++;
	/* The self-test expects faults: say only the first, then only count. */
	if (rig->fault == DS_ST_SOUND && rig->faults == 1)
		KUNIT_FAIL(rig->test, "%s: %s (%llu, %llu); NMI at call %d",
			   rig->step, what, (unsigned long long)a,
			   (unsigned long long)b, rig->inject_at);
}

static void ds_st_nmi(struct ds_st_rig *rig, bool pmi);

/*
 * Where the hardware may write: the window lent in DS_STATE_DIRECT, else
 * the staging buffer.
 */
static u64 ds_st_mem_lo(struct ds_st_rig *rig)
{
	if (ds_state_lent(&rig->s))
		return rig->window ? (unsigned long)rig->window : 1;
	return (unsigned long)rig->staging;
}

static u64 ds_st_mem_hi(struct ds_st_rig *rig)
{
	if (ds_state_lent(&rig->s))
		return rig->window ? (unsigned long)(rig->window + DS_ST_WIN_NR)
				   : 0;
	return (unsigned long)(rig->staging + 2 * DS_ST_NR);
}

/* The CPU takes @n branches; the hardware records them or not. */
static void ds_st_branches(struct ds_st_rig *rig, u32 n)
{
	struct ds_bts_area *hw = &rig->area;
	u64 rec = sizeof(struct bts_record);

	while (n--) {
		bool btint = rig->debugctl & DS_DEBUGCTL_BTINT;
		struct bts_record *r;

		if ((rig->debugctl & DS_ST_ON) != DS_ST_ON)
			continue;
		if (rig->in_nmi)
			ds_st_fault(rig, "an NMI's handler was traced",
				    rig->debugctl, rig->s.nmi);
		else if (rig->s.pause || rig->frozen)
			ds_st_fault(rig, "traced while paused or frozen",
				    rig->s.pause, rig->frozen);
		if (btint && hw->index >= hw->max) {
			ds_st_fault(rig, "the hardware dropped a record",
				    hw->index, hw->max);
			continue;
		}
		if (hw->index < hw->base || hw->index >= hw->max ||
		    hw->base < ds_st_mem_lo(rig) ||
		    hw->max > ds_st_mem_hi(rig)) {
			ds_st_fault(rig, "a record outside the memory the mode says",
				    hw->index, hw->base);
			continue;
		}
		if (rig->written == DS_ST_MAX_RECORDS) {
			ds_st_fault(rig, "scenario too long", rig->written, 0);
			return;
		}
		r = (struct bts_record *)(unsigned long)hw->index;
		*r = (struct bts_record){
			.from	= DS_ST_ADDR(rig->written),
			.to	= DS_ST_ADDR(rig->written) + 1,
		};
		rig->ringed[rig->written] = rig->s.mode == DS_STATE_RING;
		rig->written++;
		hw->index += rec;
		if (!btint && hw->index >= hw->max)
			hw->index = hw->base;
		/* A PMI when a record reaches the threshold (SDM 18.4.9.3). */
		if (btint && hw->index == hw->threshold) {
			rig->pmis_raised++;
			/* NMIs do not nest. */
			if (rig->in_nmi)
				continue;
			if (rig->fault == DS_ST_SILENT_PMI && !rig->planted) {
				rig->planted = true;
				continue;
			}
			ds_st_nmi(rig, true);
		}
	}
}

/*
 * On the way into each call into the model and out of it: the layer's own
 * code takes a branch, and maybe an NMI comes.
 */
static void ds_st_step(struct ds_st_rig *rig)
{
	bool nmi;

	if (rig->in_nmi)
		return;
	ds_st_branches(rig, 1);
	nmi = rig->calls++ == rig->inject_at;
	if (rig->rnd) {
		u64 x = rig->rnd;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		rig->rnd = x;
		nmi |= !(x % 4);
	}
	if (nmi)
		ds_st_nmi(rig, false);
}

static struct ds_st_rig *ds_st_rig(struct ds_state *s)
{
	return container_of(s, struct ds_st_rig, s);
}

static u64 ds_st_stop(struct ds_state *s)
{
	struct ds_st_rig *rig = ds_st_rig(s);
	u64 bits;

	ds_st_step(rig);
	rig->nmi_hw_calls += rig->in_nmi;
	bits = rig->debugctl;
	rig->debugctl = 0;
	ds_st_step(rig);
	return bits;
}

static void ds_st_write(struct ds_state *s, u64 bits)
{
	struct ds_st_rig *rig = ds_st_rig(s);

	ds_st_step(rig);
	rig->nmi_hw_calls += rig->in_nmi;
	if (!bits && rig->debugctl && rig->fault == DS_ST_IGNORE_STOP &&
	    !rig->planted)
		rig->planted = true;
	else
		rig->debugctl = bits;
	ds_st_step(rig);
}

/* The state machine asks about the consumers of @task, who runs. */
static void ds_st_asked(struct ds_st_rig *rig, struct task_struct *task)
{
	ds_st_step(rig);
	if (task != rig->task)
		ds_st_fault(rig, "asked about another task", 0, 0);
	ds_st_step(rig);
}

static u64 ds_st_wanted(struct ds_state *s, struct task_struct *task)
{
	struct ds_st_rig *rig = ds_st_rig(s);

	ds_st_asked(rig, task);
	return rig->wanted;
}

static struct ds_stream *ds_st_ring(struct ds_state *s,
				    struct task_struct *task)
{
	struct ds_st_rig *rig = ds_st_rig(s);

	ds_st_asked(rig, task);
	return rig->lone_ring ? &rig->ring : NULL;
}

/*
 * Record @addr reached the consumers: once, and never one that was not
 * written.  Return: its place in its sequence, 0 for staged records, 1 for
 * branches; -1 for none.
 */
static int ds_st_seen(struct ds_st_rig *rig, u64 addr, u64 *n)
{
	bool staged = addr >= DS_ST_STAGED(0);
	u8 *seen = staged ? rig->seen_staged : rig->seen;

	*n = addr - (staged ? DS_ST_STAGED(0) : DS_ST_ADDR(0));
	if (*n >= (staged ? rig->staged : rig->written)) {
		ds_st_fault(rig, "a record never written", *n, staged);
		return -1;
	}
	if (seen[*n]++)
		ds_st_fault(rig, "a record reached the consumers twice", *n,
			    staged);
	return !staged;
}

/* Records reached the consumers: each once, each sequence in order. */
static void ds_st_take(struct ds_st_rig *rig, const struct bts_record *recs,
		       u32 nr)
{
	u32 i;

	for (i = 0; i < nr; i++) {
		int seq;
		u64 n;

		seq = ds_st_seen(rig, recs[i].from, &n);
		if (seq < 0)
			continue;
		if ((s64)n <= rig->last[seq])
			ds_st_fault(rig, "records out of order", n,
				    rig->last[seq]);
		rig->last[seq] = n;
	}
}

static void ds_st_splay(struct ds_state *s, struct task_struct *task,
			const struct bts_record *recs, u32 nr, bool overran)
{
	struct ds_st_rig *rig = ds_st_rig(s);
	u32 i = 0;

	ds_st_step(rig);
	if (rig->in_nmi && task != rig->task)
		ds_st_fault(rig, "an NMI drained without knowing whose records",
			    0, 0);
	if (overran)
		ds_st_fault(rig, "a sub-buffer overran", nr, 0);
	/* Staged records reached the threshold: no PMI, but one is owed. */
	if (nr >= DS_ST_THRESHOLD &&
	    recs[DS_ST_THRESHOLD - 1].from >= DS_ST_STAGED(0))
		rig->soft_crossings++;
	if (rig->fault == DS_ST_LOSE_RECORD && nr && !rig->planted) {
		rig->planted = true;
		i = 1;
	}
	ds_st_take(rig, recs + i, nr - i);
	ds_st_step(rig);
}

static struct ds_consumer *ds_st_lender(struct ds_state *s,
					struct task_struct *task)
{
	struct ds_st_rig *rig = ds_st_rig(s);

	ds_st_asked(rig, task);
	/* A token: the state machine never looks inside. */
	return rig->lone_lender ? (struct ds_consumer *)rig : NULL;
}

/* The lender takes what its window got, and lends the other half. */
static bool ds_st_window(struct ds_state *s, struct ds_consumer *lender,
			 u32 written, bool overran, struct ds_bts_window *next)
{
	struct ds_st_rig *rig = ds_st_rig(s);

	ds_st_step(rig);
	if (lender != (struct ds_consumer *)rig)
		ds_st_fault(rig, "asked another lender", 0, 0);
	if (!rig->window && written)
		ds_st_fault(rig, "records in no window", written, 0);
	if (written > DS_ST_WIN_NR || overran)
		ds_st_fault(rig, "a window overran", written, overran);
	if (rig->window && written) {
		if (rig->fault == DS_ST_LOSE_WINDOW_RECORD && !rig->planted) {
			rig->planted = true;
			written--;
		}
		ds_st_take(rig, rig->window, min_t(u32, written, DS_ST_WIN_NR));
	}
	if (!next || !rig->windows_left) {
		rig->window = NULL;
		ds_st_step(rig);
		return false;
	}
	rig->windows_left--;
	rig->window = rig->window == rig->lent ? rig->lent + DS_ST_WIN_NR :
						 rig->lent;
	*next = (struct ds_bts_window){
		.base	= rig->window,
		.nr	= DS_ST_WIN_NR,
	};
	ds_st_step(rig);
	return true;
}

static const struct ds_state_ops ds_st_ops = {
	.stop	= ds_st_stop,
	.write	= ds_st_write,
	.wanted	= ds_st_wanted,
	.ring	= ds_st_ring,
	.lender	= ds_st_lender,
	.window	= ds_st_window,
	.splay	= ds_st_splay,
};

/*
 * An NMI, as default_do_nmi() runs the layer's parts around the handlers:
 * a threshold PMI (@pmi) or another driver's.
 */
static void ds_st_nmi(struct ds_st_rig *rig, bool pmi)
{
	struct ds_state *s = &rig->s;
	u64 ctl = rig->debugctl;
	u8 mode = s->mode;
	int pause = s->pause;
	bool claimed;

	if (!pmi && mode == DS_STATE_SPLAY &&
	    rig->area.index >= rig->area.threshold)
		rig->full_nmis++;

	rig->in_nmi = true;
	rig->nmis++;
	ds_state_nmi_enter(s);
	if (rig->fault == DS_ST_NMI_TRACED && !rig->planted) {
		rig->planted = true;
		rig->debugctl |= DS_ST_ON;
	}
	/* The handlers run: perf's, others'. */
	ds_st_branches(rig, 2);
	claimed = ds_state_nmi_pmi(s, rig->owner_known ? rig->task : NULL);
	ds_st_branches(rig, 1);
	ds_state_nmi_exit(s);
	rig->in_nmi = false;

	rig->pmis_claimed += claimed;
	if (pmi && !claimed)
		ds_st_fault(rig, "a threshold PMI was not claimed", 0, 0);
	/* A freeze an NMI interrupted takes effect as it returns. */
	if (rig->debugctl != (s->frozen ? 0 : ctl))
		ds_st_fault(rig, "an NMI changed DEBUGCTL", ctl,
			    rig->debugctl);
	if (s->mode != mode || s->pause != pause)
		ds_st_fault(rig, "an NMI changed the mode or the pause",
			    mode, s->mode);
}

/* A rig for @test, its buffers from KUnit. */
static struct ds_st_rig *ds_st_alloc(struct kunit *test)
{
	struct ds_st_rig *rig = kunit_kcalloc(test, 1, sizeof(*rig),
					      GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, rig);
	rig->staging = kunit_kcalloc(test, 2 * DS_ST_NR,
				     sizeof(struct bts_record), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rig->staging);
	rig->ring_buf = kunit_kcalloc(test, 2 * DS_ST_RING_SLOTS,
				      sizeof(struct bts_record), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rig->ring_buf);
	rig->scratch = rig->ring_buf + DS_ST_RING_SLOTS;
	rig->lent = kunit_kcalloc(test, 2 * DS_ST_WIN_NR,
				  sizeof(struct bts_record), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rig->lent);
	rig->seen = kunit_kcalloc(test, 3, DS_ST_MAX_RECORDS, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rig->seen);
	rig->test = test;
	return rig;
}

/* A fresh CPU, consumers present, nothing armed yet. */
static void ds_st_reset(struct ds_st_rig *rig, int inject_at, u64 seed,
			enum ds_st_fault fault)
{
	struct kunit *test = rig->test;
	struct bts_record *staging = rig->staging, *ring_buf = rig->ring_buf;
	struct bts_record *scratch = rig->scratch, *lent = rig->lent;
	u8 *seen = rig->seen;

	memset(seen, 0, 3 * DS_ST_MAX_RECORDS);
	*rig = (struct ds_st_rig){
		.test		= test,
		.staging	= staging,
		.ring_buf	= ring_buf,
		.scratch	= scratch,
		.lent		= lent,
		.seen		= seen,
		.seen_staged	= seen + DS_ST_MAX_RECORDS,
		.ringed		= seen + 2 * DS_ST_MAX_RECORDS,
		.task		= (struct task_struct *)rig,
		.owner_known	= true,
		.wanted		= DS_ST_ON | DS_DEBUGCTL_BTINT,
		.last		= { -1, -1 },
		.inject_at	= inject_at,
		.rnd		= seed,
		.fault		= fault,
		.step		= "start",
	};
	ds_stream_init(&rig->ring, ring_buf, DS_ST_RING_SLOTS, DS_PRIV_ALL,
		       DS_MODE_RING);
	ds_state_init(&rig->s, &ds_st_ops, &rig->area, staging, DS_ST_NR,
		      DS_STAGING_SLACK);
}

/*
 * Between two steps: DEBUGCTL is what the consumers want (a ring's without
 * BTINT), nothing while frozen or disarmed.
 */
static void ds_st_check_bits(struct ds_st_rig *rig)
{
	u64 want = rig->wanted;

	if (rig->s.mode == DS_STATE_OFF || rig->frozen)
		want = 0;
	else if (rig->s.mode == DS_STATE_RING)
		want &= ~DS_DEBUGCTL_BTINT;
	if (rig->debugctl != want)
		ds_st_fault(rig, "DEBUGCTL is not what the consumers want",
			    rig->debugctl, want);
}

/* The layer's ways through the state machine, as ds.c takes them. */

static void ds_st_switch(struct ds_st_rig *rig)
{
	rig->step = "switch";
	ds_state_pause(&rig->s);
	ds_state_drain(&rig->s, rig->task);
	ds_state_unpause(&rig->s, rig->task);
	ds_st_check_bits(rig);
}

/*
 * A context switch as __ds_switch_to() makes it: no drain while the
 * hardware writes a ring or a lender's window, whose records are their
 * consumer's whoever runs.
 */
static void ds_st_sched(struct ds_st_rig *rig)
{
	rig->step = "context switch";
	ds_state_pause(&rig->s);
	if (rig->s.mode != DS_STATE_RING && !ds_state_lent(&rig->s))
		ds_state_drain(&rig->s, rig->task);
	ds_state_unpause(&rig->s, rig->task);
	ds_st_check_bits(rig);
}

/*
 * The last consumer of the running task goes away (the CPU's consumers
 * with it) and the task blocks before the sync comes: the switches that
 * follow are between tasks nobody traces, which __ds_switch_to() leaves
 * alone only if the hardware is quiet.  Then a consumer comes back.
 */
static void ds_st_nobody(struct ds_st_rig *rig)
{
	u64 wanted = rig->wanted;
	int i;

	rig->step = "switches for nobody";
	rig->wanted = 0;
	rig->lone_ring = false;
	rig->lone_lender = false;
	for (i = 0; i < 2; i++) {
		if (rig->fault == DS_ST_BLIND_SWITCH && !rig->planted)
			rig->planted = true;
		else if (!ds_state_quiet(&rig->s))
			ds_st_sched(rig);
		rig->step = "switches for nobody";
		ds_st_check_bits(rig);
		ds_st_branches(rig, 3);
	}
	rig->wanted = wanted;
	ds_st_switch(rig);
}

/*
 * A marker, or the record of a stretch in the kernel, in ds.c's place.  A
 * lender takes none: in DS_STATE_DIRECT they are for nobody yet, and
 * dropped.
 */
static void ds_st_stage(struct ds_st_rig *rig, u32 nr)
{
	bool dropped = rig->s.mode == DS_STATE_DIRECT;
	struct bts_record rec[4];
	u32 i;

	rig->step = "stage";
	if (rig->staged + nr > DS_ST_MAX_RECORDS)
		return;
	for (i = 0; i < nr; i++) {
		rec[i] = (struct bts_record){
			.from	= DS_ST_STAGED(rig->staged + i),
			.to	= DS_ST_STAGED(rig->staged + i) + 1,
		};
		/* Taken already, as far as the checks go: never again. */
		rig->seen_staged[rig->staged + i] = dropped;
	}
	rig->staged += nr;
	ds_state_stage(&rig->s, rec, nr, rig->task);
	ds_st_check_bits(rig);
}

/*
 * A continuous consumer's overflow callback: its own branches untraced,
 * and a drain if the sub-buffer reached its threshold meanwhile.
 */
static void ds_st_callback(struct ds_st_rig *rig)
{
	u64 bits;

	rig->step = "overflow callback";
	bits = ds_state_hold(&rig->s);
	ds_st_branches(rig, 3);
	ds_state_release(&rig->s, rig->task, bits, false);
	ds_st_check_bits(rig);
}

/*
 * The same, a callback that suspends the CPU's only consumer: nobody
 * wants the hardware when the callback returns.  Another consumer comes
 * later.
 */
static void ds_st_callback_suspends(struct ds_st_rig *rig)
{
	u64 wanted = rig->wanted, bits;

	rig->step = "overflow callback suspends";
	bits = ds_state_hold(&rig->s);
	ds_st_branches(rig, 3);
	rig->wanted = 0;
	rig->lone_ring = false;
	rig->lone_lender = false;
	ds_state_release(&rig->s, rig->task, bits,
			 rig->fault != DS_ST_SUSPEND_UNSEEN);
	ds_st_check_bits(rig);
	ds_st_branches(rig, 3);
	rig->wanted = wanted;
	ds_st_switch(rig);
}

static void ds_st_ring_mix(struct ds_st_rig *rig, bool alone)
{
	rig->step = alone ? "ring alone" : "ring joined";
	rig->lone_ring = alone;
	rig->lone_lender &= !alone;
	ds_st_switch(rig);
}

/* The lender alone, with @windows to lend, or joined by others. */
static void ds_st_lender_mix(struct ds_st_rig *rig, bool alone, u32 windows)
{
	rig->step = alone ? "lender alone" : "lender joined";
	rig->lone_lender = alone;
	rig->lone_ring &= !alone;
	rig->windows_left = windows;
	ds_st_switch(rig);
}

static void ds_st_freeze(struct ds_st_rig *rig)
{
	rig->step = "freeze";
	ds_state_freeze(&rig->s);
	rig->frozen = true;
	ds_st_branches(rig, 5);
	ds_state_pause(&rig->s);
	ds_state_unpause(&rig->s, rig->task);
	ds_st_branches(rig, 5);
	ds_state_drain_frozen(&rig->s, rig->task);
	rig->frozen = false;
	ds_state_thaw(&rig->s, rig->task);
	ds_st_check_bits(rig);
}

/*
 * Take what the ring's stream holds, and start it afresh: a stream keeps
 * only its newest records.  The hardware writes the staging buffer, not
 * the stream, which only a drain writes: this is safe in DS_STATE_RING.
 */
static void ds_st_harvest_ring(struct ds_st_rig *rig)
{
	u32 i, n;
	u64 seq;

	n = ds_stream_read_last(&rig->ring, rig->scratch, DS_ST_RING_SLOTS);
	for (i = 0; i < n; i++)
		ds_st_seen(rig, rig->scratch[i].from, &seq);
	ds_stream_init(&rig->ring, rig->ring_buf, DS_ST_RING_SLOTS,
		       DS_PRIV_ALL, DS_MODE_RING);
}

/* Every record reached the consumers once; every PMI was claimed. */
static void ds_st_check_end(struct ds_st_rig *rig)
{
	u32 i;

	rig->step = "end";
	if (rig->s.mode != DS_STATE_OFF || rig->s.pause || rig->s.nmi)
		ds_st_fault(rig, "left armed, paused or in NMI", rig->s.mode,
			    rig->s.pause);
	if (rig->debugctl)
		ds_st_fault(rig, "the hardware left on", rig->debugctl, 0);
	if (rig->window)
		ds_st_fault(rig, "a lent window never came back", 0, 0);
	ds_st_harvest_ring(rig);
	for (i = 0; i < rig->written; i++)
		if (!rig->seen[i] && !rig->ringed[i]) {
			ds_st_fault(rig, "a branch never reached the consumers",
				    i, rig->written);
			break;
		}
	for (i = 0; i < rig->staged; i++)
		if (!rig->seen_staged[i]) {
			ds_st_fault(rig, "a staged record never reached the consumers",
				    i, rig->staged);
			break;
		}
	if (rig->pmis_claimed < rig->pmis_raised)
		ds_st_fault(rig, "fewer PMIs claimed than raised",
			    rig->pmis_claimed, rig->pmis_raised);
	/*
	 * A staged crossing owes a PMI that may never come: one claim each;
	 * and a full sub-buffer claims whatever NMI comes.
	 */
	if (rig->pmis_claimed >
	    rig->pmis_raised + rig->soft_crossings + rig->full_nmis)
		ds_st_fault(rig, "another driver's NMI claimed",
			    rig->pmis_claimed, rig->pmis_raised);
}

/*
 * Every way the layer drives the hardware, in one run: arming, threshold
 * PMIs, switches, staged records at and across the threshold, an overflow
 * callback, a mid-switch PMI, the hardware ring entered, written, staged
 * into and left, a lender's windows lent, filled, spent and lent again
 * across context switches, a freeze, disarming.
 */
static void ds_st_scenario(struct ds_st_rig *rig)
{
	u32 i;

	rig->step = "arm";
	ds_state_arm(&rig->s, rig->task);
	rig->step = "run";
	ds_st_branches(rig, DS_ST_NR + 5);
	ds_st_switch(rig);
	for (i = 0; i < 6; i++) {
		rig->step = "run to the threshold";
		ds_st_branches(rig, DS_ST_THRESHOLD - 2);
		ds_st_stage(rig, 2 + i % 3);
		rig->step = "run on";
		ds_st_branches(rig, DS_STAGING_SLACK + 1);
	}
	ds_st_callback(rig);
	ds_st_nobody(rig);
	ds_st_callback_suspends(rig);
	rig->step = "mid-switch";
	rig->owner_known = false;
	ds_st_branches(rig, DS_ST_THRESHOLD);
	rig->owner_known = true;
	ds_st_switch(rig);
	ds_st_ring_mix(rig, true);
	rig->step = "ring";
	ds_st_branches(rig, DS_ST_NR / 2);
	ds_st_stage(rig, 2);
	ds_st_switch(rig);
	ds_st_harvest_ring(rig);
	rig->step = "ring wraps";
	ds_st_branches(rig, 3 * DS_ST_NR);
	ds_st_ring_mix(rig, false);
	rig->step = "after the ring";
	ds_st_branches(rig, DS_ST_NR);
	ds_st_lender_mix(rig, true, 3);
	rig->step = "windows";
	ds_st_branches(rig, DS_ST_WIN_THRESHOLD + 3);
	ds_st_sched(rig);
	ds_st_stage(rig, 2);
	ds_st_callback(rig);
	ds_st_branches(rig, DS_ST_WIN_NR);
	rig->step = "windows spent";
	ds_st_branches(rig, DS_ST_WIN_THRESHOLD + DS_ST_NR);
	ds_st_stage(rig, 3);
	ds_st_callback(rig);
	rig->step = "room made in a callback";
	rig->windows_left = 1;
	ds_st_branches(rig, DS_ST_THRESHOLD);
	ds_st_callback(rig);
	if (!ds_state_lent(&rig->s))
		ds_st_fault(rig, "no window lent after the callback", 0, 0);
	ds_st_branches(rig, DS_ST_WIN_THRESHOLD + 2);
	rig->windows_left = 2;
	ds_st_sched(rig);
	rig->step = "lent again";
	ds_st_branches(rig, DS_ST_WIN_THRESHOLD / 2);
	ds_st_lender_mix(rig, false, 0);
	ds_st_freeze(rig);
	ds_st_nobody(rig);
	ds_st_ring_mix(rig, true);
	ds_st_callback_suspends(rig);
	rig->step = "disarm";
	ds_state_disarm(&rig->s, rig->task);
	ds_st_check_end(rig);
}

/* An NMI after each call the scenario makes into the model, in turn. */
static void ds_state_test_nmi_everywhere(struct kunit *test)
{
	struct ds_st_rig *rig = ds_st_alloc(test);
	int at, calls;

	ds_st_reset(rig, -1, 0, DS_ST_SOUND);
	ds_st_scenario(rig);
	calls = rig->calls;
	KUNIT_EXPECT_EQ_MSG(test, rig->faults, 0, "without injected NMIs");
	KUNIT_EXPECT_GT_MSG(test, rig->pmis_raised, 2, "threshold PMIs");
	KUNIT_EXPECT_GT_MSG(test, rig->staged, 0, "staged records");
	KUNIT_EXPECT_GT_MSG(test, calls, 50, "calls into the model");
	for (at = 0; at < calls && !rig->faults; at++) {
		ds_st_reset(rig, at, 0, DS_ST_SOUND);
		ds_st_scenario(rig);
		KUNIT_EXPECT_EQ_MSG(test, rig->nmis, rig->pmis_raised + 1,
				    "NMIs with one injected at call %d", at);
	}
}

/* Random walks through the same ways, with NMIs at random. */
static void ds_state_test_nmi_random(struct kunit *test)
{
	struct ds_st_rig *rig = ds_st_alloc(test);
	u64 seed, rnd;
	u32 i;

	for (seed = 1; seed <= 200 && !rig->faults; seed++) {
		rnd = seed * 0x9e3779b97f4a7c15ULL;
		ds_st_reset(rig, -1, rnd, DS_ST_SOUND);
		rig->step = "arm";
		ds_state_arm(&rig->s, rig->task);
		for (i = 0; i < 40; i++) {
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			switch (rnd % 11) {
			case 0:
				/* A ring that stays short of wrapping. */
				if (rig->s.mode != DS_STATE_RING)
					ds_st_branches(rig, rnd >> 8 &
						       (2 * DS_ST_NR - 1));
				break;
			case 1:
				ds_st_switch(rig);
				break;
			case 2:
				ds_st_stage(rig, 1 + (rnd >> 8) % 4);
				break;
			case 3:
				ds_st_callback(rig);
				break;
			case 4:
				ds_st_ring_mix(rig, !rig->lone_ring);
				break;
			case 5:
				ds_st_freeze(rig);
				break;
			case 6:
				ds_st_lender_mix(rig, !rig->lone_lender,
						 (rnd >> 8) % 4);
				break;
			case 7:
				ds_st_sched(rig);
				break;
			case 8:
				ds_st_nobody(rig);
				break;
			case 9:
				ds_st_callback_suspends(rig);
				break;
			default:
				rig->wanted ^= DS_DEBUGCTL_BTS_OFF_OS;
				ds_st_switch(rig);
			}
			ds_st_harvest_ring(rig);
		}
		ds_st_ring_mix(rig, false);
		ds_st_lender_mix(rig, false, 0);
		rig->step = "disarm";
		ds_state_disarm(&rig->s, rig->task);
		ds_st_check_end(rig);
		KUNIT_EXPECT_EQ_MSG(test, rig->faults, 0, "seed %llu",
				    (unsigned long long)seed);
	}
}

/*
 * Once any consumer exists, every CPU is armed, and most run tasks nobody
 * traces: an NMI there (perf's, the watchdog's, a backtrace IPI) costs
 * nothing but the layer's bookkeeping, no DEBUGCTL access.  One where the
 * task is traced stops and restarts the hardware, once each.
 */
static void ds_state_test_nmi_untraced_free(struct kunit *test)
{
	struct ds_st_rig *rig = ds_st_alloc(test);
	u32 i;

	ds_st_reset(rig, -1, 0, DS_ST_SOUND);
	rig->wanted = 0;
	rig->step = "arm, nobody traced";
	ds_state_arm(&rig->s, rig->task);
	ds_st_switch(rig);
	for (i = 0; i < 8; i++)
		ds_st_nmi(rig, false);
	KUNIT_EXPECT_EQ_MSG(test, rig->nmi_hw_calls, 0,
			    "DEBUGCTL accesses in 8 NMIs of an untraced task");
	rig->wanted = DS_ST_ON | DS_DEBUGCTL_BTINT;
	rig->step = "traced";
	ds_st_switch(rig);
	ds_st_nmi(rig, false);
	KUNIT_EXPECT_EQ_MSG(test, rig->nmi_hw_calls, 2,
			    "DEBUGCTL accesses in an NMI of a traced task");
	rig->wanted = 0;
	rig->step = "untraced again";
	ds_st_switch(rig);
	ds_st_nmi(rig, false);
	KUNIT_EXPECT_EQ_MSG(test, rig->nmi_hw_calls, 2,
			    "DEBUGCTL accesses in an NMI after the trace stopped");
	ds_state_disarm(&rig->s, rig->task);
	ds_st_check_end(rig);
	KUNIT_EXPECT_EQ(test, rig->faults, 0);
}

/*
 * Stage three records after @branches branches, with the consumers
 * wanting @wanted; returns the calls into the model the staging made.
 */
static int ds_st_stage_calls(struct ds_st_rig *rig, u64 wanted, u32 branches)
{
	int calls;

	rig->wanted = wanted;
	ds_st_switch(rig);
	ds_st_branches(rig, branches);
	calls = rig->calls;
	ds_st_stage(rig, 3);
	return rig->calls - calls;
}

/*
 * A record staged on a CPU whose hardware records nothing in the kernel
 * (off, or filtering out CPL 0) goes in with the hardware left running: no
 * DEBUGCTL access, no call into the model.  One whose hardware records the
 * kernel stops it for the append, as do records that would take the
 * sub-buffer to its threshold, which a drain then empties.  Every record
 * reaches the consumers once, in order, either way.
 */
static void ds_state_test_stage_running(struct kunit *test)
{
	const u64 user_only = DS_ST_ON | DS_DEBUGCTL_BTINT |
			      DS_DEBUGCTL_BTS_OFF_OS;
	struct ds_st_rig *rig = ds_st_alloc(test);

	ds_st_reset(rig, -1, 0, DS_ST_SOUND);
	rig->step = "arm";
	ds_state_arm(&rig->s, rig->task);
	KUNIT_EXPECT_EQ_MSG(test, ds_st_stage_calls(rig, user_only, 2), 0,
			    "calls into the model staging for a user-only CPU");
	KUNIT_EXPECT_GT_MSG(test,
			    ds_st_stage_calls(rig, DS_ST_ON | DS_DEBUGCTL_BTINT, 2),
			    0, "no hold staging while the kernel is recorded");
	KUNIT_EXPECT_GT_MSG(test,
			    ds_st_stage_calls(rig, user_only, DS_ST_THRESHOLD - 2),
			    0, "no hold staging up to the threshold");
	KUNIT_EXPECT_TRUE_MSG(test, rig->area.index < rig->area.threshold,
			      "the sub-buffer at its threshold after staging");
	ds_st_branches(rig, 2);

	rig->step = "disarm";
	ds_state_disarm(&rig->s, rig->task);
	ds_st_check_end(rig);
	KUNIT_EXPECT_EQ(test, rig->staged, 9);
	KUNIT_EXPECT_EQ(test, rig->faults, 0);
}

/* The checks catch each planted fault, with NMIs at every position. */
static void ds_state_test_checks_catch(struct kunit *test)
{
	static const enum ds_st_fault faults[] = {
		DS_ST_IGNORE_STOP, DS_ST_LOSE_RECORD, DS_ST_NMI_TRACED,
		DS_ST_SILENT_PMI, DS_ST_LOSE_WINDOW_RECORD,
		DS_ST_BLIND_SWITCH, DS_ST_SUSPEND_UNSEEN,
	};
	struct ds_st_rig *rig = ds_st_alloc(test);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(faults); i++) {
		ds_st_reset(rig, 0, 0, faults[i]);
		ds_st_scenario(rig);
		KUNIT_EXPECT_GT_MSG(test, rig->faults, 0,
				    "planted fault %d went unnoticed",
				    faults[i]);
	}
}

static struct kunit_case ds_state_test_cases[] = {
	KUNIT_CASE(ds_state_test_nmi_everywhere),
	KUNIT_CASE(ds_state_test_nmi_random),
	KUNIT_CASE(ds_state_test_nmi_untraced_free),
	KUNIT_CASE(ds_state_test_stage_running),
	KUNIT_CASE(ds_state_test_checks_catch),
	{}
};

static struct kunit_suite ds_state_test_suite = {
	.name = "x86_ds_state",
	.test_cases = ds_state_test_cases,
};

kunit_test_suite(ds_state_test_suite);

MODULE_DESCRIPTION("KUnit tests of the x86 Debug Store state machine");
MODULE_LICENSE("GPL");
