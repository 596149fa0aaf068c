// SPDX-License-Identifier: GPL-2.0
/*
 * The x86 Debug Store layer: hardware ownership and consumers.
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
 * the records by ds_annotate.c, with ds_stage().
 *
 * Serialization.  All producing on a CPU happens on that CPU with
 * interrupts off or in NMI: the hardware is paused (ds_pause()), drained,
 * reprogrammed and resumed (ds_unpause()).  An NMI that finds the CPU
 * paused leaves the records to whoever paused it.  A task's streams are
 * produced only by the CPU the task runs on; the scheduler orders one CPU's
 * switch-out drain before the next CPU's switch-in.  Consumer sets are
 * read under RCU (NMI included) and replaced whole, so a release need only
 * unpublish, wait for a grace period and flush its irq_work.
 */
#define pr_fmt(fmt) "x86/ds: " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/debugfs.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/nmi.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/sysctl.h>
#include <linux/task_work.h>
#include <linux/panic_notifier.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include <kunit/static_stub.h>

#include <asm/apic.h>
#include <asm/cpu_entry_area.h>
#include <asm/debugreg.h>
#include <asm/desc.h>
#include <asm/ds.h>
#include <asm/hw_irq.h>
#include <asm/idtentry.h>
#include <asm/intel_ds.h>
#include <asm/msr.h>
#include <asm/perf_event.h>
#include <asm/proto.h>
#include <asm/sections.h>
#include <asm/tlbflush.h>
#include <asm/trapnr.h>

#include "ds_core.h"
#include "ds_layer.h"

/* Records per staging sub-buffer: half the cpu_entry_area slot. */
#define DS_STAGING_RECORDS	(DS_STAGING_SIZE / sizeof(struct bts_record) / 2)

/*
 * Records the hardware may write between crossing the threshold and the
 * PMI handler stopping it: with kernel tracing on, the NMI entry path
 * itself, longer with debug options.  perf keeps a sixteenth of its
 * buffer; a fifth of a sub-buffer here.
 */
#define DS_PMI_SLACK		256

/*
 * Lossless streams get room beyond their size for what a task can produce
 * between the drain that finds the stream full and the task's return to
 * user mode, where it waits: at most two sub-buffers.
 */
#define DS_LOSSLESS_HEADROOM	(2 * DS_STAGING_RECORDS)

static_assert(offsetof(struct debug_store, bts_index) ==
	      offsetof(struct ds_bts_area, index));
static_assert(offsetof(struct debug_store, bts_interrupt_threshold) ==
	      offsetof(struct ds_bts_area, threshold));

DEFINE_PER_CPU(struct ds_cpu, ds_cpu);

/* Serializes requests, releases and hotplug. */
static DEFINE_MUTEX(ds_mutex);
/* Consumers in existence; perf's LBR and PT users wait while non-zero. */
static unsigned int ds_nr_consumers;

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
 * What the CPUs have: BTS into a 64-bit DS save area, privilege filtering
 * (DS-CPL), and PEBS with its record format, for the boot log (perf's PEBS
 * code makes its own choices from the same bits).
 */
static struct {
	bool	bts;
	bool	ds_cpl;
	bool	pebs;
	u8	pebs_format;
} ds_hw __ro_after_init;

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
EXPORT_SYMBOL_GPL(ds_bts_available);

/**
 * ds_area() - the DS save area of a CPU
 * @cpu: the CPU
 *
 * perf's PEBS code fills in the PEBS fields; the BTS fields are the
 * layer's (perf's BTS users are its consumers).
 *
 * Context: any.
 * Return: the area, at its cpu_entry_area address.
 */
struct debug_store *ds_area(int cpu)
{
	return &get_cpu_entry_area(cpu)->cpu_debug_store;
}

/**
 * ds_load_area() - point IA32_DS_AREA at this CPU's DS save area
 *
 * The only write of the MSR: at CPU bring-up and resume.
 *
 * Context: the CPU itself, preemption off.
 */
void ds_load_area(void)
{
	if (boot_cpu_has(X86_FEATURE_DS))
		wrmsrl(MSR_IA32_DS_AREA,
		       (unsigned long)ds_area(smp_processor_id()));
}

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
 * How user mode entered the kernel, from the entry code that called into
 * C: its entry_SYSCALL_64 or IDT stub pushed the return address of that
 * call right below pt_regs (entry_64.S, idtentry_body; the same for the
 * compat entries).  The table maps each stub's start, sorted, to the
 * BTS_PSEUDO_KERNEL argument it stands for, and to how far before the
 * saved user IP the instruction that entered lies: a system call
 * instruction (2 bytes; the compat fast path's regs->ip is the vDSO's
 * landing pad, after `sysenter` or `syscall` and `int $0x80`), int3 (1).
 * External interrupts share one stub; their vector comes from
 * ds_irq_from_user_mode().  int $0x80 alone enters with the system call
 * number in ax rather than orig_ax (@nr_in_ax).  Built once at boot from
 * the IDT.
 */
struct ds_entry_point {
	unsigned long	addr;
	u32		kind;
	u16		back;
	u8		abi;
	u8		nr_in_ax;
};

static struct ds_entry_point ds_entry_points[IDT_ENTRIES + 5] __ro_after_init;
static unsigned int ds_nr_entry_points __ro_after_init;

static void __init ds_entry_point_add(unsigned long addr, u32 kind, u16 back,
				      u8 abi)
{
	unsigned int i;

	for (i = 0; i < ds_nr_entry_points; i++)
		if (ds_entry_points[i].addr == addr)
			return;
	if (!WARN_ON_ONCE(i == ARRAY_SIZE(ds_entry_points)))
		ds_entry_points[ds_nr_entry_points++] =
			(struct ds_entry_point){
				addr, kind, back, abi,
				/* int $0x80's gate, of the i386 entries */
				.nr_in_ax = kind == BTS_ENTRY_SYSCALL &&
					    abi == BTS_ABI_I386 && back == 2,
			};
}

static int __init ds_entry_point_cmp(const void *a, const void *b)
{
	const struct ds_entry_point *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void __init ds_entry_points_init(void)
{
	unsigned long irqs = (unsigned long)irq_entries_start;
	unsigned long irqs_end = irqs + NR_EXTERNAL_VECTORS * IDT_ALIGN;
	struct desc_ptr idt;
	const gate_desc *gate;
	unsigned int v;

	store_idt(&idt);
	gate = (const gate_desc *)idt.address;
	for (v = 0; v < (idt.size + 1) / sizeof(*gate); v++) {
		unsigned long addr = gate_offset(&gate[v]);

		/* Per-vector stubs that jump to a shared one, added below. */
		if (!addr || (addr >= irqs && addr < irqs_end))
			continue;
#ifdef CONFIG_X86_LOCAL_APIC
		if (addr >= (unsigned long)spurious_entries_start &&
		    addr < (unsigned long)spurious_entries_start +
			   NR_SYSTEM_VECTORS * IDT_ALIGN)
			continue;
#endif
		if (v == IA32_SYSCALL_VECTOR)
			ds_entry_point_add(addr, BTS_ENTRY_SYSCALL, 2,
					   BTS_ABI_I386);
		else if (v < FIRST_EXTERNAL_VECTOR)
			ds_entry_point_add(addr, BTS_ENTRY_EXCEPTION | v << 8,
					   v == X86_TRAP_BP, BTS_ABI_NONE);
		else
			ds_entry_point_add(addr, BTS_ENTRY_INTERRUPT | v << 8,
					   0, BTS_ABI_NONE);
	}
	ds_entry_point_add((unsigned long)asm_common_interrupt,
			   BTS_ENTRY_INTERRUPT, 0, BTS_ABI_NONE);
#ifdef CONFIG_X86_LOCAL_APIC
	ds_entry_point_add((unsigned long)asm_spurious_interrupt,
			   BTS_ENTRY_INTERRUPT, 0, BTS_ABI_NONE);
#endif
	/* x32 or not is the number's bit 30: ds_kernel_time(). */
	ds_entry_point_add((unsigned long)entry_SYSCALL_64, BTS_ENTRY_SYSCALL,
			   2, BTS_ABI_X86_64);
#ifdef CONFIG_IA32_EMULATION
	ds_entry_point_add((unsigned long)entry_SYSCALL_compat,
			   BTS_ENTRY_SYSCALL, 4, BTS_ABI_I386);
	ds_entry_point_add((unsigned long)entry_SYSENTER_compat,
			   BTS_ENTRY_SYSCALL, 4, BTS_ABI_I386);
#endif
	sort(ds_entry_points, ds_nr_entry_points, sizeof(ds_entry_points[0]),
	     ds_entry_point_cmp, NULL);
}

/* The entry point whose code @ret lies in, or NULL. */
static const struct ds_entry_point *ds_entry_point_of(unsigned long ret)
{
	unsigned int lo = 0, hi = ds_nr_entry_points;

	if (ret < (unsigned long)__entry_text_start ||
	    ret >= (unsigned long)__entry_text_end)
		return NULL;
	/* The last entry point that starts at or before @ret. */
	while (hi - lo > 1) {
		unsigned int mid = (lo + hi) / 2;

		if (ds_entry_points[mid].addr <= ret)
			lo = mid;
		else
			hi = mid;
	}
	if (!hi || ds_entry_points[lo].addr > ret)
		return NULL;
	return &ds_entry_points[lo];
}

/*
 * Set the layer's DEBUGCTL bits, keeping the others (perf's LBR bits).
 * Every NMI-side change of DEBUGCTL, ours and perf's, restores the value it
 * found before the NMI returns, so an NMI between the read and the write
 * here is not undone by the write.
 */
static void ds_hw_write(u64 bits)
{
	unsigned long dbg;

	/* A test injects an NMI here; its lookup takes a lock, not in NMI. */
	if (!in_nmi())
		KUNIT_STATIC_STUB_REDIRECT(ds_hw_write, bits);
	dbg = get_debugctlmsr();

	/* A frozen CPU keeps its last records: see ds_freeze_local(). */
	if (unlikely(this_cpu_read(ds_cpu.frozen)))
		bits = 0;

	if ((dbg & DS_DEBUGCTL_OWNED) != bits)
		update_debugctlmsr((dbg & ~DS_DEBUGCTL_OWNED) | bits);
}

static bool ds_consumer_on(const struct ds_consumer *c)
{
	return !READ_ONCE(c->suspended);
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
 * A lossless stream past its size holds back its task, current, at the
 * return to user mode.  @mode suits the caller's context: TWA_NMI_CURRENT
 * in NMI, TWA_RESUME | TWAF_NO_ALLOC otherwise (the scheduler's locks may
 * be held).
 */
static void ds_throttle(struct ds_consumer *c, int mode)
{
	if (!(c->cfg.flags & DS_BTS_LOSSLESS) ||
	    ds_stream_pending(&c->stream) <= c->limit ||
	    atomic_xchg(&c->throttle_queued, 1))
		return;
	refcount_inc(&c->refs);
	init_task_work(&c->throttle, ds_throttle_fn);
	if (task_work_add(current, &c->throttle, mode)) {
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
			ds_throttle(c, in_nmi() ? TWA_NMI_CURRENT :
				    (TWA_RESUME | TWAF_NO_ALLOC));
	}
}

/*
 * The flight recorder case: the only active consumer is one of the CPU's,
 * a ring of both privilege levels that fits the staging buffer.  The
 * hardware then writes it as a ring, and no record is copied, filtered or
 * interrupted for until the consumer reads or the mix changes.
 */
static struct ds_consumer *ds_ring_candidate(struct ds_cpu *dc,
					     struct task_struct *task)
{
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS], *c;

	if (ds_streams(dc, task, cons) != 1)
		return NULL;
	c = cons[0];
	/* Markers need the splay, which leaves their recipients out. */
	if (c->cfg.task || c->cfg.mode != DS_MODE_RING ||
	    c->cfg.priv != DS_PRIV_ALL || (c->cfg.flags & DS_BTS_MARKERS) ||
	    c->cfg.nr_records >= 2 * dc->staging.nr)
		return NULL;
	return c;
}

/* Hand the hardware's ring to its consumer's stream; back to sub-buffers. */
static void ds_ring_leave(struct ds_cpu *dc)
{
	struct ds_stream *s = &dc->ring->stream;
	const struct bts_record *segs[2];
	u32 nrs[2];

	ds_staging_take_ring(&dc->staging, (struct ds_bts_area *)dc->ds,
			     segs, nrs);
	ds_splay(segs[0], nrs[0], &s, 1);
	ds_splay(segs[1], nrs[1], &s, 1);
	dc->ring = NULL;
}

/*
 * A test hook: /sys/kernel/debug/x86/ds_kernel_records counts, from when
 * a write turns it on, the staged records with a kernel address outside
 * the entry code, which PTI maps for user mode anyway.  With only
 * user-only consumers it must stay 0 (tests/ds-guest).
 */
static bool ds_audit;
static DEFINE_PER_CPU(u64, ds_audit_kernel_records);

static bool ds_kernel_text_addr(u64 addr)
{
	return (s64)addr < 0 &&
	       (addr < (unsigned long)__entry_text_start ||
		addr >= (unsigned long)__entry_text_end);
}

static void ds_audit_staged(const struct bts_record *recs, u32 nr)
{
	u32 i, n = 0;

	for (i = 0; i < nr; i++)
		n += !BTS_RECORD_IS_PSEUDO(recs[i].from) &&
		     (ds_kernel_text_addr(recs[i].from) ||
		      ds_kernel_text_addr(recs[i].to));
	this_cpu_add(ds_audit_kernel_records, n);
}

static int ds_audit_get(void *data, u64 *val)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu(ds_audit_kernel_records, cpu);
	*val = sum;
	return 0;
}

/* Any write starts counting afresh. */
static int ds_audit_set(void *data, u64 val)
{
	int cpu;

	WRITE_ONCE(ds_audit, false);
	for_each_possible_cpu(cpu)
		per_cpu(ds_audit_kernel_records, cpu) = 0;
	WRITE_ONCE(ds_audit, true);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(ds_audit_fops, ds_audit_get, ds_audit_set,
			 "%llu\n");

/* Splay the staged records into @task's and the CPU's streams. */
static void ds_drain(struct ds_cpu *dc, struct task_struct *task)
{
	struct ds_stream *streams[2 * DS_MAX_CONSUMERS];
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS];
	const struct bts_record *recs;
	unsigned int i, n;
	bool overran;
	u32 nr;

	if (!dc->armed)
		return;
	if (dc->ring) {
		ds_ring_leave(dc);
		return;
	}
	/*
	 * Its PMI is owed unless an NMI claims it, before this drain (with
	 * the same generation) or after it.  Paused: the index stays put.
	 * An NMI may run between any two of these steps; see ds_pmi_claim().
	 */
	if (READ_ONCE(dc->ds->bts_index) >= dc->ds->bts_interrupt_threshold)
		dc->pmi_owed_gen = dc->pmi_gen;
	barrier();
	nr = ds_staging_take(&dc->staging, (struct ds_bts_area *)dc->ds,
			     &recs, &overran);
	barrier();
	dc->pmi_gen++;
	if (unlikely(READ_ONCE(ds_audit)))
		ds_audit_staged(recs, nr);
	/* Even without records: a stream may owe a loss record. */
	n = ds_streams(dc, task, cons);
	for (i = 0; i < n; i++)
		streams[i] = &cons[i]->stream;
	ds_splay(recs, nr, streams, n);
	if (unlikely(overran))
		ds_splay_overrun(streams, n);
	ds_produced(cons, n);
}

/* Forget the entry from user mode: the stretch in the kernel went unseen. */
static void ds_entry_unseen(struct thread_struct *t)
{
	t->ds_entry_kind = BTS_ENTRY_UNKNOWN;
	t->ds_entry_from = 0;
	t->ds_entry_ax = ~0UL;
}

/*
 * The bits the CPU's and current's active consumers need.  A user-only
 * one among them gets its crossings from the entry and exit code: current
 * goes by TIF_BTS_USER from here on, until an exit to user mode finds no
 * such consumer (ds_stage_crossing()).
 */
static u64 ds_wanted(struct ds_cpu *dc)
{
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS];
	unsigned int i, n, privs = 0;

	if (!dc->armed)
		return 0;
	n = ds_streams(dc, current, cons);
	for (i = 0; i < n; i++) {
		privs |= cons[i]->cfg.priv;
		if (cons[i]->cfg.priv == DS_PRIV_USER &&
		    !test_thread_flag(TIF_BTS_USER)) {
			/* Its entry into the kernel went unseen. */
			ds_entry_unseen(&current->thread);
			set_thread_flag(TIF_BTS_USER);
		}
	}
	/* A ring overwrites its oldest record only with BTINT clear. */
	if (dc->ring)
		return ds_debugctl_for(privs, ds_hw.ds_cpl) & ~DS_DEBUGCTL_BTINT;
	return ds_debugctl_for(privs, ds_hw.ds_cpl);
}

/*
 * Stop the hardware.  It stops before the pause begins and restarts after
 * the pause ends (ds_restart()), so that it never runs while the CPU is
 * paused: an NMI that finds the CPU paused leaves the records to the
 * pauser, who has yet to drain them or has drained them already, while
 * one that does not holds the hardware as it finds it and drains a full
 * sub-buffer itself.  Context: interrupts off or NMI, on @dc's CPU.
 */
static void ds_pause(struct ds_cpu *dc)
{
	if (!dc->pause)
		ds_hw_write(0);
	/* An NMI from here on leaves the records to us. */
	barrier();
	dc->pause++;
}

/* End a pause; the hardware restarts with @bits if it was the last. */
static void ds_restart(struct ds_cpu *dc, u64 bits)
{
	barrier();
	if (--dc->pause)
		return;
	/* An NMI from here on holds the hardware and drains, see ds_pause(). */
	barrier();
	ds_hw_write(bits);
}

/*
 * Drain what the hardware wrote for the current task and restart it with
 * what the consumers now want: as a ring for a lone flight recorder, which
 * keeps going untouched while it stays alone.
 */
static void ds_unpause(struct ds_cpu *dc)
{
	u64 bits = 0;

	if (dc->pause == 1 && dc->armed) {
		struct ds_consumer *ring = ds_ring_candidate(dc, current);

		if (!ring || ring != dc->ring) {
			ds_drain(dc, current);
			if (ring) {
				ds_staging_arm_ring(&dc->staging,
						    (struct ds_bts_area *)dc->ds);
				dc->ring = ring;
			}
		}
		bits = ds_wanted(dc);
	}
	ds_restart(dc, bits);
}

/*
 * Stop the hardware for a while, to restart it exactly as it was with
 * ds_restart() and the bits returned, without re-evaluating the mix of
 * consumers as ds_unpause() does: for NMI and interrupt code, which may
 * have interrupted someone's read-modify-write of DEBUGCTL.  Context:
 * interrupts off or NMI, on @dc's CPU, not paused.
 */
static u64 ds_hold(struct ds_cpu *dc)
{
	unsigned long dbg = get_debugctlmsr();
	u64 bits = dbg & DS_DEBUGCTL_OWNED;

	/* ds_pause(), with the value just read. */
	if (bits)
		update_debugctlmsr(dbg & ~DS_DEBUGCTL_OWNED);
	barrier();
	dc->pause++;
	return bits;
}

/*
 * Whether an NMI is the layer's threshold PMI: for the sub-buffer armed
 * now, which reached its threshold, or owed for one a drain took past it
 * before the PMI arrived.  Claims it, so that it is claimed once: the NMI
 * handlers of other drivers decide about theirs, and an NMI nobody claims
 * is reported as unknown.  A ring raises no PMI: its threshold lies past
 * its end.  Context: NMI, on @dc's CPU.
 */
static bool ds_pmi_claim(struct ds_cpu *dc)
{
	const struct ds_bts_area *hw = (struct ds_bts_area *)dc->ds;

	if (READ_ONCE(hw->index) >= READ_ONCE(hw->threshold)) {
		dc->pmi_claimed_gen = dc->pmi_gen;
		return true;
	}
	if (dc->pmi_owed_gen != dc->pmi_claimed_gen) {
		dc->pmi_claimed_gen = dc->pmi_owed_gen;
		return true;
	}
	return false;
}

/**
 * __ds_nmi_enter() - stop tracing for an NMI
 *
 * Every NMI runs untraced, so that neither its handlers (perf's PMI
 * handler among them, and any registered later) nor a drain fill the
 * slack of the sub-buffer, and no handler's branches reach a stream.  The
 * hardware restarts exactly as it was: an NMI never changes the mode.  The
 * mix of consumers is not re-evaluated, nor is a hardware ring left, since
 * code the NMI interrupted may be in the middle of its own
 * read-modify-write of DEBUGCTL or of the DS area, which must find them as
 * it read them.
 *
 * Context: default_do_nmi(), before the handlers; only while ds_active.
 */
void __ds_nmi_enter(void)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	/* Paused: whoever paused drains and restarts. */
	if (!dc->armed || dc->pause)
		return;
	dc->nmi_bits = ds_hold(dc);
	dc->nmi_paused = true;
}

/**
 * __ds_nmi_exit() - restart tracing after an NMI
 *
 * Context: default_do_nmi(), after the handlers; only while ds_active.
 */
void __ds_nmi_exit(void)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	if (!dc->armed)
		return;
	/* The LVT entry masks itself on delivery (SDM Vol. 3B 18.4.9.3). */
	apic_write(APIC_LVTPC, APIC_DM_NMI);
	if (dc->nmi_paused) {
		dc->nmi_paused = false;
		ds_restart(dc, dc->nmi_bits);
	}
}

/*
 * The threshold PMI: drain the full sub-buffer, unless the layer had the
 * hardware paused, when the pauser drains.
 */
static int ds_nmi(unsigned int cmd, struct pt_regs *regs)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	struct ds_bts_area *hw;
	bool full;

	if (!dc->armed)
		return NMI_DONE;
	hw = (struct ds_bts_area *)dc->ds;
	/* A sub-buffer, then: a ring never reaches its threshold. */
	full = READ_ONCE(hw->index) >= READ_ONCE(hw->threshold);
	if (!ds_pmi_claim(dc))
		return NMI_DONE;
	/*
	 * An owed PMI's sub-buffer was drained already.  In __switch_to()
	 * before __ds_switch_to() the records are the previous task's, which
	 * __ds_switch_to() drains.
	 */
	if (full && dc->nmi_paused && dc->owner == current)
		ds_drain(dc, current);
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
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS];
	struct bts_record rec;
	unsigned int i, n;

	/*
	 * Nobody traces this CPU, @prev or @next: the hardware was off for
	 * @prev (ds_wanted()), so there is nothing to drain, and stays off.
	 * A consumer that comes for either meanwhile syncs through ds_sync(),
	 * which finds @next current.
	 */
	if (!rcu_access_pointer(dc->set) &&
	    !rcu_access_pointer(prev->thread.ds_consumers) &&
	    !rcu_access_pointer(next->thread.ds_consumers)) {
		dc->owner = next;
		return;
	}
	if (!dc->armed) {
		ds_untraced(next);
		return;
	}
	ds_pause(dc);
	/* Per-CPU streams learn who runs now. */
	rec = (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_SWITCH, 0),
		.to	= task_pid_nr(next),
		.flags	= task_tgid_nr(next),
	};
	if (dc->ring) {
		/* @prev has no consumer, or there would be no ring. */
		ds_staging_ring_append(&dc->staging,
				       (struct ds_bts_area *)dc->ds, &rec);
	} else {
		ds_drain(dc, prev);
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
		ds_throttle(cons[i], TWA_RESUME | TWAF_NO_ALLOC);
		cons[i]->untraced = false;
	}
	ds_unpause(dc);
}

/*
 * Write @nr records where the hardware writes its next one on @dc, so that
 * they reach the streams in order with the branches around them: into the
 * staging buffer, or into the hardware ring of a lone flight recorder.
 * Context: interrupts off, on @dc's CPU, not paused.
 */
void ds_stage(struct ds_cpu *dc, const struct bts_record *rec,
	      unsigned int nr)
{
	struct ds_bts_area *hw = (struct ds_bts_area *)dc->ds;
	unsigned int i;
	u64 bits;

	bits = ds_hold(dc);
	if (dc->ring) {
		for (i = 0; i < nr; i++)
			ds_staging_ring_append(&dc->staging, hw, &rec[i]);
		ds_restart(dc, bits);
		return;
	}
	ds_staging_append(&dc->staging, hw, rec, nr);
	ds_restart(dc, bits);
	/*
	 * No PMI comes for a record software wrote: drain a sub-buffer the
	 * records took to its threshold now.  An NMI after the pause ended
	 * drained it already.
	 */
	if (READ_ONCE(hw->index) >= READ_ONCE(hw->threshold)) {
		ds_pause(dc);
		ds_unpause(dc);
	}
}

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
	struct ds_consumer *cons[2 * DS_MAX_CONSUMERS];
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	unsigned int i, n;

	if (!dc->armed || dc->ring)
		return;
	n = ds_streams(dc, current, cons);
	for (i = 0; i < n && cons[i]->cfg.priv != DS_PRIV_USER; i++)
		;
	if (i == n) {
		/* Gone; a later one sets the flag again (ds_wanted()). */
		clear_thread_flag(TIF_BTS_USER);
		return;
	}
	ds_stage(dc, rec, nr);
}

/*
 * A key for a stream that takes markers, which names it among a marker's
 * recipients: a new one for each consumer, 0 never.  A key comes back
 * after 2^32 consumers, when the one that had it is long gone.
 */
static u32 ds_marker_key(void)
{
	static atomic_t last;
	u32 key;

	do {
		key = atomic_inc_return(&last);
	} while (!key);
	return key;
}

/* Consumers that take address-space changes (DS_BTS_MAPS). */
static atomic_t ds_nr_maps;

bool ds_maps_wanted(void)
{
	return static_branch_unlikely(&ds_active) && atomic_read(&ds_nr_maps);
}

/* Records of a stretch in the kernel: BTS_PSEUDO_KERNEL and its detail. */
#define DS_KERNEL_TIME_RECORDS	2

/*
 * The records of current's stretch in the kernel that ends at @resume_to
 * (bts.h: the KERNEL_ENTRY detail, then the KERNEL record).
 */
static void ds_kernel_time(u64 resume_to,
			   struct bts_record rec[DS_KERNEL_TIME_RECORDS])
{
	struct thread_struct *t = &current->thread;
	u32 kind = t->ds_entry_kind;
	u64 from = t->ds_entry_from;
	u64 ax = t->ds_entry_ax;
	u32 abi = BTS_ABI_NONE;

	/* What the entry noted: its stub (ds_enter_from_user_mode()). */
	if (kind & DS_ENTRY_NOTED) {
		unsigned long ret = (unsigned long)__entry_text_start +
				    (kind & ~(DS_ENTRY_NOTED | DS_ENTRY_AX));
		const struct ds_entry_point *ep = ds_entry_point_of(ret);

		/* orig_ax was -1: a number only int $0x80 left in ax. */
		if ((kind & DS_ENTRY_AX) && !(ep && ep->nr_in_ax))
			ax = ~0ULL;
		kind = ep ? ep->kind : BTS_ENTRY_UNKNOWN;
		from -= ep ? ep->back : 0;
		abi = ep ? ep->abi : BTS_ABI_NONE;
	}
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

/**
 * __ds_exit_to_user_mode() - stage the record of the kernel time ending
 * @regs: the registers user mode resumes with
 *
 * Context: arch_exit_to_user_mode_prepare(), interrupts off, for current
 * with TIF_BTS_USER.
 */
void __ds_exit_to_user_mode(struct pt_regs *regs)
{
	struct bts_record rec[DS_KERNEL_TIME_RECORDS];

	ds_kernel_time(regs->ip, rec);
	/* The next stretch is unseen until an entry says otherwise. */
	ds_entry_unseen(&current->thread);
	ds_stage_crossing(rec, ARRAY_SIZE(rec));
}

/*
 * The end of an exiting task's user-only streams: the stretch in the
 * kernel it never came back from (exit_group(), a fatal signal), with
 * nowhere it resumed.  Only the task's own streams get it: a CPU's sees
 * tasks come and go.  Context: current, exiting, interrupts off, its
 * records drained.
 */
static void ds_end_kernel_time(const struct ds_set *set)
{
	struct bts_record rec[DS_KERNEL_TIME_RECORDS];
	unsigned int i, j;

	ds_kernel_time(0, rec);
	for (i = 0; i < set->nr; i++) {
		struct ds_consumer *c = set->c[i];

		if (c->cfg.priv != DS_PRIV_USER || !ds_consumer_on(c))
			continue;
		for (j = 0; j < ARRAY_SIZE(rec); j++)
			ds_stream_append(&c->stream, &rec[j]);
	}
}

/* Bring @dc's streams up to date.  Context: on @dc's CPU, irqs off. */
static void ds_sync_local(void *unused)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	ds_pause(dc);
	/* A hardware ring too: its consumer is about to look. */
	ds_drain(dc, current);
	ds_unpause(dc);
}

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

static void ds_set_suspended(struct ds_consumer *c, enum ds_sync_change ch)
{
	if (ch != DS_SYNC_NONE)
		WRITE_ONCE(c->suspended, ch == DS_SYNC_SUSPEND);
}

static void ds_sync_fn(void *p)
{
	struct ds_sync_arg *arg = p;
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	struct task_struct *task = arg->c->cfg.task;

	/* Switched away since, which drained it: ds_sync() looks again. */
	if (task && task != current)
		return;
	ds_pause(dc);
	/* A hardware ring too: its consumer may be about to look. */
	ds_drain(dc, current);
	ds_set_suspended(arg->c, arg->change);
	arg->done = true;
	ds_unpause(dc);
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
static void ds_sync(struct ds_consumer *c, enum ds_sync_change change)
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

static void ds_notify_fn(struct irq_work *work)
{
	struct ds_consumer *c = container_of(work, struct ds_consumer, notify);
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	enum ds_overflow_action act;
	u64 bits;

	/*
	 * Not tracing the callback, which would trace its own copying.  The
	 * hardware resumes as it was, without a drain that would find more
	 * consumers to call back, unless the threshold was passed before.
	 */
	bits = ds_hold(dc);
	dc->in_callback = c;
	act = c->cfg.ops->overflow(c, c->cfg.data);
	dc->in_callback = NULL;
	if (dc->armed && dc->ds->bts_index >= dc->ds->bts_interrupt_threshold)
		ds_drain(dc, current);
	ds_restart(dc, bits);
	if (act == DS_OVERFLOW_SUSPEND)
		WRITE_ONCE(c->suspended, true);
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

static void ds_consumer_put(struct ds_consumer *c)
{
	if (!refcount_dec_and_test(&c->refs))
		return;
	if (c->cfg.task)
		put_task_struct(c->cfg.task);
	if (c->stream.maps)
		atomic_dec(&ds_nr_maps);
	kvfree(c->stream.buf);
	kfree(c);
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

	ds_pause(dc);
	ds_staging_arm(&dc->staging, (struct ds_bts_area *)dc->ds);
	dc->owner = current;
	dc->armed = true;
	ds_unpause(dc);
}

static void ds_disarm_fn(void *unused)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	ds_pause(dc);
	ds_drain(dc, current);
	dc->armed = false;
	memset(dc->ds, 0, sizeof(struct ds_bts_area));
	ds_unpause(dc);
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
	if (READ_ONCE(dc->armed))
		return 0;
	if (dc->pages)
		return smp_call_function_single(cpu, ds_arm_fn, NULL, 1);
	/* A failure is reported by the callers, with what it means. */
	pages = alloc_pages_node(cpu_to_node(cpu),
				 GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN, order);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < 1U << order; i++)
		cea_set_pte(cea + i * PAGE_SIZE, page_to_phys(pages + i),
			    PAGE_KERNEL);
	flush_tlb_kernel_range((unsigned long)cea,
			       (unsigned long)cea + DS_STAGING_SIZE);
	dc->pages = pages;
	dc->ds = ds_area(cpu);
	ds_staging_init(&dc->staging, cea, DS_STAGING_RECORDS, DS_PMI_SLACK);
	return smp_call_function_single(cpu, ds_arm_fn, NULL, 1);
}

static void ds_cpu_down(unsigned int cpu)
{
	struct ds_cpu *dc = per_cpu_ptr(&ds_cpu, cpu);
	unsigned int i, order = get_order(DS_STAGING_SIZE);
	void *cea = ds_staging_cea(cpu);

	if (!dc->pages)
		return;
	if (cpu_online(cpu)) {
		smp_call_function_single(cpu, ds_disarm_fn, NULL, 1);
	} else {
		dc->armed = false;
		dc->ring = NULL;
	}
	for (i = 0; i < 1U << order; i++)
		cea_set_pte(cea + i * PAGE_SIZE, 0, PAGE_NONE);
	flush_tlb_kernel_range((unsigned long)cea,
			       (unsigned long)cea + DS_STAGING_SIZE);
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
static int ds_start(void)
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
static int ds_arm_missing(const struct ds_bts_config *cfg)
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
static void ds_stop(void)
{
	x86_perf_bts_exclusive_put();
	schedule_delayed_work(&ds_teardown_work, DS_IDLE_TEARDOWN);
}

/* Consumer sets: replaced whole under ds_mutex, read under RCU. */

static struct ds_set __rcu **ds_set_slot(const struct ds_bts_config *cfg)
{
	if (cfg->task)
		return &cfg->task->thread.ds_consumers;
	return &per_cpu(ds_cpu, cfg->cpu).set;
}

/* Wait until no task_exit or task_fork of @c runs. */
static void ds_callbacks_wait(struct ds_consumer *c)
{
	wait_event(c->wait, !atomic_read(&c->callbacks));
}

/* Pin @c for a callback made outside ds_mutex.  Context: ds_mutex. */
static void ds_callback_get(struct ds_consumer *c)
{
	refcount_inc(&c->refs);
	atomic_inc(&c->callbacks);
}

static void ds_callback_put(struct ds_consumer *c)
{
	if (atomic_dec_and_test(&c->callbacks))
		wake_up_all(&c->wait);
	ds_consumer_put(c);
}

static int ds_set_update(struct ds_set __rcu **slot, struct ds_consumer *add,
			 struct ds_consumer *remove)
{
	struct ds_set *old = rcu_dereference_protected(*slot,
					lockdep_is_held(&ds_mutex));
	struct ds_set *new;
	unsigned int i;

	/* Removal must not fail: a freed consumer would stay published. */
	new = kzalloc(sizeof(*new), add ? GFP_KERNEL : GFP_KERNEL | __GFP_NOFAIL);
	if (!new)
		return -ENOMEM;
	for (i = 0; old && i < old->nr; i++)
		if (old->c[i] != remove)
			new->c[new->nr++] = old->c[i];
	if (add) {
		if (new->nr == DS_MAX_CONSUMERS) {
			kfree(new);
			return -EBUSY;
		}
		new->c[new->nr++] = add;
	}
	if (!new->nr) {
		kfree(new);
		new = NULL;
	}
	rcu_assign_pointer(*slot, new);
	if (old)
		kfree_rcu(old, rcu);
	return 0;
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
EXPORT_SYMBOL_GPL(ds_kernel_recording_allowed);

static int ds_check_config(const struct ds_bts_config *cfg)
{
	if (cfg->priv != DS_PRIV_KERNEL && cfg->priv != DS_PRIV_USER &&
	    cfg->priv != DS_PRIV_ALL)
		return -EINVAL;
	if (cfg->mode != DS_MODE_RING && cfg->mode != DS_MODE_CONTINUOUS)
		return -EINVAL;
	if (cfg->flags & ~(DS_BTS_LOSSLESS | DS_BTS_SUSPENDED | DS_BTS_INHERIT |
			   DS_BTS_MARKERS | DS_BTS_MAPS))
		return -EINVAL;
	if ((cfg->flags & DS_BTS_INHERIT) &&
	    (!cfg->task || !cfg->ops || !cfg->ops->task_fork))
		return -EINVAL;
	if ((cfg->flags & DS_BTS_LOSSLESS) &&
	    (cfg->mode != DS_MODE_CONTINUOUS || cfg->priv != DS_PRIV_USER ||
	     !cfg->task))
		return -EINVAL;
	if (cfg->nr_records < 2 || cfg->nr_records > (1U << 26) ||
	    cfg->wakeup > cfg->nr_records)
		return -EINVAL;
	if (!cfg->task && (cfg->cpu < 0 || cfg->cpu >= nr_cpu_ids ||
			   !cpu_possible(cfg->cpu)))
		return -EINVAL;
	return 0;
}

/**
 * ds_request_bts() - start tracing branches for a consumer
 * @cfg: scope, filter, mode, size and callbacks
 *
 * Records flow once this returns (unless DS_BTS_SUSPENDED).  A task scope
 * takes a reference on the task; the trace survives exec, and its children
 * are traced only with DS_BTS_INHERIT.  A CPU scope records only while the CPU is
 * online.
 *
 * Context: process, may sleep.
 * Return: the consumer, or an ERR_PTR(): -EOPNOTSUPP without BTS (or,
 * for a user-only consumer, without DS-CPL), -EINVAL
 * for a bad @cfg, -EACCES for kernel-mode recording that
 * ds_kernel_recording_allowed() refuses, -EBUSY while the CPU or task has
 * DS_MAX_CONSUMERS consumers,
 * -ENOMEM (also for a CPU scope whose CPU has no staging buffer).
 */
struct ds_consumer *ds_request_bts(const struct ds_bts_config *cfg)
{
	bool published = false;
	struct ds_consumer *c;
	u32 slots;
	int ret;

	if (!ds_hw.bts)
		return ERR_PTR(-EOPNOTSUPP);
	ret = ds_check_config(cfg);
	if (ret)
		return ERR_PTR(ret);
	if ((cfg->priv & DS_PRIV_KERNEL) && !ds_kernel_recording_allowed()) {
		pr_notice_ratelimited("kernel-mode branch recording refused: the CPU is affected by Meltdown; sysctl kernel.bts_kernel_recording=1 allows it\n");
		return ERR_PTR(-EACCES);
	}
	/*
	 * Without DS-CPL the hardware cannot leave the kernel out: a
	 * user-only trace would put kernel branches where user mode can
	 * read them.
	 */
	if (cfg->priv == DS_PRIV_USER && !ds_hw.ds_cpl)
		return ERR_PTR(-EOPNOTSUPP);

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return ERR_PTR(-ENOMEM);
	c->cfg = *cfg;
	if (!c->cfg.wakeup)
		c->cfg.wakeup = max(cfg->nr_records / 2, 1U);
	c->limit = cfg->nr_records;
	/* A ring shows one slot fewer than it has (ds_stream_read_last()). */
	slots = cfg->nr_records + 1;
	if (cfg->flags & DS_BTS_LOSSLESS)
		slots += DS_LOSSLESS_HEADROOM;
	c->stream.buf = kvcalloc(slots, sizeof(struct bts_record),
				 GFP_KERNEL_ACCOUNT);
	if (!c->stream.buf) {
		kfree(c);
		return ERR_PTR(-ENOMEM);
	}
	ds_stream_init(&c->stream, c->stream.buf, slots, cfg->priv,
		       cfg->mode);
	if (cfg->flags & DS_BTS_MARKERS)
		c->stream.marker_key = ds_marker_key();
	c->stream.maps = cfg->flags & DS_BTS_MAPS;
	if (c->stream.maps)
		atomic_inc(&ds_nr_maps);
	/* A hard irq_work: the callback's context is the same with RT. */
	c->notify = IRQ_WORK_INIT_HARD(ds_notify_fn);
	init_waitqueue_head(&c->wait);
	refcount_set(&c->refs, 1);
	/* Nothing staged before the request is its: see ds_sync(). */
	c->suspended = true;
	if (cfg->task)
		get_task_struct(cfg->task);

	cpus_read_lock();
	mutex_lock(&ds_mutex);
	ret = ds_nr_consumers ? ds_arm_missing(cfg) : ds_start();
	if (ret)
		goto unlock;
	ret = ds_set_update(ds_set_slot(cfg), c, NULL);
	if (!ret && cfg->task) {
		/*
		 * Either ds_exit_thread() sees the set or we see the task
		 * exiting.  Pairs with smp_mb() in ds_exit_thread().
		 */
		smp_mb();
		if (cfg->task->flags & PF_EXITING) {
			ds_set_update(ds_set_slot(cfg), NULL, c);
			published = true;
			ret = -ESRCH;
		}
	}
	if (ret) {
		if (!ds_nr_consumers)
			ds_stop();
		goto unlock;
	}
	ds_nr_consumers++;
unlock:
	mutex_unlock(&ds_mutex);
	cpus_read_unlock();
	if (ret) {
		/* A drain may have found it while it was published. */
		if (published)
			synchronize_rcu();
		ds_consumer_put(c);
		return ERR_PTR(ret);
	}
	/* Start the hardware for it now rather than at the next switch. */
	ds_sync(c, cfg->flags & DS_BTS_SUSPENDED ? DS_SYNC_NONE :
		DS_SYNC_RESUME);
	return c;
}
EXPORT_SYMBOL_GPL(ds_request_bts);

/**
 * ds_release_bts() - stop tracing for a consumer and free it
 * @c: the consumer
 *
 * The detach contract: when this returns, no callback of @c is running or
 * will run, and a task held back by @c in lossless mode has been let go.
 *
 * Context: process, may sleep; not from @c's own callbacks, nor holding a
 * lock that its task_exit or task_fork callbacks take: release waits for
 * them.
 */
void ds_release_bts(struct ds_consumer *c)
{
	mutex_lock(&ds_mutex);
	/* A task that exited has no set left; removal is then a no-op. */
	ds_set_update(ds_set_slot(&c->cfg), NULL, c);
	mutex_unlock(&ds_mutex);
	/* Make the hardware follow; no producer finds @c after this. */
	ds_sync(c, DS_SYNC_NONE);
	/*
	 * Nor does one that found it before, once a grace period has passed;
	 * but none has found the consumer of an exited task since its exit
	 * (see ds_exit_thread()), and a file tracing a build releases
	 * thousands of those.
	 */
	if (!ds_stream_closed(&c->stream))
		synchronize_rcu();
	/* Nor an exit or a clone: one under way has made its call. */
	ds_callbacks_wait(c);

	WRITE_ONCE(c->dead, true);
	wake_up_all(&c->wait);
	irq_work_sync(&c->notify);
	/* A throttle that has not run yet no longer needs @c. */
	if (c->cfg.task && task_work_cancel(c->cfg.task, &c->throttle))
		ds_consumer_put(c);

	/* Not held above: a clone we waited for requests consumers. */
	cpus_read_lock();
	mutex_lock(&ds_mutex);
	if (!--ds_nr_consumers)
		ds_stop();
	mutex_unlock(&ds_mutex);
	cpus_read_unlock();
	ds_consumer_put(c);
}
EXPORT_SYMBOL_GPL(ds_release_bts);

/**
 * ds_suspend_bts() - stop recording for a consumer, keeping its records
 * @c: the consumer
 *
 * Records staged before the call reach the stream; none after.
 *
 * Context: process, may sleep.
 */
void ds_suspend_bts(struct ds_consumer *c)
{
	ds_sync(c, DS_SYNC_SUSPEND);
	/* A task held back in lossless mode goes on. */
	wake_up_all(&c->wait);
	/*
	 * A continuous stream may owe a loss record.  Producers run under
	 * RCU: after a grace period none that missed the flag is left.  (A
	 * ring owes nothing, and is not kept waiting.)
	 */
	if (c->cfg.mode == DS_MODE_CONTINUOUS) {
		synchronize_rcu();
		ds_stream_suspend(&c->stream);
		ds_stream_flush_lost(&c->stream);
	}
}
EXPORT_SYMBOL_GPL(ds_suspend_bts);

/**
 * ds_resume_bts() - resume recording for a consumer
 * @c: the consumer
 *
 * Records staged before the call are not the consumer's.
 *
 * Context: process, may sleep.
 */
void ds_resume_bts(struct ds_consumer *c)
{
	ds_stream_resume(&c->stream);
	ds_sync(c, DS_SYNC_RESUME);
}
EXPORT_SYMBOL_GPL(ds_resume_bts);

/* Whether @c's records are produced here only: its CPU, or its task's. */
static bool ds_consumer_local(const struct ds_consumer *c)
{
	return c->cfg.task ? c->cfg.task == current :
			     c->cfg.cpu == smp_processor_id();
}

/**
 * ds_suspend_local() - stop recording for a consumer, from where it records
 * @c: a consumer of this CPU, or of the current task
 *
 * As ds_suspend_bts(), without sleeping or an IPI: for a consumer that
 * follows something else's schedule, as perf's pmu::del() and
 * pmu::stop() do.  Records staged before the call reach the stream; none
 * after.  A user-only stream then ends with current's stretch in the
 * kernel, resuming nowhere (to is 0), as one that stopped in the kernel.
 * No other CPU produces for @c meanwhile (a task's records are produced
 * where it runs, and drained when it leaves), so a continuous stream's
 * owed loss record is written at once.
 *
 * Context: interrupts off, not NMI; on @c's CPU, or with @c's task current.
 */
void ds_suspend_local(struct ds_consumer *c)
{
	struct ds_sync_arg arg = { .c = c, .change = DS_SYNC_SUSPEND };
	struct bts_record rec[DS_KERNEL_TIME_RECORDS];
	bool was_on = !READ_ONCE(c->suspended);
	unsigned int i;

	lockdep_assert_irqs_disabled();
	if (WARN_ON_ONCE(!ds_consumer_local(c) || in_nmi()))
		return;
	ds_sync_fn(&arg);
	/*
	 * A user-only stream stops in the kernel: it ends with the stretch
	 * current is in, from the entry it noted, resuming nowhere.
	 */
	if (was_on && c->cfg.priv == DS_PRIV_USER &&
	    test_thread_flag(TIF_BTS_USER) &&
	    !(current->flags & PF_KTHREAD)) {
		ds_kernel_time(0, rec);
		for (i = 0; i < ARRAY_SIZE(rec); i++)
			ds_stream_append(&c->stream, &rec[i]);
	}
	/*
	 * A lossless consumer's task may be between its look at the stream
	 * and its sleep.  No other consumer has waiters, and perf's
	 * pmu::del(), under raw spinlocks, must not take the queue's lock.
	 */
	if (c->cfg.flags & DS_BTS_LOSSLESS)
		wake_up_all(&c->wait);
	if (c->cfg.mode == DS_MODE_CONTINUOUS) {
		ds_stream_suspend(&c->stream);
		ds_stream_flush_lost(&c->stream);
	}
}
EXPORT_SYMBOL_GPL(ds_suspend_local);

/**
 * ds_flush_local() - bring a consumer's stream up to date, from where it
 *	records
 * @c: a consumer of this CPU, or of the current task
 *
 * Records staged before the call reach the stream, as ds_suspend_local()
 * takes them, and recording goes on: for a consumer that hands records on
 * at a point of its own, as perf does when it moves an event from one
 * task to another at a context switch.
 *
 * Context: as ds_suspend_local().
 */
void ds_flush_local(struct ds_consumer *c)
{
	struct ds_sync_arg arg = { .c = c, .change = DS_SYNC_NONE };

	lockdep_assert_irqs_disabled();
	if (WARN_ON_ONCE(!ds_consumer_local(c) || in_nmi()))
		return;
	ds_sync_fn(&arg);
}
EXPORT_SYMBOL_GPL(ds_flush_local);

/**
 * ds_resume_local() - resume recording for a consumer, from where it records
 * @c: a consumer of this CPU, or of the current task
 *
 * As ds_resume_bts(), without sleeping or an IPI.  Records staged before
 * the call are not the consumer's.
 *
 * Context: interrupts off, not NMI; on @c's CPU, or with @c's task current.
 */
void ds_resume_local(struct ds_consumer *c)
{
	struct ds_sync_arg arg = { .c = c, .change = DS_SYNC_RESUME };

	lockdep_assert_irqs_disabled();
	if (WARN_ON_ONCE(!ds_consumer_local(c) || in_nmi()))
		return;
	ds_stream_resume(&c->stream);
	ds_sync_fn(&arg);
}
EXPORT_SYMBOL_GPL(ds_resume_local);

/**
 * ds_read_last_bts() - copy a ring consumer's newest records
 * @c: the consumer, in ring mode
 * @out: room for @n records
 * @n: how many are wanted
 *
 * Context: process, may sleep.
 * Return: the number copied, oldest first; at most the ring's size.
 */
u32 ds_read_last_bts(struct ds_consumer *c, struct bts_record *out, u32 n)
{
	if (WARN_ON_ONCE(c->cfg.mode != DS_MODE_RING))
		return 0;
	ds_sync(c, DS_SYNC_NONE);
	return ds_stream_read_last(&c->stream, out, n);
}
EXPORT_SYMBOL_GPL(ds_read_last_bts);

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
	if (!static_branch_unlikely(&ds_active) || this_cpu_read(ds_cpu.frozen))
		return false;
	this_cpu_write(ds_cpu.frozen, true);
	/* The flag first: an NMI from here on restarts nothing. */
	barrier();
	ds_hw_write(0);
	return true;
}
EXPORT_SYMBOL_GPL(ds_freeze_local);

/* A panic freezes its CPU's trace first thing, as oops_begin() does. */
void arch_panic_begin(void)
{
	ds_freeze_local();
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
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	if (!static_branch_unlikely(&ds_active) || !dc->frozen)
		return;
	WRITE_ONCE(dc->frozen, false);
	barrier();
	if (!dc->pause)
		ds_hw_write(ds_wanted(dc));
}
EXPORT_SYMBOL_GPL(ds_thaw_local);

/*
 * The newest @n records of the lone ring consumer the hardware serves
 * directly: those of its stream, then those of the hardware's ring, which
 * stays as it is (an NMI never changes the mode).  Context: @dc frozen.
 */
static u32 ds_read_last_hw_ring(struct ds_cpu *dc, struct ds_consumer *c,
				struct bts_record *out, u32 n)
{
	const struct bts_record *segs[2];
	u32 nrs[2], hw, newer, older;

	ds_staging_peek_ring(&dc->staging, (struct ds_bts_area *)dc->ds,
			     segs, nrs);
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
	    c->cfg.cpu != smp_processor_id() || !READ_ONCE(dc->frozen))
		return 0;
	n = min(n, c->stream.size - 1);
	if (dc->ring == c)
		return ds_read_last_hw_ring(dc, c, out, n);
	if (!dc->pause) {
		/* Paused without ds_pause(): the hardware is off already. */
		dc->pause++;
		barrier();
		ds_drain(dc, dc->owner);
		barrier();
		dc->pause--;
	}
	return ds_stream_read_last_stopped(&c->stream, out, n);
}
EXPORT_SYMBOL_GPL(ds_read_last_local);

/**
 * ds_peek_bts() - the oldest records of a continuous consumer's stream
 * @c: the consumer, in continuous mode
 * @runs: set to the records, in at most two runs of the stream's storage
 * @nrs: set to the runs' lengths
 * @n: how many are wanted at most
 *
 * No copy: the records stay where they are until ds_discard_bts(), so that
 * a consumer copies them on (to user space) once, and frees only what it
 * delivered.  Not with ds_swap_bts_buffer(), which would move them.
 * Callers serialize among themselves, with ds_discard_bts(),
 * ds_consume_bts(), ds_suspend_bts() and ds_resume_bts(); producers run
 * concurrently.  What is still staged on a CPU arrives at the next drain;
 * ds_suspend_bts() first to collect everything.
 *
 * Context: any but NMI, including @c's overflow callback.
 * Return: the number of records in the runs, oldest first.
 */
u32 ds_peek_bts(struct ds_consumer *c, const struct bts_record *runs[2],
		u32 nrs[2], u32 n)
{
	if (WARN_ON_ONCE(c->cfg.mode != DS_MODE_CONTINUOUS))
		return 0;
	return ds_stream_peek(&c->stream, runs, nrs, n);
}
EXPORT_SYMBOL_GPL(ds_peek_bts);

/**
 * ds_discard_bts() - free the oldest records of a continuous consumer's stream
 * @c: the consumer, in continuous mode
 * @n: how many, at most what the last ds_peek_bts() returned
 *
 * The room goes to the producers: a loss record owed is written, and a task
 * that waits for room in lossless mode goes on.
 *
 * Context: as ds_peek_bts().
 */
void ds_discard_bts(struct ds_consumer *c, u32 n)
{
	if (WARN_ON_ONCE(c->cfg.mode != DS_MODE_CONTINUOUS))
		return;
	ds_stream_discard(&c->stream, n);
	ds_stream_flush_lost(&c->stream);
	if (n && (c->cfg.flags & DS_BTS_LOSSLESS) &&
	    ds_stream_pending(&c->stream) <= c->limit)
		wake_up_all(&c->wait);
}
EXPORT_SYMBOL_GPL(ds_discard_bts);

/**
 * ds_consume_bts() - take records from a continuous consumer's stream
 * @c: the consumer, in continuous mode
 * @out: room for @n records
 * @n: how many are wanted at most
 *
 * ds_peek_bts(), a copy to @out, and ds_discard_bts().
 *
 * Context: as ds_peek_bts().
 * Return: the number of records copied to @out.
 */
u32 ds_consume_bts(struct ds_consumer *c, struct bts_record *out, u32 n)
{
	const struct bts_record *runs[2];
	u32 got, nrs[2];

	got = ds_peek_bts(c, runs, nrs, n);
	memcpy(out, runs[0], nrs[0] * sizeof(*out));
	memcpy(out + nrs[0], runs[1], nrs[1] * sizeof(*out));
	ds_discard_bts(c, got);
	return got;
}
EXPORT_SYMBOL_GPL(ds_consume_bts);

/**
 * ds_bts_buffer_records() - the size of a consumer's stream storage
 * @c: the consumer
 *
 * What a buffer given to ds_swap_bts_buffer() must hold.
 *
 * Context: any.
 * Return: the number of records.
 */
u32 ds_bts_buffer_records(struct ds_consumer *c)
{
	return c->stream.size;
}
EXPORT_SYMBOL_GPL(ds_bts_buffer_records);

/**
 * ds_bts_task() - the task a consumer traces
 * @c: the consumer
 *
 * For a task_fork callback, which learns of the new task this way.  The
 * task is valid while @c is.
 *
 * Context: any.
 * Return: the task, or NULL for a CPU's consumer.
 */
struct task_struct *ds_bts_task(struct ds_consumer *c)
{
	return c->cfg.task;
}
EXPORT_SYMBOL_GPL(ds_bts_task);

/**
 * ds_swap_bts_buffer() - give a continuous consumer new storage, taking the
 *	old with its records
 * @c: the consumer, continuous
 * @buf: ds_bts_buffer_records() records from kvmalloc(): the layer owns it
 *	from now on, and kvfree()s the storage it holds at release
 * @old: set to the old storage, now the caller's (kvfree() it when done),
 *	and where its records are
 *
 * The zero-copy way for an overflow callback to take a full stream: the
 * records stay where the layer put them, @old->count of them from slot
 * @old->first on, wrapping at @old->size.
 *
 * Context: @c's overflow callback, where its producer is paused: on its
 * CPU, or for a task consumer while the task is current.
 * Return: 0, -EBUSY elsewhere, -EINVAL for a ring.
 */
int ds_swap_bts_buffer(struct ds_consumer *c, struct bts_record *buf,
		       struct ds_bts_swapped *old)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);

	if (c->cfg.mode != DS_MODE_CONTINUOUS)
		return -EINVAL;
	if (dc->in_callback != c ||
	    (c->cfg.task ? c->cfg.task != current :
	     c->cfg.cpu != smp_processor_id()))
		return -EBUSY;
	old->size = c->stream.size;
	old->buf = ds_stream_swap(&c->stream, buf, &old->first, &old->count);
	return 0;
}
EXPORT_SYMBOL_GPL(ds_swap_bts_buffer);

/**
 * ds_bts_status() - a consumer's counters
 * @c: the consumer
 * @st: filled in
 *
 * Context: any but NMI.
 */
void ds_bts_status(struct ds_consumer *c, struct ds_bts_status *st)
{
	st->produced = READ_ONCE(c->stream.head);
	st->pending = c->cfg.mode == DS_MODE_CONTINUOUS ?
		      ds_stream_pending(&c->stream) : 0;
	st->lost = READ_ONCE(c->stream.lost_total);
	st->throttled = atomic64_read(&c->throttled);
}
EXPORT_SYMBOL_GPL(ds_bts_status);

/**
 * ds_exit_thread() - a traced task is exiting
 * @tsk: the task: current, or a child whose clone failed, which never had
 *	a consumer (ds_fork_thread() runs once a clone cannot fail)
 *
 * Its last records reach the streams, and its consumers are told.  They
 * stay valid until released.
 *
 * Context: process, from exit_thread().
 */
void ds_exit_thread(struct task_struct *tsk)
{
	struct ds_set *set;
	unsigned int i;

	/*
	 * A request that enabled the key after this check sees the task
	 * exiting: enabling synchronizes every CPU.
	 */
	if (!static_branch_unlikely(&ds_active))
		return;
	/*
	 * Either ds_request_bts() sees PF_EXITING or we see its set.  Pairs
	 * with smp_mb() in ds_request_bts().
	 */
	smp_mb();
	if (!rcu_access_pointer(tsk->thread.ds_consumers))
		return;
	/*
	 * The task's last records, while its streams are still published:
	 * user-only ones end with the kernel time it exits in.
	 */
	local_irq_disable();
	ds_sync_local(NULL);
	set = rcu_dereference_sched(tsk->thread.ds_consumers);
	if (set && test_thread_flag(TIF_BTS_USER))
		ds_end_kernel_time(set);
	local_irq_enable();
	mutex_lock(&ds_mutex);
	set = rcu_dereference_protected(tsk->thread.ds_consumers,
					lockdep_is_held(&ds_mutex));
	RCU_INIT_POINTER(tsk->thread.ds_consumers, NULL);
	for (i = 0; set && i < set->nr; i++)
		ds_callback_get(set->c[i]);
	mutex_unlock(&ds_mutex);
	if (!set)
		return;
	/*
	 * Stop tracing the rest of the exit.  No grace period is needed
	 * before the streams are ended and @set is freed: the producers of
	 * a task's streams run where it is current, in NMIs, interrupts and
	 * IPIs that end before it runs on, or at its switch away from a CPU,
	 * which ends before it runs anywhere else.  Since the unpublication,
	 * all of them find no set.
	 */
	local_irq_disable();
	ds_sync_local(NULL);
	local_irq_enable();

	for (i = 0; i < set->nr; i++) {
		struct ds_consumer *c = set->c[i];

		/*
		 * No producer is left: the stream may have ended away.  The
		 * consumer may be suspending it meanwhile, to write its loss
		 * record: one of the two writes.
		 */
		ds_stream_close(&c->stream);
		if (c->cfg.ops && c->cfg.ops->task_exit)
			c->cfg.ops->task_exit(c, c->cfg.data);
		ds_callback_put(c);
	}
	kfree(set);
}

/**
 * ds_fork_thread() - a traced task created a thread or process
 * @child: the new task, not running yet
 *
 * Every DS_BTS_INHERIT consumer of current gets a like consumer of @child,
 * handed to its task_fork callback, or NULL there if @child cannot be
 * traced (no memory, the hardware busy): the clone goes on regardless.
 * The child's trace starts when it first runs.  Called once the clone
 * cannot fail any more: a failed clone's task is freed whatever its
 * references, and must never have had a consumer.
 *
 * Context: process, arch_post_fork(), may sleep.
 */
void ds_fork_thread(struct task_struct *child)
{
	struct ds_consumer *cons[DS_MAX_CONSUMERS];
	unsigned int i, n = 0;
	struct ds_set *set;

	if (!static_branch_unlikely(&ds_active))
		return;
	/*
	 * The child starts in the kernel, its entry unseen: not the parent's
	 * entry of clone(), which the copy of its thread_struct holds.
	 */
	ds_entry_unseen(&child->thread);
	/* Only current changes its set, apart from releases. */
	if (!rcu_access_pointer(current->thread.ds_consumers))
		return;
	mutex_lock(&ds_mutex);
	set = rcu_dereference_protected(current->thread.ds_consumers,
					lockdep_is_held(&ds_mutex));
	for (i = 0; set && i < set->nr; i++) {
		if (set->c[i]->cfg.flags & DS_BTS_INHERIT) {
			/* A release waits for the callback. */
			ds_callback_get(set->c[i]);
			cons[n++] = set->c[i];
		}
	}
	mutex_unlock(&ds_mutex);

	for (i = 0; i < n; i++) {
		struct ds_bts_config cfg = cons[i]->cfg;
		struct ds_consumer *c;

		cfg.task = child;
		c = ds_request_bts(&cfg);
		if (IS_ERR(c)) {
			cfg.ops->task_fork(cons[i], NULL, cfg.data);
		} else {
			/*
			 * The child's callbacks cannot run before this; the
			 * callback may release @c, so it is held until then.
			 */
			refcount_inc(&c->refs);
			c->cfg.data = cfg.ops->task_fork(cons[i], c,
							 cfg.data);
			ds_consumer_put(c);
		}
		ds_callback_put(cons[i]);
	}
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
	ds_entry_points_init();
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

/* After arch_kdebugfs_init(), of the same initcall level as ds_init(). */
static int __init ds_debugfs_init(void)
{
	if (ds_hw.bts)
		debugfs_create_file_unsafe("ds_kernel_records", 0600,
					   arch_debugfs_dir, NULL,
					   &ds_audit_fops);
	return 0;
}
late_initcall(ds_debugfs_init);

#ifdef CONFIG_X86_DS_KUNIT_TEST
#include "ds_test.c"
#endif
