// SPDX-License-Identifier: GPL-2.0
/*
 * Address-space annotations of branch traces.
 *
 * A reader symbolizes a user branch with the file mapped at its address
 * when it ran, which /proc cannot tell it once a library was closed or
 * the program executed another.  So the streams that ask for them
 * (DS_BTS_MAPS) get a BTS_PSEUDO_MAP record, staged like a marker between
 * the branches before and after, whenever the current task's executable
 * mappings change: at exec, for each new executable mapping (mmap(),
 * mprotect() to executable, the vDSO, the new place or size of one
 * mremap() moved or grew) and when executable pages are unmapped
 * (munmap(), a mapping laid over them, mremap() away).  The same streams
 * get the thread's name (BTS_MAP_COMM) when they start and when it
 * changes, which /proc cannot tell of a thread that is gone.  The hooks
 * are called by mm and exec and cost a test of a static key while nobody
 * asks for maps.
 */
#include <linux/binfmts.h>
#include <linux/buildid.h>
#include <linux/dcache.h>
#include <linux/fs.h>
#include <linux/kdev_t.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/unaligned.h>
#include <asm/ds.h>

#include "ds_layer.h"

#define DS_MAP_ID_DETAILS	DIV_ROUND_UP(BTS_MAP_BUILD_ID_MAX, 16)
#define DS_MAP_NAME_DETAILS	(BTS_MAP_NAME_MAX / 16)
/* The file's two parts, its build ID, its name, and the record. */
#define DS_MAP_RECORDS_MAX	(2 + DS_MAP_ID_DETAILS + DS_MAP_NAME_DETAILS + 1)
/* A thread's name, zero included, is one detail. */
static_assert(TASK_COMM_LEN <= 16);

/* What a mapping's records are made from; too big for the stack of mmap. */
struct ds_map_scratch {
	struct bts_record	rec[DS_MAP_RECORDS_MAX];
	unsigned char		build_id[BUILD_ID_SIZE_MAX];
	char			name[BTS_MAP_NAME_MAX];
};

/* @len bytes of @bytes in details of @layout, 16 to a detail, zero-padded. */
static unsigned int ds_map_bytes(struct bts_record *rec, unsigned int layout,
				 const void *bytes, unsigned int len)
{
	unsigned int i, nr = DIV_ROUND_UP(len, 16);
	u8 chunk[16];

	for (i = 0; i < nr; i++) {
		memset(chunk, 0, sizeof(chunk));
		memcpy(chunk, bytes + i * 16, min(len - i * 16, 16U));
		rec[i] = (struct bts_record) {
			.from	= BTS_PSEUDO(BTS_PSEUDO_DETAIL,
					     BTS_DETAIL_ARG(BTS_PSEUDO_MAP,
							    layout, i)),
			.to	= get_unaligned_le64(chunk),
			.flags	= get_unaligned_le64(chunk + 8),
		};
	}
	return nr;
}

/*
 * The file's two parts of BTS_DETAIL_MAP_FILE.  The file a user opened,
 * as /proc/PID/maps shows it: for one on overlayfs, not the backing file
 * that the mapping really reads.
 */
static unsigned int ds_map_file(struct bts_record *rec,
				const struct vm_area_struct *vma)
{
	const struct inode *inode = file_user_inode(vma->vm_file);
	struct timespec64 mtime = inode_get_mtime(inode);
	dev_t dev = inode->i_sb->s_dev;

	rec[0] = (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_DETAIL,
				     BTS_DETAIL_ARG(BTS_PSEUDO_MAP,
						    BTS_DETAIL_MAP_FILE, 0)),
		.to	= (u64)vma->vm_pgoff << PAGE_SHIFT,
		.flags	= inode->i_ino,
	};
	rec[1] = (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_DETAIL,
				     BTS_DETAIL_ARG(BTS_PSEUDO_MAP,
						    BTS_DETAIL_MAP_FILE, 1)),
		.to	= (u64)MAJOR(dev) << 32 | MINOR(dev),
		.flags	= (u64)timespec64_to_ns(&mtime),
	};
	return 2;
}

/*
 * The records of a new executable mapping, details first.  The build ID is
 * read only from the page cache: with mmap_lock held for writing no I/O
 * should wait, and the loader that maps an ELF file has just read its
 * headers.  Without it, or a name that fits, the record says so.
 */
static unsigned int ds_map_records(struct ds_map_scratch *m,
				   struct vm_area_struct *vma)
{
	unsigned int nr = 0, flags = 0, id_len = 0;
	const char *name = NULL;
	__u32 size;

	if (vma->vm_file) {
		nr += ds_map_file(m->rec, vma);
		if (!build_id_parse_nofault(vma, m->build_id, &size) &&
		    size <= BTS_MAP_BUILD_ID_MAX) {
			id_len = size;
			nr += ds_map_bytes(m->rec + nr, BTS_DETAIL_MAP_BUILD_ID,
					   m->build_id, id_len);
		}
		name = d_path(file_user_path(vma->vm_file), m->name,
			      sizeof(m->name));
		if (IS_ERR(name))
			name = NULL;
	} else {
		flags |= BTS_MAP_ANONYMOUS;
		/* A special mapping's name: "[vdso]", "[uprobes]". */
		if (vma->vm_ops && vma->vm_ops->name)
			name = vma->vm_ops->name(vma);
	}
	if (name && strlen(name) < BTS_MAP_NAME_MAX)
		nr += ds_map_bytes(m->rec + nr, BTS_DETAIL_MAP_NAME, name,
				   strlen(name) + 1);
	else if (vma->vm_file)
		flags |= BTS_MAP_NAME_UNKNOWN;
	m->rec[nr++] = (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_MAP,
				     BTS_MAP_ARG(BTS_MAP_MMAP, flags, id_len)),
		.to	= vma->vm_start,
		.flags	= vma->vm_end,
	};
	return nr;
}

/**
 * arch_exec_mapped() - a range of the current task became executable
 * @vma: the mapping, as it is now
 *
 * Called by mm for a new mapping, one whose protection changed and a
 * special mapping (the vDSO); only executable ones matter.  Without memory
 * for the details the record still marks the range, with no file.
 *
 * Context: process, mmap_lock held; may sleep.
 */
void arch_exec_mapped(struct vm_area_struct *vma)
{
	struct ds_map_scratch *m;
	struct bts_record bare;

	if (!(vma->vm_flags & VM_EXEC) || vma->vm_mm != current->mm ||
	    !ds_maps_wanted())
		return;
	/* The build ID and the path cost: only for a stream that takes them. */
	if (!ds_task_takes_maps(current))
		return;
	m = kmalloc(sizeof(*m), GFP_KERNEL);
	if (!m) {
		bare = (struct bts_record) {
			.from	= BTS_PSEUDO(BTS_PSEUDO_MAP,
					     BTS_MAP_ARG(BTS_MAP_MMAP,
							 BTS_MAP_NAME_UNKNOWN,
							 0)),
			.to	= vma->vm_start,
			.flags	= vma->vm_end,
		};
		ds_append_optional(&bare, 1, DS_BTS_MAPS);
		return;
	}
	ds_append_optional(m->rec, ds_map_records(m, vma), DS_BTS_MAPS);
	kfree(m);
}

/**
 * arch_exec_unmapped() - executable pages of the current task went away
 * @start: the first address of the range unmapped
 * @end:   the address past it
 *
 * Context: process; may sleep.
 */
void arch_exec_unmapped(unsigned long start, unsigned long end)
{
	struct bts_record rec = {
		.from	= BTS_PSEUDO(BTS_PSEUDO_MAP,
				     BTS_MAP_ARG(BTS_MAP_MUNMAP, 0, 0)),
		.to	= start,
		.flags	= end,
	};

	if (ds_maps_wanted())
		ds_append_optional(&rec, 1, DS_BTS_MAPS);
}

/**
 * ds_exec_mapped() - the current task executes a new program
 *
 * Every mapping of its streams' address space is gone; the new program's
 * follow as they are made.  Context: process, exec, before the new
 * program's mappings.
 */
void ds_exec_mapped(void)
{
	struct bts_record rec = {
		.from	= BTS_PSEUDO(BTS_PSEUDO_MAP,
				     BTS_MAP_ARG(BTS_MAP_EXEC, 0, 0)),
	};

	if (ds_maps_wanted())
		ds_append_optional(&rec, 1, DS_BTS_MAPS);
}

/*
 * The records of @task's name: its detail, then BTS_MAP_COMM.  Read without
 * task_lock(), which the callers' contexts cannot take: a rename that
 * tears the copy stages the whole new name after it.
 */
static unsigned int ds_comm_records(struct bts_record *rec,
				    struct task_struct *task)
{
	char comm[TASK_COMM_LEN];
	unsigned int nr;

	memcpy(comm, task->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	nr = ds_map_bytes(rec, BTS_DETAIL_MAP_NAME, comm, strlen(comm) + 1);
	rec[nr++] = (struct bts_record) {
		.from	= BTS_PSEUDO(BTS_PSEUDO_MAP,
				     BTS_MAP_ARG(BTS_MAP_COMM, 0, 0)),
	};
	return nr;
}

/*
 * The first records of a task consumer's stream that takes maps: its
 * task's name, before its first branch.  Not in a stream its task closed
 * at its exit, which is the consumer's to write then.
 * Context: ds_sync(), the producer: on the task's CPU or with the task
 * held off every CPU, interrupts off.
 */
void ds_name_stream(struct ds_consumer *c)
{
	struct bts_record rec[2];
	unsigned int i, nr;

	if (!ds_stream_producing(&c->stream))
		return;
	nr = ds_comm_records(rec, c->cfg.task);
	for (i = 0; i < nr; i++)
		ds_stream_append(&c->stream, &rec[i]);
}

/* Stage current's name for its streams, where its branches are now. */
static void ds_stage_comm(void)
{
	struct bts_record rec[2];

	ds_append_optional(rec, ds_comm_records(rec, current), DS_BTS_MAPS);
}

/*
 * Another thread renamed current: its name, as it is now, goes out at the
 * return to user mode, before the branches that follow.
 */
static void ds_comm_fn(struct callback_head *work)
{
	kfree(work);
	if (!(current->flags & PF_EXITING))
		ds_stage_comm();
}

/**
 * arch_task_comm_set() - a task's name changed
 * @tsk: the task, which __set_task_comm() renamed
 *
 * Current renames itself (prctl(), exec) in order with its branches.  A
 * thread that renames another (its comm file in /proc, as
 * pthread_setname_np() does) leaves it a task work, since only a task
 * stages records for its own streams: only if a stream takes its name,
 * and one at a time, which reads the name when it runs (a thread renamed
 * over and over while it sleeps holds one), rather than a field in every
 * thread for what is rare.  Without memory (the renamer is being killed
 * for it) the other thread goes on under its old name.
 *
 * Context: process, may sleep.
 */
void arch_task_comm_set(struct task_struct *tsk)
{
	struct callback_head *work;

	if (!ds_maps_wanted() || (tsk->flags & (PF_KTHREAD | PF_USER_WORKER)))
		return;
	if (tsk == current) {
		ds_stage_comm();
		return;
	}
	if (!ds_task_takes_maps(tsk))
		return;
	/* Renames racing each other may queue one each: as many as they. */
	work = task_work_cancel_func(tsk, ds_comm_fn);
	if (!work)
		work = kmalloc(sizeof(*work), GFP_KERNEL_ACCOUNT);
	if (!work)
		return;
	init_task_work(work, ds_comm_fn);
	/* An exiting task has no branch left to name. */
	if (task_work_add(tsk, work, TWA_RESUME))
		kfree(work);
}
