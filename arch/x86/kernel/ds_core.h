/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hardware-independent core of the x86 Debug Store layer: filtering
 * and splaying branch records into consumer streams.
 *
 * The core knows nothing about MSRs, CPUs or tasks.  ds.c drains the
 * hardware's staging buffer and hands each batch of records, together
 * with the streams interested in them (the CPU's and the current task's),
 * to ds_splay().  The same file is built into the userspace harness in
 * tools/testing/ds, which feeds it synthetic records.
 *
 * Concurrency: a stream has one producer (the CPU draining into it, with
 * interrupts off or in NMI) and, in continuous mode, one consumer.  They
 * share only @head and @tail, each written by one side and read by the
 * other with acquire/release ordering, so neither side takes a lock and
 * the producer can run in NMI context.
 */
#ifndef __X86_KERNEL_DS_CORE_H
#define __X86_KERNEL_DS_CORE_H

#include "ds_internal.h"

/**
 * enum ds_priv - which side of the privilege boundary a stream records
 * @DS_PRIV_KERNEL: kernel mode only; user time becomes BTS_PSEUDO_USER
 * @DS_PRIV_USER: user mode only; kernel time becomes BTS_PSEUDO_KERNEL,
 *	and no kernel address ever reaches the stream
 * @DS_PRIV_ALL: both, every record as the hardware wrote it
 */
enum ds_priv {
	DS_PRIV_KERNEL	= 1,
	DS_PRIV_USER	= 2,
	DS_PRIV_ALL	= DS_PRIV_KERNEL | DS_PRIV_USER,
};

/**
 * enum ds_mode - what a full stream does
 * @DS_MODE_RING: overwrite the oldest record: the stream holds the last
 *	records ("last N", a flight recorder)
 * @DS_MODE_CONTINUOUS: keep every record until the consumer takes it; when
 *	the stream is full, count what does not fit and put one
 *	BTS_PSEUDO_LOST record in its place once there is room again
 */
enum ds_mode {
	DS_MODE_RING,
	DS_MODE_CONTINUOUS,
};

/**
 * struct ds_stream - one consumer's view of a branch trace
 * @buf: the records, @size of them
 * @size: capacity in records; at least 2 for a continuous stream, which
 *	needs room for a loss record and the record after it
 * @priv: enum ds_priv
 * @mode: enum ds_mode
 * @pos: the producer's next slot, @head % @size
 * @head: records ever written, including pseudo-records; written by the
 *	producer only (release), so buf[(head - 1) % size] is the newest
 * @tail: continuous mode: records ever consumed; written by the consumer
 *	only (release)
 * @lost: records dropped since the last BTS_PSEUDO_LOST was written
 * @away: the trace is on the other side of the privilege boundary: since
 *	@away_from it has been in the kernel (user-only stream) or in user
 *	mode (kernel-only stream)
 * @away_from: where the trace crossed over, 0 if unseen
 * @away_kind: for a user-only stream, how it entered the kernel: the
 *	BTS_PSEUDO_KERNEL argument
 */
struct ds_stream {
	struct bts_record	*buf;
	u32			size;
	u8			priv;
	u8			mode;
	bool			away;
	u32			pos;
	u64			head;
	u64			tail;
	u64			lost;
	u64			away_from;
	u32			away_kind;
};

/**
 * typedef ds_classify_entry_fn - tell how user mode entered the kernel
 * @kernel_to: the kernel address a user-to-kernel record jumped to
 *
 * Return: the BTS_PSEUDO_KERNEL argument: enum bts_entry_kind in bits 7..0,
 * the vector in bits 15..8.
 */
typedef u32 (*ds_classify_entry_fn)(u64 kernel_to);

void ds_stream_init(struct ds_stream *s, struct bts_record *buf, u32 size,
		    enum ds_priv priv, enum ds_mode mode);
void ds_splay(const struct bts_record *rec, unsigned int nr,
	      struct ds_stream *const *streams, unsigned int nr_streams,
	      ds_classify_entry_fn classify);
u32 ds_stream_read_last(const struct ds_stream *s, struct bts_record *out,
			u32 n);
u32 ds_stream_consume(struct ds_stream *s, struct bts_record *out, u32 n);
u32 ds_stream_pending(const struct ds_stream *s);

#endif /* __X86_KERNEL_DS_CORE_H */
