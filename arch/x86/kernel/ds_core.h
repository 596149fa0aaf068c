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
 *
 * Who writes records is a state of the stream (enum ds_writer), handed
 * over with compare-and-exchange and release/acquire, never two at once:
 * the producer while it traces; the consumer while it is suspended, for
 * the loss record it still owes; the exiting task for the stream's end.
 */
#ifndef __X86_KERNEL_DS_CORE_H
#define __X86_KERNEL_DS_CORE_H

#include "ds_internal.h"

/**
 * struct ds_stream - one consumer's view of a branch trace
 * @buf: the records, @size of them
 * @size: slots; at least 2: a continuous stream needs room for a loss
 *	record and the record after it, and a ring stream keeps @size - 1
 *	records for readers (ds_stream_read_last())
 * @priv: enum ds_priv
 * @mode: enum ds_mode
 * @marker_key: the stream takes the markers ds.c stages (BTS_PSEUDO_MARKER
 *	and its details) for this key (DS_STAGED_RECIPIENT), 0 for none; its
 *	owner sets it before the stream is in use
 * @maps: likewise for the address-space changes ds.c stages
 *	(BTS_PSEUDO_MAP and its details)
 * @pos: the producer's next slot, @head % @size
 * @head: records ever written, including pseudo-records; written by the
 *	producer only (release), so buf[(head - 1) % size] is the newest
 * @tail: continuous mode: records ever consumed; written by the consumer
 *	only (release)
 * @claim: ring mode: records the producer may have begun to write, if
 *	more than @head + 1, which it always may (ds_ring_put_run())
 * @lost: records dropped since the last BTS_PSEUDO_LOST was written
 * @lost_total: records ever dropped
 * @marker_for_us: the marker being splayed names @marker_key among its
 *	recipients; the producer's own state
 * @away: a kernel-only stream's trace is in user mode, since @away_from
 * @away_from: where the trace crossed over, 0 if unseen
 * @writer: enum ds_writer: who may write records now
 */
struct ds_stream {
	struct bts_record	*buf;
	u32			size;
	u8			priv;
	u8			mode;
	u32			marker_key;
	bool			maps;
	bool			marker_for_us;
	bool			away;
	u32			pos;
	u64			head;
	u64			tail;
	u64			claim;
	u64			lost;
	u64			lost_total;
	u64			away_from;
	u8			writer;
};

/**
 * enum ds_writer - who may write a stream's records
 * @DS_WRITER_PRODUCER: its CPU or task, which stages and splays records
 * @DS_WRITER_CONSUMER: the consumer, suspended: no producer is left that
 *	could have missed the suspension, and a loss record may be owed
 * @DS_WRITER_CLOSING: the traced task, exiting, writes the stream's end
 * @DS_WRITER_CLOSED: the traced task exited; the consumer, for good
 *
 * PRODUCER -> CONSUMER -> PRODUCER: ds_stream_suspend(), ds_stream_resume().
 * PRODUCER -> CLOSING -> CLOSED, or CONSUMER -> CLOSED: ds_stream_close().
 */
enum ds_writer {
	DS_WRITER_PRODUCER,
	DS_WRITER_CONSUMER,
	DS_WRITER_CLOSING,
	DS_WRITER_CLOSED,
};

/*
 * A record ds.c stages before a marker and that no stream ever gets: the
 * marker (its details, then the BTS_PSEUDO_MARKER) is for the stream whose
 * @marker_key is the record's @to.  A marker for several streams has one
 * per stream, in a row, numbered from 0 in the argument: 0 begins the
 * next marker's recipients.  Its type is none that include/uapi/linux/bts.h
 * defines, nor ever will.
 */
#define DS_STAGED_RECIPIENT	0xff
#define DS_RECIPIENT(index, key)					\
	((struct bts_record) {						\
		.from	= BTS_PSEUDO(DS_STAGED_RECIPIENT, index),	\
		.to	= key,						\
	})

/**
 * struct ds_bts_area - the BTS half of the hardware's DS save area
 * @base: first byte of the buffer the hardware writes
 * @index: where the hardware writes the next record
 * @max: one byte past the last record that fits
 * @threshold: the hardware raises a PMI when @index reaches it (with
 *	DEBUGCTL.BTINT); beyond @max it never does
 *
 * The layout of the first four fields of the SDM's 64-bit DS save area.
 */
struct ds_bts_area {
	u64	base;
	u64	index;
	u64	max;
	u64	threshold;
};

/**
 * struct ds_staging - a CPU's staging buffer, split into two sub-buffers
 * @buf: 2 * @nr records; the hardware writes one half, the other is spare
 * @nr: records per sub-buffer
 * @slack: records between the interrupt threshold and the end of a
 *	sub-buffer
 * @active: the half the hardware writes, 0 or 1
 * @dropped: records staged into the active half found no room there: its
 *	drain reports an overrun, as when the hardware found it full
 *
 * The hardware writes into one half until the threshold PMI.  Swapping to
 * the other half is a matter of rewriting the DS save area, so it works in
 * NMI: no allocation, no remapping.
 */
struct ds_staging {
	struct bts_record	*buf;
	u32			nr;
	u32			slack;
	u8			active;
	bool			dropped;
};

/*
 * The least slack of a staging buffer: records between the threshold and
 * the end of a sub-buffer, room for what the hardware writes while the PMI
 * is on its way.
 */
#define DS_STAGING_SLACK	16

/* DEBUGCTL bits the DS layer owns (SDM Vol. 3B 18.4.1). */
#define DS_DEBUGCTL_TR		BIT_ULL(6)
#define DS_DEBUGCTL_BTS		BIT_ULL(7)
#define DS_DEBUGCTL_BTINT	BIT_ULL(8)
#define DS_DEBUGCTL_BTS_OFF_OS	BIT_ULL(9)
#define DS_DEBUGCTL_BTS_OFF_USR	BIT_ULL(10)
#define DS_DEBUGCTL_OWNED	(DS_DEBUGCTL_TR | DS_DEBUGCTL_BTS |	\
				 DS_DEBUGCTL_BTINT |			\
				 DS_DEBUGCTL_BTS_OFF_OS |		\
				 DS_DEBUGCTL_BTS_OFF_USR)

/* Where sub-buffer @half's threshold lies, as ds_staging_arm() sets it. */
static inline u64 ds_staging_threshold(const struct ds_staging *st,
				       unsigned int half)
{
	return (u64)(unsigned long)(st->buf + (u64)(half + 1) * st->nr -
				    st->slack);
}

void ds_staging_init(struct ds_staging *st, struct bts_record *buf, u32 nr,
		     u32 slack);
void ds_staging_arm(const struct ds_staging *st, struct ds_bts_area *hw);
u32 ds_staging_take(struct ds_staging *st, struct ds_bts_area *hw,
		    const struct bts_record **recs, bool *overran);
void ds_staging_arm_ring(const struct ds_staging *st, struct ds_bts_area *hw);
/*
 * In ring mode the last slot starts out holding this, which the hardware
 * never writes (a non-canonical source): if it is gone, the hardware has
 * been round.
 */
#define DS_RING_UNWRITTEN	BTS_PSEUDO(0, 0)

void ds_staging_peek_ring(const struct ds_staging *st,
			  const struct ds_bts_area *hw,
			  const struct bts_record *segs[2], u32 nrs[2]);
void ds_staging_take_ring(struct ds_staging *st, struct ds_bts_area *hw,
			  const struct bts_record *segs[2], u32 nrs[2]);
void ds_staging_ring_append(const struct ds_staging *st,
			    struct ds_bts_area *hw,
			    const struct bts_record *rec);
void ds_staging_append(struct ds_staging *st, struct ds_bts_area *hw,
		       const struct bts_record *rec, unsigned int nr);
bool ds_staging_try_append(const struct ds_staging *st, struct ds_bts_area *hw,
			   const struct bts_record *rec, unsigned int nr);
u64 ds_debugctl_for(unsigned int privs, bool ds_cpl);

void ds_stream_init(struct ds_stream *s, struct bts_record *buf, u32 size,
		    enum ds_priv priv, enum ds_mode mode);
void ds_splay(const struct bts_record *rec, unsigned int nr,
	      struct ds_stream *const *streams, unsigned int nr_streams);
u32 ds_stream_read_last(const struct ds_stream *s, struct bts_record *out,
			u32 n);
u32 ds_stream_read_last_stopped(const struct ds_stream *s,
				struct bts_record *out, u32 n);
u32 ds_stream_peek(const struct ds_stream *s, const struct bts_record *runs[2],
		   u32 nrs[2], u32 n);
void ds_stream_discard(struct ds_stream *s, u32 n);
u32 ds_stream_consume(struct ds_stream *s, struct bts_record *out, u32 n);
u32 ds_stream_pending(const struct ds_stream *s);
void ds_stream_append(struct ds_stream *s, const struct bts_record *rec);
void ds_splay_overrun(struct ds_stream **streams, unsigned int n);
void ds_stream_suspend(struct ds_stream *s);
void ds_stream_resume(struct ds_stream *s);
void ds_stream_close(struct ds_stream *s);
bool ds_stream_closed(const struct ds_stream *s);
bool ds_stream_producing(const struct ds_stream *s);
void ds_stream_flush_lost(struct ds_stream *s);
struct bts_record *ds_stream_swap(struct ds_stream *s, struct bts_record *buf,
				  u32 *first, u32 *count);

#endif /* __X86_KERNEL_DS_CORE_H */
