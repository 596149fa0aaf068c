// SPDX-License-Identifier: GPL-2.0
/*
 * provoke_report: make the kernel print each kind of report that
 * tests/vm/run must catch, so tests/vm/report-net can show that none of
 * them passes unnoticed.
 *
 * Write a report's name to /sys/kernel/debug/provoke_report/provoke:
 *
 *   circular        a lockdep AB-BA report between two mutexes
 *   hardirq-unsafe  a HARDIRQ-safe -> HARDIRQ-unsafe lock order
 *   irq-inversion   a lock taken in hard interrupt context that leads to
 *                   one taken with interrupts enabled
 *   rcu-usage       rcu_dereference() outside any read-side section
 *   unlock-balance  a release of a lock that is not held
 *   sleep-atomic    might_sleep() with preemption disabled
 *   rcu-stall       a CPU held without a quiescent state for longer than
 *                   the RCU stall timeout (the caller lowers it first)
 *   hung-task       an uninterruptible sleep longer than the hung task
 *                   timeout (the caller lowers it first)
 *   leak            kmalloc()ed memory nobody points to any more
 *   data-race       two threads incrementing a counter without a lock for
 *                   two seconds, in provoke_racer() (KCSAN's report)
 *
 * Lockdep stops checking after its first report, so each lockdep case
 * needs a fresh boot.  Nothing here corrupts state: the lock cases never
 * deadlock (lockdep reports the order, it is not taken concurrently), and
 * the stall and hang cases end by themselves.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/kstrtox.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

/* How long the stall and hang cases last; the caller sets the timeouts. */
static unsigned int hold_seconds = 10;
module_param(hold_seconds, uint, 0644);
MODULE_PARM_DESC(hold_seconds, "seconds rcu-stall and hung-task hold the CPU or task");

static DEFINE_MUTEX(mutex_a);
static DEFINE_MUTEX(mutex_b);
static DEFINE_SPINLOCK(irq_safe_lock);
static DEFINE_SPINLOCK(irq_unsafe_lock);

static void provoke_circular(void)
{
	mutex_lock(&mutex_a);
	mutex_lock(&mutex_b);
	mutex_unlock(&mutex_b);
	mutex_unlock(&mutex_a);

	mutex_lock(&mutex_b);
	mutex_lock(&mutex_a);
	mutex_unlock(&mutex_a);
	mutex_unlock(&mutex_b);
}

/* Take irq_safe_lock in hard interrupt context, which makes it HARDIRQ-safe. */
static void take_in_hardirq(struct irq_work *work)
{
	spin_lock(&irq_safe_lock);
	spin_unlock(&irq_safe_lock);
}

static void run_in_hardirq(void)
{
	struct irq_work work = IRQ_WORK_INIT_HARD(take_in_hardirq);

	irq_work_queue(&work);
	irq_work_sync(&work);
}

/* Take irq_unsafe_lock with interrupts enabled: HARDIRQ-unsafe. */
static void take_irqs_on(void)
{
	spin_lock(&irq_unsafe_lock);
	spin_unlock(&irq_unsafe_lock);
}

/* Both locks' irq usage is known first; the new order is then reported. */
static void provoke_hardirq_unsafe(void)
{
	take_irqs_on();
	run_in_hardirq();

	spin_lock_irq(&irq_safe_lock);
	spin_lock(&irq_unsafe_lock);
	spin_unlock(&irq_unsafe_lock);
	spin_unlock_irq(&irq_safe_lock);
}

/* The order is known first; the irq usage that breaks it comes last. */
static void provoke_irq_inversion(void)
{
	spin_lock_irq(&irq_safe_lock);
	spin_lock(&irq_unsafe_lock);
	spin_unlock(&irq_unsafe_lock);
	spin_unlock_irq(&irq_safe_lock);

	take_irqs_on();
	run_in_hardirq();
}

static int rcu_target;
static int __rcu *rcu_pointer = (int __rcu *)&rcu_target;

static void provoke_rcu_usage(void)
{
	pr_info("provoke_report: rcu pointer %p\n", rcu_dereference(rcu_pointer));
}

static void provoke_unlock_balance(void)
{
	static struct lock_class_key key;
	struct lockdep_map map;

	lockdep_init_map(&map, "provoke_report_map", &key, 0);
	lock_map_release(&map);
}

static void provoke_sleep_atomic(void)
{
	preempt_disable();
	might_sleep();
	preempt_enable();
}

static void rcu_stall_done(struct rcu_head *head)
{
	kfree(head);
}

/*
 * Start a grace period, then keep this CPU from passing a quiescent state
 * (preemption off, interrupts on so the tick can notice) for hold_seconds.
 */
static void provoke_rcu_stall(void)
{
	struct rcu_head *head = kmalloc(sizeof(*head), GFP_KERNEL);
	unsigned long end = jiffies + hold_seconds * HZ;

	if (head)
		call_rcu(head, rcu_stall_done);
	preempt_disable();
	while (time_before(jiffies, end))
		cpu_relax();
	preempt_enable();
}

static void provoke_hung_task(void)
{
	schedule_timeout_uninterruptible(hold_seconds * HZ);
}

#define LEAK_OBJECTS	8
#define LEAK_TAG	"provoke-report-leak"

/* Several objects, in case a stale copy of a pointer keeps one referenced. */
static void provoke_leak(void)
{
	int i;

	for (i = 0; i < LEAK_OBJECTS; i++) {
		char *p = kmalloc(64, GFP_KERNEL);

		if (p)
			strscpy(p, LEAK_TAG, 64);
		/* Hide the pointer from the compiler; kmemleak still sees it go. */
		OPTIMIZER_HIDE_VAR(p);
	}
}

static unsigned long racy_counter;

/*
 * The race KCSAN reports is here, in this function's plain increment.  It
 * yields: two racers must not keep both CPUs from the one that stops them.
 */
static noinline int provoke_racer(void *unused)
{
	while (!kthread_should_stop()) {
		racy_counter++;
		cond_resched();
	}
	return 0;
}

static void provoke_data_race(void)
{
	struct task_struct *racer[2];
	int i;

	for (i = 0; i < ARRAY_SIZE(racer); i++) {
		racer[i] = kthread_run(provoke_racer, NULL, "provoke_racer/%d", i);
		if (IS_ERR(racer[i]))
			break;
	}
	msleep(2000);
	while (i--)
		kthread_stop(racer[i]);
}

static const struct {
	const char *name;
	void (*provoke)(void);
} reports[] = {
	{ "circular", provoke_circular },
	{ "hardirq-unsafe", provoke_hardirq_unsafe },
	{ "irq-inversion", provoke_irq_inversion },
	{ "rcu-usage", provoke_rcu_usage },
	{ "unlock-balance", provoke_unlock_balance },
	{ "sleep-atomic", provoke_sleep_atomic },
	{ "rcu-stall", provoke_rcu_stall },
	{ "hung-task", provoke_hung_task },
	{ "leak", provoke_leak },
	{ "data-race", provoke_data_race },
};

static ssize_t provoke_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	char name[32];
	size_t len = min(count, sizeof(name) - 1);
	int i;

	if (copy_from_user(name, ubuf, len))
		return -EFAULT;
	name[len] = '\0';
	strim(name);

	for (i = 0; i < ARRAY_SIZE(reports); i++) {
		if (!strcmp(name, reports[i].name)) {
			pr_info("provoke_report: provoking %s\n", name);
			reports[i].provoke();
			return count;
		}
	}
	return -EINVAL;
}

static const struct file_operations provoke_fops = {
	.owner = THIS_MODULE,
	.write = provoke_write,
};

static struct dentry *provoke_dir;

static int __init provoke_init(void)
{
	provoke_dir = debugfs_create_dir("provoke_report", NULL);
	debugfs_create_file("provoke", 0200, provoke_dir, NULL, &provoke_fops);
	return 0;
}

static void __exit provoke_exit(void)
{
	debugfs_remove_recursive(provoke_dir);
}

module_init(provoke_init);
module_exit(provoke_exit);
MODULE_DESCRIPTION("Provoke kernel reports for the test VM's report net");
MODULE_LICENSE("GPL");
