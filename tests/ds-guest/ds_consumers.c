// SPDX-License-Identifier: GPL-2.0
/*
 * ds_consumers: attach x86 Debug Store branch trace consumers on request
 * and show what they recorded, for tests/ds-guest.
 *
 * /sys/kernel/debug/ds_consumers/
 *
 *   control	write commands, one per line:
 *		attach NAME KEY=VALUE...
 *		suspend|resume|release [NAME...]	(no NAME: all, in
 *							 attach order)
 *		The attach lines of one write succeed or fail together; the
 *		write fails with the first error of ds_request_bts().
 *		Keys: task=PID or cpu=N, priv=kernel|user|all,
 *		mode=ring|cont, size=N (records), wakeup=N, lossless=1,
 *		suspended=1, and for continuous consumers cap=N (records the
 *		module keeps) and drain=cb|work|slow|none: consume everything
 *		in the overflow callback (the default), or take it there
 *		with ds_swap_bts_buffer() (drain=swap); consume everything in
 *		a work item the callback queues; consume batch=N records every
 *		period=MS milliseconds in a self-rearming work item; or only
 *		when read.  wcpu=N runs the work items on CPU N, so that their
 *		copying is not in CPU 0's or the traced task's trace.
 *		exit_sleep=MS makes the task_exit callback sleep (it may),
 *		after counting the call in NAME/status: until a release
 *		begins and 100 ms more, so that the release meets the
 *		sleeping callback however slowly the test reaches it; at
 *		most MS milliseconds if none begins.
 *		inherit=1 (task only): the task's threads and children are
 *		traced too (DS_BTS_INHERIT); the module counts them, their
 *		exits and their records in NAME/status and releases them
 *		with NAME.
 *		Every consumer takes markers (DS_BTS_MARKERS) unless
 *		markers=0.  notify=0: no overflow callback (drain=slow or
 *		none), so that nothing but the layer itself interrupts the
 *		task after a drain.  discard=1: keep only what the last
 *		consumption took, counting the rest ("consumed" in
 *		NAME/status), for streams too long to keep.
 *   marker	write "ID [ADDR [GEN]]": ds_append_marker() of a user_event
 *		marker without payload: event ID of generation GEN (default
 *		0), written at ADDR (default ID)
 *   NAME/records	the consumer's records, an array of struct bts_record:
 *		a ring's last records (ds_read_last_bts() when read from
 *		offset 0), or everything a continuous consumer consumed so
 *		far (consumed into a vmalloc()ed buffer at each overflow
 *		callback and when read)
 *   NAME/status	ds_bts_status() and the module's own counters
 *   NAME/kids	inherit=1: the records of the consumers the task's threads
 *		and children got, consumed when read from offset 0: for each
 *		one, in the order of their task_fork calls, a header record
 *		{ 0, its index, N } and then its N records
 *
 *   late	callbacks that came after their consumer's ds_release_bts()
 *		returned
 *   raced	releases that began while a task_exit callback slept
 *		(exit_sleep), to tell that a race test hit its window; each
 *		wakes the sleeping callbacks
 *
 * The module checks the detach contract: a callback of a consumer after
 * ds_release_bts() returned is counted in "late" and WARNs (the consumer's
 * struct dsc is kept, without its buffers, until the module is unloaded,
 * to tell).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <asm/ds.h>

#define DSC_NAME_LEN		32
#define DSC_DEFAULT_CAP		BIT(20)
#define DSC_MAX_CAP		BIT(24)
#define DSC_MAX_WRITE		4096
#define DSC_MAX_KIDS		64

enum dsc_drain {
	DSC_DRAIN_CB,
	DSC_DRAIN_WORK,
	DSC_DRAIN_SLOW,
	DSC_DRAIN_NONE,
	DSC_DRAIN_SWAP,
};

/**
 * struct dsc - one consumer of the module
 * @node: in dsc_list, or in dsc_released once released
 * @name: its debugfs folder
 * @c: the layer's consumer
 * @cfg: what was asked for, but for @cfg.task, which only the layer keeps
 * @pid: the traced task's pid, or -1 for a CPU
 * @dir: NAME/ in debugfs
 * @lock: serializes ds_consume_bts() and the growth of @buf
 * @dying: being released: consume no more, queue no more work
 * @buf: continuous mode: what was consumed, @cap records
 * @cap: room in @buf
 * @len: records in @buf
 * @full: records left in the stream because @buf was full
 * @discard: keep only what the last consumption took (discard=1)
 * @consumed: records consumed, kept or not
 * @drain: enum dsc_drain
 * @wcpu: the CPU of @work and @slow, or WORK_CPU_UNBOUND
 * @batch: DSC_DRAIN_SLOW: records per @slow run
 * @period: DSC_DRAIN_SLOW: jiffies between @slow runs
 * @work: DSC_DRAIN_WORK: consumes what the overflow callback saw
 * @slow: DSC_DRAIN_SLOW: the slow consumer
 * @callbacks: overflow callbacks so far
 * @exited: the task_exit callback ran
 * @exit_sleep: milliseconds the task_exit callback sleeps
 * @read_lock: serializes readers of @snap
 * @snap: ring mode: the records read at offset 0
 * @snap_len: records in @snap
 * @kid_snap: the records NAME/kids read at offset 0
 * @kid_len: records in @kid_snap
 * @released: ds_release_bts() returned: no callback may come any more
 * @kids: inherit=1: the consumers of the task's threads and children, and
 *	theirs, handed over by task_fork
 * @nr_kids: task_fork calls so far; beyond DSC_MAX_KIDS, the new
 *	consumer is released at once
 * @kids_exited: task_exit calls for @kids
 * @spare: DSC_DRAIN_SWAP: the storage the next swap hands the layer
 * @swaps: DSC_DRAIN_SWAP: swaps so far
 */
struct dsc {
	struct list_head	node;
	char			name[DSC_NAME_LEN];
	struct ds_consumer	*c;
	struct ds_bts_config	cfg;
	pid_t			pid;
	struct dentry		*dir;
	spinlock_t		lock;		/* see @lock above */
	bool			dying;
	struct bts_record	*buf;
	u32			cap;
	u32			len;
	bool			full;
	bool			discard;
	u64			consumed;
	enum dsc_drain		drain;
	int			wcpu;
	u32			batch;
	unsigned long		period;
	struct work_struct	work;
	struct delayed_work	slow;
	atomic64_t		callbacks;
	atomic_t		exited;
	unsigned int		exit_sleep;
	struct mutex		read_lock;	/* see @read_lock above */
	struct bts_record	*snap;
	u32			snap_len;
	struct bts_record	*kid_snap;
	u32			kid_len;
	bool			released;
	struct ds_consumer	*kids[DSC_MAX_KIDS];
	atomic_t		nr_kids;
	atomic_t		kids_exited;
	struct bts_record	*spare;
	atomic64_t		swaps;
};

/* Serializes commands; protects dsc_list. */
static DEFINE_MUTEX(dsc_mutex);
static LIST_HEAD(dsc_list);
/* Released consumers, kept to catch late callbacks; under dsc_mutex. */
static LIST_HEAD(dsc_released);
/* Callbacks after their consumer's release returned. */
static atomic_t dsc_late;
/* task_exit callbacks sleeping now, and releases that began meanwhile. */
static atomic_t dsc_exit_sleeping;
static atomic_t dsc_raced;
static DECLARE_WAIT_QUEUE_HEAD(dsc_raced_wq);
/* How long a task_exit callback sleeps on once a release began. */
#define DSC_RACE_HOLD_MS	100
static struct dentry *dsc_root;

/* Take up to @max records from the stream.  Context: @d->lock held. */
static void dsc_consume(struct dsc *d, struct ds_consumer *c, u32 max)
{
	u32 room = d->cap - d->len;

	u32 n;

	if (d->dying)
		return;
	if (d->discard) {
		d->len = 0;
		room = d->cap;
	}
	if (!room) {
		d->full = true;
		return;
	}
	n = ds_consume_bts(c, d->buf + d->len, min(room, max));
	d->len += n;
	d->consumed += n;
}

/*
 * Take the stream's storage with ds_swap_bts_buffer(), keep its records
 * and make it the next spare; consume as usual before the spare exists.
 * Context: @d->lock held, in the overflow callback.
 */
static void dsc_swap(struct dsc *d, struct ds_consumer *c)
{
	struct ds_bts_swapped old;
	u32 i, n;

	if (d->dying)
		return;
	if (!d->spare || ds_swap_bts_buffer(c, d->spare, &old)) {
		dsc_consume(d, c, U32_MAX);
		return;
	}
	n = min(old.count, d->cap - d->len);
	d->full |= n < old.count;
	for (i = 0; i < n; i++)
		d->buf[d->len++] = old.buf[(old.first + i) % old.size];
	d->spare = old.buf;
	atomic64_inc(&d->swaps);
}

/* Whether @c is one of @d's inherited consumers, not @d's own. */
static bool dsc_is_kid(struct dsc *d, struct ds_consumer *c)
{
	int i, n = min(atomic_read(&d->nr_kids), DSC_MAX_KIDS);

	for (i = 0; i < n; i++)
		if (READ_ONCE(d->kids[i]) == c)
			return true;
	return false;
}

static enum ds_overflow_action dsc_overflow(struct ds_consumer *c,
					    void *data)
{
	struct dsc *d = data;

	/* Inherited consumers lose what does not fit; status counts it. */
	if (dsc_is_kid(d, c))
		return DS_OVERFLOW_CONTINUE;

	if (READ_ONCE(d->released)) {
		atomic_inc(&dsc_late);
		WARN_ONCE(1, "ds_consumers: overflow callback of %s after its release\n",
			  d->name);
		return DS_OVERFLOW_CONTINUE;
	}
	/* @d->c may not be set yet: the first call can beat the request. */
	atomic64_inc(&d->callbacks);
	if (d->drain == DSC_DRAIN_SWAP) {
		spin_lock(&d->lock);
		dsc_swap(d, c);
		spin_unlock(&d->lock);
	} else if (d->drain == DSC_DRAIN_CB) {
		spin_lock(&d->lock);
		dsc_consume(d, c, U32_MAX);
		spin_unlock(&d->lock);
	} else if (d->drain == DSC_DRAIN_WORK) {
		/*
		 * Not under @d->lock: spinning here while the work item copies
		 * would fill the traced CPU's streams with the spinning.  A
		 * work item queued while @d dies finds @d->dying.
		 */
		queue_work_on(d->wcpu, system_highpri_wq, &d->work);
	}
	return DS_OVERFLOW_CONTINUE;
}

static void dsc_task_exit(struct ds_consumer *c, void *data)
{
	struct dsc *d = data;

	if (READ_ONCE(d->released)) {
		atomic_inc(&dsc_late);
		WARN_ONCE(1, "ds_consumers: task_exit callback of %s after its release\n",
			  d->name);
		return;
	}
	if (dsc_is_kid(d, c)) {
		atomic_inc(&d->kids_exited);
		return;
	}
	atomic_inc(&d->exited);
	if (d->exit_sleep) {
		int raced;

		/*
		 * A release that counted before @raced was read only makes
		 * this sleep its whole time.
		 */
		atomic_inc(&dsc_exit_sleeping);
		raced = atomic_read(&dsc_raced);
		if (wait_event_timeout(dsc_raced_wq,
				       atomic_read(&dsc_raced) != raced,
				       msecs_to_jiffies(d->exit_sleep)))
			msleep(DSC_RACE_HOLD_MS);
		atomic_dec(&dsc_exit_sleeping);
	}
}

static void *dsc_task_fork(struct ds_consumer *c, struct ds_consumer *child,
			   void *data)
{
	struct dsc *d = data;
	int i;

	if (READ_ONCE(d->released)) {
		atomic_inc(&dsc_late);
		WARN_ONCE(1, "ds_consumers: task_fork callback of %s after its release\n",
			  d->name);
		return d;
	}
	/* Not traced (no memory): nothing to count or release. */
	if (!child)
		return d;
	i = atomic_inc_return(&d->nr_kids) - 1;
	if (i < DSC_MAX_KIDS)
		WRITE_ONCE(d->kids[i], child);
	else
		ds_release_bts(child);
	/* A kid's exit is counted with its parent's. */
	return d;
}

static const struct ds_bts_ops dsc_ops = {
	.overflow	= dsc_overflow,
	.task_exit	= dsc_task_exit,
	.task_fork	= dsc_task_fork,
};

/* notify=0: no overflow callback, so no irq_work after a drain. */
static const struct ds_bts_ops dsc_ops_quiet = {
	.task_exit	= dsc_task_exit,
	.task_fork	= dsc_task_fork,
};

static void dsc_work_fn(struct work_struct *work)
{
	struct dsc *d = container_of(work, struct dsc, work);

	spin_lock_irq(&d->lock);
	dsc_consume(d, d->c, U32_MAX);
	spin_unlock_irq(&d->lock);
}

static void dsc_slow_fn(struct work_struct *work)
{
	struct dsc *d = container_of(to_delayed_work(work), struct dsc, slow);

	spin_lock_irq(&d->lock);
	dsc_consume(d, d->c, d->batch);
	if (!d->dying)
		queue_delayed_work_on(d->wcpu, system_wq, &d->slow, d->period);
	spin_unlock_irq(&d->lock);
}

static ssize_t dsc_records_read(struct file *file, char __user *ubuf,
				size_t count, loff_t *ppos)
{
	struct dsc *d = file->private_data;
	ssize_t ret;
	u32 len;

	if (d->cfg.mode == DS_MODE_CONTINUOUS) {
		spin_lock_irq(&d->lock);
		dsc_consume(d, d->c, U32_MAX);
		len = d->len;
		spin_unlock_irq(&d->lock);
		/* @buf only grows beyond @len meanwhile. */
		return simple_read_from_buffer(ubuf, count, ppos, d->buf,
					       (size_t)len * sizeof(*d->buf));
	}

	mutex_lock(&d->read_lock);
	if (*ppos == 0)
		d->snap_len = ds_read_last_bts(d->c, d->snap,
					       d->cfg.nr_records);
	ret = simple_read_from_buffer(ubuf, count, ppos, d->snap,
				      (size_t)d->snap_len * sizeof(*d->snap));
	mutex_unlock(&d->read_lock);
	return ret;
}

/*
 * The inherited consumers' records, consumed at offset 0: for each one a
 * header record { 0, index, N }, then its N records.
 */
static ssize_t dsc_kids_read(struct file *file, char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	struct dsc *d = file->private_data;
	int i, kids = min(atomic_read(&d->nr_kids), DSC_MAX_KIDS);
	struct ds_bts_status st;
	struct bts_record *hdr;
	u64 total = 0;
	ssize_t ret;
	u32 got;

	mutex_lock(&d->read_lock);
	if (*ppos == 0) {
		vfree(d->kid_snap);
		d->kid_snap = NULL;
		d->kid_len = 0;
		for (i = 0; i < kids; i++) {
			ds_bts_status(d->kids[i], &st);
			total += 1 + st.pending;
		}
		if (total > DSC_MAX_CAP) {
			ret = -E2BIG;
			goto out;
		}
		if (total)
			d->kid_snap = vmalloc_array(total, sizeof(*d->kid_snap));
		if (total && !d->kid_snap) {
			ret = -ENOMEM;
			goto out;
		}
		for (i = 0; i < kids && d->kid_len < total; i++) {
			hdr = &d->kid_snap[d->kid_len++];
			got = ds_consume_bts(d->kids[i], d->kid_snap + d->kid_len,
					     total - d->kid_len - (kids - 1 - i));
			*hdr = (struct bts_record){ .to = i, .flags = got };
			d->kid_len += got;
		}
	}
	ret = simple_read_from_buffer(ubuf, count, ppos, d->kid_snap,
				      (size_t)d->kid_len * sizeof(*d->kid_snap));
out:
	mutex_unlock(&d->read_lock);
	return ret;
}

static const struct file_operations dsc_kids_fops = {
	.owner		= THIS_MODULE,
	.open		= simple_open,
	.read		= dsc_kids_read,
	.llseek		= default_llseek,
};

static const struct file_operations dsc_records_fops = {
	.owner		= THIS_MODULE,
	.open		= simple_open,
	.read		= dsc_records_read,
	.llseek		= default_llseek,
};

static int dsc_status_show(struct seq_file *m, void *unused)
{
	struct dsc *d = m->private;
	int i, kids = atomic_read(&d->nr_kids);
	u64 kids_min = U64_MAX, kids_lost = 0;
	struct ds_bts_status st;
	u64 consumed;
	u32 len;

	for (i = 0; i < min(kids, DSC_MAX_KIDS); i++) {
		ds_bts_status(d->kids[i], &st);
		kids_min = min(kids_min, st.produced);
		kids_lost += st.lost;
	}
	seq_printf(m, "kids %d\nkids_exited %d\nkids_min_produced %llu\nkids_lost %llu\n",
		   kids, atomic_read(&d->kids_exited),
		   kids ? kids_min : 0, kids_lost);
	ds_bts_status(d->c, &st);
	spin_lock_irq(&d->lock);
	len = d->len;
	consumed = d->consumed;
	spin_unlock_irq(&d->lock);
	seq_printf(m, "produced %llu\npending %llu\nlost %llu\nthrottled %llu\n",
		   st.produced, st.pending, st.lost, st.throttled);
	seq_printf(m, "swaps %lld\nconsumed %llu\n", atomic64_read(&d->swaps),
		   consumed);
	seq_printf(m, "kept %u\nfull %d\ncallbacks %lld\nexited %d\n", len,
		   READ_ONCE(d->full), atomic64_read(&d->callbacks),
		   atomic_read(&d->exited));
	seq_printf(m, "pid %d\ncpu %d\npriv %d\nmode %d\nflags %u\nsize %u\nwakeup %u\n",
		   d->pid, d->pid >= 0 ? -1 : d->cfg.cpu, d->cfg.priv,
		   d->cfg.mode, d->cfg.flags, d->cfg.nr_records,
		   d->cfg.wakeup);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(dsc_status);

static struct dsc *dsc_find(struct list_head *list, const char *name)
{
	struct dsc *d;

	list_for_each_entry(d, list, node)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

static void dsc_free(struct dsc *d)
{
	vfree(d->buf);
	vfree(d->snap);
	vfree(d->kid_snap);
	kfree(d);
}

/*
 * Detach, free the buffers and keep @d on dsc_released.  Context: dsc_mutex
 * held, @d off dsc_list.
 */
static void dsc_release(struct dsc *d)
{
	int i;

	/* Waits for readers of the files, which use @d->c. */
	debugfs_remove_recursive(d->dir);
	/* Tell the race tests that they hit their window. */
	if (atomic_read(&dsc_exit_sleeping)) {
		atomic_inc(&dsc_raced);
		wake_up_all(&dsc_raced_wq);
	}
	/* Work items that run from now on leave @d->c alone. */
	spin_lock_irq(&d->lock);
	d->dying = true;
	spin_unlock_irq(&d->lock);
	ds_release_bts(d->c);
	/*
	 * A kid's release waits for its task_fork calls, which may add kids
	 * further on: re-read the count.
	 */
	for (i = 0; i < min(atomic_read(&d->nr_kids), DSC_MAX_KIDS); i++)
		ds_release_bts(d->kids[i]);
	/* No callback queues @d->work any more. */
	cancel_work_sync(&d->work);
	cancel_delayed_work_sync(&d->slow);
	kvfree(d->spare);
	d->spare = NULL;
	vfree(d->buf);
	vfree(d->snap);
	vfree(d->kid_snap);
	d->buf = NULL;
	d->snap = NULL;
	d->kid_snap = NULL;
	WRITE_ONCE(d->released, true);
	list_add_tail(&d->node, &dsc_released);
}

static int dsc_parse_u32(const char *val, u32 *out)
{
	return kstrtou32(val, 0, out);
}

/* Parse "NAME KEY=VALUE..." into a new, not yet attached consumer. */
static struct dsc *dsc_parse(char *args)
{
	bool task = false, cpu = false;
	char *tok, *val;
	struct dsc *d;
	u32 v;
	int ret = -EINVAL;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return ERR_PTR(-ENOMEM);
	d->pid = -1;
	d->wcpu = WORK_CPU_UNBOUND;
	d->cap = DSC_DEFAULT_CAP;
	d->batch = 64;
	d->period = 1;
	d->cfg.priv = DS_PRIV_ALL;
	d->cfg.mode = DS_MODE_CONTINUOUS;
	/* Every stream of the tests takes markers (markers=0: none). */
	d->cfg.flags = DS_BTS_MARKERS;
	d->cfg.nr_records = 4096;
	d->cfg.ops = &dsc_ops;
	d->cfg.data = d;
	spin_lock_init(&d->lock);
	mutex_init(&d->read_lock);
	INIT_WORK(&d->work, dsc_work_fn);
	INIT_DELAYED_WORK(&d->slow, dsc_slow_fn);

	tok = strsep(&args, " \t");
	if (!tok || !*tok || strlen(tok) >= DSC_NAME_LEN || strchr(tok, '/'))
		goto fail;
	strscpy(d->name, tok, sizeof(d->name));

	while ((tok = strsep(&args, " \t"))) {
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (!val)
			goto fail;
		*val++ = '\0';
		if (!strcmp(tok, "priv")) {
			if (!strcmp(val, "kernel"))
				d->cfg.priv = DS_PRIV_KERNEL;
			else if (!strcmp(val, "user"))
				d->cfg.priv = DS_PRIV_USER;
			else if (!strcmp(val, "all"))
				d->cfg.priv = DS_PRIV_ALL;
			else
				goto fail;
			continue;
		}
		if (!strcmp(tok, "mode")) {
			if (!strcmp(val, "ring"))
				d->cfg.mode = DS_MODE_RING;
			else if (!strcmp(val, "cont"))
				d->cfg.mode = DS_MODE_CONTINUOUS;
			else
				goto fail;
			continue;
		}
		if (!strcmp(tok, "drain")) {
			if (!strcmp(val, "cb"))
				d->drain = DSC_DRAIN_CB;
			else if (!strcmp(val, "work"))
				d->drain = DSC_DRAIN_WORK;
			else if (!strcmp(val, "slow"))
				d->drain = DSC_DRAIN_SLOW;
			else if (!strcmp(val, "none"))
				d->drain = DSC_DRAIN_NONE;
			else if (!strcmp(val, "swap"))
				d->drain = DSC_DRAIN_SWAP;
			else
				goto fail;
			continue;
		}
		ret = dsc_parse_u32(val, &v);
		if (ret)
			goto fail;
		ret = -EINVAL;
		if (!strcmp(tok, "task")) {
			d->pid = v;
			task = true;
		} else if (!strcmp(tok, "cpu")) {
			d->cfg.cpu = v;
			cpu = true;
		} else if (!strcmp(tok, "size")) {
			d->cfg.nr_records = v;
		} else if (!strcmp(tok, "wakeup")) {
			d->cfg.wakeup = v;
		} else if (!strcmp(tok, "lossless")) {
			if (v)
				d->cfg.flags |= DS_BTS_LOSSLESS;
		} else if (!strcmp(tok, "suspended")) {
			if (v)
				d->cfg.flags |= DS_BTS_SUSPENDED;
		} else if (!strcmp(tok, "inherit")) {
			if (v)
				d->cfg.flags |= DS_BTS_INHERIT;
		} else if (!strcmp(tok, "discard")) {
			d->discard = v;
		} else if (!strcmp(tok, "notify")) {
			d->cfg.ops = v ? &dsc_ops : &dsc_ops_quiet;
		} else if (!strcmp(tok, "markers")) {
			if (!v)
				d->cfg.flags &= ~DS_BTS_MARKERS;
		} else if (!strcmp(tok, "cap")) {
			if (!v || v > DSC_MAX_CAP)
				goto fail;
			d->cap = v;
		} else if (!strcmp(tok, "batch")) {
			if (!v)
				goto fail;
			d->batch = v;
		} else if (!strcmp(tok, "exit_sleep")) {
			d->exit_sleep = v;
		} else if (!strcmp(tok, "wcpu")) {
			if (v >= nr_cpu_ids || !cpu_possible(v))
				goto fail;
			d->wcpu = v;
		} else if (!strcmp(tok, "period")) {
			d->period = max(msecs_to_jiffies(v), 1UL);
		} else {
			goto fail;
		}
	}
	if (task == cpu)
		goto fail;

	ret = -ENOMEM;
	if (d->cfg.mode == DS_MODE_CONTINUOUS) {
		d->buf = vmalloc_array(d->cap, sizeof(*d->buf));
		if (!d->buf)
			goto fail;
	} else {
		if (!d->cfg.nr_records || d->cfg.nr_records > DSC_MAX_CAP)
			goto fail;
		d->snap = vmalloc_array(d->cfg.nr_records, sizeof(*d->snap));
		if (!d->snap)
			goto fail;
	}
	return d;
fail:
	dsc_free(d);
	return ERR_PTR(ret);
}

/*
 * Attach a parsed consumer and put it on @added.  Context: dsc_mutex
 * held.
 */
static int dsc_attach(struct dsc *d, struct list_head *added)
{
	struct task_struct *task = NULL;
	struct pid *pid;

	if (dsc_find(&dsc_list, d->name) || dsc_find(added, d->name))
		return -EEXIST;
	if (d->pid >= 0) {
		pid = find_get_pid(d->pid);
		task = get_pid_task(pid, PIDTYPE_PID);
		put_pid(pid);
		if (!task)
			return -ESRCH;
	}
	/* The layer holds the task; the module needs no pointer to it. */
	d->cfg.task = task;
	d->c = ds_request_bts(&d->cfg);
	d->cfg.task = NULL;
	if (task)
		put_task_struct(task);
	if (IS_ERR(d->c))
		return PTR_ERR(d->c);
	if (d->drain == DSC_DRAIN_SWAP) {
		struct bts_record *spare;

		spare = kvcalloc(ds_bts_buffer_records(d->c), sizeof(*spare),
				 GFP_KERNEL);
		if (!spare) {
			ds_release_bts(d->c);
			return -ENOMEM;
		}
		spin_lock_irq(&d->lock);
		d->spare = spare;
		spin_unlock_irq(&d->lock);
	}

	d->dir = debugfs_create_dir(d->name, dsc_root);
	debugfs_create_file("records", 0400, d->dir, d, &dsc_records_fops);
	debugfs_create_file("status", 0400, d->dir, d, &dsc_status_fops);
	debugfs_create_file("kids", 0400, d->dir, d, &dsc_kids_fops);
	list_add_tail(&d->node, added);
	if (d->drain == DSC_DRAIN_SLOW)
		queue_delayed_work_on(d->wcpu, system_wq, &d->slow, d->period);
	return 0;
}

/* Apply @fn to the consumers named in @args, or to all. */
static int dsc_for_each(char *args, void (*fn)(struct dsc *d))
{
	struct dsc *d, *tmp;
	bool named = false;
	char *tok;

	while ((tok = strsep(&args, " \t"))) {
		if (!*tok)
			continue;
		named = true;
		d = dsc_find(&dsc_list, tok);
		if (!d)
			return -ENOENT;
		fn(d);
	}
	if (!named)
		list_for_each_entry_safe(d, tmp, &dsc_list, node)
			fn(d);
	return 0;
}

static void dsc_suspend(struct dsc *d)
{
	ds_suspend_bts(d->c);
}

static void dsc_resume(struct dsc *d)
{
	ds_resume_bts(d->c);
}

static void dsc_unlink_release(struct dsc *d)
{
	list_del(&d->node);
	dsc_release(d);
}

static int dsc_command(char *buf)
{
	LIST_HEAD(added);
	struct dsc *d, *tmp;
	char *line, *cmd;
	int ret = 0;

	/* A batch of attach lines, or one other command. */
	while ((line = strsep(&buf, "\n"))) {
		line = strim(line);
		if (!*line)
			continue;
		cmd = strsep(&line, " \t");
		if (!line)
			line = "";
		if (!strcmp(cmd, "attach")) {
			d = dsc_parse(line);
			if (IS_ERR(d)) {
				ret = PTR_ERR(d);
				break;
			}
			ret = dsc_attach(d, &added);
			if (ret) {
				dsc_free(d);
				break;
			}
			continue;
		}
		if (!strcmp(cmd, "suspend"))
			ret = dsc_for_each(line, dsc_suspend);
		else if (!strcmp(cmd, "resume"))
			ret = dsc_for_each(line, dsc_resume);
		else if (!strcmp(cmd, "release"))
			ret = dsc_for_each(line, dsc_unlink_release);
		else
			ret = -EINVAL;
		if (ret)
			break;
	}
	if (ret) {
		/* All the attach lines or none. */
		list_for_each_entry_safe(d, tmp, &added, node) {
			list_del(&d->node);
			dsc_release(d);
		}
	} else {
		list_splice_tail(&added, &dsc_list);
	}
	return ret;
}

static ssize_t dsc_control_write(struct file *file, const char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	char *buf;
	int ret;

	if (count >= DSC_MAX_WRITE)
		return -E2BIG;
	buf = memdup_user_nul(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	mutex_lock(&dsc_mutex);
	ret = dsc_command(buf);
	mutex_unlock(&dsc_mutex);
	kfree(buf);
	return ret ? ret : count;
}

static int dsc_control_show(struct seq_file *m, void *unused)
{
	struct dsc *d;

	mutex_lock(&dsc_mutex);
	list_for_each_entry(d, &dsc_list, node)
		seq_printf(m, "%s\n", d->name);
	mutex_unlock(&dsc_mutex);
	return 0;
}

static int dsc_control_open(struct inode *inode, struct file *file)
{
	return single_open(file, dsc_control_show, NULL);
}

static const struct file_operations dsc_control_fops = {
	.owner		= THIS_MODULE,
	.open		= dsc_control_open,
	.read		= seq_read,
	.write		= dsc_control_write,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static ssize_t dsc_marker_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	struct ds_marker m = { .source = BTS_MARKER_USER_EVENT };
	unsigned long long addr;
	unsigned int id, gen = 0;
	char buf[80];
	int n;

	if (count >= sizeof(buf))
		return -E2BIG;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	n = sscanf(buf, "%i %lli %i", &id, &addr, &gen);
	if (n < 1)
		return -EINVAL;
	if (n < 2)
		addr = id;
	m.id = id;
	m.gen = gen;
	m.addr = addr;
	ds_append_marker(&m);
	return count;
}

static const struct file_operations dsc_marker_fops = {
	.owner		= THIS_MODULE,
	.open		= simple_open,
	.write		= dsc_marker_write,
	.llseek		= noop_llseek,
};

static int __init dsc_init(void)
{
	if (!ds_bts_available())
		return -EOPNOTSUPP;
	dsc_root = debugfs_create_dir("ds_consumers", NULL);
	debugfs_create_file("control", 0600, dsc_root, NULL,
			    &dsc_control_fops);
	debugfs_create_file("marker", 0200, dsc_root, NULL, &dsc_marker_fops);
	debugfs_create_atomic_t("late", 0400, dsc_root, &dsc_late);
	debugfs_create_atomic_t("raced", 0400, dsc_root, &dsc_raced);
	return 0;
}

static void __exit dsc_exit(void)
{
	struct dsc *d, *tmp;

	mutex_lock(&dsc_mutex);
	list_for_each_entry_safe(d, tmp, &dsc_list, node)
		dsc_unlink_release(d);
	list_for_each_entry_safe(d, tmp, &dsc_released, node)
		dsc_free(d);
	mutex_unlock(&dsc_mutex);
	debugfs_remove_recursive(dsc_root);
}

module_init(dsc_init);
module_exit(dsc_exit);
MODULE_DESCRIPTION("Test consumers of the x86 Debug Store layer");
MODULE_LICENSE("GPL");
/* The layer exports its API to test kernels only (CONFIG_KUNIT). */
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
