// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/bts: read() and poll().  A read takes the records of one traced
 * thread after the other, each run after a BTS_PSEUDO_THREAD record that
 * names the thread, starting after the thread the last read ended with so
 * that no busy thread starves the others; it copies straight from the
 * layer's streams (continuous mode) or from each thread's snapshot (ring
 * mode), and notes the events of the markers it hands out, whose formats
 * the reader may then ask for.  A thread that exited and was read to the
 * end leaves the file.
 */
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <asm/ds.h>

#include "bts_dev.h"

/*
 * Whether @t has something to read: records, its snapshot, the news that
 * it exited, or the end of its stream after a detach.
 * Context: the file's threads_lock.
 */
static bool bts_thread_readable(struct bts_file *f, struct bts_thread *t)
{
	struct ds_bts_status st;

	if (READ_ONCE(t->done))
		return false;
	if (t->exited || t->detached)
		return true;
	if (f->attach.mode == BTS_MODE_RING || !t->consumer)
		return false;
	ds_bts_status(t->consumer, &st);
	return st.pending;
}

static bool bts_readable(struct bts_file *f)
{
	struct bts_thread *t;
	bool ret = false;

	spin_lock(&f->threads_lock);
	list_for_each_entry(t, &f->threads, node) {
		if (bts_thread_readable(f, t)) {
			ret = true;
			break;
		}
	}
	spin_unlock(&f->threads_lock);
	return ret;
}

/* Every traced thread is done: no record will come.  Context: any. */
bool bts_finished(struct bts_file *f)
{
	struct bts_thread *t;
	bool ret;

	/* Pairs with smp_store_release() in bts_ioctl_attach(). */
	if (!smp_load_acquire(&f->attached))
		return false;
	ret = true;
	spin_lock(&f->threads_lock);
	list_for_each_entry(t, &f->threads, node) {
		if (!READ_ONCE(t->done)) {
			ret = false;
			break;
		}
	}
	spin_unlock(&f->threads_lock);
	return ret;
}

/*
 * A read in progress: where it copies to, how much room is left, and why
 * it stopped short (-EFAULT, -ENOMEM).
 */
struct bts_reader {
	struct bts_file			*file;
	struct bts_record __user	*buf;
	size_t				room;
	size_t				copied;
	int				error;
};

/*
 * The events of the markers among @recs, which go to the reader: it may
 * ask for their formats now (BTS_IOC_EVENT_FORMAT), and for no others.
 * What user_events keeps of an event would otherwise let anyone with a
 * subscription to "*" list every event on the system and its format,
 * which tracefs shows to its group only.  Context: the file's lock.
 * Return: how many of @recs may go out: all, unless there was no memory
 * to note an event.
 */
size_t bts_note_markers(struct bts_file *f, const struct bts_record *recs,
			size_t nr)
{
	size_t i;

	if (!f->markers)
		return nr;
	for (i = 0; i < nr; i++) {
		u64 from = recs[i].from, gen;
		void *id;

		if (!BTS_RECORD_IS_PSEUDO(from) ||
		    BTS_PSEUDO_TYPE(from) != BTS_PSEUDO_MARKER)
			continue;
		gen = BTS_MARKER_GEN(recs[i].flags);
		id = xa_mk_value(BTS_MARKER_ID(recs[i].flags));
		/* An application writes the same few events again and again. */
		if (xa_load(&f->marker_events, gen) == id)
			continue;
		if (xa_is_err(xa_store(&f->marker_events, gen, id,
				       GFP_KERNEL_ACCOUNT)))
			break;
	}
	return i;
}

/*
 * Copy @nr records to the reader; on a fault, the whole records before it
 * are the reader's.  Return: how many records were copied; fewer than @nr
 * with @r->error set.
 */
static size_t bts_put_some(struct bts_reader *r, const struct bts_record *recs,
			   size_t nr)
{
	size_t noted = bts_note_markers(r->file, recs, nr);
	size_t left = copy_to_user(r->buf + r->copied, recs,
				   noted * sizeof(*recs));
	size_t put = noted - DIV_ROUND_UP(left, sizeof(*recs));

	if (put < nr)
		r->error = left ? -EFAULT : -ENOMEM;
	r->copied += put;
	r->room -= put;
	return put;
}

static int bts_put(struct bts_reader *r, const struct bts_record *recs,
		   size_t nr)
{
	return bts_put_some(r, recs, nr) == nr ? 0 : r->error;
}

static int bts_put_thread(struct bts_reader *r, struct bts_thread *t,
			  enum bts_thread_event event)
{
	struct bts_record rec = {
		.from	= BTS_PSEUDO(BTS_PSEUDO_THREAD, event),
		.to	= t->tid,
		.flags	= t->tgid,
	};

	return bts_put(r, &rec, 1);
}

/*
 * The THREAD record that says whose records follow, unless the reader
 * knows.  A read with room for one record gets the header alone, and the
 * next read the records.  Return: whether there is room left for them,
 * or an error.
 */
static int bts_put_header(struct bts_file *f, struct bts_reader *r,
			  struct bts_thread *t)
{
	int ret;

	if (f->reading == t && t->announced)
		return r->room > 0;
	if (!r->room)
		return 0;
	bts_thread_ids(t);
	ret = bts_put_thread(r, t, t->announced ? BTS_THREAD_RECORDS :
			     BTS_THREAD_NEW);
	if (ret)
		return ret;
	t->announced = true;
	f->reading = t;
	return r->room > 0;
}

/*
 * Continuous mode: the records @t's stream holds now.  The THREAD record
 * goes out only for a thread with records: only such a thread has surely
 * run, and has its ids.
 */
static int bts_read_stream(struct bts_file *f, struct bts_reader *r,
			   struct bts_thread *t)
{
	const struct bts_record *runs[2];
	struct ds_bts_status st;
	u32 got, put, nrs[2];
	int ret;

	ds_bts_status(t->consumer, &st);
	if (!st.pending)
		return 0;
	for (;;) {
		ret = bts_put_header(f, r, t);
		if (ret <= 0)
			return ret;
		got = ds_peek_bts(t->consumer, runs, nrs,
				  min_t(size_t, r->room, U32_MAX));
		if (!got)
			return 0;
		/* Straight from the stream; only what the reader got leaves it. */
		put = bts_put_some(r, runs[0], nrs[0]);
		if (put == nrs[0] && nrs[1])
			put += bts_put_some(r, runs[1], nrs[1]);
		ds_discard_bts(t->consumer, put);
		if (put < got)
			return r->error;
	}
}

/* Ring mode: the snapshot, once taken. */
static int bts_read_snapshot(struct bts_file *f, struct bts_reader *r,
			     struct bts_thread *t)
{
	size_t nr, put;
	int ret;

	if (t->read_last == t->nr_last)
		return 0;
	/* Like a stream's: only a thread that ran has records. */
	ret = bts_put_header(f, r, t);
	if (ret <= 0)
		return ret;
	nr = min_t(size_t, r->room, t->nr_last - t->read_last);
	put = bts_put_some(r, t->last + t->read_last, nr);
	t->read_last += put;
	return put < nr ? r->error : 0;
}

/*
 * Read what @t has.  A thread that exited, or was detached from, and has
 * nothing left is done: its consumer is released, and for an exit the
 * reader gets a BTS_THREAD_EXIT record.
 * Context: the file's lock.
 */
static int bts_read_thread(struct bts_file *f, struct bts_reader *r,
			   struct bts_thread *t)
{
	bool exited, ended, ready;
	int ret;

	spin_lock(&f->threads_lock);
	exited = t->exited;
	ended = exited || t->detached;
	ready = t->snapshot_ready;
	spin_unlock(&f->threads_lock);

	if (f->attach.mode == BTS_MODE_RING)
		ret = ready ? bts_read_snapshot(f, r, t) : 0;
	else
		ret = t->consumer ? bts_read_stream(f, r, t) : 0;
	if (ret || !ended)
		return ret;

	/* Is everything read? */
	if (f->attach.mode == BTS_MODE_RING) {
		if (!ready || t->read_last < t->nr_last)
			return 0;
	} else if (t->consumer) {
		struct ds_bts_status st;

		ds_bts_status(t->consumer, &st);
		if (st.pending)
			return 0;
	}
	/* A thread that never ran user code may have no ids here. */
	if (exited && t->tid) {
		ret = t->announced ? r->room > 0 : bts_put_header(f, r, t);
		if (ret <= 0)
			return ret;
		ret = bts_put_thread(r, t, BTS_THREAD_EXIT);
		if (ret)
			return ret;
		f->reading = NULL;
	}
	bts_thread_release(f, t);
	kvfree(t->last);
	t->last = NULL;
	bts_thread_uncharge(f, t);
	WRITE_ONCE(t->done, true);
	return 0;
}

/*
 * An exited thread read to the end leaves the file: a trace of a build
 * sees thousands come and go, and each would keep its task_struct.  A
 * thread detached from stays, counted live.  Return: whether @t left
 * @f's list; the caller frees it.  Context: the file's lock and its
 * threads_lock.
 */
bool bts_thread_gone(struct bts_file *f, struct bts_thread *t)
{
	if (!t->done || !t->exited)
		return false;
	list_del(&t->node);
	f->threads_gone++;
	if (f->reading == t)
		f->reading = NULL;
	return true;
}

/*
 * Fill the reader's buffer from every thread in turn, starting after the
 * thread the last read ended with, so that no busy thread starves the
 * others.  Context: the file's lock.
 */
static int bts_read_threads(struct bts_file *f, struct bts_reader *r)
{
	struct bts_thread *t, *next, *start = NULL;
	bool wrapped = false, gone;
	int ret;

	spin_lock(&f->threads_lock);
	t = list_first_entry_or_null(&f->threads, struct bts_thread, node);
	if (f->reading && !list_is_last(&f->reading->node, &f->threads)) {
		start = list_next_entry(f->reading, node);
		t = start;
	}
	spin_unlock(&f->threads_lock);

	while (t && r->room) {
		if (!t->done) {
			ret = bts_read_thread(f, r, t);
			if (ret)
				return ret;
		}
		/*
		 * Threads are added at the tail, and removed only here, under
		 * the file's lock.
		 */
		spin_lock(&f->threads_lock);
		if (list_is_last(&t->node, &f->threads)) {
			next = wrapped || !start ? NULL :
			       list_first_entry(&f->threads, struct bts_thread,
						node);
			wrapped = true;
		} else {
			next = list_next_entry(t, node);
		}
		gone = bts_thread_gone(f, t);
		if (gone && start == t)
			start = next;
		spin_unlock(&f->threads_lock);
		if (gone)
			bts_thread_free(t);
		t = next;
		if (wrapped && t == start)
			break;
	}
	return 0;
}

ssize_t bts_dev_read(struct file *file, char __user *buf, size_t len,
		     loff_t *ppos)
{
	struct bts_file *f = file->private_data;
	struct bts_reader r = {
		.file	= f,
		.buf	= (struct bts_record __user *)buf,
		.room	= len / sizeof(struct bts_record),
	};
	int ret;

	if (!r.room)
		return -EINVAL;
	for (;;) {
		if (mutex_lock_interruptible(&f->lock))
			return -ERESTARTSYS;
		if (!f->attached) {
			mutex_unlock(&f->lock);
			return -EINVAL;
		}
		ret = bts_read_threads(f, &r);
		mutex_unlock(&f->lock);
		/* Records copied before a fault are the caller's. */
		if (r.copied)
			return r.copied * sizeof(struct bts_record);
		if (ret)
			return ret;
		if (bts_finished(f))
			return 0;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(f->wait, bts_readable(f) ||
					     bts_finished(f)))
			return -ERESTARTSYS;
	}
}

__poll_t bts_dev_poll(struct file *file, poll_table *pt)
{
	struct bts_file *f = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &f->wait, pt);
	if (bts_readable(f))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (bts_finished(f))
		mask |= EPOLLHUP;
	return mask;
}
