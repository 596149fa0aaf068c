// SPDX-License-Identifier: GPL-2.0
/*
 * ds_soak: attach and release Debug Store consumers in a kernel loop, many
 * thousands of times, and check what each recorded; for tests/ds-guest/soak.
 *
 * /sys/kernel/debug/ds_soak/run
 *	write "CYCLES PID FROM:TO FROM:TO FROM:TO": CYCLES attach-read-release
 *	cycles on task PID, which runs a loop of exactly these three user-mode
 *	branches (stress-progs/busy: the call, the return, the jump back) and
 *	nothing else.  The write returns when the cycles are done (-EINTR on
 *	a fatal signal, -EIO if a check failed, the first error of the layer
 *	otherwise).
 *	read: the last run's counters, and its first failure.
 *
 * Each cycle attaches one or two ring consumers (the kind goes round with
 * the cycle's number: the task's user-only, all, kernel-only stream, one
 * started suspended and resumed, the CPU's user-only stream, the CPU's
 * whole stream beside the task's user-only one), waits until each has
 * recorded something, reads their last records and releases them (two at
 * once with ds_release_bts_many()).  The checks, record by record:
 *   - a user-only stream holds no kernel address, a kernel-only stream no
 *     branch from user mode to user mode;
 *   - in the task's streams, every user-mode branch is one of the loop's
 *     three, each the one after the one before (LOST restarts the chain):
 *     nothing doubled, dropped or reordered;
 *   - a task stream without three records after a second fails ("idle");
 *     a CPU stream may go idle, its CPU offline.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <asm/ds.h>

#define SOAK_RING	256
#define SOAK_KINDS	6
#define SOAK_IDLE_MS	1000
/* Releases in flight at once (see soak_release()). */
#define SOAK_RELEASING	32

struct soak_edge {
	u64 from;
	u64 to;
};

struct soak_counters {
	u64 cycles;
	u64 consumers;
	u64 records;
	u64 loop_branches;
	u64 failures;
	u64 attach_ns;
	u64 read_ns;
	u64 release_ns;
	char first[160];
};

/* Protects soak_last. */
static DEFINE_MUTEX(soak_mutex);
/* One run at a time: the counters are the last run's. */
static atomic_t soak_running;
static struct soak_counters soak_last;
static struct dentry *soak_root;

/*
 * A release waits for a grace period (about 80 ms in the test VM): made
 * from a workqueue, many share one, and they race the next cycles'
 * attaches on the same task and CPU, which the soak wants too.
 */
struct soak_release {
	struct work_struct	work;
	struct ds_consumer	*c;
};

static struct workqueue_struct *soak_wq;
static atomic_t soak_releasing;
static DECLARE_WAIT_QUEUE_HEAD(soak_release_wait);

static void soak_release_fn(struct work_struct *work)
{
	struct soak_release *r = container_of(work, struct soak_release, work);

	ds_release_bts(r->c);
	kfree(r);
	atomic_dec(&soak_releasing);
	wake_up(&soak_release_wait);
}

static void soak_release(struct ds_consumer *c)
{
	struct soak_release *r = kmalloc(sizeof(*r), GFP_KERNEL);

	if (!r) {
		ds_release_bts(c);
		return;
	}
	wait_event(soak_release_wait,
		   atomic_read(&soak_releasing) < SOAK_RELEASING);
	atomic_inc(&soak_releasing);
	r->c = c;
	INIT_WORK(&r->work, soak_release_fn);
	queue_work(soak_wq, &r->work);
}

struct soak_stream {
	struct ds_consumer *c;
	enum ds_priv priv;
	bool task_scope;
};

static __printf(2, 3) void soak_fail(struct soak_counters *sc,
				     const char *fmt, ...)
{
	va_list ap;

	if (!sc->failures++) {
		va_start(ap, fmt);
		vscnprintf(sc->first, sizeof(sc->first), fmt, ap);
		va_end(ap);
	}
}

static bool soak_user(u64 addr)
{
	return addr < TASK_SIZE_MAX;
}

static void soak_check(struct soak_counters *sc, const struct soak_stream *s,
		       const struct bts_record *r, u32 n,
		       const struct soak_edge loop[3])
{
	int prev = -1;
	u32 i;
	int k;

	sc->records += n;
	for (i = 0; i < n; i++) {
		if (BTS_RECORD_IS_PSEUDO(r[i].from)) {
			if (BTS_PSEUDO_TYPE(r[i].from) == BTS_PSEUDO_LOST)
				prev = -1;
			continue;
		}
		if (s->priv == DS_PRIV_USER &&
		    (!soak_user(r[i].from) || !soak_user(r[i].to))) {
			soak_fail(sc, "cycle %llu: kernel address in a user-only stream: %#llx -> %#llx",
				  sc->cycles, r[i].from, r[i].to);
			return;
		}
		if (!soak_user(r[i].from) || !soak_user(r[i].to))
			continue;
		if (s->priv == DS_PRIV_KERNEL) {
			soak_fail(sc, "cycle %llu: user branch in a kernel-only stream: %#llx -> %#llx",
				  sc->cycles, r[i].from, r[i].to);
			return;
		}
		if (!s->task_scope)
			continue;
		for (k = 0; k < 3; k++)
			if (r[i].from == loop[k].from && r[i].to == loop[k].to)
				break;
		if (k == 3 || (prev >= 0 && k != (prev + 1) % 3)) {
			soak_fail(sc, "cycle %llu: record %u of %u, %#llx -> %#llx, is not the loop's branch after %d",
				  sc->cycles, i, n, r[i].from, r[i].to, prev);
			return;
		}
		prev = k;
		sc->loop_branches++;
	}
}

/*
 * Read @s's last records into @buf once it has some (the layer may hold
 * them staged on their CPU until a read); 0 after SOAK_IDLE_MS without.
 */
static u32 soak_read(const struct soak_stream *s, struct bts_record *buf)
{
	unsigned long end = jiffies + msecs_to_jiffies(SOAK_IDLE_MS);
	u32 n;

	for (;;) {
		n = ds_read_last_bts(s->c, buf, SOAK_RING);
		if (n >= 3)
			return n;
		if (time_after(jiffies, end) || fatal_signal_pending(current))
			return 0;
		usleep_range(500, 1000);
	}
}

static int soak_cycle(struct soak_counters *sc, struct task_struct *task,
		      const struct soak_edge loop[3], struct bts_record *buf)
{
	struct ds_bts_config cfg = {
		.cpu = -1,
		.mode = DS_MODE_RING,
		.nr_records = SOAK_RING,
	};
	struct soak_stream s[2] = {};
	unsigned int i, nr = 1;
	int ret = 0;
	u64 t;
	u32 n;

	switch (sc->cycles % SOAK_KINDS) {
	case 0:
		s[0] = (struct soak_stream){ .priv = DS_PRIV_USER, .task_scope = true };
		break;
	case 1:
		s[0] = (struct soak_stream){ .priv = DS_PRIV_ALL, .task_scope = true };
		break;
	case 2:
		s[0] = (struct soak_stream){ .priv = DS_PRIV_KERNEL, .task_scope = true };
		break;
	case 3:
		s[0] = (struct soak_stream){ .priv = DS_PRIV_USER, .task_scope = true };
		cfg.flags = DS_BTS_SUSPENDED;
		break;
	case 4:
		s[0] = (struct soak_stream){ .priv = DS_PRIV_USER };
		break;
	default:
		s[0] = (struct soak_stream){ .priv = DS_PRIV_ALL };
		s[1] = (struct soak_stream){ .priv = DS_PRIV_USER, .task_scope = true };
		nr = 2;
		break;
	}

	t = ktime_get_ns();
	for (i = 0; i < nr; i++) {
		cfg.priv = s[i].priv;
		cfg.task = s[i].task_scope ? task : NULL;
		/* The CPU the task runs on now (hotplug may move it later). */
		cfg.cpu = s[i].task_scope ? -1 : task_cpu(task);
		s[i].c = ds_request_bts(&cfg);
		if (IS_ERR(s[i].c)) {
			ret = PTR_ERR(s[i].c);
			/* A CPU going offline under the request: try again. */
			if (ret == -ENODEV && !s[i].task_scope)
				ret = 0;
			nr = i;
			goto release;
		}
		sc->consumers++;
	}
	if (cfg.flags & DS_BTS_SUSPENDED)
		ds_resume_bts(s[0].c);
	sc->attach_ns += ktime_get_ns() - t;
	t = ktime_get_ns();

	for (i = 0; i < nr; i++) {
		n = soak_read(&s[i], buf);
		if (!n) {
			if (fatal_signal_pending(current)) {
				ret = -EINTR;
				goto release;
			}
			/* A CPU stream whose CPU went offline records no more. */
			if (s[i].task_scope)
				soak_fail(sc, "cycle %llu: stream %u (priv %d) idle for %d ms",
					  sc->cycles, i, s[i].priv, SOAK_IDLE_MS);
			continue;
		}
		soak_check(sc, &s[i], buf, n, loop);
	}
	sc->read_ns += ktime_get_ns() - t;
release:
	t = ktime_get_ns();
	for (i = 0; i < nr; i++)
		soak_release(s[i].c);
	sc->release_ns += ktime_get_ns() - t;
	sc->cycles++;
	return ret;
}

static int soak_run(u64 cycles, pid_t pid, const struct soak_edge loop[3])
{
	struct soak_counters *sc;
	struct task_struct *task;
	struct bts_record *buf;
	int ret = 0;

	task = get_pid_task(find_vpid(pid), PIDTYPE_PID);
	if (!task)
		return -ESRCH;
	sc = kzalloc(sizeof(*sc), GFP_KERNEL);
	buf = kvcalloc(SOAK_RING, sizeof(*buf), GFP_KERNEL);
	if (!sc || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	while (sc->cycles < cycles && !ret) {
		ret = soak_cycle(sc, task, loop, buf);
		cond_resched();
	}
	flush_workqueue(soak_wq);
	if (!ret && sc->failures)
		ret = -EIO;
	mutex_lock(&soak_mutex);
	soak_last = *sc;
	mutex_unlock(&soak_mutex);
out:
	kvfree(buf);
	kfree(sc);
	put_task_struct(task);
	return ret;
}

static ssize_t soak_run_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	struct soak_edge loop[3];
	char kbuf[256];
	u64 cycles;
	pid_t pid;
	int ret;

	if (len >= sizeof(kbuf))
		return -EINVAL;
	if (copy_from_user(kbuf, ubuf, len))
		return -EFAULT;
	kbuf[len] = '\0';
	if (sscanf(kbuf, "%llu %d %llx:%llx %llx:%llx %llx:%llx", &cycles, &pid,
		   &loop[0].from, &loop[0].to, &loop[1].from, &loop[1].to,
		   &loop[2].from, &loop[2].to) != 8 || !cycles)
		return -EINVAL;
	if (atomic_cmpxchg(&soak_running, 0, 1))
		return -EBUSY;
	ret = soak_run(cycles, pid, loop);
	atomic_set(&soak_running, 0);
	return ret ? ret : len;
}

static ssize_t soak_run_read(struct file *file, char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	char kbuf[448];
	int n;

	mutex_lock(&soak_mutex);
	n = scnprintf(kbuf, sizeof(kbuf),
		      "cycles %llu\nconsumers %llu\nrecords %llu\nloop_branches %llu\nfailures %llu\nms attach %llu read %llu release %llu\nfirst %s\n",
		      soak_last.cycles, soak_last.consumers, soak_last.records,
		      soak_last.loop_branches, soak_last.failures,
		      div_u64(soak_last.attach_ns, NSEC_PER_MSEC),
		      div_u64(soak_last.read_ns, NSEC_PER_MSEC),
		      div_u64(soak_last.release_ns, NSEC_PER_MSEC),
		      soak_last.failures ? soak_last.first : "-");
	mutex_unlock(&soak_mutex);
	return simple_read_from_buffer(ubuf, len, ppos, kbuf, n);
}

static const struct file_operations soak_run_fops = {
	.owner	= THIS_MODULE,
	.read	= soak_run_read,
	.write	= soak_run_write,
	.llseek	= default_llseek,
};

static int __init soak_init(void)
{
	soak_wq = alloc_workqueue("ds_soak", WQ_UNBOUND, SOAK_RELEASING);
	if (!soak_wq)
		return -ENOMEM;
	soak_root = debugfs_create_dir("ds_soak", NULL);
	debugfs_create_file("run", 0600, soak_root, NULL, &soak_run_fops);
	return 0;
}

static void __exit soak_exit(void)
{
	debugfs_remove_recursive(soak_root);
	destroy_workqueue(soak_wq);
}

module_init(soak_init);
module_exit(soak_exit);
MODULE_DESCRIPTION("Attach-release soak of the x86 Debug Store layer");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
