// SPDX-License-Identifier: GPL-2.0
/*
 * The x86 Debug Store layer: hardware ownership and the producing side.
 *
 * One per-CPU staging buffer in the cpu_entry_area (so the hardware can
 * write it in user mode with PTI on) takes the branch records of everything
 * the CPU runs while any consumer wants them.  The records are drained -
 * filtered and splayed by ds_core.c - into the streams of the consumers
 * that were active when they were written: the CPU's consumers and those
 * of the task that was current.  A drain happens at the threshold PMI, when
 * a traced task is switched out, and whenever a consumer's view must be
 * brought up to date (read, marker, suspend, release).  Annotations that
 * only some streams take (markers, address-space changes) are staged among
 * the records by ds_annotate.c, with ds_state_stage().  ds_consumer.c has the
 * consumers' side: requests, suspend and resume, reads, and the task
 * lifecycle.
 *
 * Serialization.  All producing on a CPU happens on that CPU with
 * interrupts off or in NMI: the hardware is paused, drained, reprogrammed
 * and resumed by the state machine of ds_state.c, which this file gives
 * the hardware and the consumers (ds_state_ops).  An NMI that finds the
 * CPU paused leaves the records to whoever paused it.  A task's streams are
 * produced only by the CPU the task runs on; the scheduler orders one CPU's
 * switch-out drain before the next CPU's switch-in.  Consumer sets are
 * read under RCU (NMI included) and replaced whole, so a release need only
 * unpublish, wait for a grace period and flush its irq_work.
 */
#define pr_fmt(fmt) "x86/ds: " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/nmi.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/sysctl.h>
#include <linux/task_work.h>
#include <linux/panic_notifier.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include <kunit/static_stub.h>
#include <kunit/visibility.h>

#include <asm/apic.h>
#include <asm/cpu_entry_area.h>
#include <asm/debugreg.h>
#include <asm/ds.h>
#include <asm/intel_ds.h>
#include <asm/msr.h>
#include <asm/perf_event.h>
#include <asm/proto.h>
#include <asm/tlbflush.h>

#include "ds_core.h"
#include "ds_layer.h"

static_assert(offsetof(struct debug_store, bts_index) ==
	      offsetof(struct ds_bts_area, index));
static_assert(offsetof(struct debug_store, bts_interrupt_threshold) ==
	      offsetof(struct ds_bts_area, threshold));

DEFINE_PER_CPU(struct ds_cpu, ds_cpu);

/* Serializes requests, releases and hotplug. */
DEFINE_MUTEX(ds_mutex);
/* Consumers in existence; perf's LBR and PT users wait while non-zero. */
unsigned int ds_nr_consumers;

DEFINE_STATIC_KEY_FALSE(ds_active);

/*
 * The staging buffers and the switch hook outlive the last consumer by
 * this much: a loop of requests and releases (any user can open /dev/bts)
 * then does not remap the buffers, flush every CPU's TLB and patch the
 * kernel's text each time, as perf's jump_label_rate_limit() keeps its
 * keys.
 */
#define DS_IDLE_TEARDOWN	HZ

static void ds_teardown_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(ds_teardown_work, ds_teardown_fn);

/*
 * What the CPUs have (struct ds_hw_caps), from ds_detect().
 */
struct ds_hw_caps ds_hw __ro_after_init;

/**
 * ds_bts_available() - whether this machine can trace branches into memory
 *
 * Context: any.
 * Return: true if the CPUs have a 64-bit DS save area and BTS.
 */
bool ds_bts_available(void)
{
	return ds_hw.bts;
}
EXPORT_SYMBOL_IF_KUNIT(ds_bts_available);

/**
 * ds_cpu_shutdown() - stop branch tracing on this CPU for good
 *
 * Before kexec, on the way to a kernel whose page tables do not map this
 * kernel's DS save area and staging buffers.
 *
 * Context: interrupts off, NMI included; the CPU goes nowhere but down.
 */
void ds_cpu_shutdown(void)
{
	if (!boot_cpu_has(X86_FEATURE_DS))
		return;
	update_debugctlmsr(get_debugctlmsr() & ~DS_DEBUGCTL_OWNED);
	wrmsrl(MSR_IA32_DS_AREA, 0);
}

/*
 * Clear the layer's DEBUGCTL bits with the value just read, for a hold on
 * the hot paths (NMI, the crossing record at each return to user mode).
 */
u64 ds_hw_stop(struct ds_state *s)
{
	unsigned long dbg = get_debugctlmsr();
	u64 bits = dbg & DS_DEBUGCTL_OWNED;

	if (bits)
		update_debugctlmsr(dbg & ~DS_DEBUGCTL_OWNED);
	return bits;
}

/*
 * Set the layer's DEBUGCTL bits, keeping the others (perf's LBR bits).
 * Every NMI-side change of DEBUGCTL, ours and perf's, restores the value it
 * found before the NMI returns, so an NMI between the read and the write
 * here is not undone by the write.
 */
void ds_hw_write(struct ds_state *s, u64 bits)
{
	unsigned long dbg;

	/*
	 * The KUnit suite injects an NMI here; the stub's lookup takes a
	 * lock, not in NMI.
	 */
	if (IS_ENABLED(CONFIG_X86_DS_KUNIT_TEST) && !in_nmi())
		KUNIT_STATIC_STUB_REDIRECT(ds_hw_write, s, bits);
	dbg = get_debugctlmsr();
	if ((dbg & DS_DEBUGCTL_OWNED) != bits)
		update_debugctlmsr((dbg & ~DS_DEBUGCTL_OWNED) | bits);
}

/* Gather the streams records written now belong to. */
unsigned int ds_streams(struct ds_cpu *dc, struct task_struct *task,
			struct ds_consumer **cons)
{
	const struct ds_set *sets[2];
	unsigned int i, j, n = 0;

	sets[0] = rcu_dereference_sched(dc->set);
	sets[1] = task ? rcu_dereference_sched(task->thread.ds_consumers) : NULL;
	for (i = 0; i < ARRAY_SIZE(sets); i++) {
		if (!sets[i])
			continue;
		for (j = 0; j < sets[i]->nr; j++)
			if (ds_consumer_on(sets[i]->c[j]))
				cons[n++] = sets[i]->c[j];
	}
	return n;
}

static void ds_throttle_fn(struct callback_head *head);

/*
 * A lossless stream past its size holds back its task, current, at its
 * next return to user mode: TWA_NMI_CURRENT in NMI, TWA_RESUME otherwise,
 * without allocating (the scheduler's locks may be held).  A drain on the
 * way out, past the exit work loop, is seen to by the exit hook
 * (__ds_exit_to_user_mode()).  Until it ran, no other drain queues it
 * again.
 */
static void ds_throttle(struct ds_consumer *c)
{
	if (!(c->cfg.flags & DS_BTS_LOSSLESS) ||
	    ds_stream_pending(&c->stream) <= c->limit ||
	    atomic_xchg(&c->throttle_queued, 1))
		return;
	refcount_inc(&c->refs);
	init_task_work(&c->throttle, ds_throttle_fn);
	if (task_work_add(current, &c->throttle,
			  in_nmi() ? TWA_NMI_CURRENT :
				     TWA_RESUME | TWAF_NO_ALLOC)) {
		/* The task is exiting: nobody to hold back. */
		atomic_set(&c->throttle_queued, 0);
		refcount_dec(&c->refs);
	}
}

/* After producing: wake consumers, throttle lossless producers. */
static void ds_produced(struct ds_consumer **cons, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct ds_consumer *c = cons[i];
		u32 pending;

		if (c->cfg.mode != DS_MODE_CONTINUOUS)
			continue;
		pending = ds_stream_pending(&c->stream);
		if (pending >= c->cfg.wakeup && c->cfg.ops &&
		    c->cfg.ops->overflow) {
			if (!atomic_xchg(&c->notified, 1))
				irq_work_queue(&c->notify);
			else
				atomic_set(&c->notify_missed, 1);
		}
		if (c->cfg.task == current)
			ds_throttle(c);
	}
}

/*
 * The flight recorder case: the only active consumer is one of the CPU's,
 * a ring of both privilege levels that fits the staging buffer.  The
 * hardware then writes it as a ring, and no record is copied, filtered or
 * interrupted for until the consumer reads or the mix changes.
 */
struct ds_stream *ds_hw_ring(struct ds_state *s, struct task_struct *task)
{
	struct ds_cpu *dc = container_of(s, struct ds_cpu, st);
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS] __uninitialized;
	struct ds_consumer *c;

	if (ds_streams(dc, task, cons) != 1)
		return NULL;
	c = cons[0];
	/* Markers need the splay, which leaves their recipients out. */
	if (c->cfg.task || c->cfg.mode != DS_MODE_RING ||
	    c->cfg.priv != DS_PRIV_ALL || (c->cfg.flags & DS_BTS_MARKERS) ||
	    c->cfg.nr_records >= 2 * s->staging.nr)
		return NULL;
	return &c->stream;
}

/*
 * Zero copy: the only active consumer is one of the CPU's that lends the
 * hardware memory of its own (ds_bts_ops::window) and takes nothing but
 * what the hardware writes.  Not under PTI: the hardware writes through
 * the page tables of whatever runs, and user mode's map nothing of the
 * kernel's but the cpu_entry_area, where the staging buffers are.  Not for
 * a user-only consumer: its memory would get the kernel ends of the
 * branches into the kernel, which only the staging buffers may hold.
 */
struct ds_consumer *ds_hw_lender(struct ds_state *s, struct task_struct *task)
{
	struct ds_cpu *dc = container_of(s, struct ds_cpu, st);
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS] __uninitialized;
	struct ds_consumer *c;

	if (boot_cpu_has(X86_FEATURE_PTI) || !ds_lenders_exist() ||
	    ds_streams(dc, task, cons) != 1)
		return NULL;
	c = cons[0];
	if (c->cfg.task || !c->cfg.ops || !c->cfg.ops->window ||
	    c->cfg.priv == DS_PRIV_USER ||
	    (c->cfg.flags & (DS_BTS_MARKERS | DS_BTS_MAPS)))
		return NULL;
	return c;
}

bool ds_hw_window(struct ds_state *s, struct ds_consumer *c, u32 written,
		  bool overran, struct ds_bts_window *next)
{
	bool lent = c->cfg.ops->window(c, c->cfg.data, written, overran, next);

	if (lent)
		ds_debugfs_window_lent();
	return lent;
}

/* Splay the staged records into @task's and the CPU's streams. */
void ds_hw_splay(struct ds_state *s, struct task_struct *task,
		 const struct bts_record *recs, u32 nr, bool overran)
{
	struct ds_cpu *dc = container_of(s, struct ds_cpu, st);
	struct ds_stream *streams[2 * DS_MAX_CONSUMERS] __uninitialized;
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS] __uninitialized;
	unsigned int i, n;

	ds_debugfs_staged(recs, nr);
	n = ds_streams(dc, task, cons);
	for (i = 0; i < n; i++)
		streams[i] = &cons[i]->stream;
	ds_splay(recs, nr, streams, n);
	if (unlikely(overran))
		ds_splay_overrun(streams, n);
	ds_produced(cons, n);
}

/* Forget the entry from user mode: the stretch in the kernel went unseen. */
void ds_entry_unseen(struct thread_struct *t)
{
	t->ds_entry_kind = BTS_ENTRY_UNKNOWN;
	t->ds_entry_from = 0;
	t->ds_entry_ax = ~0UL;
}

/*
 * The bits the CPU's and @task's active consumers need.  A user-only one
 * among them gets its crossings from the entry and exit code: @task,
 * current, goes by TIF_BTS_USER from here on, until an exit to user mode
 * finds no such consumer (ds_stage_crossing()).
 */
u64 ds_hw_wanted(struct ds_state *s, struct task_struct *task)
{
	struct ds_cpu *dc = container_of(s, struct ds_cpu, st);
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS] __uninitialized;
	unsigned int i, n, privs = 0;

	n = ds_streams(dc, task, cons);
	for (i = 0; i < n; i++) {
		privs |= cons[i]->cfg.priv;
		if (cons[i]->cfg.priv == DS_PRIV_USER &&
		    !test_tsk_thread_flag(task, TIF_BTS_USER)) {
			/* Its entry into the kernel went unseen. */
			ds_entry_unseen(&task->thread);
			set_tsk_thread_flag(task, TIF_BTS_USER);
		}
	}
	return ds_debugctl_for(privs, ds_hw.ds_cpl);
}

/**
 * __ds_nmi_enter() - stop tracing for an NMI
 *
 * Every NMI runs untraced (ds_state_nmi_enter()), perf's PMI handler and
 * any handler registered later among them.
 *
 * Context: default_do_nmi(), before the handlers; only while ds_active.
 */
void __ds_nmi_enter(void)
{
	ds_state_nmi_enter(this_cpu_ptr(&ds_cpu.st));
}

/**
 * __ds_nmi_exit() - restart tracing after an NMI
 *
 * Context: default_do_nmi(), after the handlers; only while ds_active.
 */
void __ds_nmi_exit(void)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	/*
	 * The LVT entry masks itself on delivery (SDM Vol. 3B 18.4.9.3):
	 * unmask it after the layer's PMI.  perf's handler does after its
	 * own; another NMI masked nothing.
	 */
	if (dc->pmi_claimed) {
		dc->pmi_claimed = false;
		apic_write(APIC_LVTPC, APIC_DM_NMI);
	}
	ds_state_nmi_exit(&dc->st);
}

/*
 * The threshold PMI.  In __switch_to() before __ds_switch_to() the records
 * are the previous task's, which __ds_switch_to() drains.
 */
static int ds_nmi(unsigned int cmd, struct pt_regs *regs)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	if (!ds_state_nmi_pmi(&dc->st, dc->owner == current ? current : NULL))
		return NMI_DONE;
	dc->pmi_claimed = true;
	return NMI_HANDLED;
}

/*
 * @next is switched in on a CPU that is not armed although consumers
 * exist: it came online without memory for its staging buffer
 * (ds_hp_online(); the next request tries again).  Nothing @next does
 * here is recorded: its streams say so, once per stay on such CPUs,
 * rather than fall silent.  Context: the scheduler's, as __ds_switch_to().
 */
static void ds_untraced(struct task_struct *next)
{
	const struct bts_record rec = {
		.from	= BTS_PSEUDO(BTS_PSEUDO_LOST, BTS_LOST_UNTRACED),
	};
	struct ds_set *set = rcu_dereference_sched(next->thread.ds_consumers);
	unsigned int i;

	for (i = 0; set && i < set->nr; i++) {
		struct ds_consumer *c = set->c[i];

		if (ds_consumer_on(c) && !c->untraced) {
			ds_stream_append(&c->stream, &rec);
			c->untraced = true;
		}
	}
}

/* What per-CPU streams learn at a switch: who runs now. */
static __always_inline struct bts_record
ds_switch_record(struct task_struct *next)
{
	return (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_SWITCH, 0),
		.to	= task_pid_nr(next),
		.flags	= task_tgid_nr(next),
	};
}

/*
 * The switch that changes what the hardware does: drain what @prev left,
 * tell the per-CPU streams, and let the state machine choose again for
 * @next.  Out of line: the flight recorder's switch does none of it, and
 * need not clear this frame.
 */
static noinline void ds_switch_over(struct ds_cpu *dc,
				    struct task_struct *prev,
				    struct task_struct *next)
{
	const struct bts_record rec = ds_switch_record(next);
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS] __uninitialized;
	unsigned int i, n;

	ds_state_pause(&dc->st);
	if (dc->st.mode == DS_STATE_RING) {
		/* @prev has no consumer, or there would be no ring. */
		ds_staging_ring_append(&dc->st.staging, dc->st.area, &rec);
	} else if (!ds_state_lent(&dc->st)) {
		/* (A lender takes the hardware's records only.) */
		ds_state_drain(&dc->st, prev);
		n = ds_streams(dc, NULL, cons);
		for (i = 0; i < n; i++)
			ds_stream_append(&cons[i]->stream, &rec);
	}
	dc->owner = next;
	/*
	 * A lossless stream @next filled while draining elsewhere, where it
	 * was not current: hold it back before it returns to user mode.
	 */
	n = ds_streams(dc, next, cons);
	for (i = 0; i < n; i++) {
		if (cons[i]->cfg.task != next)
			continue;
		ds_throttle(cons[i]);
		cons[i]->untraced = false;
	}
	ds_state_unpause(&dc->st, next);
}

/**
 * __ds_switch_to() - hand the CPU's branch trace over to the next task
 * @prev: the task switched out: what is staged is its
 * @next: the task switched in, already current
 *
 * Context: __switch_to(), interrupts off; only while ds_active.
 */
void __ds_switch_to(struct task_struct *prev, struct task_struct *next)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	lockdep_assert_irqs_disabled();
	/*
	 * Nobody traces this CPU, @prev or @next, and the hardware is off:
	 * there is nothing to drain, and it stays off.  (It may be on for
	 * nobody: @prev's last consumer went away while @prev ran, and the
	 * release's sync came after @prev blocked.)  A consumer that comes
	 * for either meanwhile syncs through ds_sync(), which finds @next
	 * current.
	 */
	if (ds_state_quiet(&dc->st) && !rcu_access_pointer(dc->set) &&
	    !rcu_access_pointer(prev->thread.ds_consumers) &&
	    !rcu_access_pointer(next->thread.ds_consumers)) {
		dc->owner = next;
		return;
	}
	if (dc->st.mode == DS_STATE_OFF) {
		ds_untraced(next);
		return;
	}
	/*
	 * The flight recorder between two tasks nobody traces: the ring and
	 * DEBUGCTL stay as they are.  @prev has no active consumer, or there
	 * would be no ring; @next has none; the CPU's consumers are those the
	 * ring was chosen for, since any change to them syncs the CPU, which
	 * chooses again (ds_sync_fn()).  The switch record goes in with the
	 * hardware running.
	 */
	if (dc->st.mode == DS_STATE_RING &&
	    !rcu_access_pointer(next->thread.ds_consumers)) {
		const struct bts_record rec = ds_switch_record(next);

		ds_staging_ring_append(&dc->st.staging, dc->st.area, &rec);
		dc->owner = next;
		return;
	}
	ds_switch_over(dc, prev, next);
}

/*
 * An interrupt whose return to user mode runs the exit work loop, as for
 * TWA_NMI_CURRENT: the interrupt is all it takes.
 */
static void ds_resume_kick_fn(struct irq_work *work)
{
}

static DEFINE_PER_CPU(struct irq_work, ds_resume_kick) =
	IRQ_WORK_INIT_HARD(ds_resume_kick_fn);

/*
 * Stage a user-only stream's record of a stretch in the kernel, where the
 * hardware would put its next record: it reaches the streams in order with
 * the branches around it, with no drain on the way back to user mode.
 * The hardware is stopped meanwhile, since it may be writing (kernel
 * branches for another consumer) and need not reread the index.
 * Context: interrupts off, current's.
 */
static void ds_stage_crossing(const struct bts_record *rec, unsigned int nr)
{
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS] __uninitialized;
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	unsigned int i, n;

	lockdep_assert_irqs_disabled();
	if (dc->st.mode != DS_STATE_SPLAY)
		return;
	n = ds_streams(dc, current, cons);
	for (i = 0; i < n && cons[i]->cfg.priv != DS_PRIV_USER; i++)
		;
	if (i == n) {
		/* Gone; a later one sets the flag again (ds_hw_wanted()). */
		clear_thread_flag(TIF_BTS_USER);
		return;
	}
	ds_state_stage(&dc->st, rec, nr, current);
}

/*
 * The records of current's stretch in the kernel that ends at @resume_to
 * (bts.h: the KERNEL_ENTRY detail, then the KERNEL record).
 */
void ds_kernel_time(u64 resume_to,
		    struct bts_record rec[DS_KERNEL_TIME_RECORDS])
{
	struct thread_struct *t = &current->thread;
	/* What the entry noted (asm/ds_entry.h). */
	u32 kind = t->ds_entry_kind & 0xffff;
	u32 abi = (t->ds_entry_kind >> DS_ENTRY_ABI_SHIFT) & 0xff;
	u64 from = t->ds_entry_from;
	u64 ax = t->ds_entry_ax;

	if (abi == BTS_ABI_X86_64 && (ax & __X32_SYSCALL_BIT))
		abi = BTS_ABI_X32;
	if (abi == BTS_ABI_I386)
		ax = (u32)ax;
	/* Only a system call's number or an exception's error code. */
	if ((kind & 0xff) != BTS_ENTRY_SYSCALL &&
	    (kind & 0xff) != BTS_ENTRY_EXCEPTION)
		ax = ~0ULL;
	rec[0] = (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_DETAIL,
				     BTS_DETAIL_ARG(BTS_PSEUDO_KERNEL,
						    BTS_DETAIL_KERNEL_ENTRY,
						    abi)),
		.to	= ax,
		.flags	= ktime_get_ns(),
	};
	rec[1] = (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_KERNEL, kind),
		.to	= resume_to,
		.flags	= from,
	};
}

/*
 * Stage the record of the kernel time ending, user mode resuming with
 * @regs.  Context: interrupts off, current has TIF_BTS_USER.
 */
static void ds_stage_exit(struct pt_regs *regs)
{
	/* Filled whole by ds_kernel_time(), at each exit of a traced thread. */
	struct bts_record rec[DS_KERNEL_TIME_RECORDS] __uninitialized;

	lockdep_assert_irqs_disabled();
	ds_kernel_time(regs->ip, rec);
	/* The next stretch is unseen until an entry says otherwise. */
	ds_entry_unseen(&current->thread);
	ds_stage_crossing(rec, ARRAY_SIZE(rec));
	/*
	 * The records took the sub-buffer to its threshold, and the drain
	 * queued a throttle (ds_throttle()) after the exit work loop ran:
	 * an interrupt on the way out runs the loop again.
	 */
	if (test_thread_flag(TIF_NOTIFY_RESUME))
		irq_work_queue(this_cpu_ptr(&ds_resume_kick));
}

/**
 * __ds_exit_to_user_mode() - stage the record of the kernel time ending
 *
 * For current if it has TIF_BTS_USER.
 *
 * Context: arch_exit_to_user_mode_prepare(), interrupts off, the layer
 * active.
 */
void __ds_exit_to_user_mode(void)
{
	if (test_thread_flag(TIF_BTS_USER))
		ds_stage_exit(current_pt_regs());
}

/* Bring @dc's streams up to date.  Context: on @dc's CPU, irqs off. */
void ds_sync_local(void *unused)
{
	struct ds_state *s = this_cpu_ptr(&ds_cpu.st);

	lockdep_assert_irqs_disabled();
	ds_state_pause(s);
	/* A hardware ring too: its consumer is about to look. */
	ds_state_drain(s, current);
	ds_state_unpause(s, current);
}

static void ds_set_suspended(struct ds_consumer *c, enum ds_sync_change ch)
{
	/* The stream's first records, before the task's first branch. */
	if (ch == DS_SYNC_RESUME && c->stream.maps && c->cfg.task &&
	    !c->named) {
		ds_name_stream(c);
		c->named = true;
	}
	if (ch != DS_SYNC_NONE)
		WRITE_ONCE(c->suspended, ch == DS_SYNC_SUSPEND);
}

void ds_sync_fn(void *p)
{
	struct ds_sync_arg *arg = p;
	struct ds_state *s = this_cpu_ptr(&ds_cpu.st);
	struct task_struct *task = arg->c->cfg.task;

	/* Switched away since, which drained it: ds_sync() looks again. */
	if (task && task != current)
		return;
	ds_state_pause(s);
	/* A hardware ring too: its consumer may be about to look. */
	ds_state_drain(s, current);
	ds_set_suspended(arg->c, arg->change);
	arg->done = true;
	ds_state_unpause(s, current);
}

/*
 * Run ds_sync_fn() on @cpu.  A function of its own so that a KUnit case
 * can move the task between the choice of @cpu and the call.
 */
static void ds_sync_on(int cpu, struct ds_sync_arg *arg)
{
	KUNIT_STATIC_STUB_REDIRECT(ds_sync_on, cpu, arg);
	smp_call_function_single(cpu, ds_sync_fn, arg, 1);
}

/*
 * Called with @task held where it is (task_call_func()): not switched in
 * or out, not migrated, not woken.  Running, it is synced on its CPU,
 * whose number is returned.  Off every CPU, it has nothing staged (the
 * switch away drained it), and the change is made here, before any CPU
 * can switch it in and program the hardware for it.
 */
static int ds_sync_held(struct task_struct *task, void *p)
{
	struct ds_sync_arg *arg = p;

	if (task_curr(task))
		return task_cpu(task);
	ds_set_suspended(arg->c, arg->change);
	arg->done = true;
	return -1;
}

/*
 * Bring a consumer's stream up to date with what its CPU or task has
 * staged, apply @change at that point of its trace, and make the hardware
 * follow.
 */
void ds_sync(struct ds_consumer *c, enum ds_sync_change change)
{
	struct ds_sync_arg arg = { .c = c, .change = change };
	struct task_struct *task = c->cfg.task;
	int cpu;

	if (!task) {
		ds_sync_on(c->cfg.cpu, &arg);
		/* Offline: the CPU reads the change when it comes up. */
		if (!arg.done)
			ds_set_suspended(c, change);
		return;
	}
	/*
	 * A running task can move between the look at where it runs and the
	 * call there, which then finds it gone (ds_sync_fn()): look again.
	 * Setting the change from here instead would miss a CPU that just
	 * switched the task in and programmed the hardware for the old state.
	 */
	while (!arg.done) {
		cpu = task_call_func(task, ds_sync_held, &arg);
		if (cpu >= 0)
			ds_sync_on(cpu, &arg);
	}
}

static void ds_recheck_fn(struct irq_work *work)
{
	ds_sync_local(NULL);
}

static DEFINE_PER_CPU(struct irq_work, ds_recheck) =
	IRQ_WORK_INIT_HARD(ds_recheck_fn);

/*
 * @c, a task's consumer, suspended itself from its callback here, where
 * its records were drained: its task may be running on another CPU by
 * now, with the hardware recording for it, which must look again.  A CPU
 * that switches the task in later finds @c suspended.
 */
static void ds_recheck_task_cpu(struct ds_consumer *c)
{
	struct task_struct *task = c->cfg.task;
	int cpu;

	if (!task || task == current)
		return;
	/*
	 * Orders the store to @c->suspended before the look at where @task
	 * runs; pairs with the full barrier __schedule() has between its
	 * update of the CPU's current task and the switch's look at the
	 * consumers.
	 */
	smp_mb();
	cpu = task_cpu(task);
	if (cpu != smp_processor_id() && task_curr(task))
		irq_work_queue_on(per_cpu_ptr(&ds_recheck, cpu), cpu);
}

void ds_notify_fn(struct irq_work *work)
{
	struct ds_consumer *c = container_of(work, struct ds_consumer, notify);
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	enum ds_overflow_action act;
	bool suspend;
	u64 bits;

	/*
	 * Not tracing the callback, which would trace its own copying.  The
	 * hardware resumes as it was, without a drain that would find more
	 * consumers to call back, unless the threshold was passed before,
	 * the consumer is a lender that may have made room, or it suspended
	 * itself and the hardware may have recorded for it alone.
	 */
	bits = ds_state_hold(&dc->st);
	dc->in_callback = c;
	act = c->cfg.ops->overflow(c, c->cfg.data);
	dc->in_callback = NULL;
	suspend = act == DS_OVERFLOW_SUSPEND;
	if (suspend)
		WRITE_ONCE(c->suspended, true);
	ds_state_release(&dc->st, current, bits, suspend);
	if (suspend)
		ds_recheck_task_cpu(c);
	atomic_set(&c->notified, 0);
	/*
	 * A producer that found us running has set @notify_missed: call
	 * again if its records still wait.  Orders the clearing of @notified
	 * before the test; pairs with the atomic_xchg() in ds_produced().
	 */
	smp_mb__after_atomic();
	if (atomic_xchg(&c->notify_missed, 0) && !READ_ONCE(c->dead) &&
	    ds_stream_pending(&c->stream) >= c->cfg.wakeup &&
	    !atomic_xchg(&c->notified, 1))
		irq_work_queue(&c->notify);
}

/*
 * Lossless mode: on its way back to user mode the traced task waits until
 * its consumer has made room, or is gone, or the task is killed.
 */
static void ds_throttle_fn(struct callback_head *head)
{
	struct ds_consumer *c = container_of(head, struct ds_consumer,
					     throttle);

	atomic_set(&c->throttle_queued, 0);
	/*
	 * An exiting task produces nothing more worth waiting for, nor does
	 * one whose consumer suspended it.
	 */
	if (!(current->flags & PF_EXITING) &&
	    ds_stream_pending(&c->stream) > c->limit) {
		atomic64_inc(&c->throttled);
		wait_event_state(c->wait, READ_ONCE(c->dead) ||
				 READ_ONCE(c->suspended) ||
				 ds_stream_pending(&c->stream) <= c->limit,
				 (TASK_KILLABLE | TASK_FREEZABLE));
	}
	ds_consumer_put(c);
}

/* Staging buffers and DS area programming. */

static void ds_arm_fn(void *unused)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	dc->owner = current;
	ds_state_arm(&dc->st, current);
}

static void ds_disarm_fn(void *unused)
{
	ds_state_disarm(this_cpu_ptr(&ds_cpu.st), current);
}

static void *ds_staging_cea(int cpu)
{
	return &get_cpu_entry_area(cpu)->cpu_debug_buffers.ds_staging;
}

static int ds_cpu_up(unsigned int cpu)
{
	struct ds_cpu *dc = per_cpu_ptr(&ds_cpu, cpu);
	unsigned int i, order = get_order(DS_STAGING_SIZE);
	void *cea = ds_staging_cea(cpu);
	struct page *pages;

	/* Still armed since the last consumer. */
	if (READ_ONCE(dc->st.mode) != DS_STATE_OFF)
		return 0;
	if (dc->pages)
		return smp_call_function_single(cpu, ds_arm_fn, NULL, 1);
	/* A failure is reported by the callers, with what it means. */
	if (dc->persist)
		pages = pfn_to_page(PHYS_PFN(dc->persist));
	else
		pages = alloc_pages_node(cpu_to_node(cpu), GFP_KERNEL |
					 __GFP_ZERO | __GFP_NOWARN, order);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < 1U << order; i++)
		cea_set_pte(cea + i * PAGE_SIZE, page_to_phys(pages + i),
			    PAGE_KERNEL);
	flush_tlb_kernel_range((unsigned long)cea,
			       (unsigned long)cea + DS_STAGING_SIZE);
	dc->pages = pages;
	dc->ds = ds_area(cpu);
	ds_state_init(&dc->st, NULL, (struct ds_bts_area *)dc->ds, cea,
		      DS_STAGING_RECORDS, DS_BTS_PMI_SLACK);
	return smp_call_function_single(cpu, ds_arm_fn, NULL, 1);
}

static void ds_cpu_down(unsigned int cpu)
{
	struct ds_cpu *dc = per_cpu_ptr(&ds_cpu, cpu);
	unsigned int i, order = get_order(DS_STAGING_SIZE);
	void *cea = ds_staging_cea(cpu);

	if (!dc->pages)
		return;
	if (cpu_online(cpu))
		smp_call_function_single(cpu, ds_disarm_fn, NULL, 1);
	else
		ds_state_offline(&dc->st);
	for (i = 0; i < 1U << order; i++)
		cea_set_pte(cea + i * PAGE_SIZE, 0, PAGE_NONE);
	flush_tlb_kernel_range((unsigned long)cea,
			       (unsigned long)cea + DS_STAGING_SIZE);
	/* The region's pages keep what was written, for the next boot. */
	if (!dc->persist)
		__free_pages(dc->pages, order);
	dc->pages = NULL;
}

/*
 * CPU hotplug, on the CPU: point IA32_DS_AREA at its save area (again, if
 * perf did at CPU bring-up), and give it staging buffers while consumers
 * exist.
 */
static int ds_hp_online(unsigned int cpu)
{
	int ret = 0;

	preempt_disable();
	ds_load_area();
	preempt_enable();
	mutex_lock(&ds_mutex);
	if (ds_nr_consumers)
		ret = ds_cpu_up(cpu);
	mutex_unlock(&ds_mutex);
	/* Better a CPU that does not trace than one that does not come up. */
	if (ret)
		pr_warn("CPU %u: no staging buffer (%d): threads traced there get a loss record; the next consumer tries again\n",
			cpu, ret);
	return 0;
}

static int ds_hp_offline(unsigned int cpu)
{
	mutex_lock(&ds_mutex);
	ds_cpu_down(cpu);
	mutex_unlock(&ds_mutex);
	return 0;
}

/* Free every CPU's staging buffer.  Context: ds_mutex, cpus_read_lock. */
static void ds_teardown(void)
{
	struct task_struct *p, *t;
	unsigned int cpu;

	for_each_online_cpu(cpu)
		ds_cpu_down(cpu);
	static_branch_disable_cpuslocked(&ds_active);
	/*
	 * Nobody looks at TIF_BTS_USER now; left set, it would send its
	 * tasks through arch_exit_work() at every return to user mode.
	 */
	rcu_read_lock();
	for_each_process_thread(p, t)
		clear_tsk_thread_flag(t, TIF_BTS_USER);
	rcu_read_unlock();
}

static void ds_teardown_fn(struct work_struct *work)
{
	cpus_read_lock();
	mutex_lock(&ds_mutex);
	/* Unless a consumer came meanwhile, or it was done already. */
	if (!ds_nr_consumers && static_key_enabled(&ds_active))
		ds_teardown();
	mutex_unlock(&ds_mutex);
	cpus_read_unlock();
}

/*
 * The first consumer arms every CPU, with the buffers the last one left if
 * they are still there.  Context: ds_mutex, cpus_read_lock.
 */
int ds_start(void)
{
	unsigned int cpu;
	int ret;

	/* Branch tracing excludes perf's LBR and PT users as perf's BTS does. */
	ret = x86_perf_bts_exclusive_get();
	if (ret)
		return ret;
	for_each_online_cpu(cpu) {
		ret = ds_cpu_up(cpu);
		if (ret)
			goto fail;
	}
	static_branch_enable_cpuslocked(&ds_active);
	return 0;
fail:
	ds_teardown();
	x86_perf_bts_exclusive_put();
	return ret;
}

/*
 * With consumers present every online CPU is armed, but one whose staging
 * buffer could not be allocated when it came online: try again for each
 * new consumer.  A CPU consumer needs its CPU armed, if online.
 * Context: ds_mutex, cpus_read_lock.
 */
int ds_arm_missing(const struct ds_bts_config *cfg)
{
	unsigned int cpu;
	int ret = 0;

	for_each_online_cpu(cpu) {
		int err = ds_cpu_up(cpu);

		if (err && !cfg->task && cpu == cfg->cpu)
			ret = err;
	}
	return ret;
}

/*
 * The last consumer is gone: perf's LBR and PT users may come now, and the
 * buffers go a while later.  The CPUs stay armed meanwhile, with the
 * hardware off: no consumer wants anything.  Context: ds_mutex.
 */
void ds_stop(void)
{
	x86_perf_bts_exclusive_put();
	schedule_delayed_work(&ds_teardown_work, DS_IDLE_TEARDOWN);
}

/*
 * Kernel-mode recording on CPUs that Meltdown affects.  The staging buffers
 * are in the cpu_entry_area, which PTI maps into every user page table, and
 * Meltdown lets any local user read what is mapped there: a kernel branch
 * trace gives away the kernel's layout (KASLR) and control flow.  Such
 * recording is refused unless the administrator accepts that risk with
 * sysctl kernel.bts_kernel_recording=1 (or sysctl.kernel.bts_kernel_recording=1
 * on the kernel command line).  Consumers already attached keep recording
 * when it is set back to 0.
 */
static int ds_kernel_recording;

static struct ctl_table ds_sysctls[] = {
	{
		.procname	= "bts_kernel_recording",
		.data		= &ds_kernel_recording,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
};

/**
 * ds_kernel_recording_allowed() - may a new consumer record kernel mode?
 *
 * Return: true on CPUs that Meltdown does not affect, and on those it does
 * when sysctl kernel.bts_kernel_recording is 1.  A consumer that records
 * kernel mode (DS_PRIV_KERNEL or DS_PRIV_ALL) is refused with -EACCES
 * otherwise.
 */
bool ds_kernel_recording_allowed(void)
{
	return !boot_cpu_has_bug(X86_BUG_CPU_MELTDOWN) ||
	       READ_ONCE(ds_kernel_recording);
}

/**
 * ds_freeze_local() - stop branch tracing on this CPU, and keep it stopped
 *
 * For a crash dump: the CPU's last records stay those of the moments before
 * the call (first thing in oops_begin() or panic()), not those of the
 * printing that follows.  Nothing restarts the hardware on this CPU, no
 * switch, NMI or unpause, until ds_thaw_local(); the other CPUs go on.
 * A snapshot taken on a running machine (an event trigger) freezes and
 * thaws around its ds_read_last_local(); it thaws only when its own call
 * froze the CPU, so that it never undoes a crash's freeze.
 *
 * Context: any, NMI included, preemption off: no locks, no IPI, no sleeping,
 * no allocation.
 * Return: true if this call froze the CPU; false if it was frozen already
 * or no consumer is active.
 */
bool ds_freeze_local(void)
{
	if (!static_branch_unlikely(&ds_active))
		return false;
	return ds_state_freeze(this_cpu_ptr(&ds_cpu.st));
}

/* The CPUs online when a panic began: those it stops (smp_send_stop()). */
static struct cpumask ds_panic_cpus;

/*
 * A panic freezes its CPU's trace first thing, as oops_begin() does, and
 * notes which CPUs ran then, for ds_read_last_stopped().
 */
void arch_panic_begin(void)
{
	ds_freeze_local();
	cpumask_copy(&ds_panic_cpus, cpu_online_mask);
}

/**
 * ds_thaw_local() - let branch tracing on this CPU go on after a freeze
 *
 * When the machine survived (oops_end() without a panic): the hardware
 * traces for this CPU's consumers again, at once, or when whoever holds it
 * paused restarts it.
 *
 * Context: as ds_freeze_local().
 */
void ds_thaw_local(void)
{
	if (static_branch_unlikely(&ds_active))
		ds_state_thaw(this_cpu_ptr(&ds_cpu.st), current);
}

/*
 * The newest @n records of the lone ring consumer the hardware serves
 * directly: those of its stream, then those of the hardware's ring, which
 * stays as it is (an NMI never changes the mode).  Context: @dc frozen, or
 * its CPU stopped.
 */
static u32 ds_read_last_hw_ring(struct ds_cpu *dc, struct ds_consumer *c,
				struct bts_record *out, u32 n)
{
	const struct bts_record *segs[2];
	u32 nrs[2], hw, newer, older;

	ds_staging_peek_ring(&dc->st.staging, dc->st.area, segs, nrs);
	hw = min(n, nrs[0] + nrs[1]);
	older = ds_stream_read_last_stopped(&c->stream, out, n - hw);
	newer = min(hw, nrs[1]);
	memcpy(out + older, segs[0] + nrs[0] - (hw - newer),
	       (hw - newer) * sizeof(*out));
	memcpy(out + older + hw - newer, segs[1] + nrs[1] - newer,
	       newer * sizeof(*out));
	return older + hw;
}

/**
 * ds_read_last_local() - a per-CPU ring's newest records, on a frozen CPU
 * @c: a ring consumer of this CPU
 * @out: room for @n records
 * @n: how many are wanted
 *
 * The crash-time ds_read_last_bts(): first the records this CPU staged go
 * into its streams, unless the call interrupted the layer with the CPU
 * paused (a drain, a switch), whose records are then left out; then the
 * copy, which leaves out a record the interrupted code was writing, and
 * never waits.  A lone flight recorder whose hardware writes the ring
 * directly gets its newest records from there, and the CPU stays in that
 * mode.
 *
 * Context: this CPU frozen by ds_freeze_local(), preemption off; any, NMI
 * included: no locks, no IPI, no sleeping.
 * Return: the number copied, oldest first, at most the ring's N; 0 for a
 * consumer that is not a ring of this CPU, or a CPU that is not frozen.
 */
u32 ds_read_last_local(struct ds_consumer *c, struct bts_record *out, u32 n)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	if (c->cfg.mode != DS_MODE_RING || c->cfg.task ||
	    c->cfg.cpu != smp_processor_id() || !READ_ONCE(dc->st.frozen))
		return 0;
	n = min(n, c->stream.size - 1);
	if (dc->st.ring == &c->stream)
		return ds_read_last_hw_ring(dc, c, out, n);
	ds_state_drain_frozen(&dc->st, dc->owner);
	return ds_stream_read_last_stopped(&c->stream, out, n);
}

/**
 * ds_read_last_stopped() - a stopped CPU's ring's newest records, in a panic
 * @c: a ring consumer of another CPU, which panic() stopped
 * @out: room for @n records
 * @n: how many are wanted
 *
 * For panic notifiers, after smp_send_stop(): the CPU of @c no longer runs
 * (it is offline, halted with interrupts off, as panic() left it), so its
 * records can be read from here without its help and without waiting.  A
 * lone flight recorder whose hardware writes the ring directly gets the
 * newest records there: the last are those of the stop's NMI.  Any other
 * ring gets what was drained into its stream; what the stopped CPU staged
 * after its last drain is left out, as is a record it was writing.
 *
 * Context: a panic, other CPUs stopped; any: no locks, no IPI, no sleeping.
 * Return: the number copied, oldest first, at most the ring's N; 0 for a
 * consumer that is not a ring of a CPU other than this one, or whose CPU
 * the panic did not stop: still online (it did not stop, or this is no
 * panic), or offline before the panic began (its ring is of then).
 */
u32 ds_read_last_stopped(struct ds_consumer *c, struct bts_record *out, u32 n)
{
	int cpu = c->cfg.cpu;
	struct ds_cpu *dc;

	if (c->cfg.mode != DS_MODE_RING || c->cfg.task ||
	    cpu == smp_processor_id() || cpu_online(cpu) ||
	    !cpumask_test_cpu(cpu, &ds_panic_cpus))
		return 0;
	dc = per_cpu_ptr(&ds_cpu, cpu);
	n = min(n, c->stream.size - 1);
	if (READ_ONCE(dc->st.ring) == &c->stream)
		return ds_read_last_hw_ring(dc, c, out, n);
	return ds_stream_read_last_stopped(&c->stream, out, n);
}

static void __init ds_detect(void)
{
	u64 misc;

	if (!boot_cpu_has(X86_FEATURE_DS) || !boot_cpu_has(X86_FEATURE_DTES64))
		return;
	rdmsrl(MSR_IA32_MISC_ENABLE, misc);
	ds_hw.bts = !(misc & MSR_IA32_MISC_ENABLE_BTS_UNAVAIL);
	ds_hw.ds_cpl = boot_cpu_has(X86_FEATURE_DSCPL);
	ds_hw.pebs = !(misc & MSR_IA32_MISC_ENABLE_PEBS_UNAVAIL);
	if (ds_hw.pebs && boot_cpu_has(X86_FEATURE_PDCM)) {
		u64 caps;

		rdmsrl(MSR_IA32_PERF_CAPABILITIES, caps);
		ds_hw.pebs_format = (caps & PERF_CAP_PEBS_FORMAT) >> 8;
	}
}

static int __init ds_init(void)
{
	int ret;

	ds_detect();
	register_sysctl_init("kernel", ds_sysctls);
	pr_info("BTS %s, DS-CPL %s, PEBS %s (format %u)\n",
		ds_hw.bts ? "yes" : "no", ds_hw.ds_cpl ? "yes" : "no",
		ds_hw.pebs ? "yes" : "no", ds_hw.pebs_format);
	if (!ds_hw.bts)
		return 0;
	ds_persist_init();
	ret = register_nmi_handler(NMI_LOCAL, ds_nmi, 0, "ds");
	if (ret)
		return ret;
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "x86/ds:online",
				ds_hp_online, ds_hp_offline);
	if (ret < 0) {
		unregister_nmi_handler(NMI_LOCAL, "ds");
		ds_hw.bts = false;
		return ret;
	}
	return 0;
}
arch_initcall(ds_init);

#ifdef CONFIG_X86_DS_KUNIT_TEST
#include "ds_test.c"
#endif
