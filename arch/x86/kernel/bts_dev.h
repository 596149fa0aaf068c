/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /dev/bts's files and traced threads, shared by the device (bts_dev.c:
 * open, attach, the ioctls, the layer's callbacks, the per-user limit)
 * and its reader (bts_dev_read.c: read() and poll()).  The locking rules
 * are at the top of bts_dev.c.
 */
#ifndef __X86_KERNEL_BTS_DEV_H
#define __X86_KERNEL_BTS_DEV_H

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <uapi/linux/bts.h>
#include <asm/ds.h>

/*
 * Threads whose consumers are suspended or released at once, with one
 * grace period for them all: arrays of this many pointers on the stack.
 */
#define BTS_RELEASE_BATCH	32

struct bts_user;
struct pid_namespace;
struct task_struct;
struct user_event_markers;

/**
 * struct bts_thread - one traced thread of a file
 * @node: in bts_file.threads
 * @file: the file
 * @consumer: its consumer, until released (set and cleared under the
 *	file's threads_lock, released under its lock)
 * @task: the thread, referenced until the consumer is released
 * @tid: its thread id in the file's PID namespace, 0 until known
 * @tgid: its process id, likewise
 * @announced: its BTS_THREAD_NEW record has been read
 * @exited: the thread exited (threads_lock)
 * @detached: the file was detached from it
 * @done: everything of it has been read and its consumer released
 * @snapshot_claimed: ring mode: the exit or the detach takes the snapshot
 *	(threads_lock)
 * @snapshot_ready: @last holds the ring's last records (threads_lock)
 * @last: ring mode: the snapshot, @nr_last records
 * @nr_last: records in @last
 * @read_last: records of @last already read
 * @charged: bytes charged to the file's user for the thread's buffers
 */
struct bts_thread {
	struct list_head	node;
	struct bts_file		*file;
	struct ds_consumer	*consumer;
	struct task_struct	*task;
	pid_t			tid;
	pid_t			tgid;
	bool			announced;
	bool			exited;
	bool			detached;
	bool			done;
	bool			snapshot_claimed;
	bool			snapshot_ready;
	struct bts_record	*last;
	u32			nr_last;
	u32			read_last;
	size_t			charged;
};

/**
 * struct bts_file - an open /dev/bts
 * @lock: serializes attach, detach, status, read() and the release of
 *	consumers
 * @threads_lock: guards @threads and the threads' state the callbacks set
 * @threads: struct bts_thread, in the order they were traced, until they
 *	are gone (bts_thread_gone())
 * @wait: readers and pollers; woken by the callbacks
 * @ns: the opener's PID namespace, for thread and process ids
 * @attach: what BTS_IOC_ATTACH asked for
 * @attached: BTS_IOC_ATTACH succeeded
 * @detached: BTS_IOC_DETACH ran, or the file is being released
 * @reading: the thread whose records the last read() ended with
 * @released: the counters of released consumers
 * @untraced: threads created by traced ones that could not be traced
 * @user: the opener's account of trace buffers
 * @unlimited: the opener had CAP_PERFMON: @user's limit does not apply
 * @threads_gone: threads that exited and were read to the end, no longer
 *	in @threads
 * @markers: BTS_ATTACH_MARKERS: the subscription to the events, or NULL
 * @markers_glob: the names of those events, for the consumers' config
 * @marker_events: the events of the markers the reader got, indexed by
 *	generation (unique to an event), their ids as values: the only ones
 *	whose formats BTS_IOC_EVENT_FORMAT gives (bts_note_markers())
 */
struct bts_file {
	struct mutex		lock;		/* see the comment at the top */
	spinlock_t		threads_lock;	/* likewise */
	struct list_head	threads;
	wait_queue_head_t	wait;
	struct pid_namespace	*ns;
	struct bts_attach	attach;
	bool			attached;
	bool			detached;
	struct bts_thread	*reading;
	struct ds_bts_status	released;
	u32			untraced;
	struct bts_user		*user;
	bool			unlimited;
	u32			threads_gone;
	struct user_event_markers *markers;
	char			*markers_glob;
	struct xarray		marker_events;
};

/* bts_dev.c */
void bts_thread_ids(struct bts_thread *t);
void bts_thread_release(struct bts_file *f, struct bts_thread *t);
void bts_thread_uncharge(struct bts_file *f, struct bts_thread *t);
void bts_thread_free(struct bts_thread *t);

/* bts_dev_read.c */
bool bts_finished(struct bts_file *f);
size_t bts_note_markers(struct bts_file *f, const struct bts_record *recs,
			size_t nr);
bool bts_thread_gone(struct bts_file *f, struct bts_thread *t);
ssize_t bts_dev_read(struct file *file, char __user *buf, size_t len,
		     loff_t *ppos);
__poll_t bts_dev_poll(struct file *file, poll_table *pt);

#endif /* __X86_KERNEL_BTS_DEV_H */
