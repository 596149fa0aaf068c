// SPDX-License-Identifier: GPL-2.0
/*
 * The x86 Debug Store layer: its consumers and the tasks they trace.
 *
 * What a consumer asks for and gets: a request makes a stream and adds it
 * to its CPU's or task's set, starting the hardware side (ds.c) for the
 * first one; suspend, resume and release bring the stream up to date on
 * the producing CPU (ds_sync()) before they change it; the reads take
 * records out of the stream.  A traced task's sets follow it through
 * fork, exec and exit, with the callbacks its consumers asked for.  Sets
 * are replaced whole under ds_mutex and read under RCU by the producers,
 * NMI included.
 */
#define pr_fmt(fmt) "x86/ds: " fmt

#include <linux/cpu.h>
#include <linux/memcontrol.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include <kunit/visibility.h>

#include <asm/ds.h>

#include "ds_core.h"
#include "ds_layer.h"

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
/* ...and of them, the consumers of a CPU. */
static atomic_t ds_nr_cpu_maps;

bool ds_maps_wanted(void)
{
	return static_branch_unlikely(&ds_active) && atomic_read(&ds_nr_maps);
}

/*
 * Whether a stream takes @tsk's annotations: one of its own that takes
 * maps, or one of a CPU (@tsk may run there).  Context: not NMI.
 */
bool ds_task_takes_maps(struct task_struct *tsk)
{
	const struct ds_set *set;
	bool ret = atomic_read(&ds_nr_cpu_maps);
	unsigned int i;

	rcu_read_lock();
	set = rcu_dereference(tsk->thread.ds_consumers);
	for (i = 0; set && i < set->nr && !ret; i++)
		ret = set->c[i]->stream.maps;
	rcu_read_unlock();
	return ret;
}

/*
 * Consumers that lend memory of their own (ds_bts_ops::window): none, and
 * a context switch need not look for a lender.
 */
static atomic_t ds_nr_lenders;

bool ds_lenders_exist(void)
{
	return atomic_read(&ds_nr_lenders);
}

static bool ds_lends(const struct ds_bts_config *cfg)
{
	return cfg->ops && cfg->ops->window;
}

/*
 * The end of an exiting task's user-only streams: the stretch in the
 * kernel it never came back from (exit_group(), a fatal signal), with
 * nowhere it resumed.  Only the task's own streams get it: a CPU's sees
 * tasks come and go.  Context: current, exiting, interrupts off, its
 * records drained and the CPU paused: the streams' one writer.
 */
static void ds_end_kernel_time(const struct ds_set *set)
{
	struct bts_record rec[DS_KERNEL_TIME_RECORDS];
	unsigned int i, j;

	lockdep_assert_irqs_disabled();
	ds_kernel_time(0, rec);
	for (i = 0; i < set->nr; i++) {
		struct ds_consumer *c = set->c[i];

		if (c->cfg.priv != DS_PRIV_USER || !ds_consumer_on(c))
			continue;
		for (j = 0; j < ARRAY_SIZE(rec); j++)
			ds_stream_append(&c->stream, &rec[j]);
	}
}

static void ds_consumer_free(struct ds_consumer *c)
{
	mem_cgroup_put(c->memcg);
	kvfree(c->stream.buf);
	kfree(c->cfg.markers);
	kfree(c);
}

static void ds_consumer_free_rcu(struct rcu_head *head)
{
	ds_consumer_free(container_of(head, struct ds_consumer, rcu));
}

void ds_consumer_put(struct ds_consumer *c)
{
	if (!refcount_dec_and_test(&c->refs))
		return;
	if (c->cfg.task)
		put_task_struct(c->cfg.task);
	if (c->stream.maps)
		atomic_dec(&ds_nr_maps);
	if (c->stream.maps && !c->cfg.task)
		atomic_dec(&ds_nr_cpu_maps);
	if (ds_lends(&c->cfg))
		atomic_dec(&ds_nr_lenders);
	call_rcu(&c->rcu, ds_consumer_free_rcu);
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
	new = kzalloc(sizeof(*new), add ? GFP_KERNEL_ACCOUNT :
					  GFP_KERNEL | __GFP_NOFAIL);
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
 * A consumer's stream: a ring shows one slot fewer than it has
 * (ds_stream_read_last()), and lossless mode needs its headroom.
 */
static u32 ds_stream_slots(const struct ds_bts_config *cfg)
{
	u32 slots = cfg->nr_records + 1;

	if (cfg->flags & DS_BTS_LOSSLESS)
		slots += DS_LOSSLESS_HEADROOM;
	return slots;
}

/**
 * ds_bts_bytes() - the memory a consumer holds
 * @cfg: its configuration, valid for ds_request_bts()
 *
 * Its stream, the headroom of lossless mode included, and its own
 * structure: what a user of the layer that limits what its users make the
 * kernel hold charges for one consumer.
 *
 * Return: the size in bytes.
 */
size_t ds_bts_bytes(const struct ds_bts_config *cfg)
{
	return (size_t)ds_stream_slots(cfg) * sizeof(struct bts_record) +
	       sizeof(struct ds_consumer);
}

static int ds_check_config(const struct ds_bts_config *cfg)
{
	if (cfg->priv != DS_PRIV_KERNEL && cfg->priv != DS_PRIV_USER &&
	    cfg->priv != DS_PRIV_ALL)
		return -EINVAL;
	if (cfg->mode != DS_MODE_RING && cfg->mode != DS_MODE_CONTINUOUS)
		return -EINVAL;
	if (cfg->flags & ~(DS_BTS_LOSSLESS | DS_BTS_SUSPENDED | DS_BTS_INHERIT |
			   DS_BTS_MARKERS | DS_BTS_MAPS | DS_BTS_INHERIT_THREADS))
		return -EINVAL;
	if ((cfg->flags & DS_BTS_INHERIT) &&
	    (cfg->flags & DS_BTS_INHERIT_THREADS))
		return -EINVAL;
	if ((cfg->flags & (DS_BTS_INHERIT | DS_BTS_INHERIT_THREADS)) &&
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

/*
 * A consumer and its stream, charged to @memcg, which it keeps for the
 * consumers made from it for the children of its task (ds_fork_thread()):
 * the requester pays for every stream its trace comes to hold, not the
 * traced process, whose fork allocates them.  Return: NULL without memory.
 */
static struct ds_consumer *ds_consumer_alloc(const struct ds_bts_config *cfg,
					     struct mem_cgroup *memcg)
{
	struct mem_cgroup *old = set_active_memcg(memcg);
	u32 slots = ds_stream_slots(cfg);
	struct ds_consumer *c;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		goto out;
	c->cfg = *cfg;
	/* Cannot fail: the caller holds @memcg. */
	if (mem_cgroup_tryget(memcg))
		c->memcg = memcg;
	if (cfg->markers) {
		c->cfg.markers = kstrdup(cfg->markers, GFP_KERNEL_ACCOUNT);
		if (!c->cfg.markers)
			goto fail;
	}
	c->stream.buf = kvcalloc(slots, sizeof(struct bts_record),
				 GFP_KERNEL_ACCOUNT);
	if (!c->stream.buf)
		goto fail;
	ds_stream_init(&c->stream, c->stream.buf, slots, cfg->priv,
		       cfg->mode);
	goto out;
fail:
	ds_consumer_free(c);
	c = NULL;
out:
	set_active_memcg(old);
	return c;
}

/*
 * A consumer for ds_request_bts(), checked and allocated (charged to
 * @memcg) but not yet published.  Return: it, or an ERR_PTR() as
 * ds_request_bts() documents.
 */
static struct ds_consumer *ds_consumer_new(const struct ds_bts_config *cfg,
					   struct mem_cgroup *memcg)
{
	struct ds_consumer *c;
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

	c = ds_consumer_alloc(cfg, memcg);
	if (!c)
		return ERR_PTR(-ENOMEM);
	if (!c->cfg.wakeup)
		c->cfg.wakeup = max(cfg->nr_records / 2, 1U);
	c->limit = cfg->nr_records;
	if (cfg->flags & DS_BTS_MARKERS)
		c->stream.marker_key = ds_marker_key();
	c->stream.maps = cfg->flags & DS_BTS_MAPS;
	if (c->stream.maps)
		atomic_inc(&ds_nr_maps);
	if (c->stream.maps && !cfg->task)
		atomic_inc(&ds_nr_cpu_maps);
	if (ds_lends(cfg))
		atomic_inc(&ds_nr_lenders);
	/* A hard irq_work: the callback's context is the same with RT. */
	c->notify = IRQ_WORK_INIT_HARD(ds_notify_fn);
	init_waitqueue_head(&c->wait);
	refcount_set(&c->refs, 1);
	/* Nothing staged before the request is its: see ds_sync(). */
	c->suspended = true;
	if (cfg->task)
		get_task_struct(cfg->task);
	return c;
}

/*
 * Put @c in its task's or CPU's set, and count it.  A task found exiting
 * refuses it, after it was visible: @published tells the caller to wait
 * for the readers that may have found it (ds_consumer_discard()).  The
 * set's memory is charged to the active memory cgroup.
 * Context: ds_mutex, the layer started (ds_nr_consumers or ds_start()).
 */
static int ds_publish(struct ds_consumer *c, bool *published)
{
	int ret;

	*published = false;
	ret = ds_set_update(ds_set_slot(&c->cfg), c, NULL);
	if (ret)
		return ret;
	if (c->cfg.task) {
		/*
		 * Either ds_exit_thread() sees the set or we see the task
		 * exiting.  Pairs with smp_mb() in ds_exit_thread().
		 */
		smp_mb();
		if (c->cfg.task->flags & PF_EXITING) {
			ds_set_update(ds_set_slot(&c->cfg), NULL, c);
			*published = true;
			return -ESRCH;
		}
	}
	ds_nr_consumers++;
	return 0;
}

/* Free a consumer that ds_publish() refused. */
static void ds_consumer_discard(struct ds_consumer *c, bool published)
{
	/* A drain may have found it while it was published. */
	if (published)
		synchronize_rcu();
	ds_consumer_put(c);
}

/* Start the hardware for a new consumer now rather than at the next switch. */
static void ds_consumer_start(struct ds_consumer *c)
{
	ds_sync(c, c->cfg.flags & DS_BTS_SUSPENDED ? DS_SYNC_NONE :
		DS_SYNC_RESUME);
}

/**
 * ds_request_bts() - start tracing branches for a consumer
 * @cfg: scope, filter, mode, size and callbacks
 *
 * Records flow once this returns (unless DS_BTS_SUSPENDED).  A task scope
 * takes a reference on the task; the trace survives exec, and its children
 * are traced only with DS_BTS_INHERIT (or its threads only, with
 * DS_BTS_INHERIT_THREADS).  A CPU scope records only while the CPU is
 * online.
 *
 * Context: process, may sleep.
 * Return: the consumer, or an ERR_PTR(): -EOPNOTSUPP without BTS (or,
 * for a user-only consumer, without DS-CPL), -EINVAL
 * for a bad @cfg, -EACCES for kernel-mode recording that
 * ds_kernel_recording_allowed() refuses, -EBUSY while the CPU or task has
 * DS_MAX_CONSUMERS consumers,
 * -ENOMEM (also for a CPU scope whose CPU has no staging buffer).
 * The consumer's memory is charged to the caller's memory cgroup, and so
 * is that of the consumers made from it for the task's children.
 */
struct ds_consumer *ds_request_bts(const struct ds_bts_config *cfg)
{
	struct mem_cgroup *memcg = get_mem_cgroup_from_current();
	struct ds_consumer *c = ds_consumer_new(cfg, memcg);
	bool published = false;
	int ret;

	mem_cgroup_put(memcg);
	if (IS_ERR(c))
		return c;
	cpus_read_lock();
	mutex_lock(&ds_mutex);
	ret = ds_nr_consumers ? ds_arm_missing(cfg) : ds_start();
	if (!ret) {
		ret = ds_publish(c, &published);
		if (ret && !ds_nr_consumers)
			ds_stop();
	}
	mutex_unlock(&ds_mutex);
	cpus_read_unlock();
	if (ret) {
		ds_consumer_discard(c, published);
		return ERR_PTR(ret);
	}
	ds_consumer_start(c);
	return c;
}
EXPORT_SYMBOL_IF_KUNIT(ds_request_bts);

/*
 * Whether this runs in one of @c's callbacks: the overflow callback, which
 * runs on its CPU with interrupts off (ds_notify_fn()), or task_exit or
 * task_fork, which only @c's task runs, holding a callback count that a
 * release waits for.  (raw_cpu_read(): elsewhere the CPU may change under
 * us, and is not @c's callback's either way.)
 */
bool ds_in_own_callback(const struct ds_consumer *c)
{
	return raw_cpu_read(ds_cpu.in_callback) == c ||
	       (c->cfg.task == current && atomic_read(&c->callbacks));
}

/**
 * ds_release_bts_many() - stop tracing for consumers and free them
 * @cs: the consumers
 * @n:  how many
 *
 * As ds_release_bts() for each, with one grace period for them all rather
 * than one each.  NULL entries are skipped; a consumer released from its
 * own callback is left (a warning), its entry set to NULL.
 *
 * Context: process, may sleep; not holding a lock that the consumers'
 * task_exit or task_fork callbacks take: release waits for them.
 */
void ds_release_bts_many(struct ds_consumer **cs, unsigned int n)
{
	bool live = false;
	unsigned int i, gone = 0;

	for (i = 0; i < n; i++) {
		/* It would wait for itself: a bug, and leaking it beats a hang. */
		if (cs[i] &&
		    WARN_ONCE(ds_in_own_callback(cs[i]),
			      "DS: a consumer released from its own callback\n"))
			cs[i] = NULL;
	}
	mutex_lock(&ds_mutex);
	/* A task that exited has no set left; removal is then a no-op. */
	for (i = 0; i < n; i++)
		if (cs[i])
			ds_set_update(ds_set_slot(&cs[i]->cfg), NULL, cs[i]);
	mutex_unlock(&ds_mutex);
	for (i = 0; i < n; i++) {
		if (!cs[i])
			continue;
		/* Make the hardware follow; no producer finds it after this. */
		ds_sync(cs[i], DS_SYNC_NONE);
		live |= ds_stream_producing(&cs[i]->stream);
	}
	/*
	 * Nor does one that found it before, once a grace period has passed;
	 * but a stream that is no longer its producer's has none left: its
	 * task exited (see ds_exit_thread()), and a file tracing a build
	 * releases thousands of those, or it was suspended a grace period
	 * ago, as a file's threads are when it detaches.  (Readers that do
	 * not produce may still hold it: its memory outlives them, see
	 * ds_consumer_put().)
	 */
	if (live)
		synchronize_rcu();
	for (i = 0; i < n; i++) {
		struct ds_consumer *c = cs[i];

		if (!c)
			continue;
		/* Nor an exit or a clone: one under way has made its call. */
		ds_callbacks_wait(c);
		WRITE_ONCE(c->dead, true);
		wake_up_all(&c->wait);
		irq_work_sync(&c->notify);
		/* A throttle that has not run yet no longer needs @c. */
		if (c->cfg.task && task_work_cancel(c->cfg.task, &c->throttle))
			ds_consumer_put(c);
		gone++;
	}

	/* Not held above: a clone we waited for requests consumers. */
	cpus_read_lock();
	mutex_lock(&ds_mutex);
	ds_nr_consumers -= gone;
	if (gone && !ds_nr_consumers)
		ds_stop();
	mutex_unlock(&ds_mutex);
	cpus_read_unlock();
	for (i = 0; i < n; i++)
		if (cs[i])
			ds_consumer_put(cs[i]);
}

/**
 * ds_release_bts() - stop tracing for a consumer and free it
 * @c: the consumer
 *
 * The detach contract: when this returns, no callback of @c is running or
 * will run, and a task held back by @c in lossless mode has been let go.
 *
 * Context: process, may sleep; not from @c's own callbacks (a warning,
 * and @c stays), nor holding a lock that its task_exit or task_fork
 * callbacks take: release waits for them.
 */
void ds_release_bts(struct ds_consumer *c)
{
	ds_release_bts_many(&c, 1);
}
EXPORT_SYMBOL_IF_KUNIT(ds_release_bts);

/**
 * ds_suspend_bts_many() - stop recording for consumers, keeping their records
 * @cs: the consumers
 * @n:  how many
 *
 * As ds_suspend_bts() for each, with one grace period for them all.
 *
 * Context: process, may sleep.
 */
void ds_suspend_bts_many(struct ds_consumer **cs, unsigned int n)
{
	bool continuous = false;
	unsigned int i;

	for (i = 0; i < n; i++) {
		ds_sync(cs[i], DS_SYNC_SUSPEND);
		/* A task held back in lossless mode goes on. */
		wake_up_all(&cs[i]->wait);
		continuous |= cs[i]->cfg.mode == DS_MODE_CONTINUOUS;
	}
	/*
	 * A continuous stream may owe a loss record.  Producers run under
	 * RCU: after a grace period none that missed the flag is left, and
	 * the stream is the consumer's to write.  (A ring owes nothing, and
	 * is not kept waiting.)
	 */
	if (!continuous)
		return;
	synchronize_rcu();
	for (i = 0; i < n; i++) {
		if (cs[i]->cfg.mode != DS_MODE_CONTINUOUS)
			continue;
		ds_stream_suspend(&cs[i]->stream);
		ds_stream_flush_lost(&cs[i]->stream);
	}
}

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
	ds_suspend_bts_many(&c, 1);
}
EXPORT_SYMBOL_IF_KUNIT(ds_suspend_bts);

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
EXPORT_SYMBOL_IF_KUNIT(ds_resume_bts);

/*
 * The local API's precondition: interrupts off, not NMI, and @c's records
 * produced here only (its CPU, or its task's), so that ds_sync_fn() can run
 * without an IPI.  False, with a warning, when it does not hold.
 */
static bool ds_local_ok(const struct ds_consumer *c)
{
	lockdep_assert_irqs_disabled();
	return !WARN_ON_ONCE(in_nmi() ||
			     (c->cfg.task ? c->cfg.task != current :
					    c->cfg.cpu != smp_processor_id()));
}

static void ds_sync_here(struct ds_consumer *c, enum ds_sync_change change)
{
	struct ds_sync_arg arg = { .c = c, .change = change };

	ds_sync_fn(&arg);
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
	struct bts_record rec[DS_KERNEL_TIME_RECORDS];
	bool was_on = !READ_ONCE(c->suspended);
	unsigned int i;

	if (!ds_local_ok(c))
		return;
	ds_sync_here(c, DS_SYNC_SUSPEND);
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
	if (ds_local_ok(c))
		ds_sync_here(c, DS_SYNC_NONE);
}

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
	if (!ds_local_ok(c))
		return;
	ds_stream_resume(&c->stream);
	ds_sync_here(c, DS_SYNC_RESUME);
}

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
EXPORT_SYMBOL_IF_KUNIT(ds_read_last_bts);

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
EXPORT_SYMBOL_IF_KUNIT(ds_consume_bts);

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
EXPORT_SYMBOL_IF_KUNIT(ds_bts_buffer_records);

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
EXPORT_SYMBOL_IF_KUNIT(ds_swap_bts_buffer);

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
EXPORT_SYMBOL_IF_KUNIT(ds_bts_status);

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
	struct ds_state *st;
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
	 * user-only ones end with the kernel time it exits in, appended
	 * with the CPU paused, where a threshold NMI leaves the staged
	 * records to us instead of splaying them into the same streams.
	 */
	local_irq_disable();
	st = this_cpu_ptr(&ds_cpu.st);
	ds_state_pause(st);
	ds_state_drain(st, current);
	set = rcu_dereference_sched(tsk->thread.ds_consumers);
	if (set && test_thread_flag(TIF_BTS_USER))
		ds_end_kernel_time(set);
	ds_state_unpause(st, current);
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
	 * before the streams are ended: the producers of a task's streams
	 * run where it is current, in NMIs, interrupts and IPIs that end
	 * before it runs on, or at its switch away from a CPU, which ends
	 * before it runs anywhere else.  Since the unpublication, all of
	 * them find no set.  Other readers of the set do not produce
	 * (ds_task_takes_marker()): it and its consumers are freed after a
	 * grace period.
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
	kfree_rcu(set, rcu);
}

/* Whether @c of current traces @child, a thread or process current made. */
static bool ds_inherits(const struct ds_consumer *c, struct task_struct *child)
{
	if (c->cfg.flags & DS_BTS_INHERIT)
		return true;
	/* copy_process() has set @child's signal struct: shared, or its own. */
	return (c->cfg.flags & DS_BTS_INHERIT_THREADS) &&
	       same_thread_group(child, current);
}

/**
 * ds_fork_thread() - a traced task created a thread or process
 * @child: the new task, not running yet
 *
 * Every consumer of current that inherits (DS_BTS_INHERIT, or
 * DS_BTS_INHERIT_THREADS for a thread) gets a like consumer of @child,
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
	struct ds_consumer *cons[DS_MAX_CONSUMERS], *kids[DS_MAX_CONSUMERS];
	bool published[DS_MAX_CONSUMERS];
	int err[DS_MAX_CONSUMERS] = {};
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
		if (ds_inherits(set->c[i], child)) {
			/* A release waits for the callback. */
			ds_callback_get(set->c[i]);
			cons[n++] = set->c[i];
		}
	}
	mutex_unlock(&ds_mutex);
	if (!n)
		return;

	for (i = 0; i < n; i++) {
		struct ds_bts_config cfg = cons[i]->cfg;

		cfg.task = child;
		/* The tracer's memory cgroup pays, not the traced process. */
		kids[i] = ds_consumer_new(&cfg, cons[i]->memcg);
	}
	/*
	 * One lock for all of them, and no CPU to start or arm: the
	 * parent's consumers keep the layer started, since a release counts
	 * its consumer out only after its callbacks, and we hold those.
	 */
	mutex_lock(&ds_mutex);
	for (i = 0; i < n; i++) {
		struct mem_cgroup *old;

		if (IS_ERR(kids[i]))
			continue;
		old = set_active_memcg(cons[i]->memcg);
		err[i] = ds_publish(kids[i], &published[i]);
		set_active_memcg(old);
	}
	mutex_unlock(&ds_mutex);

	for (i = 0; i < n; i++) {
		const struct ds_bts_config *pcfg = &cons[i]->cfg;
		struct ds_consumer *c = kids[i];
		struct mem_cgroup *old;

		if (!IS_ERR(c) && err[i]) {
			ds_consumer_discard(c, published[i]);
			c = ERR_PTR(err[i]);
		}
		/* The callback's allocations are the tracer's too. */
		old = set_active_memcg(cons[i]->memcg);
		if (IS_ERR(c)) {
			pcfg->ops->task_fork(cons[i], NULL, pcfg->data);
		} else {
			ds_consumer_start(c);
			/*
			 * The child's callbacks cannot run before this; the
			 * callback may release @c, so it is held until then.
			 */
			refcount_inc(&c->refs);
			c->cfg.data = pcfg->ops->task_fork(cons[i], c,
							   pcfg->data);
			ds_consumer_put(c);
		}
		set_active_memcg(old);
		ds_callback_put(cons[i]);
	}
}
