/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Branch trace records, as the x86 Debug Store layer hands them out.
 *
 * Every consumer of branch traces, in the kernel or in user space, 32-bit
 * or 64-bit, sees the same 24-byte record: the 64-bit BTS format of the
 * hardware.  Besides real branches a stream carries pseudo-records, which
 * stand for what a consumer must not or need not see record by record:
 * time spent on the other side of the privilege boundary, and records that
 * were lost.  A pseudo-record's @from is a non-canonical address, which is
 * never the source of a real branch in 48-bit or 57-bit paging, with the
 * record's type in the low bits.
 *
 * Streams grow new kinds of record without breaking old readers:
 * - a reader skips every pseudo-record of a type it does not know;
 * - argument bits a type does not define yet are zero, and a reader
 *   ignores them;
 * - what does not fit into one record comes in BTS_PSEUDO_DETAIL records
 *   right before the record they add to, each naming that record's type
 *   and its own layout; a reader takes the layouts it knows and skips the
 *   others.
 */
#ifndef _UAPI_LINUX_BTS_H
#define _UAPI_LINUX_BTS_H

#include <linux/types.h>

/**
 * struct bts_record - one branch or pseudo-record of a branch trace
 * @from:  linear address of the branch source (of the interrupted or
 *         faulting instruction for interrupts and exceptions), or a
 *         pseudo-record tag (BTS_RECORD_IS_PSEUDO())
 * @to:    linear address of the branch target; for a pseudo-record, see
 *         enum bts_pseudo_type
 * @flags: 0 for a branch; for a pseudo-record, see enum bts_pseudo_type
 */
struct bts_record {
	__u64 from;
	__u64 to;
	__u64 flags;
};

/*
 * A pseudo-record's @from: bits 63..32 are BTS_PSEUDO_TAG (bit 63 set, bits
 * 62..56 clear: non-canonical whether addresses have 48 or 57 bits), bits
 * 31..8 an argument, bits 7..0 the type.
 */
#define BTS_PSEUDO_TAG		0x80000000ULL
#define BTS_RECORD_IS_PSEUDO(from)	(((__u64)(from) >> 32) == BTS_PSEUDO_TAG)
#define BTS_PSEUDO(type, arg)	((BTS_PSEUDO_TAG << 32) |		\
				 (((__u64)(arg) & 0xffffff) << 8) |	\
				 ((__u64)(type) & 0xff))
#define BTS_PSEUDO_TYPE(from)	((__u32)(from) & 0xff)
/* An argument made of three bytes, the first in bits 7..0. */
#define BTS_ARG_BYTES(b0, b1, b2)					\
	(((__u32)(b0) & 0xff) | ((__u32)(b1) & 0xff) << 8 |		\
	 ((__u32)(b2) & 0xff) << 16)
#define BTS_PSEUDO_ARG(from)	(((__u32)(from) >> 8) & 0xffffff)

/**
 * enum bts_pseudo_type - what a pseudo-record stands for
 * @BTS_PSEUDO_KERNEL: in a user-only stream, one stretch of time in the
 *	kernel.  The argument is enum bts_entry_kind in bits 7..0 and the
 *	exception or interrupt vector in bits 15..8.  @to is the user address
 *	where execution resumed and @flags the user address that entered the
 *	kernel (the syscall instruction, int3, the faulting or the
 *	interrupted instruction); either is 0 when the trace did not show it
 *	(the stream started or stopped in the kernel).  It comes after its
 *	detail, BTS_DETAIL_KERNEL_ENTRY: the system call, and the time.
 * @BTS_PSEUDO_USER: in a kernel-only stream, one stretch of time in user
 *	mode.  @to is the kernel address execution re-entered at and @flags
 *	the kernel address that returned to user mode; 0 when not seen.
 * @BTS_PSEUDO_LOST: @to records were lost here: the consumer did not keep
 *	up with a continuous stream.  With the argument BTS_LOST_OVERRUN
 *	instead, the hardware filled its buffer before it could be drained
 *	and dropped an unknown number of records, of either privilege, at
 *	this point; @to is 0.  With BTS_LOST_UNTRACED, in a thread's
 *	stream: the thread ran on a CPU that could not trace it (no memory
 *	for the CPU's buffers when it came online); what it did there, an
 *	unknown number of records, is missing; @to is 0.
 * @BTS_PSEUDO_MARKER: an event an application wrote (a user_event), in
 *	the writing thread's stream between the branches before the write
 *	and those after it, in streams that asked for markers.  The
 *	argument is enum bts_marker_source in bits 7..0, BTS_MARKER_* flags
 *	in bits 15..8 and the payload's length in bytes in bits 23..16
 *	(at most BTS_MARKER_PAYLOAD_MAX); @to is the user address of the
 *	instruction that wrote the event (its system call), 0 if unknown;
 *	@flags is the event's id in bits 31..0 and the generation of that
 *	id in bits 63..32 (an id deleted and registered again, maybe with
 *	another format, gets a new generation).  The payload comes before
 *	it, in BTS_DETAIL_MARKER_PAYLOAD details.
 * @BTS_PSEUDO_SWITCH: in a per-CPU stream, the CPU switched to another
 *	task: @to is its thread id and @flags its process id, as seen from
 *	the initial PID namespace.  A change of process is a change of
 *	address space.
 * @BTS_PSEUDO_THREAD: in what read() returns from /dev/bts, which carries
 *	the streams of several threads: the records that follow, up to the
 *	next THREAD record, are thread @to's, of process @flags, as numbered
 *	in the reader's PID namespace.  The argument is enum bts_thread_event.
 * @BTS_PSEUDO_DETAIL: more about the first record after it in the
 *	thread's stream that is no detail (a record may have several, in a
 *	row; THREAD records may come between in /dev/bts).  Bits 7..0 of
 *	the argument are that record's type, bits 15..8 the detail's layout
 *	(enum bts_detail_layout), bits 23..16 the layout's.  A reader
 *	ignores a detail whose layout it does not know, and one that the
 *	named type does not follow (the front of a ring may cut a record
 *	from its details).
 * @BTS_PSEUDO_MAP: in a stream that asked for them, the thread's address
 *	space changed here: the branches before ran in the old one, those
 *	after in the new.  The argument is enum bts_map_event in bits 7..0,
 *	BTS_MAP_* flags in bits 15..8 and the length in bytes of the build
 *	ID in bits 23..16 (0: none).  For BTS_MAP_MMAP and BTS_MAP_MUNMAP,
 *	@to is the range's first address and @flags the address past its
 *	end.  A BTS_MAP_MMAP record comes after its details: the file
 *	(BTS_DETAIL_MAP_FILE), its build ID (BTS_DETAIL_MAP_BUILD_ID) and its
 *	name (BTS_DETAIL_MAP_NAME).  A BTS_MAP_COMM record names the thread
 *	that runs the code (the name comes in BTS_DETAIL_MAP_NAME).
 */
enum bts_pseudo_type {
	BTS_PSEUDO_KERNEL	= 1,
	BTS_PSEUDO_USER		= 2,
	BTS_PSEUDO_LOST		= 3,
	BTS_PSEUDO_MARKER	= 4,
	BTS_PSEUDO_SWITCH	= 5,
	BTS_PSEUDO_THREAD	= 6,
	BTS_PSEUDO_DETAIL	= 7,
	BTS_PSEUDO_MAP		= 8,
};

/*
 * The argument of a BTS_PSEUDO_DETAIL record: the type it details, its
 * layout and an 8-bit value the layout defines.
 */
#define BTS_DETAIL_ARG(type, layout, val)	BTS_ARG_BYTES(type, layout, val)
#define BTS_DETAIL_TYPE(from)	(BTS_PSEUDO_ARG(from) & 0xff)
#define BTS_DETAIL_LAYOUT(from)	((BTS_PSEUDO_ARG(from) >> 8) & 0xff)
#define BTS_DETAIL_VAL(from)	((BTS_PSEUDO_ARG(from) >> 16) & 0xff)

/**
 * enum bts_detail_layout - what a BTS_PSEUDO_DETAIL record holds
 * @BTS_DETAIL_KERNEL_ENTRY: before every BTS_PSEUDO_KERNEL record of a
 *	user-only stream, which the kernel's entry and exit code write: the
 *	layout's value is the system call ABI (enum bts_syscall_abi; 0 if
 *	the entry was no system call); @to is pt_regs::orig_ax as the entry
 *	left it: the system call number the thread passed in rax or eax
 *	(x32's bit 30 included; eax zero-extended), or an exception's error
 *	code, ~0 for anything else or not seen; @flags is the time at which
 *	the thread returned to user mode, or exited for the last KERNEL
 *	record, in nanoseconds of CLOCK_MONOTONIC, so streams of several
 *	threads can be merged and set against clock_gettime().
 * @BTS_DETAIL_MARKER_PAYLOAD: before a BTS_PSEUDO_MARKER record, 16 bytes
 *	of its payload each, in order: the layout's value is the detail's
 *	index (0 for bytes 0..15, 1 for 16..31, ...); @to holds the first
 *	eight bytes and @flags the next eight, in memory order (as
 *	little-endian numbers); bytes past the marker's length are zero.
 * @BTS_DETAIL_MAP_FILE: before a BTS_PSEUDO_MAP record of a file's
 *	mapping, the file, in two parts; the layout's value is the part.
 *	Part 0: @to is the file offset, in bytes, that the mapping's first
 *	address shows, and @flags the file's inode number.  Part 1: @to is
 *	the device the file is on, its major number in bits 63..32 and its
 *	minor number in bits 31..0, and @flags the file's modification time
 *	in nanoseconds since the epoch.  Inode and device are those
 *	/proc/PID/maps shows (on overlayfs, stat() shows the backing file's
 *	device).  A reader checks a file it opens by name against them.
 * @BTS_DETAIL_MAP_BUILD_ID: before a BTS_PSEUDO_MAP record, 16 bytes of
 *	the file's build ID (its ELF NT_GNU_BUILD_ID note) each, as
 *	BTS_DETAIL_MARKER_PAYLOAD holds a payload; the record's argument
 *	says how many bytes there are.
 * @BTS_DETAIL_MAP_NAME: before a BTS_PSEUDO_MAP record, 16 bytes of the
 *	file's path each, as /proc/PID/maps shows it, as
 *	BTS_DETAIL_MARKER_PAYLOAD holds a payload: the path ends at the first
 *	zero byte or after the last detail.  At most BTS_MAP_NAME_MAX bytes;
 *	a longer path is left out and the record says BTS_MAP_NAME_UNKNOWN.
 *	Before a BTS_MAP_COMM record, one detail: the thread's name.
 */
enum bts_detail_layout {
	BTS_DETAIL_KERNEL_ENTRY		= 0,
	BTS_DETAIL_MARKER_PAYLOAD	= 1,
	BTS_DETAIL_MAP_FILE		= 2,
	BTS_DETAIL_MAP_BUILD_ID		= 3,
	BTS_DETAIL_MAP_NAME		= 4,
};

/**
 * enum bts_map_event - what changed in a BTS_PSEUDO_MAP record
 * @BTS_MAP_EXEC: the thread executed a new program: every mapping of the
 *	old address space is gone.  The new program's mappings follow, each
 *	in its own record.  @to and @flags are 0.
 * @BTS_MAP_MMAP: the range is executable now, and shows a file (or, with
 *	BTS_MAP_ANONYMOUS, code the process writes itself, or the kernel's
 *	vDSO); it replaces whatever the range showed before.  An executable
 *	mapping made executable again (mprotect()) gets a record again.
 * @BTS_MAP_MUNMAP: nothing executable is left in the range.
 * @BTS_MAP_COMM: the thread's name (its comm, as /proc/PID/task/TID/comm
 *	shows it) is the one in the BTS_DETAIL_MAP_NAME detail before the
 *	record, from here on.  The first one comes before the thread's first
 *	branch in the stream (a ring may have dropped it since); later ones
 *	where the name changes: prctl(PR_SET_NAME) or exec, in order with
 *	the branches around them; a write to the thread's comm file in /proc
 *	by another thread, where the thread next returns to user mode after
 *	the write (a thread running in user mode then goes on under its old
 *	name until it enters the kernel).  @to and @flags are 0.
 */
enum bts_map_event {
	BTS_MAP_EXEC	= 1,
	BTS_MAP_MMAP	= 2,
	BTS_MAP_MUNMAP	= 3,
	BTS_MAP_COMM	= 4,
};

/* BTS_PSEUDO_MAP flags: the mapping shows no file (JIT code, the vDSO). */
#define BTS_MAP_ANONYMOUS	(1U << 0)
/* The file's path was longer than BTS_MAP_NAME_MAX, or had none: no name. */
#define BTS_MAP_NAME_UNKNOWN	(1U << 1)
/* The most bytes of a path a BTS_PSEUDO_MAP record carries, with its zero. */
#define BTS_MAP_NAME_MAX	256
/* The most bytes of a build ID. */
#define BTS_MAP_BUILD_ID_MAX	20

#define BTS_MAP_ARG(event, flags, build_id_len)				\
	BTS_ARG_BYTES(event, flags, build_id_len)
#define BTS_MAP_EVENT(from)	(BTS_PSEUDO_ARG(from) & 0xff)
#define BTS_MAP_FLAGS(from)	((BTS_PSEUDO_ARG(from) >> 8) & 0xff)
#define BTS_MAP_BUILD_ID_LEN(from)	((BTS_PSEUDO_ARG(from) >> 16) & 0xff)

/**
 * enum bts_marker_source - who wrote a BTS_PSEUDO_MARKER
 * @BTS_MARKER_USER_EVENT: the thread, with a write to a user_event
 *	(Documentation/trace/user_events.rst); the id is the event's
 *	(its ``id`` in tracefs)
 */
enum bts_marker_source {
	BTS_MARKER_USER_EVENT	= 1,
};

/* BTS_PSEUDO_MARKER flags: the event had more payload than the marker. */
#define BTS_MARKER_TRUNCATED		(1U << 0)
/* The payload could not be read (it was not in memory): the length is 0. */
#define BTS_MARKER_NOT_CAPTURED		(1U << 1)
/* The most payload bytes a marker carries, in BTS_MARKER_PAYLOAD_MAX / 16 details. */
#define BTS_MARKER_PAYLOAD_MAX		64

#define BTS_MARKER_ARG(source, flags, len)	BTS_ARG_BYTES(source, flags, len)
#define BTS_MARKER_SOURCE(from)	(BTS_PSEUDO_ARG(from) & 0xff)
#define BTS_MARKER_FLAGS(from)	((BTS_PSEUDO_ARG(from) >> 8) & 0xff)
#define BTS_MARKER_LEN(from)	((BTS_PSEUDO_ARG(from) >> 16) & 0xff)
#define BTS_MARKER_ID(flags)	((__u32)(flags))
#define BTS_MARKER_GEN(flags)	((__u32)((flags) >> 32))

/**
 * enum bts_syscall_abi - which system call table a number belongs to
 * @BTS_ABI_NONE: not a system call, or not seen
 * @BTS_ABI_X86_64: the syscall instruction of 64-bit code
 * @BTS_ABI_X32: the same with __X32_SYSCALL_BIT (bit 30) set
 * @BTS_ABI_I386: int $0x80, sysenter, or syscall from 32-bit code
 */
enum bts_syscall_abi {
	BTS_ABI_NONE	= 0,
	BTS_ABI_X86_64	= 1,
	BTS_ABI_X32	= 2,
	BTS_ABI_I386	= 3,
};

/**
 * enum bts_thread_event - the argument of a BTS_PSEUDO_THREAD record
 * @BTS_THREAD_RECORDS: the thread's records follow
 * @BTS_THREAD_NEW: the thread is traced from here on: it was created by a
 *	traced thread (BTS_ATTACH_INHERIT, BTS_ATTACH_INHERIT_THREADS) or it
 *	is the one attached to
 * @BTS_THREAD_EXIT: the thread exited; its stream is complete
 */
enum bts_thread_event {
	BTS_THREAD_RECORDS	= 0,
	BTS_THREAD_NEW		= 1,
	BTS_THREAD_EXIT		= 2,
};

/* The arguments of BTS_PSEUDO_LOST records of an unknown number. */
#define BTS_LOST_OVERRUN	1
#define BTS_LOST_UNTRACED	2

/**
 * enum bts_entry_kind - how user mode entered the kernel
 * @BTS_ENTRY_UNKNOWN: not seen, or not one of the below
 * @BTS_ENTRY_SYSCALL: a system call instruction (syscall, sysenter, int $0x80)
 * @BTS_ENTRY_EXCEPTION: an exception or int3/int n; the vector says which
 * @BTS_ENTRY_INTERRUPT: an external interrupt or NMI; the vector says which
 */
enum bts_entry_kind {
	BTS_ENTRY_UNKNOWN	= 0,
	BTS_ENTRY_SYSCALL	= 1,
	BTS_ENTRY_EXCEPTION	= 2,
	BTS_ENTRY_INTERRUPT	= 3,
};

/*
 * /dev/bts: user-only branch traces of threads, for their owner.
 *
 * open() the device (-EACCES without CAP_PERFMON where sysctl
 * kernel.perf_event_paranoid is above 2, as for perf_event_open()),
 * attach it to a thread with BTS_IOC_ATTACH, read()
 * struct bts_record from it (each thread's records after a THREAD record
 * naming it), poll() for records.  A file traces one thread, or with
 * BTS_ATTACH_INHERIT that thread and every thread and process it creates
 * from then on (with BTS_ATTACH_INHERIT_THREADS, the threads only).
 * Only user-mode branches are recorded, and only user
 * addresses appear in the records: a stretch of time in the kernel is one
 * BTS_PSEUDO_KERNEL record, after its detail.  Attaching needs the right
 * to ptrace the thread (PTRACE_MODE_ATTACH_REALCREDS).  The hardware never
 * records the kernel's branches for it; each BTS_PSEUDO_KERNEL record
 * comes from the kernel's entry and exit code.  A read() into
 * a buffer that faults part way returns the whole records before the fault
 * and keeps the rest for the next read(); one that faults at its first
 * record is -EFAULT.  No record is lost either way.  The buffers of one
 * user's traced threads together hold at most sysctl kernel.bts_user_max_kb
 * KiB (see Documentation/arch/x86/ds.rst): an attach past it is -EDQUOT,
 * and a created thread past it is left untraced (bts_status.untraced).
 *
 * The structs start with their size (the size of the struct as the caller
 * knows it), so fields can be appended; a size smaller than the first
 * version, unknown flags or reserved fields that are not zero are -EINVAL,
 * as are fields of a later version the kernel does not know, if not zero.
 */

/**
 * enum bts_attach_mode - what a file keeps of each thread's branches
 * @BTS_MODE_CONTINUOUS: every branch, as it is read; when the reader does
 *	not keep up, records are dropped and a BTS_PSEUDO_LOST record says
 *	how many, unless BTS_ATTACH_LOSSLESS
 * @BTS_MODE_RING: only the last @nr_records records of each thread
 *	(pseudo-records and details included), which become readable when
 *	the thread exits or the file is detached
 */
enum bts_attach_mode {
	BTS_MODE_CONTINUOUS	= 0,
	BTS_MODE_RING		= 1,
};

/* struct bts_attach.flags: */
/* Also trace the threads and processes the thread creates from now on. */
#define BTS_ATTACH_INHERIT	(1U << 0)
/*
 * Continuous mode: a thread whose buffer is full waits, on its way back to
 * user mode, until the reader has made room, rather than lose records.
 */
#define BTS_ATTACH_LOSSLESS	(1U << 1)
/*
 * BTS_PSEUDO_MAP records in each thread's stream: its program's executable
 * mappings, as they come and go, so a reader symbolizes each branch with
 * the file that was mapped when it ran, and the thread's name
 * (BTS_MAP_COMM).
 */
#define BTS_ATTACH_MAPS		(1U << 2)
/*
 * BTS_PSEUDO_MARKER records in each thread's stream: the user_events
 * (Documentation/trace/user_events.rst) the thread writes whose name
 * @markers matches, each exactly between the branches before the write
 * and those after it.  Those events are enabled in the traced processes
 * (their enable bit set), and only there, for as long as they are traced.
 * BTS_IOC_EVENT_FORMAT tells how to read a payload, for the events of
 * markers the file gave the reader.  A kernel without
 * user_events (CONFIG_USER_EVENTS_BTS) refuses the flag with -EOPNOTSUPP.
 */
#define BTS_ATTACH_MARKERS	(1U << 3)
/*
 * Also trace the threads the thread creates from now on (and those they
 * create), but not the processes it forks (or a vfork()'s child): a
 * debugger's view of its inferior, whose forked children it does not
 * debug, and which attaches each of its threads.  Their events are not
 * enabled for the file's markers either.  Not with BTS_ATTACH_INHERIT.
 */
#define BTS_ATTACH_INHERIT_THREADS	(1U << 4)

/**
 * struct bts_attach - BTS_IOC_ATTACH's argument
 * @size:       sizeof(struct bts_attach)
 * @flags:      BTS_ATTACH_*
 * @pid:        the thread to trace (a thread id; the process's id names its
 *              main thread), in the caller's PID namespace
 * @mode:       enum bts_attach_mode
 * @nr_records: records buffered per thread, the N of a ring; 0 for the
 *              default (BTS_DEFAULT_RECORDS)
 * @reserved:   must be zero
 * @markers:    with BTS_ATTACH_MARKERS, a user pointer to the names of the
 *              events wanted, a zero-terminated glob of at most
 *              BTS_MARKERS_GLOB_MAX bytes with its zero (``*``, ``?``,
 *              ``[...]``), matched against the name the event was
 *              registered with (``u:NAME`` in dynamic_events); 0 for all
 */
struct bts_attach {
	__u32 size;
	__u32 flags;
	__u32 pid;
	__u32 mode;
	__u32 nr_records;
	__u32 reserved;
	__u64 markers;
};

#define BTS_ATTACH_SIZE_VER0	24
#define BTS_ATTACH_SIZE_VER1	32
#define BTS_MARKERS_GLOB_MAX	256
#define BTS_DEFAULT_RECORDS	65536
/* The most records a file may buffer per thread. */
#define BTS_MAX_RECORDS		(1U << 20)

/**
 * struct bts_status - BTS_IOC_STATUS's result
 * @size:     set by the caller to sizeof(struct bts_status); the kernel
 *            fills in at most that much and sets it to what it filled in
 * @threads:  threads traced so far, exited ones included
 * @live:     threads traced that have not exited
 * @untraced: threads created by traced ones that could not be traced
 *            (the user's limit, or no memory)
 * @records:  records put into the threads' buffers, pseudo-records
 *            included
 * @lost:     records lost because the reader did not keep up (continuous
 *            mode; also in-stream as BTS_PSEUDO_LOST)
 * @throttled: BTS_ATTACH_LOSSLESS: times a thread waited for the reader
 */
struct bts_status {
	__u32 size;
	__u32 threads;
	__u32 live;
	__u32 untraced;
	__u64 records;
	__u64 lost;
	__u64 throttled;
};

#define BTS_STATUS_SIZE_VER0	40

/**
 * struct bts_snapshot - BTS_IOC_SNAPSHOT's argument
 * @size:       sizeof(struct bts_snapshot)
 * @flags:      none defined yet: must be zero
 * @pid:        a thread the file traces and that has not exited, as a
 *              thread id in the caller's PID namespace
 * @nr_records: in: room at @records, in records; out: records copied
 * @records:    a user pointer to an array of struct bts_record
 */
struct bts_snapshot {
	__u32 size;
	__u32 flags;
	__u32 pid;
	__u32 nr_records;
	__u64 records;
};

#define BTS_SNAPSHOT_SIZE_VER0	24

/**
 * struct bts_event_format - BTS_IOC_EVENT_FORMAT's argument
 * @size:   sizeof(struct bts_event_format)
 * @flags:  none defined yet: must be zero
 * @id:     the event's id, BTS_MARKER_ID() of a marker's @flags
 * @gen:    the id's generation, BTS_MARKER_GEN()
 * @len:    in: room at @format in bytes; out: the format's length with
 *          its zero, also when it did not fit (-ENOSPC)
 * @format: a user pointer: the event's format, zero-terminated, as the
 *          application registered it and dynamic_events shows it without
 *          the ``u:``: its name, then its fields (``TYPE NAME``, and a
 *          struct's size) separated by ``; ``.  A payload holds the
 *          fields in that order, as the event's format file in tracefs
 *          lays them out after its common fields, which a payload lacks.
 * @reserved: must be zero
 */
struct bts_event_format {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 gen;
	__u32 len;
	__u32 reserved;
	__u64 format;
};

#define BTS_EVENT_FORMAT_SIZE_VER0	32

/*
 * The commands take a pointer to a struct that carries its own size, so
 * they do not encode one.
 */
#define BTS_IOC_MAGIC		0xB9
/* Start tracing (struct bts_attach *); once per file. */
#define BTS_IOC_ATTACH		_IO(BTS_IOC_MAGIC, 0x01)
/* The file's counters (struct bts_status *). */
#define BTS_IOC_STATUS		_IO(BTS_IOC_MAGIC, 0x02)
/*
 * Stop tracing every thread; what was recorded stays readable (rings
 * included), then read() returns 0.  The argument must be 0.
 */
#define BTS_IOC_DETACH		_IO(BTS_IOC_MAGIC, 0x03)
/*
 * Ring mode: copy a thread's last records as they are now, oldest first,
 * while it goes on running and recording (struct bts_snapshot *): at most
 * the ring's size, the newest that fit.  They are the records read() would
 * return after the thread's exit had it exited now, THREAD records aside,
 * and they stay in the ring: two snapshots may share records.  A thread
 * the file does not trace, or that exited (its last records come with
 * read()), is -ESRCH; a file in continuous mode, or one that was never
 * attached or is detached, is -EINVAL.
 */
#define BTS_IOC_SNAPSHOT	_IO(BTS_IOC_MAGIC, 0x04)
/*
 * The format of the event a marker names (struct bts_event_format *), for
 * a file attached with BTS_ATTACH_MARKERS, of an event its glob matches
 * (tracefs, where the formats are, is root's).  Ask when the marker is
 * read: an event that was deleted, or whose id another event has now, is
 * -ENOENT.  A file without markers is -EINVAL.
 */
#define BTS_IOC_EVENT_FORMAT	_IO(BTS_IOC_MAGIC, 0x05)

#endif /* _UAPI_LINUX_BTS_H */
