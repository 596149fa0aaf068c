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
#define BTS_PSEUDO_ARG(from)	(((__u32)(from) >> 8) & 0xffffff)

/**
 * enum bts_pseudo_type - what a pseudo-record stands for
 * @BTS_PSEUDO_KERNEL: in a user-only stream, one stretch of time in the
 *	kernel.  The argument is enum bts_entry_kind in bits 7..0 and the
 *	exception or interrupt vector in bits 15..8.  @to is the user address
 *	where execution resumed and @flags the user address that entered the
 *	kernel (the syscall instruction, the faulting or the interrupted
 *	instruction); either is 0 when the trace did not show it (the stream
 *	started or stopped in the kernel, or the hardware did not record the
 *	return).
 * @BTS_PSEUDO_USER: in a kernel-only stream, one stretch of time in user
 *	mode.  @to is the kernel address execution re-entered at and @flags
 *	the kernel address that returned to user mode; 0 when not seen.
 * @BTS_PSEUDO_LOST: @to records were lost here: the consumer did not keep
 *	up with a continuous stream.
 * @BTS_PSEUDO_MARKER: an event the kernel or an application put into the
 *	trace, after the branches that preceded it.  The argument, @to and
 *	@flags are the marker's (for user_events: the event's id and data).
 * @BTS_PSEUDO_SWITCH: in a per-CPU stream that records both sides, the CPU
 *	switched to another task: @to is its thread id and @flags its process
 *	id, as seen from the initial PID namespace.  A change of process is a
 *	change of address space.
 */
enum bts_pseudo_type {
	BTS_PSEUDO_KERNEL	= 1,
	BTS_PSEUDO_USER		= 2,
	BTS_PSEUDO_LOST		= 3,
	BTS_PSEUDO_MARKER	= 4,
	BTS_PSEUDO_SWITCH	= 5,
};

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

#endif /* _UAPI_LINUX_BTS_H */
