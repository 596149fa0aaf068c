// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the Debug Store layer's hardware side, run at boot on the
 * (emulated) hardware.  Included from ds.c for its static functions: the
 * cases run the layer's NMI handlers and drains directly, on one CPU with
 * interrupts off, in orders that real NMIs reach only by timing (a PMI
 * delivered while the layer has the hardware paused, an NMI of another
 * driver), or make a traced task migrate at the worst moment through a
 * static stub, and check the state they leave.
 */
#include <kunit/static_stub.h>
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/glob.h>
#include <linux/kthread.h>
#include <asm/apic.h>

/* x86_add_exclusive(), perf's arbitration of LBR, BTS and PT users */
#include "../events/perf_event.h"

/* What a case's steps found on the CPU. */
struct ds_test_nmi {
	struct ds_consumer	*ring;		/* the per-CPU ring consumer */
	struct ds_consumer	*other;		/* keeps the CPU off ring mode */
	int			paused;		/* a PMI while paused */
	int			foreign;	/* then another driver's NMI */
	struct ds_stream	*ring_before;
	struct ds_stream	*ring_after;
};

/* Fill the armed sub-buffer up to its threshold, as the hardware would. */
static void ds_test_fill_to_threshold(struct ds_cpu *dc)
{
	struct ds_bts_area *hw = (struct ds_bts_area *)dc->ds;
	struct bts_record *r = (struct bts_record *)hw->index;
	u64 addr = 0x400000;

	for (; (u64)r < hw->threshold; r++, addr += 0x10)
		*r = (struct bts_record){ .from = addr, .to = addr + 8 };
	WRITE_ONCE(hw->index, (u64)r);
}

/* The layer's part of one NMI, as default_do_nmi() runs it. */
static int ds_test_nmi_handlers(void)
{
	int ret;

	__ds_nmi_enter();
	ret = ds_nmi(NMI_LOCAL, NULL);
	__ds_nmi_exit();
	return ret;
}

/*
 * The PMI of a full sub-buffer arrives while the layer has the hardware
 * paused; the pauser drains.  Then the other consumer leaves, the ring
 * consumer is alone and gets the hardware ring, and an NMI of another
 * driver comes.  Context: IPI, on the consumers' CPU.
 */
static void ds_test_pmi_then_ring(void *p)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	struct ds_test_nmi *t = p;

	ds_state_pause(&dc->st);
	ds_test_fill_to_threshold(dc);
	t->paused = ds_test_nmi_handlers();
	ds_state_drain(&dc->st, current);
	/* As a release would, without leaving this CPU. */
	WRITE_ONCE(t->other->suspended, true);
	ds_state_unpause(&dc->st, current);

	t->ring_before = dc->st.ring;
	t->foreign = ds_test_nmi_handlers();
	t->ring_after = dc->st.ring;
}

static struct ds_consumer *ds_test_request_cfg(struct kunit *test,
					       const struct ds_bts_config *cfg)
{
	struct ds_consumer *c = ds_request_bts(cfg);

	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(c), "request: %ld", PTR_ERR(c));
	return c;
}

static struct ds_consumer *ds_test_request(struct kunit *test, int cpu,
					   enum ds_priv priv,
					   enum ds_mode mode, u32 flags)
{
	struct ds_bts_config cfg = {
		.cpu		= cpu,
		.priv		= priv,
		.mode		= mode,
		.flags		= flags,
		.nr_records	= 64,
	};

	return ds_test_request_cfg(test, &cfg);
}

/*
 * A PMI claimed while paused is not owed again after the drain: the next
 * NMI, of another driver, is not claimed, and leaves the hardware ring of
 * a lone flight recorder alone (an NMI never changes the mode).
 */
static void ds_test_nmi_after_claimed_pmi(struct kunit *test)
{
	int cpu = cpumask_first(cpu_online_mask);
	int allowed = ds_kernel_recording;
	struct ds_test_nmi t = { };

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	/*
	 * A ring of both privilege levels, and another consumer (kernel
	 * mode too: a user-only one needs DS-CPL); the knob is read at
	 * request.
	 */
	WRITE_ONCE(ds_kernel_recording, 1);
	t.ring = ds_test_request(test, cpu, DS_PRIV_ALL, DS_MODE_RING, 0);
	t.other = ds_test_request(test, cpu, DS_PRIV_KERNEL,
				  DS_MODE_CONTINUOUS, 0);
	WRITE_ONCE(ds_kernel_recording, allowed);

	smp_call_function_single(cpu, ds_test_pmi_then_ring, &t, 1);
	ds_release_bts(t.other);
	ds_release_bts(t.ring);

	KUNIT_EXPECT_EQ_MSG(test, t.paused, NMI_HANDLED,
			    "a paused CPU's PMI is claimed for the pauser");
	KUNIT_EXPECT_PTR_EQ_MSG(test, t.ring_before, &t.ring->stream,
				"the lone ring consumer has the hardware ring");
	KUNIT_EXPECT_PTR_EQ_MSG(test, t.ring_after, &t.ring->stream,
				"an NMI left the hardware ring");
	KUNIT_EXPECT_EQ_MSG(test, t.foreign, NMI_DONE,
			    "another driver's NMI was claimed");
}

/* What ds_test_owed_pmi() found: the layer's verdict on two NMIs. */
struct ds_test_owed {
	int	nmi[2];
};

/*
 * A drain takes a full sub-buffer before its PMI arrives: the PMI is
 * claimed when it comes, and only it.  Context: IPI.
 */
static void ds_test_owed_pmi_steps(void *p)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	struct ds_test_owed *t = p;

	ds_state_pause(&dc->st);
	ds_test_fill_to_threshold(dc);
	ds_state_drain(&dc->st, current);
	ds_state_unpause(&dc->st, current);
	t->nmi[0] = ds_test_nmi_handlers();
	t->nmi[1] = ds_test_nmi_handlers();
}

static void ds_test_owed_pmi(struct kunit *test)
{
	int allowed = ds_kernel_recording, cpu = cpumask_first(cpu_online_mask);
	struct ds_test_owed t = { };
	struct ds_consumer *c;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	/* Not user-only, which needs DS-CPL. */
	WRITE_ONCE(ds_kernel_recording, 1);
	c = ds_test_request(test, cpu, DS_PRIV_KERNEL, DS_MODE_CONTINUOUS, 0);
	WRITE_ONCE(ds_kernel_recording, allowed);
	smp_call_function_single(cpu, ds_test_owed_pmi_steps, &t, 1);
	ds_release_bts(c);

	KUNIT_EXPECT_EQ_MSG(test, t.nmi[0], NMI_HANDLED,
			    "the late PMI of a drained sub-buffer is ours");
	KUNIT_EXPECT_EQ_MSG(test, t.nmi[1], NMI_DONE,
			    "a second NMI was claimed for the same PMI");
}

/* What ds_test_restart_window() found. */
static struct {
	bool	armed;
	bool	traced;
	int	nmi;
} ds_test_window;

/*
 * ds_hw_write() with an NMI right after it, once armed, where an NMI held
 * back while the hardware was stopped arrives (under TCG a DEBUGCTL write
 * ends a block, and interrupts are taken between blocks).
 */
static void ds_test_hw_write_then_nmi(struct ds_state *s, u64 bits)
{
	update_debugctlmsr((get_debugctlmsr() & ~DS_DEBUGCTL_OWNED) | bits);
	if (!ds_test_window.armed)
		return;
	ds_test_window.armed = false;
	__ds_nmi_enter();
	ds_test_window.traced = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
	ds_test_window.nmi = ds_nmi(NMI_LOCAL, NULL);
	__ds_nmi_exit();
}

/*
 * The layer's own code filled the sub-buffer to its threshold while it
 * held the hardware (staged records, an overflow callback), and an NMI
 * comes as the hardware restarts: it runs untraced and drains, or the
 * hardware would overrun the sub-buffer with no PMI to come.
 */
static void ds_test_restart_window(struct kunit *test)
{
	int allowed = ds_kernel_recording, cpu;
	struct ds_bts_area *hw;
	struct ds_consumer *c;
	struct ds_cpu *dc;
	bool owned, full_after;
	u64 bits;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	migrate_disable();
	cpu = smp_processor_id();
	dc = this_cpu_ptr(&ds_cpu);
	hw = (struct ds_bts_area *)dc->ds;
	WRITE_ONCE(ds_kernel_recording, 1);
	c = ds_test_request(test, cpu, DS_PRIV_KERNEL, DS_MODE_CONTINUOUS, 0);
	WRITE_ONCE(ds_kernel_recording, allowed);
	/* Switched out and in again: the layer knows whose records these are. */
	schedule_timeout_uninterruptible(1);
	kunit_activate_static_stub(test, ds_hw_write,
				   ds_test_hw_write_then_nmi);

	local_irq_disable();
	owned = dc->owner == current;
	bits = ds_state_hold(&dc->st);
	ds_test_fill_to_threshold(dc);
	ds_test_window.armed = true;
	ds_state_restart(&dc->st, bits);
	full_after = hw->index >= hw->threshold;
	local_irq_enable();

	kunit_deactivate_static_stub(test, ds_hw_write);
	ds_release_bts(c);
	migrate_enable();

	KUNIT_ASSERT_TRUE_MSG(test, owned, "the layer knows the CPU runs us");
	KUNIT_EXPECT_NE_MSG(test, bits, 0, "a kernel consumer's CPU traces");
	KUNIT_ASSERT_FALSE_MSG(test, ds_test_window.armed,
			       "the restart wrote no DEBUGCTL");
	KUNIT_EXPECT_FALSE_MSG(test, ds_test_window.traced,
			       "the NMI's handlers ran traced");
	KUNIT_EXPECT_EQ_MSG(test, ds_test_window.nmi, NMI_HANDLED,
			    "the PMI of the full sub-buffer was not claimed");
	KUNIT_EXPECT_FALSE_MSG(test, full_after,
			       "the NMI left the full sub-buffer to overrun");
}

/* What ds_test_late_handler() saw in the handler and after the NMI. */
static struct {
	bool	armed;
	bool	ran;
	u64	in_nmi;
} ds_test_late;

/* An NMI handler registered long after the layer's. */
static int ds_test_late_nmi(unsigned int cmd, struct pt_regs *regs)
{
	if (!READ_ONCE(ds_test_late.armed))
		return NMI_DONE;
	ds_test_late.in_nmi = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
	WRITE_ONCE(ds_test_late.armed, false);
	WRITE_ONCE(ds_test_late.ran, true);
	return NMI_HANDLED;
}

/*
 * A handler registered after the layer's runs untraced too, and the
 * hardware traces again after the NMI.
 */
static void ds_test_late_handler(struct kunit *test)
{
	int allowed = ds_kernel_recording, cpu, i;
	struct ds_consumer *c;
	u64 before, after;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	KUNIT_ASSERT_EQ(test, register_nmi_handler(NMI_LOCAL, ds_test_late_nmi,
						   0, "ds_test_late"), 0);
	migrate_disable();
	cpu = smp_processor_id();
	/* Kernel-mode records, so that this kernel thread is traced. */
	WRITE_ONCE(ds_kernel_recording, 1);
	c = ds_test_request(test, cpu, DS_PRIV_ALL, DS_MODE_CONTINUOUS, 0);
	WRITE_ONCE(ds_kernel_recording, allowed);

	preempt_disable();
	before = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
	WRITE_ONCE(ds_test_late.ran, false);
	WRITE_ONCE(ds_test_late.armed, true);
	apic->send_IPI_self(NMI_VECTOR);
	for (i = 0; i < 1000000 && !READ_ONCE(ds_test_late.ran); i++)
		cpu_relax();
	after = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
	preempt_enable();

	WRITE_ONCE(ds_test_late.armed, false);
	ds_release_bts(c);
	migrate_enable();
	unregister_nmi_handler(NMI_LOCAL, "ds_test_late");

	KUNIT_EXPECT_NE_MSG(test, before, 0, "a kernel consumer's CPU traces");
	KUNIT_ASSERT_TRUE_MSG(test, ds_test_late.ran, "the self-NMI came");
	KUNIT_EXPECT_EQ_MSG(test, ds_test_late.in_nmi, 0,
			    "a late NMI handler ran traced: DEBUGCTL %#llx",
			    ds_test_late.in_nmi);
	KUNIT_EXPECT_EQ_MSG(test, after, before,
			    "the hardware traces as before after the NMI");
}

/*
 * A kernel thread that spins, the CPU it starts on and the test's CPU:
 * ds_test_sync_on_moved() swaps them.
 */
static struct {
	struct task_struct	*task;
	int			from;
	int			to;
} ds_test_mover;

static int ds_test_spin(void *unused)
{
	while (!kthread_should_stop())
		/* The kernel may not preempt: let the migration in. */
		cond_resched();
	return 0;
}

/* Wait up to about a second for @task to run on @cpu. */
static bool ds_test_wait_running(struct task_struct *task, int cpu)
{
	int i;

	for (i = 0; i < 1000; i++) {
		if (task_curr(task) && task_cpu(task) == cpu)
			return true;
		usleep_range(1000, 2000);
	}
	return false;
}

/*
 * ds_sync_on(), with the task migrating in between ds_sync()'s choice of
 * @cpu and the call: the test's thread moves to the task's CPU and the
 * task to the test's, where it runs on, alone, by the time the call comes.
 */
static void ds_test_sync_on_moved(int cpu, struct ds_sync_arg *arg)
{
	struct task_struct *task = ds_test_mover.task;

	if (task_cpu(task) != ds_test_mover.to) {
		set_cpus_allowed_ptr(current, cpumask_of(ds_test_mover.from));
		set_cpus_allowed_ptr(task, cpumask_of(ds_test_mover.to));
		ds_test_wait_running(task, ds_test_mover.to);
	}
	smp_call_function_single(cpu, ds_sync_fn, arg, 1);
}

/* What the hardware does on a CPU, and whether it runs @task. */
struct ds_test_hw {
	struct task_struct	*task;
	bool			running;
	int			cpu;
	u64			bits;
};

static void ds_test_read_hw(void *p)
{
	struct ds_test_hw *hw = p;

	hw->running = current == hw->task;
	hw->cpu = smp_processor_id();
	hw->bits = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
}

/*
 * A consumer of a running task resumes while the task migrates: when
 * ds_resume_bts() returns, the hardware traces the task where it runs.
 */
static void ds_test_resume_migrating(struct kunit *test)
{
	int allowed = ds_kernel_recording;
	struct ds_bts_config cfg = {
		.priv		= DS_PRIV_KERNEL,
		.mode		= DS_MODE_CONTINUOUS,
		.flags		= DS_BTS_SUSPENDED,
		.nr_records	= 64,
	};
	struct ds_test_hw hw = { };
	struct task_struct *task;
	struct ds_consumer *c;
	bool started;
	int i;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs 2 CPUs");

	ds_test_mover.to = cpumask_first(cpu_online_mask);
	ds_test_mover.from = cpumask_next(ds_test_mover.to, cpu_online_mask);
	set_cpus_allowed_ptr(current, cpumask_of(ds_test_mover.to));
	task = kthread_create(ds_test_spin, NULL, "ds_test_spin");
	if (IS_ERR(task)) {
		set_cpus_allowed_ptr(current, cpu_possible_mask);
		KUNIT_FAIL(test, "kthread_create: %ld", PTR_ERR(task));
		return;
	}
	ds_test_mover.task = task;
	set_cpus_allowed_ptr(task, cpumask_of(ds_test_mover.from));
	wake_up_process(task);
	started = ds_test_wait_running(task, ds_test_mover.from);

	/* Kernel-mode records: the task is a kernel thread. */
	cfg.task = task;
	WRITE_ONCE(ds_kernel_recording, 1);
	c = ds_request_bts(&cfg);
	WRITE_ONCE(ds_kernel_recording, allowed);
	if (!IS_ERR(c)) {
		kunit_activate_static_stub(test, ds_sync_on,
					   ds_test_sync_on_moved);
		ds_resume_bts(c);
		kunit_deactivate_static_stub(test, ds_sync_on);

		hw.task = task;
		for (i = 0; i < 100 && !hw.running; i++)
			smp_call_function_single(task_cpu(task),
						 ds_test_read_hw, &hw, 1);
		ds_release_bts(c);
	}
	kthread_stop(task);
	set_cpus_allowed_ptr(current, cpu_possible_mask);

	KUNIT_ASSERT_TRUE_MSG(test, started, "the task ran on CPU %d",
			      ds_test_mover.from);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(c), "request: %ld", PTR_ERR(c));
	KUNIT_ASSERT_TRUE_MSG(test, hw.running, "the task was found running");
	KUNIT_ASSERT_EQ_MSG(test, hw.cpu, ds_test_mover.to,
			    "the task moved during the resume");
	KUNIT_EXPECT_NE_MSG(test, hw.bits, 0,
			    "the task runs untraced after its consumer resumed");
}

/*
 * A kernel thread that spins until told to block, then sleeps until
 * stopped: a traced task that blocks before its tracer's sync lands.
 */
static struct {
	struct task_struct	*task;
	bool			block;
	bool			blocked;
} ds_test_blocker;

static int ds_test_spin_then_block(void *unused)
{
	while (!kthread_should_stop() && !READ_ONCE(ds_test_blocker.block))
		cond_resched();
	/* Only kthread_stop() wakes it. */
	set_current_state(TASK_IDLE);
	WRITE_ONCE(ds_test_blocker.blocked, true);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_IDLE);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/* ds_sync_on(), reaching the CPU only after the task has blocked there. */
static void ds_test_sync_on_blocked(int cpu, struct ds_sync_arg *arg)
{
	int i;

	WRITE_ONCE(ds_test_blocker.block, true);
	for (i = 0; i < 1000 && (!READ_ONCE(ds_test_blocker.blocked) ||
				 task_curr(ds_test_blocker.task)); i++)
		usleep_range(1000, 2000);
	smp_call_function_single(cpu, ds_sync_fn, arg, 1);
}

/*
 * The last consumer of a running task is released, and the task blocks
 * before the release's sync reaches its CPU, which then switches between
 * tasks nobody traces while another consumer keeps the layer active: the
 * hardware stops there all the same (seed 002: nobody's branches are
 * recorded).
 */
static void ds_test_release_while_blocking(struct kunit *test)
{
	int allowed = ds_kernel_recording;
	struct ds_bts_config cfg = {
		.priv		= DS_PRIV_KERNEL,
		.mode		= DS_MODE_CONTINUOUS,
		.nr_records	= 64,
	};
	struct ds_test_hw traced = { }, after = { };
	struct task_struct *keeper;
	struct ds_consumer *kc, *c;
	int cpu, i;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs 2 CPUs");

	/* The test runs on one CPU, the blocker on the other. */
	cpu = cpumask_first(cpu_online_mask);
	set_cpus_allowed_ptr(current,
			     cpumask_of(cpumask_next(cpu, cpu_online_mask)));
	/* Never woken: its consumer keeps the layer active, off every CPU. */
	keeper = kthread_create(ds_test_spin, NULL, "ds_test_keeper");
	KUNIT_ASSERT_FALSE(test, IS_ERR(keeper));
	ds_test_blocker.block = false;
	ds_test_blocker.blocked = false;
	ds_test_blocker.task = kthread_create(ds_test_spin_then_block, NULL,
					      "ds_test_blocker");
	if (IS_ERR(ds_test_blocker.task)) {
		kthread_stop(keeper);
		KUNIT_FAIL(test, "kthread_create: %ld",
			   PTR_ERR(ds_test_blocker.task));
		return;
	}
	set_cpus_allowed_ptr(ds_test_blocker.task, cpumask_of(cpu));
	wake_up_process(ds_test_blocker.task);
	ds_test_wait_running(ds_test_blocker.task, cpu);

	WRITE_ONCE(ds_kernel_recording, 1);
	cfg.task = keeper;
	kc = ds_request_bts(&cfg);
	cfg.task = ds_test_blocker.task;
	c = IS_ERR(kc) ? kc : ds_request_bts(&cfg);
	WRITE_ONCE(ds_kernel_recording, allowed);
	if (!IS_ERR(c)) {
		traced.task = ds_test_blocker.task;
		for (i = 0; i < 100 && !traced.running; i++)
			smp_call_function_single(cpu, ds_test_read_hw, &traced,
						 1);
		kunit_activate_static_stub(test, ds_sync_on,
					   ds_test_sync_on_blocked);
		ds_release_bts(c);
		kunit_deactivate_static_stub(test, ds_sync_on);
		/* Switches between untraced tasks happen there meanwhile. */
		msleep(20);
		after.task = ds_test_blocker.task;
		smp_call_function_single(cpu, ds_test_read_hw, &after, 1);
	}
	if (!IS_ERR(kc))
		ds_release_bts(kc);
	kthread_stop(ds_test_blocker.task);
	kthread_stop(keeper);
	set_cpus_allowed_ptr(current, cpu_possible_mask);

	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(c), "request: %ld", PTR_ERR(c));
	KUNIT_ASSERT_TRUE_MSG(test, traced.running && traced.bits,
			      "the task was traced running on CPU %d", cpu);
	KUNIT_ASSERT_FALSE_MSG(test, after.running,
			       "the task blocked before the sync");
	KUNIT_EXPECT_EQ_MSG(test, after.bits, 0,
			    "CPU %d records for nobody after the release", cpu);
}

struct ds_test_suspend {
	bool	armed;
	int	calls;
	bool	own;
	u64	before;
	u64	after;
};

/*
 * An overflow callback that suspends its consumer once the case is ready
 * (the hardware's own drains come before), and sees that it could not
 * release it here.
 */
static enum ds_overflow_action ds_test_suspend_cb(struct ds_consumer *c,
						  void *data)
{
	struct ds_test_suspend *t = data;

	if (!READ_ONCE(t->armed))
		return DS_OVERFLOW_CONTINUE;
	t->calls++;
	t->own = ds_in_own_callback(c);
	return DS_OVERFLOW_SUSPEND;
}

static const struct ds_bts_ops ds_test_suspend_ops = {
	.overflow	= ds_test_suspend_cb,
};

/*
 * A drain wakes the consumer, whose callback runs before anything else
 * looks at the CPU's consumers.  Context: IPI, on the consumer's CPU.
 */
static void ds_test_suspend_steps(void *p)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	struct ds_test_suspend *t = p;

	/* A callback still queued from before runs below, armed too. */
	WRITE_ONCE(t->armed, true);
	t->before = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
	ds_state_pause(&dc->st);
	ds_test_fill_to_threshold(dc);
	ds_state_unpause(&dc->st, current);
	irq_work_run();
	/* A callback queued again (notify_missed) is not the case's. */
	WRITE_ONCE(t->armed, false);
	t->after = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
}

/*
 * The CPU's only consumer suspends itself from its overflow callback: the
 * hardware stops as the callback returns, not at the CPU's next switch.
 */
static void ds_test_overflow_suspends(struct kunit *test)
{
	int allowed = ds_kernel_recording, cpu = cpumask_first(cpu_online_mask);
	struct ds_test_suspend t = { };
	struct ds_bts_config cfg = {
		.cpu		= cpu,
		.priv		= DS_PRIV_KERNEL,
		.mode		= DS_MODE_CONTINUOUS,
		.nr_records	= 64,
		.wakeup		= 1,
		.ops		= &ds_test_suspend_ops,
		.data		= &t,
	};
	struct ds_consumer *c;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs 2 CPUs");
	WRITE_ONCE(ds_kernel_recording, 1);
	c = ds_test_request_cfg(test, &cfg);
	WRITE_ONCE(ds_kernel_recording, allowed);
	/* The steps on the consumer's CPU, sent from another. */
	set_cpus_allowed_ptr(current,
			     cpumask_of(cpumask_next(cpu, cpu_online_mask)));
	smp_call_function_single(cpu, ds_test_suspend_steps, &t, 1);
	set_cpus_allowed_ptr(current, cpu_possible_mask);
	KUNIT_EXPECT_FALSE_MSG(test, ds_in_own_callback(c),
			       "the test's thread taken for a callback");
	ds_release_bts(c);

	KUNIT_ASSERT_EQ_MSG(test, t.calls, 1, "the callback ran once");
	KUNIT_EXPECT_TRUE_MSG(test, t.own,
			      "the overflow callback not seen as the consumer's");
	KUNIT_ASSERT_NE_MSG(test, t.before, 0, "the consumer was traced");
	KUNIT_EXPECT_EQ_MSG(test, t.after, 0,
			    "the hardware records for a suspended consumer");
}

/*
 * A reader of a task's consumer set under RCU, as ds_task_takes_marker():
 * it finds the set, then waits (in the read-side critical section) until
 * told that the task exited and its consumer was released, and then reads
 * the set and the consumer's glob.
 */
static struct {
	struct task_struct	*traced;
	bool			loaded;
	bool			go;
	bool			timed_out;
	unsigned int		nr;
	bool			matched;
} ds_test_reader;

/* The traced task's exit callback sees that it could not release here. */
static void ds_test_exit_cb(struct ds_consumer *c, void *data)
{
	*(int *)data = ds_in_own_callback(c) ? 1 : -1;
}

static const struct ds_bts_ops ds_test_exit_ops = {
	.task_exit	= ds_test_exit_cb,
};

static int ds_test_set_reader(void *unused)
{
	ktime_t deadline = ktime_add_ms(ktime_get(), 5000);
	const struct ds_set *set;

	rcu_read_lock();
	set = rcu_dereference(ds_test_reader.traced->thread.ds_consumers);
	WRITE_ONCE(ds_test_reader.loaded, true);
	while (!READ_ONCE(ds_test_reader.go) &&
	       ktime_before(ktime_get(), deadline))
		cpu_relax();
	ds_test_reader.timed_out = !READ_ONCE(ds_test_reader.go);
	if (set) {
		ds_test_reader.nr = set->nr;
		ds_test_reader.matched = set->nr == 1 &&
			set->c[0]->cfg.markers &&
			glob_match(set->c[0]->cfg.markers, "ds_test_event");
	}
	rcu_read_unlock();
	while (!kthread_should_stop())
		schedule_timeout_idle(HZ);
	return 0;
}

/*
 * A set and its consumers stay readable for a reader that found them under
 * RCU while their task exits and the consumer is released: the user_events
 * bridge reads sibling threads' sets so (ds_task_takes_marker()).  With
 * init_on_free=1 (tests/kunit/run) a set or consumer freed early reads as
 * zeros; under KASAN it is a use-after-free report.
 */
static void ds_test_set_outlives_exit(struct kunit *test)
{
	int allowed = ds_kernel_recording;
	struct ds_bts_config cfg = {
		.priv		= DS_PRIV_KERNEL,
		.mode		= DS_MODE_CONTINUOUS,
		.flags		= DS_BTS_MARKERS,
		.nr_records	= 64,
	};
	struct task_struct *traced, *reader;
	struct ds_consumer *c;
	int i, own = 0;
	char *glob;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	if (num_online_cpus() < 2)
		kunit_skip(test, "needs 2 CPUs");
	glob = kstrdup("ds_test_*", GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, glob);
	/* On the test's CPU, away from the reader's (below). */
	traced = kthread_create(ds_test_spin, NULL, "ds_test_traced");
	if (IS_ERR(traced)) {
		kfree(glob);
		KUNIT_FAIL(test, "kthread_create: %ld", PTR_ERR(traced));
		return;
	}
	kthread_bind(traced, cpumask_first(cpu_online_mask));
	wake_up_process(traced);
	get_task_struct(traced);
	cfg.task = traced;
	cfg.markers = glob;
	cfg.ops = &ds_test_exit_ops;
	cfg.data = &own;
	WRITE_ONCE(ds_kernel_recording, 1);
	c = ds_request_bts(&cfg);
	WRITE_ONCE(ds_kernel_recording, allowed);
	if (IS_ERR(c)) {
		kthread_stop(traced);
		put_task_struct(traced);
		kfree(glob);
		KUNIT_FAIL(test, "request: %ld", PTR_ERR(c));
		return;
	}

	/*
	 * The reader spins where it cannot be preempted: on a CPU of its
	 * own, the test's thread on another.
	 */
	ds_test_reader = (typeof(ds_test_reader)){ .traced = traced };
	reader = kthread_create(ds_test_set_reader, NULL, "ds_test_reader");
	KUNIT_ASSERT_FALSE(test, IS_ERR(reader));
	set_cpus_allowed_ptr(current, cpumask_of(cpumask_first(cpu_online_mask)));
	kthread_bind(reader, cpumask_next(cpumask_first(cpu_online_mask),
					  cpu_online_mask));
	wake_up_process(reader);
	for (i = 0; i < 1000 && !READ_ONCE(ds_test_reader.loaded); i++)
		usleep_range(1000, 2000);
	/* The task exits, then its tracer lets go, as a file's close does. */
	kthread_stop(traced);
	ds_release_bts(c);
	kfree(glob);
	WRITE_ONCE(ds_test_reader.go, true);
	kthread_stop(reader);
	put_task_struct(traced);
	set_cpus_allowed_ptr(current, cpu_possible_mask);

	KUNIT_ASSERT_TRUE_MSG(test, ds_test_reader.loaded, "the reader ran");
	KUNIT_ASSERT_FALSE_MSG(test, ds_test_reader.timed_out,
			       "the exit and release waited for the reader");
	KUNIT_EXPECT_EQ_MSG(test, ds_test_reader.nr, 1,
			    "the set read after the task exited");
	KUNIT_EXPECT_TRUE_MSG(test, ds_test_reader.matched,
			      "the consumer's glob read after its release");
	KUNIT_EXPECT_EQ_MSG(test, own, 1,
			    "task_exit seen as the consumer's callback (1), or not (-1), or not run (0)");
}

/*
 * The exit hook's crossing record takes the sub-buffer to its threshold:
 * the drain, past the exit work loop, puts the test thread's lossless
 * user-only stream past its size and queues the throttle, which an
 * interrupt on the way out must then run.  A kernel thread never returns
 * to user mode; the release cancels the work.  Context: interrupts off,
 * on the thread's CPU, whose hardware does not record the kernel.
 */
static void ds_test_throttle_kicks(struct kunit *test)
{
	struct ds_bts_config cfg = {
		.task		= current,
		.priv		= DS_PRIV_USER,
		.mode		= DS_MODE_CONTINUOUS,
		.flags		= DS_BTS_LOSSLESS,
		.nr_records	= 16,
	};
	struct pt_regs regs = { .ip = 0x401000 };
	bool queued, kicked;
	struct ds_consumer *c;
	unsigned long flags;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	c = ds_test_request_cfg(test, &cfg);
	local_irq_save(flags);
	ds_test_fill_to_threshold(this_cpu_ptr(&ds_cpu));
	ds_stage_exit(&regs);
	queued = atomic_read(&c->throttle_queued);
	kicked = irq_work_is_pending(this_cpu_ptr(&ds_resume_kick));
	local_irq_restore(flags);
	ds_release_bts(c);

	KUNIT_ASSERT_TRUE_MSG(test, queued,
			      "the drain put the stream past its size");
	KUNIT_EXPECT_TRUE_MSG(test, kicked,
			      "a throttle queued past the exit work loop, with nothing to run it");
}

#define DS_TEST_PAYLOAD(i, lo, hi)					\
	{ .from = BTS_PSEUDO(BTS_PSEUDO_DETAIL,				\
			     BTS_DETAIL_ARG(BTS_PSEUDO_MARKER,		\
					    BTS_DETAIL_MARKER_PAYLOAD, i)), \
	  .to = (lo), .flags = (hi) }

/* A CPU's user-only stream that takes the markers @glob matches. */
static struct ds_consumer *ds_test_request_markers(struct kunit *test,
						   int cpu, const char *glob)
{
	struct ds_bts_config cfg = {
		.cpu		= cpu,
		.priv		= DS_PRIV_USER,
		.mode		= DS_MODE_CONTINUOUS,
		.flags		= DS_BTS_MARKERS,
		.nr_records	= 64,
		.markers	= glob,
	};

	return ds_test_request_cfg(test, &cfg);
}

/*
 * Markers reach the streams that asked for them by name, staged in order
 * with the branches (a kernel thread has no user branches: a user-only
 * stream of its CPU holds the markers alone), the payload in 16-byte
 * details, cut at BTS_MARKER_PAYLOAD_MAX and flagged; the other streams,
 * those that take no markers and those whose glob does not match, never
 * see one.
 */
static void ds_test_markers(struct kunit *test)
{
	static const struct bts_record want[] = {
		DS_TEST_PAYLOAD(0, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL),
		DS_TEST_PAYLOAD(1, 0x13121110ULL, 0),
		{ .from = BTS_PSEUDO(BTS_PSEUDO_MARKER,
				     BTS_MARKER_ARG(BTS_MARKER_USER_EVENT, 0, 20)),
		  .to = 0x401000, .flags = 7ULL << 32 | 42 },
		DS_TEST_PAYLOAD(0, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL),
		DS_TEST_PAYLOAD(1, 0x1716151413121110ULL, 0x1f1e1d1c1b1a1918ULL),
		DS_TEST_PAYLOAD(2, 0x2726252423222120ULL, 0x2f2e2d2c2b2a2928ULL),
		DS_TEST_PAYLOAD(3, 0x3736353433323130ULL, 0x3f3e3d3c3b3a3938ULL),
		{ .from = BTS_PSEUDO(BTS_PSEUDO_MARKER,
				     BTS_MARKER_ARG(BTS_MARKER_USER_EVENT,
						    BTS_MARKER_TRUNCATED, 64)),
		  .to = 0x401008, .flags = 8ULL << 32 | 43 },
	};
	struct ds_consumer *with, *named, *without, *unnamed;
	/* Off the stack: three streams' worth is too much for it. */
	struct bts_record *got = kunit_kcalloc(test, 36, sizeof(*got),
					       GFP_KERNEL);
	struct bts_record *also = got + 16, *other = got + 32;
	struct ds_marker m = {
		.source	= BTS_MARKER_USER_EVENT,
		.name	= "test_event",
		.id	= 42,
		.gen	= 7,
		.addr	= 0x401000,
		.len	= 20,
	};
	u8 payload[100];
	u32 i, n, n_also, n_other;
	int cpu;

	KUNIT_ASSERT_NOT_NULL(test, got);
	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	if (!ds_hw.ds_cpl)
		kunit_skip(test, "no DS-CPL, which user-only consumers need");
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = i;
	m.payload = payload;

	migrate_disable();
	cpu = smp_processor_id();
	with = ds_test_request_markers(test, cpu, NULL);
	named = ds_test_request_markers(test, cpu, "test_*");
	unnamed = ds_test_request_markers(test, cpu, "other_*");
	without = ds_test_request(test, cpu, DS_PRIV_USER, DS_MODE_CONTINUOUS,
				  0);
	ds_append_marker(&m);
	m.id = 43;
	m.gen = 8;
	m.addr = 0x401008;
	m.len = sizeof(payload);
	ds_append_marker(&m);
	local_irq_disable();
	ds_sync_local(NULL);
	local_irq_enable();
	n = ds_consume_bts(with, got, 16);
	n_also = ds_consume_bts(named, also, 16);
	n_other = ds_consume_bts(without, other, 4);
	KUNIT_EXPECT_EQ_MSG(test, n_other, 0,
			    "a stream that takes no markers got %u records",
			    n_other);
	n_other = ds_consume_bts(unnamed, other, 4);
	KUNIT_EXPECT_EQ_MSG(test, n_other, 0,
			    "a stream whose glob does not match got %u records",
			    n_other);
	ds_release_bts(without);
	ds_release_bts(unnamed);
	ds_release_bts(named);
	ds_release_bts(with);
	migrate_enable();

	KUNIT_EXPECT_TRUE_MSG(test, n_also == n &&
			      !memcmp(also, got, n * sizeof(*got)),
			      "the stream whose glob matches got %u records, not the %u of the one that takes all",
			      n_also, n);
	KUNIT_ASSERT_EQ_MSG(test, n, ARRAY_SIZE(want),
			    "records in the stream that takes markers");
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_TRUE_MSG(test, got[i].from == want[i].from &&
				      got[i].to == want[i].to &&
				      got[i].flags == want[i].flags,
				      "record %u is {%#llx, %#llx, %#llx}, want {%#llx, %#llx, %#llx}",
				      i, got[i].from, got[i].to, got[i].flags,
				      want[i].from, want[i].to, want[i].flags);
}

/* Called only before, and only after, a freeze: their records tell. */
static noinline void ds_test_before_freeze(void)
{
	barrier();
}

static noinline void ds_test_after_freeze(void)
{
	barrier();
}

/* Records in @r that enter @fn. */
static unsigned int ds_test_calls(const struct bts_record *r, u32 n,
				  void (*fn)(void))
{
	unsigned int i, calls = 0;

	for (i = 0; i < n; i++)
		calls += r[i].to == (u64)(unsigned long)fn;
	return calls;
}

/*
 * The freeze test's ring, and what it reads of it: the branches between
 * ds_test_before_freeze() and the freeze number a few dozen, a few
 * hundred in a kernel with KASAN and lockdep; short of the hardware ring
 * (2 * DS_STAGING_RECORDS), so that a ring of both sides stays one.
 */
#define DS_TEST_FREEZE_RECORDS	1024

/* What ds_test_freeze_steps() found, @paused: frozen inside a pause. */
struct ds_test_freeze {
	struct ds_consumer	*ring;
	bool			paused;
	u64			frozen_bits[3];
	u64			thawed_bits;
	bool			staged_left;
	bool			hw_ring[2];
	struct bts_record	*out;
	u32			n;
};

/* Context: IPI, on the ring's CPU. */
static void ds_test_freeze_steps(void *p)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	struct ds_test_freeze *t = p;

	ds_test_before_freeze();
	if (t->paused)
		ds_state_pause(&dc->st);
	t->hw_ring[0] = dc->st.ring == &t->ring->stream;
	ds_freeze_local();
	t->frozen_bits[0] = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
	ds_test_after_freeze();
	if (!t->paused) {
		/* A switch or a sync would pause and restart; an NMI hold. */
		ds_state_pause(&dc->st);
		ds_state_unpause(&dc->st, current);
		t->frozen_bits[1] = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
		ds_test_nmi_handlers();
		t->frozen_bits[2] = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
	}
	t->n = ds_read_last_local(t->ring, t->out, DS_TEST_FREEZE_RECORDS);
	t->staged_left = dc->ds->bts_index != dc->ds->bts_buffer_base;
	t->hw_ring[1] = dc->st.ring == &t->ring->stream;
	ds_thaw_local();
	if (t->paused)
		ds_state_unpause(&dc->st, current);
	t->thawed_bits = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
}

/*
 * The crash-dump path: a frozen CPU traces nothing, whatever pauses,
 * restarts or NMIs come, and its ring's last records end right before the
 * freeze; a thaw restarts tracing.  A kernel-only ring goes through the
 * staging buffer: the read drains what was staged, but frozen inside a
 * pause (an oops in the middle of a drain) it leaves the staged records
 * alone and does not wait.  A lone ring of both sides is the hardware's
 * own ring: the read takes its newest records from there, paused or not,
 * and the CPU stays in that mode.
 */
static void ds_test_freeze_one(struct kunit *test, enum ds_priv priv)
{
	int allowed = ds_kernel_recording, cpu, i;
	bool hw_ring = priv == DS_PRIV_ALL;
	struct ds_test_freeze t = { };
	struct ds_bts_config cfg = {
		.priv		= priv,
		.mode		= DS_MODE_RING,
		.nr_records	= DS_TEST_FREEZE_RECORDS,
	};
	unsigned int before, after, first;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	static_assert(DS_TEST_FREEZE_RECORDS < 2 * DS_STAGING_RECORDS);
	t.out = kunit_kcalloc(test, DS_TEST_FREEZE_RECORDS, sizeof(*t.out),
			      GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t.out);
	cpu = cpumask_first(cpu_online_mask);
	cfg.cpu = cpu;
	/* Kernel-mode records: this CPU's kernel code is what it traces. */
	WRITE_ONCE(ds_kernel_recording, 1);
	t.ring = ds_test_request_cfg(test, &cfg);
	WRITE_ONCE(ds_kernel_recording, allowed);

	for (i = 0; i < 2; i++) {
		t.paused = i;
		smp_call_function_single(cpu, ds_test_freeze_steps, &t, 1);
		/* This round's: the ring keeps the one before. */
		for (first = t.n; first > 0; first--)
			if (t.out[first - 1].to ==
			    (u64)(unsigned long)ds_test_freeze_steps)
				break;
		before = ds_test_calls(t.out + first, t.n - first,
				       ds_test_before_freeze);
		after = ds_test_calls(t.out, t.n, ds_test_after_freeze);
		KUNIT_EXPECT_EQ_MSG(test, t.frozen_bits[0], 0,
				    "frozen (paused %d): DEBUGCTL %#llx", i,
				    t.frozen_bits[0]);
		KUNIT_EXPECT_NE_MSG(test, t.thawed_bits, 0,
				    "thawed (paused %d): the hardware traces",
				    i);
		KUNIT_EXPECT_EQ_MSG(test, after, 0,
				    "records after the freeze (paused %d)", i);
		KUNIT_EXPECT_EQ_MSG(test, t.hw_ring[0] && t.hw_ring[1],
				    hw_ring,
				    "the hardware's ring before and after the read (paused %d)",
				    i);
		if (hw_ring || !i) {
			KUNIT_EXPECT_EQ_MSG(test, before, 1,
					    "the call right before the freeze is in the ring (paused %d)",
					    i);
		}
		if (!hw_ring) {
			KUNIT_EXPECT_EQ_MSG(test, t.staged_left, i,
					    "staged records left (paused %d)",
					    i);
		}
	}
	ds_release_bts(t.ring);
	KUNIT_EXPECT_EQ_MSG(test, t.frozen_bits[1] | t.frozen_bits[2], 0,
			    "a pause and an NMI restarted a frozen CPU");
}

static void ds_test_freeze(struct kunit *test)
{
	ds_test_freeze_one(test, DS_PRIV_KERNEL);
}

static void ds_test_freeze_hw_ring(struct kunit *test)
{
	ds_test_freeze_one(test, DS_PRIV_ALL);
}

/* What ds_test_local() saw on the consumer's CPU. */
struct ds_test_local {
	struct ds_consumer	*c;
	u64			bits_resumed;
	u64			bits_suspended;
};

/* A record as the hardware might write it, which no branch produces. */
#define DS_TEST_LOCAL_FROM	0xffffffff8badf00dULL
#define DS_TEST_LOCAL_TO	0xffffffff8badf11dULL

/*
 * Resume a suspended consumer, let the hardware write a record, suspend
 * it: all without sleeping.  Context: IPI, on the consumer's CPU.
 */
static void ds_test_local_steps(void *p)
{
	struct ds_cpu *dc = this_cpu_ptr(&ds_cpu);
	struct ds_test_local *t = p;
	struct ds_bts_area *hw;
	struct bts_record *r;

	ds_resume_local(t->c);
	t->bits_resumed = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
	ds_state_pause(&dc->st);
	hw = (struct ds_bts_area *)dc->ds;
	r = (struct bts_record *)hw->index;
	*r = (struct bts_record){ DS_TEST_LOCAL_FROM, DS_TEST_LOCAL_TO };
	WRITE_ONCE(hw->index, (u64)(r + 1));
	ds_state_unpause(&dc->st, current);
	ds_suspend_local(t->c);
	t->bits_suspended = get_debugctlmsr() & DS_DEBUGCTL_OWNED;
}

/*
 * ds_resume_local() and ds_suspend_local(), for consumers that follow
 * perf's schedule: the hardware records while the CPU's lone consumer is
 * resumed and stops at the suspension, whose record staged before it
 * reaches the stream, and nothing after it.
 */
static void ds_test_local(struct kunit *test)
{
	int allowed = ds_kernel_recording, cpu = cpumask_first(cpu_online_mask);
	struct ds_bts_config cfg = {
		.cpu		= cpu,
		.priv		= DS_PRIV_KERNEL,
		.mode		= DS_MODE_CONTINUOUS,
		.flags		= DS_BTS_SUSPENDED,
		.nr_records	= 8192,
	};
	struct bts_record *out = kunit_kcalloc(test, cfg.nr_records,
					       sizeof(*out), GFP_KERNEL);
	struct ds_test_local t = { };
	struct ds_bts_status st;
	u32 i, n;
	bool found = false;

	KUNIT_ASSERT_NOT_NULL(test, out);
	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	WRITE_ONCE(ds_kernel_recording, 1);
	t.c = ds_test_request_cfg(test, &cfg);
	WRITE_ONCE(ds_kernel_recording, allowed);

	smp_call_function_single(cpu, ds_test_local_steps, &t, 1);
	ds_bts_status(t.c, &st);
	/* A drain now finds nothing of the consumer's. */
	smp_call_function_single(cpu, ds_sync_local, NULL, 1);
	n = ds_consume_bts(t.c, out, cfg.nr_records);
	for (i = 0; i < n; i++)
		found |= out[i].from == DS_TEST_LOCAL_FROM &&
			 out[i].to == DS_TEST_LOCAL_TO;
	ds_release_bts(t.c);

	KUNIT_EXPECT_NE_MSG(test, t.bits_resumed, 0,
			    "resumed, the CPU's lone consumer records");
	KUNIT_EXPECT_EQ_MSG(test, t.bits_suspended, 0,
			    "suspended, the hardware is off");
	KUNIT_EXPECT_TRUE_MSG(test, found,
			      "the record staged before the suspension arrived");
	KUNIT_EXPECT_EQ_MSG(test, (u64)n, st.pending,
			    "records arrived after the suspension");
}

/* The PEBS half of a save area: what perf's PEBS code writes. */
#define DS_TEST_PEBS_WORDS \
	((offsetofend(struct debug_store, pebs_event_reset) - \
	  offsetof(struct debug_store, pebs_buffer_base)) / sizeof(u64))

static u64 *ds_test_pebs_half(struct debug_store *ds)
{
	return &ds->pebs_buffer_base;
}

/*
 * perf's PEBS code fills in the PEBS half of the save area the layer owns
 * (the emulated CPU has no PEBS: the fields are set by hand here).  The
 * layer's life on the CPU, arming, drains, suspension, release and the
 * teardown that unmaps the staging buffer, leaves them as they were, and
 * IA32_DS_AREA pointing at the area.
 */
static void ds_test_pebs_fields(struct kunit *test)
{
	int cpu = cpumask_first(cpu_online_mask);
	struct debug_store *ds = ds_area(cpu);
	u64 saved[DS_TEST_PEBS_WORDS], *pebs = ds_test_pebs_half(ds);
	struct ds_consumer *c;
	unsigned int i, changed = 0;
	u64 msr;

	if (!ds_bts_available())
		kunit_skip(test, "no BTS");
	memcpy(saved, pebs, sizeof(saved));
	for (i = 0; i < DS_TEST_PEBS_WORDS; i++)
		WRITE_ONCE(pebs[i], 0x5eb5000000000000ULL + i);

	c = ds_test_request(test, cpu, DS_PRIV_USER, DS_MODE_CONTINUOUS, 0);
	smp_call_function_single(cpu, ds_sync_local, NULL, 1);
	ds_suspend_bts(c);
	ds_resume_bts(c);
	ds_release_bts(c);
	/* The teardown a second after the last consumer, now. */
	mod_delayed_work(system_wq, &ds_teardown_work, 0);
	flush_delayed_work(&ds_teardown_work);

	for (i = 0; i < DS_TEST_PEBS_WORDS; i++)
		changed += READ_ONCE(pebs[i]) != 0x5eb5000000000000ULL + i;
	memcpy(pebs, saved, sizeof(saved));
	KUNIT_EXPECT_EQ_MSG(test, changed, 0U,
			    "PEBS fields the layer changed, of %zu",
			    DS_TEST_PEBS_WORDS);
	KUNIT_ASSERT_EQ(test, rdmsrl_on_cpu(cpu, MSR_IA32_DS_AREA, &msr), 0);
	KUNIT_EXPECT_EQ_MSG(test, msr, (u64)(unsigned long)ds,
			    "IA32_DS_AREA is the CPU's save area");
}

/*
 * Branch tracing excludes perf's LBR users as perf's own BTS users did,
 * both ways, and only while a consumer exists: the layer holds perf's BTS
 * claim from its first consumer to its last (ds_start(), ds_stop()).
 */
static void ds_test_lbr_exclusive(struct kunit *test)
{
	struct ds_bts_config cfg = {
		.cpu		= cpumask_first(cpu_online_mask),
		.priv		= DS_PRIV_USER,
		.mode		= DS_MODE_CONTINUOUS,
		.nr_records	= 64,
	};
	struct ds_consumer *c;
	int ret;

	c = ds_test_request_cfg(test, &cfg);
	ret = x86_add_exclusive(x86_lbr_exclusive_lbr);
	if (!ret)
		x86_del_exclusive(x86_lbr_exclusive_lbr);
	ds_release_bts(c);
	KUNIT_EXPECT_EQ_MSG(test, ret, -EBUSY,
			    "an LBR user while a consumer records");

	ret = x86_add_exclusive(x86_lbr_exclusive_lbr);
	KUNIT_ASSERT_EQ_MSG(test, ret, 0,
			    "an LBR user once the last consumer is gone");
	c = ds_request_bts(&cfg);
	x86_del_exclusive(x86_lbr_exclusive_lbr);
	if (!IS_ERR(c))
		ds_release_bts(c);
	KUNIT_EXPECT_EQ_MSG(test, PTR_ERR_OR_ZERO(c), -EBUSY,
			    "a consumer while an LBR user is there");

	c = ds_test_request_cfg(test, &cfg);
	ds_release_bts(c);
}

static struct kunit_case ds_hw_test_cases[] = {
	KUNIT_CASE(ds_test_nmi_after_claimed_pmi),
	KUNIT_CASE(ds_test_owed_pmi),
	KUNIT_CASE(ds_test_restart_window),
	KUNIT_CASE(ds_test_late_handler),
	KUNIT_CASE(ds_test_resume_migrating),
	KUNIT_CASE(ds_test_release_while_blocking),
	KUNIT_CASE(ds_test_overflow_suspends),
	KUNIT_CASE(ds_test_set_outlives_exit),
	KUNIT_CASE(ds_test_throttle_kicks),
	KUNIT_CASE(ds_test_markers),
	KUNIT_CASE(ds_test_freeze),
	KUNIT_CASE(ds_test_freeze_hw_ring),
	KUNIT_CASE(ds_test_local),
	KUNIT_CASE(ds_test_pebs_fields),
	KUNIT_CASE(ds_test_lbr_exclusive),
	{}
};

static struct kunit_suite ds_hw_test_suite = {
	.name = "x86_ds_hw",
	.test_cases = ds_hw_test_cases,
};

kunit_test_suite(ds_hw_test_suite);
