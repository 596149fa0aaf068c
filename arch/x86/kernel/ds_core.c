// SPDX-License-Identifier: GPL-2.0
/*
 * Filter and splay branch records into consumer streams; see ds_core.h.
 *
 * The hardware writes one record per taken branch, interrupt and exception,
 * of both privilege levels unless told otherwise.  Each stream gets the
 * records on its side of the privilege boundary.  A stretch of time on the
 * other side becomes one pseudo-record, built from the record that crossed
 * over (the stream goes "away") and the one that crossed back.  The hardware
 * may have dropped either crossing: with BTS_OFF_OS it does not record the
 * kernel's return to user mode (its source is at CPL 0), and with
 * BTS_OFF_USR not the entry into the kernel.  A record from the side a
 * stream thought it had left then tells that the crossing happened, and the
 * pseudo-record says "not seen" (0) for the missing address.
 */
#include "ds_core.h"

/*
 * Kernel addresses are in the upper canonical half, user addresses in the
 * lower, with 4-level and 5-level paging alike.
 */
static inline bool ds_kernel_addr(u64 addr)
{
	return (s64)addr < 0;
}

/**
 * ds_stream_init() - set up an empty stream
 * @s:    the stream
 * @buf:  storage for @size records
 * @size: capacity in records (at least 1; at least 2 in continuous mode)
 * @priv: which records the stream takes
 * @mode: ring or continuous
 *
 * Context: any; the stream must not be in use.
 */
void ds_stream_init(struct ds_stream *s, struct bts_record *buf, u32 size,
		    enum ds_priv priv, enum ds_mode mode)
{
	WARN_ON_ONCE(size < (mode == DS_MODE_CONTINUOUS ? 2 : 1));
	*s = (struct ds_stream) {
		.buf	= buf,
		.size	= size,
		.priv	= priv,
		.mode	= mode,
	};
}

static void ds_write(struct ds_stream *s, u64 from, u64 to, u64 flags)
{
	struct bts_record *r = &s->buf[s->pos];

	/* @pos is @head % @size, without a division per record. */
	if (++s->pos == s->size)
		s->pos = 0;
	r->from = from;
	r->to = to;
	r->flags = flags;
	/*
	 * Publish the record.  Pairs with smp_load_acquire(&s->head) in
	 * ds_stream_consume() and ds_stream_read_last().
	 */
	smp_store_release(&s->head, s->head + 1);
}

/* Free slots of a continuous stream. */
static u32 ds_room(const struct ds_stream *s)
{
	/*
	 * Pairs with smp_store_release(&s->tail) in ds_stream_consume(): the
	 * consumer has finished copying the slots it gives back before we
	 * overwrite them.
	 */
	return s->size - (u32)(s->head - smp_load_acquire(&s->tail));
}

/*
 * Append a record.  A full continuous stream counts it as lost instead; the
 * loss is reported in-stream, before the first record that fits again.
 */
static void ds_put(struct ds_stream *s, u64 from, u64 to, u64 flags)
{
	if (s->mode == DS_MODE_CONTINUOUS) {
		u32 room = ds_room(s);

		if (s->lost) {
			if (room < 2) {
				s->lost++;
				return;
			}
			ds_write(s, BTS_PSEUDO(BTS_PSEUDO_LOST, 0), s->lost, 0);
			s->lost = 0;
		} else if (!room) {
			s->lost = 1;
			return;
		}
	}
	ds_write(s, from, to, flags);
}

/* A user-only stream is back in user mode: one record for the kernel time. */
static void ds_user_back(struct ds_stream *s, u64 resume_to)
{
	ds_put(s, BTS_PSEUDO(BTS_PSEUDO_KERNEL, s->away_kind), resume_to,
	       s->away_from);
	s->away = false;
}

static void ds_splay_user(struct ds_stream *s, const struct bts_record *rec,
			  unsigned int nr, ds_classify_entry_fn classify)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		const struct bts_record *r = &rec[i];

		if (!ds_kernel_addr(r->from)) {
			/* A user-mode source: the return to it went unseen. */
			if (s->away)
				ds_user_back(s, 0);
			if (!ds_kernel_addr(r->to)) {
				ds_put(s, r->from, r->to, r->flags);
				continue;
			}
			/* Entering the kernel: hold it until the return. */
			s->away = true;
			s->away_from = r->from;
			s->away_kind = classify(r->to);
		} else if (!ds_kernel_addr(r->to)) {
			/* Back to user mode, maybe without a seen entry. */
			if (!s->away) {
				s->away_from = 0;
				s->away_kind = BTS_ENTRY_UNKNOWN;
			}
			ds_user_back(s, r->to);
		} else if (!s->away) {
			/* In the kernel without having seen the entry. */
			s->away = true;
			s->away_from = 0;
			s->away_kind = BTS_ENTRY_UNKNOWN;
		}
	}
}

/* A kernel-only stream is back in the kernel: one record for user time. */
static void ds_kernel_back(struct ds_stream *s, u64 reentry_to)
{
	ds_put(s, BTS_PSEUDO(BTS_PSEUDO_USER, 0), reentry_to, s->away_from);
	s->away = false;
}

static void ds_splay_kernel(struct ds_stream *s, const struct bts_record *rec,
			    unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		const struct bts_record *r = &rec[i];

		if (ds_kernel_addr(r->from)) {
			/* A kernel source: the entry into it went unseen. */
			if (s->away)
				ds_kernel_back(s, 0);
			if (ds_kernel_addr(r->to)) {
				ds_put(s, r->from, r->to, r->flags);
				continue;
			}
			/* Leaving for user mode: hold it until the return. */
			s->away = true;
			s->away_from = r->from;
		} else if (ds_kernel_addr(r->to)) {
			/* Back in the kernel, maybe without a seen exit. */
			if (!s->away)
				s->away_from = 0;
			ds_kernel_back(s, r->to);
		} else if (!s->away) {
			/* In user mode without having seen the exit. */
			s->away = true;
			s->away_from = 0;
		}
	}
}

static void ds_splay_all(struct ds_stream *s, const struct bts_record *rec,
			 unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		ds_put(s, rec[i].from, rec[i].to, rec[i].flags);
}

/**
 * ds_splay() - copy a batch of hardware records into every interested stream
 * @rec:        the records, oldest first, as the hardware wrote them
 * @nr:         number of records
 * @streams:    the streams the records belong to
 * @nr_streams: number of streams
 * @classify:   tells how user mode entered the kernel, for user-only streams
 *
 * Each stream gets the records of its privilege level, pseudo-records for
 * the time spent on the other side, and, in continuous mode, a loss record
 * for what did not fit.  A batch may end in the middle of a stretch on the
 * other side; the stream remembers it for the next batch.  A call with no
 * records just reports pending losses of streams that have room again.
 *
 * Context: the producer of every stream in @streams, so never concurrently
 * with another ds_splay() on any of them; no locks taken, no memory
 * allocated, NMI-safe.
 */
void ds_splay(const struct bts_record *rec, unsigned int nr,
	      struct ds_stream *const *streams, unsigned int nr_streams,
	      ds_classify_entry_fn classify)
{
	unsigned int i;

	for (i = 0; i < nr_streams; i++) {
		struct ds_stream *s = streams[i];

		switch (s->priv) {
		case DS_PRIV_USER:
			ds_splay_user(s, rec, nr, classify);
			break;
		case DS_PRIV_KERNEL:
			ds_splay_kernel(s, rec, nr);
			break;
		default:
			ds_splay_all(s, rec, nr);
			break;
		}
		if (s->lost && ds_room(s)) {
			ds_write(s, BTS_PSEUDO(BTS_PSEUDO_LOST, 0), s->lost, 0);
			s->lost = 0;
		}
	}
}

/**
 * ds_stream_read_last() - copy the newest records of a stream
 * @s:   the stream, in ring mode
 * @out: room for @n records
 * @n:   how many records are wanted
 *
 * Context: the producer must be stopped (the stream suspended), since it
 * would overwrite the records being copied.
 * Return: the number of records copied to @out, oldest first: @n, or fewer
 * if the stream holds fewer.
 */
u32 ds_stream_read_last(const struct ds_stream *s, struct bts_record *out,
			u32 n)
{
	/* Pairs with smp_store_release(&s->head) in ds_write(). */
	u64 head = smp_load_acquire(&s->head);
	u32 i;

	n = min_t(u64, n, min_t(u64, head, s->size));
	for (i = 0; i < n; i++)
		out[i] = s->buf[(head - n + i) % s->size];
	return n;
}

/**
 * ds_stream_consume() - take the oldest records from a continuous stream
 * @s:   the stream
 * @out: room for @n records
 * @n:   how many records are wanted at most
 *
 * The records taken are freed for the producer.
 *
 * Context: the stream's only consumer; may run concurrently with the
 * producer.
 * Return: the number of records copied to @out, oldest first.
 */
u32 ds_stream_consume(struct ds_stream *s, struct bts_record *out, u32 n)
{
	u64 tail = s->tail;
	/* Pairs with smp_store_release(&s->head) in ds_write(). */
	u64 head = smp_load_acquire(&s->head);
	u32 i;

	n = min_t(u64, n, head - tail);
	for (i = 0; i < n; i++)
		out[i] = s->buf[(tail + i) % s->size];
	/* Pairs with smp_load_acquire(&s->tail) in ds_room(). */
	smp_store_release(&s->tail, tail + n);
	return n;
}

/**
 * ds_stream_pending() - how many records a continuous stream holds
 * @s: the stream
 *
 * Context: the stream's consumer, or the producer.
 * Return: records written and not yet consumed.
 */
u32 ds_stream_pending(const struct ds_stream *s)
{
	/*
	 * Pairs with the releases in ds_write() and ds_stream_consume();
	 * the count is a snapshot either side may change right after.
	 */
	return smp_load_acquire(&s->head) - smp_load_acquire(&s->tail);
}
