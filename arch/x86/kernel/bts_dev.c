// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/bts: user-only branch traces of threads, for whoever may ptrace them.
 *
 * A file is attached to one thread, and with BTS_ATTACH_INHERIT also to
 * the threads and processes that thread and its descendants create (with
 * BTS_ATTACH_INHERIT_THREADS, the threads they create, not processes).  Each
 * thread gets a user-only consumer of its own from the Debug Store layer
 * (arch/x86/kernel/ds.c); read() takes the records of one thread after the
 * other and puts a BTS_PSEUDO_THREAD record in front of each thread's run.
 * The ABI is in include/uapi/linux/bts.h, the model in
 * Documentation/arch/x86/ds.rst.
 *
 * Locking: bts_file.lock, a mutex, serializes attach, detach, status and
 * read(), which consume the streams and release consumers.  A release
 * waits for the consumer's callbacks, so the callbacks never take the
 * mutex: they take bts_file.threads_lock, a spinlock that guards the list
 * of threads and each thread's exit and snapshot state, or nothing.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/init.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/ptrace.h>
#include <linux/security.h>
#include <linux/sizes.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/sysctl.h>
#include <linux/uaccess.h>
#include <linux/user_events.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <asm/ds.h>

#include "bts_dev.h"

/*
 * The trace buffers of one user's files.  Their size is the user's choice
 * (up to BTS_MAX_RECORDS records per thread), and so is their number (one
 * per traced thread, created ones included): unbounded, any user could
 * fill the kernel's memory.  The bound, in KiB, is the sysctl
 * kernel.bts_user_max_kb, by default a sixteenth of RAM; CAP_PERFMON is
 * exempt, as from perf_event_mlock_kb.
 */
static unsigned int bts_user_max_kb;

/**
 * struct bts_user - what one user's trace buffers hold
 * @node: in bts_users
 * @uid: the user
 * @files: its open files (bts_users_lock)
 * @bytes: held by their threads now
 */
struct bts_user {
	struct hlist_node	node;
	kuid_t			uid;
	unsigned int		files;
	atomic_long_t		bytes;
};

static DEFINE_HASHTABLE(bts_users, 6);
static DEFINE_SPINLOCK(bts_users_lock);

static struct bts_user *bts_user_find(kuid_t uid)
{
	struct bts_user *u;

	hash_for_each_possible(bts_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/* The opener's account, created with its first file.  Context: process. */
static struct bts_user *bts_user_get(void)
{
	kuid_t uid = current_uid();
	struct bts_user *u, *fresh;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	if (!fresh)
		return NULL;
	spin_lock(&bts_users_lock);
	u = bts_user_find(uid);
	if (!u) {
		u = fresh;
		fresh = NULL;
		u->uid = uid;
		hash_add(bts_users, &u->node, __kuid_val(uid));
	}
	u->files++;
	spin_unlock(&bts_users_lock);
	kfree(fresh);
	return u;
}

/* Context: process, the file's threads all uncharged. */
static void bts_user_put(struct bts_user *u)
{
	spin_lock(&bts_users_lock);
	if (--u->files) {
		u = NULL;
	} else {
		WARN_ON_ONCE(atomic_long_read(&u->bytes));
		hash_del(&u->node);
	}
	spin_unlock(&bts_users_lock);
	kfree(u);
}

static const struct ds_bts_ops bts_dev_ops;

/*
 * What a thread's buffers hold, as asked: its consumer (the stream, with
 * lossless mode's headroom), and in ring mode the snapshot of it taken at
 * its exit.
 */
static size_t bts_thread_bytes(const struct bts_file *f)
{
	struct ds_bts_config cfg = {
		.nr_records	= max(f->attach.nr_records, 2U),
		.flags		= f->attach.flags & BTS_ATTACH_LOSSLESS ?
				  DS_BTS_LOSSLESS : 0,
	};
	size_t bytes = ds_bts_bytes(&cfg);

	if (f->attach.mode == BTS_MODE_RING)
		bytes += cfg.nr_records * sizeof(struct bts_record);
	return bytes;
}

/*
 * Charge @t's buffers to the file's user, before they are allocated.
 * Return: 0, or -EDQUOT if that would take the user past its limit.
 */
static int bts_thread_charge(struct bts_file *f, struct bts_thread *t)
{
	long max = (long)READ_ONCE(bts_user_max_kb) * SZ_1K;
	size_t bytes = bts_thread_bytes(f);

	if (atomic_long_add_return(bytes, &f->user->bytes) > max &&
	    !f->unlimited) {
		atomic_long_sub(bytes, &f->user->bytes);
		pr_info_ratelimited("bts: uid %u: trace buffers past kernel.bts_user_max_kb=%u\n",
				    from_kuid(&init_user_ns, f->user->uid),
				    READ_ONCE(bts_user_max_kb));
		return -EDQUOT;
	}
	t->charged = bytes;
	return 0;
}

/* @t's buffers are freed, or about to be. */
void bts_thread_uncharge(struct bts_file *f, struct bts_thread *t)
{
	atomic_long_sub(t->charged, &f->user->bytes);
	t->charged = 0;
}

static struct bts_thread *bts_thread_new(struct bts_file *f,
					 struct task_struct *task)
{
	struct bts_thread *t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);

	if (!t)
		return NULL;
	t->file = f;
	t->task = task;
	get_task_struct(task);
	return t;
}

/* Context: the file's lock, or the thread was never published. */
void bts_thread_free(struct bts_thread *t)
{
	bts_thread_uncharge(t->file, t);
	put_task_struct(t->task);
	kvfree(t->last);
	kfree(t);
}

/*
 * A thread's ids, as the reader's namespace numbers them.  A new thread
 * gets its ids after the fork callback ran (until then it shows its
 * parent's), and an exited one loses them once reaped: take them once it
 * has run, that is once it has records, or as it exits, and keep them.
 */
void bts_thread_ids(struct bts_thread *t)
{
	struct bts_file *f = t->file;

	spin_lock(&f->threads_lock);
	if (!t->tid) {
		t->tid = task_pid_nr_ns(t->task, f->ns);
		t->tgid = task_tgid_nr_ns(t->task, f->ns);
	}
	spin_unlock(&f->threads_lock);
}

/*
 * Ring mode: copy the ring's last records, once, at the thread's exit or
 * at the detach, whichever comes first.  Context: process, may sleep.
 */
static void bts_thread_snapshot(struct bts_thread *t, struct ds_consumer *c)
{
	struct bts_file *f = t->file;
	struct bts_record *last;
	u32 nr = 0;

	spin_lock(&f->threads_lock);
	if (t->snapshot_claimed) {
		spin_unlock(&f->threads_lock);
		return;
	}
	t->snapshot_claimed = true;
	spin_unlock(&f->threads_lock);

	last = kvmalloc_array(f->attach.nr_records, sizeof(*last),
			      GFP_KERNEL_ACCOUNT);
	if (last)
		nr = ds_read_last_bts(c, last, f->attach.nr_records);
	else
		pr_warn_ratelimited("bts: no memory for the last %u branches of thread %d\n",
				    f->attach.nr_records,
				    task_pid_nr(t->task));

	spin_lock(&f->threads_lock);
	t->last = last;
	t->nr_last = nr;
	t->snapshot_ready = true;
	spin_unlock(&f->threads_lock);
}

/* Context: hard interrupt. */
static enum ds_overflow_action bts_dev_overflow(struct ds_consumer *c,
						void *data)
{
	struct bts_thread *t = data;

	wake_up(&t->file->wait);
	return DS_OVERFLOW_CONTINUE;
}

/* Context: process, the exiting thread, which has its ids still. */
static void bts_dev_task_exit(struct ds_consumer *c, void *data)
{
	struct bts_thread *t = data;
	struct bts_file *f = t->file;

	bts_thread_ids(t);
	if (f->attach.mode == BTS_MODE_RING)
		bts_thread_snapshot(t, c);
	spin_lock(&f->threads_lock);
	t->exited = true;
	spin_unlock(&f->threads_lock);
	wake_up(&f->wait);
}

/*
 * The new thread's callbacks get its own bts_thread, or none if it is not
 * traced.  Context: process, the parent in clone(), before the child runs.
 */
static void *bts_dev_task_fork(struct ds_consumer *c,
			       struct ds_consumer *child, void *data)
{
	struct bts_thread *parent = data, *t = NULL, *traced = NULL;
	struct bts_file *f = parent->file;

	if (child)
		t = bts_thread_new(f, ds_bts_task(child));
	if (t && bts_thread_charge(f, t)) {
		bts_thread_free(t);
		t = NULL;
	}
	if (t)
		t->consumer = child;
	spin_lock(&f->threads_lock);
	/* A detached file traces no new thread. */
	if (t && !f->detached) {
		list_add_tail(&t->node, &f->threads);
		traced = t;
		t = NULL;
		child = NULL;
	} else if (!t && !f->detached) {
		/* Reported in the status, not silently lost. */
		f->untraced++;
	}
	spin_unlock(&f->threads_lock);
	if (child)
		ds_release_bts(child);
	if (t)
		bts_thread_free(t);
	return traced;
}

static const struct ds_bts_ops bts_dev_ops = {
	.overflow	= bts_dev_overflow,
	.task_exit	= bts_dev_task_exit,
	.task_fork	= bts_dev_task_fork,
};

/*
 * Take @t's consumer away from the callbacks' view, its figures into the
 * file's.  Return: the consumer, NULL if it had none.
 */
static struct ds_consumer *bts_thread_take(struct bts_file *f,
					   struct bts_thread *t)
{
	struct ds_consumer *c;
	struct ds_bts_status st;

	spin_lock(&f->threads_lock);
	c = t->consumer;
	t->consumer = NULL;
	spin_unlock(&f->threads_lock);
	if (!c)
		return NULL;
	ds_bts_status(c, &st);
	f->released.produced += st.produced;
	f->released.lost += st.lost;
	f->released.throttled += st.throttled;
	return c;
}

/*
 * Release the consumers of @n threads at @ts, at once: one grace period for
 * them all (ds_release_bts_many()).
 */
static void bts_threads_release(struct bts_file *f, struct bts_thread **ts,
				unsigned int n)
{
	struct ds_consumer *cs[BTS_RELEASE_BATCH];
	unsigned int i;

	for (i = 0; i < n; i++)
		cs[i] = bts_thread_take(f, ts[i]);
	ds_release_bts_many(cs, n);
	/* Their processes' events are no longer enabled for this trace. */
	for (i = 0; f->markers && i < n; i++)
		if (cs[i])
			user_events_markers_refresh(ts[i]->task);
}

/* Take @t's consumer away from the callbacks' view and release it. */
void bts_thread_release(struct bts_file *f, struct bts_thread *t)
{
	bts_threads_release(f, &t, 1);
}

/*
 * A file gives what perf_event_open() gives for a user-only branch event
 * on a thread one may ptrace, so the administrator's perf knobs decide
 * who may open one: kernel.perf_event_paranoid above 2 (Debian's default,
 * CONFIG_SECURITY_PERF_EVENTS_RESTRICT) allows no unprivileged perf use,
 * and no /dev/bts file either, and the LSM's perf_event policy applies.
 * This matters beyond the trace itself: a traced thread holds perf's
 * LBR/BTS/PT exclusion (x86_add_exclusive()) system-wide, as an
 * unprivileged perf user's LBR event holds it against BTS and PT.
 */
static int bts_dev_may_open(void)
{
	if (perf_paranoid_any() && !perfmon_capable())
		return -EACCES;
	return security_perf_event_open(PERF_SECURITY_OPEN);
}

static int bts_dev_open(struct inode *inode, struct file *file)
{
	struct bts_file *f;
	int ret;

	ret = bts_dev_may_open();
	if (ret)
		return ret;
	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	f->user = bts_user_get();
	if (!f->user) {
		kfree(f);
		return -ENOMEM;
	}
	f->unlimited = perfmon_capable();
	mutex_init(&f->lock);
	spin_lock_init(&f->threads_lock);
	INIT_LIST_HEAD(&f->threads);
	init_waitqueue_head(&f->wait);
	xa_init(&f->marker_events);
	f->ns = get_pid_ns(task_active_pid_ns(current));
	file->private_data = f;
	return stream_open(inode, file);
}

/*
 * Take up to @max threads not yet detached from, into @ts.  Releasing a
 * consumer waits for its fork callbacks, which may add threads until the
 * file is detached; they are found here too.
 * Return: how many.
 */
static unsigned int bts_take_attached(struct bts_file *f,
				      struct bts_thread **ts, unsigned int max)
{
	struct bts_thread *t;
	unsigned int n = 0;

	spin_lock(&f->threads_lock);
	list_for_each_entry(t, &f->threads, node) {
		if (n == max)
			break;
		if (!t->detached) {
			t->detached = true;
			ts[n++] = t;
		}
	}
	spin_unlock(&f->threads_lock);
	return n;
}

/*
 * Stop tracing: every ring's records are copied, every stream gets what
 * is still staged, and the threads' records stay readable.  The threads
 * go in batches, each with one grace period for all its consumers.
 * Context: the file's lock.
 */
static void bts_detach(struct bts_file *f)
{
	struct bts_thread *ts[BTS_RELEASE_BATCH];
	struct ds_consumer *live[BTS_RELEASE_BATCH];
	unsigned int i, n, nr;

	spin_lock(&f->threads_lock);
	f->detached = true;
	spin_unlock(&f->threads_lock);
	while ((n = bts_take_attached(f, ts, ARRAY_SIZE(ts)))) {
		nr = 0;
		spin_lock(&f->threads_lock);
		/* What is still staged comes to the stream now. */
		for (i = 0; i < n; i++)
			if (ts[i]->consumer && !ts[i]->exited)
				live[nr++] = ts[i]->consumer;
		spin_unlock(&f->threads_lock);
		ds_suspend_bts_many(live, nr);
		if (f->attach.mode != BTS_MODE_RING)
			continue;
		/* A still ring: the copy need not race the thread. */
		for (i = 0; i < n; i++)
			if (ts[i]->consumer)
				bts_thread_snapshot(ts[i], ts[i]->consumer);
		bts_threads_release(f, ts, n);
	}
	wake_up(&f->wait);
}

/*
 * BTS_ATTACH_MARKERS: subscribe to the events @a's glob names, for every
 * consumer of the file.  Before the first consumer, undone after the last.
 */
static int bts_markers_get(struct bts_file *f, const struct bts_attach *a)
{
	struct user_event_markers *markers;
	char *glob;

	if (!(a->flags & BTS_ATTACH_MARKERS))
		return 0;
	if (a->markers)
		glob = strndup_user(u64_to_user_ptr(a->markers),
				    BTS_MARKERS_GLOB_MAX);
	else
		glob = kstrdup("*", GFP_KERNEL);
	if (IS_ERR_OR_NULL(glob))
		return glob ? PTR_ERR(glob) : -ENOMEM;
	markers = user_events_markers_get(glob, false);
	if (IS_ERR(markers)) {
		kfree(glob);
		return PTR_ERR(markers);
	}
	f->markers = markers;
	f->markers_glob = glob;
	return 0;
}

static void bts_markers_put(struct bts_file *f)
{
	if (!f->markers)
		return;
	user_events_markers_put(f->markers);
	kfree(f->markers_glob);
	f->markers = NULL;
	f->markers_glob = NULL;
}

static int bts_dev_release(struct inode *inode, struct file *file)
{
	struct bts_file *f = file->private_data;
	struct bts_thread *ts[BTS_RELEASE_BATCH], *t;
	unsigned int n;

	mutex_lock(&f->lock);
	spin_lock(&f->threads_lock);
	f->detached = true;
	spin_unlock(&f->threads_lock);
	/* Fork callbacks under way may still add threads: take them too. */
	while ((n = bts_take_attached(f, ts, ARRAY_SIZE(ts))))
		bts_threads_release(f, ts, n);
	/* Those detached before: no callback adds a thread any more. */
	list_for_each_entry(t, &f->threads, node)
		bts_thread_release(f, t);
	mutex_unlock(&f->lock);

	while ((t = list_first_entry_or_null(&f->threads, struct bts_thread,
					     node))) {
		list_del(&t->node);
		bts_thread_free(t);
	}
	bts_markers_put(f);
	xa_destroy(&f->marker_events);
	bts_user_put(f->user);
	put_pid_ns(f->ns);
	kfree(f);
	return 0;
}

static int bts_check_attach(const struct bts_attach *a)
{
	if (a->flags & ~(BTS_ATTACH_INHERIT | BTS_ATTACH_LOSSLESS |
			 BTS_ATTACH_MAPS | BTS_ATTACH_MARKERS |
			 BTS_ATTACH_INHERIT_THREADS))
		return -EINVAL;
	if ((a->flags & BTS_ATTACH_INHERIT) &&
	    (a->flags & BTS_ATTACH_INHERIT_THREADS))
		return -EINVAL;
	if (a->markers && !(a->flags & BTS_ATTACH_MARKERS))
		return -EINVAL;
	if (a->mode != BTS_MODE_CONTINUOUS && a->mode != BTS_MODE_RING)
		return -EINVAL;
	if ((a->flags & BTS_ATTACH_LOSSLESS) && a->mode != BTS_MODE_CONTINUOUS)
		return -EINVAL;
	if (a->nr_records > BTS_MAX_RECORDS || a->reserved)
		return -EINVAL;
	return 0;
}

/*
 * Trace the thread @a names, if the caller may ptrace it.  The check and
 * the request hold off a set-user-ID exec of the thread, whose trace ends
 * there (begin_new_exec()), so that what is traced is what was checked.
 */
static int bts_attach_task(struct bts_file *f, struct task_struct *task)
{
	struct ds_bts_config cfg = {
		.task		= task,
		.priv		= DS_PRIV_USER,
		.mode		= f->attach.mode == BTS_MODE_RING ?
				  DS_MODE_RING : DS_MODE_CONTINUOUS,
		/* The layer needs two; a ring of one shows its last. */
		.nr_records	= max(f->attach.nr_records, 2U),
		.ops		= &bts_dev_ops,
	};
	struct ds_consumer *c;
	struct bts_thread *t;
	int ret;

	if (f->attach.flags & BTS_ATTACH_INHERIT)
		cfg.flags |= DS_BTS_INHERIT;
	if (f->attach.flags & BTS_ATTACH_INHERIT_THREADS)
		cfg.flags |= DS_BTS_INHERIT_THREADS;
	if (f->attach.flags & BTS_ATTACH_LOSSLESS)
		cfg.flags |= DS_BTS_LOSSLESS;
	if (f->attach.flags & BTS_ATTACH_MAPS)
		cfg.flags |= DS_BTS_MAPS;
	if (f->markers) {
		cfg.flags |= DS_BTS_MARKERS;
		cfg.markers = f->markers_glob;
	}
	/* Kernel threads never run in user mode. */
	if (task->flags & PF_KTHREAD)
		return -EINVAL;

	t = bts_thread_new(f, task);
	if (!t)
		return -ENOMEM;
	cfg.data = t;
	ret = bts_thread_charge(f, t);
	if (ret)
		goto free;
	ret = down_read_interruptible(&task->signal->exec_update_lock);
	if (ret)
		goto free;
	ret = -EPERM;
	if (!ptrace_may_access(task, PTRACE_MODE_ATTACH_REALCREDS))
		goto unlock;
	/* Callbacks may run once the consumer exists: publish @t first. */
	spin_lock(&f->threads_lock);
	list_add_tail(&t->node, &f->threads);
	spin_unlock(&f->threads_lock);
	c = ds_request_bts(&cfg);
	if (IS_ERR(c)) {
		ret = PTR_ERR(c) == -EOPNOTSUPP ? -ENODEV : PTR_ERR(c);
		spin_lock(&f->threads_lock);
		list_del(&t->node);
		spin_unlock(&f->threads_lock);
		goto unlock;
	}
	spin_lock(&f->threads_lock);
	t->consumer = c;
	spin_unlock(&f->threads_lock);
	bts_thread_ids(t);
	up_read(&task->signal->exec_update_lock);
	/* The events it registered already: enabled for this trace. */
	if (f->markers)
		user_events_markers_refresh(task);
	return 0;

unlock:
	up_read(&task->signal->exec_update_lock);
free:
	bts_thread_free(t);
	return ret;
}

/*
 * Copy a struct that starts with its size (a u32) from user space: a size
 * below the first version's (@ver0) or past a page, or a later version's
 * field the kernel does not know that is not zero, is -EINVAL.
 */
static int bts_get_struct(void *dst, size_t size, const void __user *src,
			  u32 ver0)
{
	u32 usize;
	int ret;

	if (get_user(usize, (const u32 __user *)src))
		return -EFAULT;
	if (usize < ver0 || usize > PAGE_SIZE)
		return -EINVAL;
	ret = copy_struct_from_user(dst, size, src, usize);
	return ret == -E2BIG ? -EINVAL : ret;
}

static long bts_ioctl_attach(struct bts_file *f,
			     struct bts_attach __user *uattach)
{
	struct task_struct *task;
	struct bts_attach a;
	int ret;

	ret = bts_get_struct(&a, sizeof(a), uattach, BTS_ATTACH_SIZE_VER0);
	if (ret)
		return ret;
	ret = bts_check_attach(&a);
	if (ret)
		return ret;
	if (!a.nr_records)
		a.nr_records = BTS_DEFAULT_RECORDS;

	task = find_get_task_by_vpid(a.pid);
	if (!task)
		return -ESRCH;
	mutex_lock(&f->lock);
	if (f->attached) {
		ret = -EBUSY;
	} else {
		f->attach = a;
		ret = bts_markers_get(f, &a);
		if (!ret)
			ret = bts_attach_task(f, task);
		if (ret)
			bts_markers_put(f);
		if (!ret) {
			/*
			 * Pollers see the thread listed once they see the
			 * flag.  Pairs with smp_load_acquire() in
			 * bts_finished().
			 */
			smp_store_release(&f->attached, true);
		}
	}
	mutex_unlock(&f->lock);
	put_task_struct(task);
	return ret;
}

static long bts_ioctl_status(struct bts_file *f,
			     struct bts_status __user *ustatus)
{
	struct bts_status st = { };
	struct ds_bts_status ds;
	struct bts_thread *t;
	u32 size;

	if (get_user(size, &ustatus->size))
		return -EFAULT;
	if (size < BTS_STATUS_SIZE_VER0)
		return -EINVAL;
	size = min_t(u32, size, sizeof(st));

	mutex_lock(&f->lock);
	st.records = f->released.produced;
	st.lost = f->released.lost;
	st.throttled = f->released.throttled;
	spin_lock(&f->threads_lock);
	st.threads = f->threads_gone;
	list_for_each_entry(t, &f->threads, node) {
		st.threads++;
		if (!t->exited)
			st.live++;
		if (!t->consumer)
			continue;
		ds_bts_status(t->consumer, &ds);
		st.records += ds.produced;
		st.lost += ds.lost;
		st.throttled += ds.throttled;
	}
	st.untraced = f->untraced;
	spin_unlock(&f->threads_lock);
	mutex_unlock(&f->lock);

	st.size = size;
	return copy_to_user(ustatus, &st, size) ? -EFAULT : 0;
}

/*
 * The consumer of the thread @pid names, if the file traces it and it has
 * not exited.  Context: the file's lock, which keeps the consumer.
 */
static struct ds_consumer *bts_live_consumer(struct bts_file *f, pid_t pid)
{
	struct ds_consumer *c = NULL;
	struct task_struct *task;
	struct bts_thread *t;

	task = find_get_task_by_vpid(pid);
	if (!task)
		return NULL;
	spin_lock(&f->threads_lock);
	list_for_each_entry(t, &f->threads, node) {
		if (t->task == task) {
			if (!t->exited && !t->detached)
				c = t->consumer;
			break;
		}
	}
	spin_unlock(&f->threads_lock);
	put_task_struct(task);
	return c;
}

/*
 * Copy a ring's last records while its thread runs.  The copy goes
 * through a buffer of at most the ring's size, which the file's user has
 * paid for already: a ring is charged twice (bts_thread_bytes()), and the
 * file's lock allows one such buffer at a time.
 */
static long bts_ioctl_snapshot(struct bts_file *f,
			       struct bts_snapshot __user *usnap)
{
	struct bts_record *last = NULL;
	struct bts_snapshot s;
	struct ds_consumer *c;
	u32 nr = 0;
	long ret;

	ret = bts_get_struct(&s, sizeof(s), usnap, BTS_SNAPSHOT_SIZE_VER0);
	if (ret)
		return ret;
	if (s.flags || !s.nr_records)
		return -EINVAL;

	mutex_lock(&f->lock);
	ret = -EINVAL;
	if (!f->attached || f->detached || f->attach.mode != BTS_MODE_RING)
		goto unlock;
	ret = -ESRCH;
	c = bts_live_consumer(f, s.pid);
	if (!c)
		goto unlock;
	ret = -ENOMEM;
	/* The ring's N, as the attach asked (bts_attach_task()). */
	nr = min(s.nr_records, max(f->attach.nr_records, 2U));
	last = kvmalloc_array(nr, sizeof(*last), GFP_KERNEL_ACCOUNT);
	if (!last)
		goto unlock;
	nr = ds_read_last_bts(c, last, nr);
	ret = bts_note_markers(f, last, nr) == nr ? 0 : -ENOMEM;
unlock:
	mutex_unlock(&f->lock);
	if (!ret && (copy_to_user(u64_to_user_ptr(s.records), last,
				  nr * sizeof(*last)) ||
		     put_user(nr, &usnap->nr_records)))
		ret = -EFAULT;
	kvfree(last);
	return ret;
}

/* The format of a marker's event: see BTS_IOC_EVENT_FORMAT. */
static long bts_ioctl_event_format(struct bts_file *f,
				   struct bts_event_format __user *ufmt)
{
	struct bts_event_format e;
	char *buf;
	int len;

	len = bts_get_struct(&e, sizeof(e), ufmt, BTS_EVENT_FORMAT_SIZE_VER0);
	if (len)
		return len;
	if (e.flags || e.reserved)
		return -EINVAL;
	mutex_lock(&f->lock);
	len = -EINVAL;
	if (!f->markers)
		goto unlock;
	len = -ENOENT;
	if (xa_load(&f->marker_events, e.gen) != xa_mk_value(e.id))
		goto unlock;
	len = -ENOMEM;
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		goto unlock;
	len = user_events_marker_format(f->markers, e.id, e.gen, buf,
					PAGE_SIZE);
	if (len >= 0) {
		u32 need = len + 1;

		if (need > e.len)
			len = -ENOSPC;
		else if (copy_to_user(u64_to_user_ptr(e.format), buf, need))
			len = -EFAULT;
		if (len != -EFAULT && put_user(need, &ufmt->len))
			len = -EFAULT;
	}
	kfree(buf);
unlock:
	mutex_unlock(&f->lock);
	return len < 0 ? len : 0;
}

static long bts_dev_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	struct bts_file *f = file->private_data;

	switch (cmd) {
	case BTS_IOC_ATTACH:
		return bts_ioctl_attach(f, (void __user *)arg);
	case BTS_IOC_STATUS:
		return bts_ioctl_status(f, (void __user *)arg);
	case BTS_IOC_DETACH:
		if (arg)
			return -EINVAL;
		mutex_lock(&f->lock);
		if (f->attached)
			bts_detach(f);
		mutex_unlock(&f->lock);
		return f->attached ? 0 : -EINVAL;
	case BTS_IOC_SNAPSHOT:
		return bts_ioctl_snapshot(f, (void __user *)arg);
	case BTS_IOC_EVENT_FORMAT:
		return bts_ioctl_event_format(f, (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations bts_dev_fops = {
	.owner		= THIS_MODULE,
	.open		= bts_dev_open,
	.release	= bts_dev_release,
	.read		= bts_dev_read,
	.poll		= bts_dev_poll,
	.unlocked_ioctl	= bts_dev_ioctl,
	/* The structs and records have one layout for 32 and 64 bits. */
	.compat_ioctl	= compat_ptr_ioctl,
};

/*
 * Anyone the perf knobs allow may open it (bts_dev_may_open()); attaching
 * checks the right to ptrace the thread.
 */
static struct miscdevice bts_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "bts",
	.fops	= &bts_dev_fops,
	.mode	= 0666,
};

static struct ctl_table bts_dev_sysctls[] = {
	{
		.procname	= "bts_user_max_kb",
		.data		= &bts_user_max_kb,
		.maxlen		= sizeof(bts_user_max_kb),
		.mode		= 0644,
		.proc_handler	= proc_douintvec,
	},
};

/* Without BTS there is no device, so tools can tell at open(). */
static int __init bts_dev_init(void)
{
	if (!ds_bts_available())
		return 0;
	bts_user_max_kb = totalram_pages() << (PAGE_SHIFT - 10) >> 4;
	register_sysctl_init("kernel", bts_dev_sysctls);
	return misc_register(&bts_dev);
}
device_initcall(bts_dev_init);
