/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A CPU's BTS hardware as the DS layer drives it: the state machine, in
 * the hardware-free core.  ds.c gives it the hardware (DEBUGCTL) and the
 * consumers, its ds_hw_*() functions, which the kernel calls directly; the
 * userspace harness and KUnit give it a model of the hardware that can
 * raise an NMI at every step, through struct ds_state_ops.
 */
#ifndef __X86_KERNEL_DS_STATE_H
#define __X86_KERNEL_DS_STATE_H

#include "ds_core.h"

struct task_struct;
struct ds_consumer;

/**
 * enum ds_state_mode - how the hardware writes a CPU's branch records
 * @DS_STATE_OFF: not armed: the DS save area's BTS fields are zero and
 *	DEBUGCTL's BTS bits stay clear
 * @DS_STATE_SPLAY: the staging buffer's sub-buffers, with a threshold PMI;
 *	each drain splays a sub-buffer into the streams it belongs to
 * @DS_STATE_RING: the whole staging buffer is the ring of a lone per-CPU
 *	ring consumer, written without a PMI or a copy until it is left
 * @DS_STATE_DIRECT: the hardware writes windows of a lone per-CPU
 *	consumer's own memory (its lender), with a threshold PMI at which the
 *	lender takes the window's records and lends the next.  A lender
 *	with no next window at a PMI has @spent its turn: the staging
 *	buffer takes the records, as in DS_STATE_SPLAY, until the mode is
 *	next looked at (an NMI does not change the mode)
 *
 * Transitions (ds_state.c), each made with the hardware paused and
 * interrupts off, never in NMI:
 *
 *   OFF   -> SPLAY  ds_state_arm()
 *   SPLAY -> RING   ds_state_unpause(), when the ops name a lone ring
 *   RING  -> SPLAY  ds_state_drain(): the ring's records go to its stream
 *   SPLAY -> DIRECT ds_state_unpause(), when the ops name a lender and it
 *	lends a window
 *   DIRECT -> SPLAY ds_state_drain(): the lender takes what its window got
 *   SPLAY, RING, DIRECT -> OFF  ds_state_disarm(); ds_state_offline() for
 *	a CPU that is gone
 *
 * Orthogonal to the mode: a pause (the hardware stops for the layer's own
 * work and restarts when the outermost pause ends), an NMI's hold (the
 * same, restarting exactly as it was), and a crash's freeze (the hardware
 * stays off until thawed).
 */
enum ds_state_mode {
	DS_STATE_OFF,
	DS_STATE_SPLAY,
	DS_STATE_RING,
	DS_STATE_DIRECT,
};

struct ds_state;

/*
 * DS_STATE_MODEL: a state may be the model's (ds_state_test.c), in the
 * harness and in a kernel with the KUnit suite; a state without ops is
 * the hardware's.  Otherwise there is only the hardware, and no indirect
 * call in the NMI paths.
 */
#ifndef __KERNEL__
#define DS_STATE_MODEL
#elif IS_ENABLED(CONFIG_X86_DS_KUNIT_TEST)
#define DS_STATE_MODEL
#endif

/**
 * struct ds_state_ops - what the state machine needs from its CPU
 * @stop: clear DEBUGCTL's bits the layer owns (DS_DEBUGCTL_OWNED),
 *	returning them as they were: one read and at most one write
 * @write: set those bits to @bits, leaving the others alone
 * @wanted: the bits the consumers of the CPU and of @task want now
 * @ring: the stream of a lone ring consumer the hardware may serve as its
 *	ring (the CPU's only active consumer, with @task's), or NULL
 * @lender: the consumer that may lend the hardware memory of its own (the
 *	CPU's only active consumer, with @task's), or NULL.  Never dereferenced
 *	here.
 * @window: the hardware wrote @written records into the window @lender
 *	lent last (none before its first), and dropped more if @overran.
 *	Fill @next with the next window and return true, or return false:
 *	none.  @next is NULL when the hardware leaves the lender's memory.
 * @splay: hand @nr records staged while @task ran (NULL: unknown, when
 *	drained in an NMI mid-switch) to their streams; @overran: the
 *	hardware found the sub-buffer full and dropped records
 *
 * Called on the CPU, interrupts off or in NMI (@stop, @write, @window and
 * @splay).
 */
struct ds_state_ops {
	u64	(*stop)(struct ds_state *s);
	void	(*write)(struct ds_state *s, u64 bits);
	u64	(*wanted)(struct ds_state *s, struct task_struct *task);
	struct ds_stream *(*ring)(struct ds_state *s, struct task_struct *task);
	struct ds_consumer *(*lender)(struct ds_state *s,
				      struct task_struct *task);
	bool	(*window)(struct ds_state *s, struct ds_consumer *lender,
			  u32 written, bool overran,
			  struct ds_bts_window *next);
	void	(*splay)(struct ds_state *s, struct task_struct *task,
			 const struct bts_record *recs, u32 nr, bool overran);
};

/**
 * struct ds_state - a CPU's hardware state
 * @ops: the model's hardware and consumers (DS_STATE_MODEL), or NULL for
 *	the CPU's
 * @area: the BTS fields of the CPU's DS save area
 * @staging: the staging buffer the hardware writes in @area
 * @mode: enum ds_state_mode
 * @ring: DS_STATE_RING's stream
 * @lender: DS_STATE_DIRECT's lender
 * @spent: DS_STATE_DIRECT: the lender had no window at a PMI, the staging
 *	buffer takes the records.  Set in NMI, read and cleared with the CPU
 *	paused.
 * @pause: nesting depth of pauses and holds; the hardware is off while
 *	non-zero
 * @nmi: NMIs under way on the CPU (ds_state_nmi_enter())
 * @nmi_held: the NMI under way stopped the hardware, to restart it with
 *	@nmi_bits
 * @nmi_bits: DEBUGCTL's layer bits the NMI found
 * @pmi_gen: counts the sub-buffers drained and the windows taken: the
 *	threshold PMI the hardware raises belongs to the sub-buffer or window
 *	armed when it reached the threshold
 * @pmi_owed_gen: the last sub-buffer a drain took past its threshold; its
 *	PMI may arrive after the drain
 * @pmi_claimed_gen: the last sub-buffer whose PMI an NMI claimed; a PMI
 *	is owed while it differs from @pmi_owed_gen
 * @frozen: ds_state_freeze(): the hardware stays off whatever asks
 * @bits: DEBUGCTL's layer bits as the state machine last set them; an
 *	NMI's hold clears the hardware's for a while, not these.  Zero only
 *	while the hardware's are.
 *
 * Only the CPU itself changes it, with interrupts off or in NMI.
 */
struct ds_state {
#ifdef DS_STATE_MODEL
	const struct ds_state_ops	*ops;
#endif
	struct ds_bts_area		*area;
	struct ds_staging		staging;
	u8				mode;
	struct ds_stream		*ring;
	struct ds_consumer		*lender;
	bool				spent;
	int				pause;
	int				nmi;
	bool				nmi_held;
	u64				nmi_bits;
	u64				pmi_gen;
	u64				pmi_owed_gen;
	u64				pmi_claimed_gen;
	bool				frozen;
	u64				bits;
};

#ifdef __KERNEL__
/* The CPU's side of struct ds_state_ops, in ds.c; the harness has none. */
u64 ds_hw_stop(struct ds_state *s);
void ds_hw_write(struct ds_state *s, u64 bits);
u64 ds_hw_wanted(struct ds_state *s, struct task_struct *task);
struct ds_stream *ds_hw_ring(struct ds_state *s, struct task_struct *task);
struct ds_consumer *ds_hw_lender(struct ds_state *s, struct task_struct *task);
bool ds_hw_window(struct ds_state *s, struct ds_consumer *lender,
		  u32 written, bool overran, struct ds_bts_window *next);
void ds_hw_splay(struct ds_state *s, struct task_struct *task,
		 const struct bts_record *recs, u32 nr, bool overran);
#endif

void ds_state_init(struct ds_state *s, const struct ds_state_ops *ops,
		   struct ds_bts_area *area, struct bts_record *buf, u32 nr,
		   u32 slack);
void ds_state_arm(struct ds_state *s, struct task_struct *task);
void ds_state_disarm(struct ds_state *s, struct task_struct *task);
void ds_state_offline(struct ds_state *s);
void ds_state_pause(struct ds_state *s);
void ds_state_unpause(struct ds_state *s, struct task_struct *task);
u64 ds_state_hold(struct ds_state *s);
void ds_state_restart(struct ds_state *s, u64 bits);
void ds_state_drain(struct ds_state *s, struct task_struct *task);
void ds_state_release(struct ds_state *s, struct task_struct *task, u64 bits,
		      bool changed);
void ds_state_stage(struct ds_state *s, const struct bts_record *rec,
		    unsigned int nr, struct task_struct *task);
void ds_state_nmi_enter(struct ds_state *s);
bool ds_state_nmi_pmi(struct ds_state *s, struct task_struct *task);
void ds_state_nmi_exit(struct ds_state *s);
bool ds_state_lent(const struct ds_state *s);
bool ds_state_freeze(struct ds_state *s);
void ds_state_thaw(struct ds_state *s, struct task_struct *task);
void ds_state_drain_frozen(struct ds_state *s, struct task_struct *task);

/**
 * ds_state_quiet() - whether the hardware records nothing for anybody
 * @s: the CPU's state, not paused
 *
 * DEBUGCTL's layer bits were last set to zero, and whatever the hardware
 * wrote before that was drained when they were.  A switch between tasks
 * nobody traces, on a CPU nobody traces, may then leave the hardware
 * alone.  Whether nobody traces them now is not enough: a task whose last
 * consumer went away while it ran leaves the bits set for it until the
 * CPU looks again.  Inline: every context switch asks.
 */
static inline bool ds_state_quiet(const struct ds_state *s)
{
	return !s->bits;
}

#endif /* __X86_KERNEL_DS_STATE_H */
