// SPDX-License-Identifier: GPL-2.0
/*
 * Filter and splay branch records into consumer streams; see ds_core.h.
 *
 * The hardware writes one record per taken branch, interrupt and exception,
 * of both privilege levels unless told otherwise.  Each stream gets the
 * records on its side of the privilege boundary.
 *
 * A user-only stream learns of each stretch in the kernel from ds.c, which
 * writes a BTS_PSEUDO_KERNEL record into the staging buffer on the way back
 * to user mode, built from what the entry and exit code saw.  The
 * hardware's own crossing records are dropped: what the hardware writes of
 * a crossing under BTS_OFF_OS depends on the CPU, and their kernel ends
 * must not reach user space.
 *
 * A kernel-only stream turns each stretch in user mode into one
 * BTS_PSEUDO_USER record, built from the record that crossed over (the
 * stream goes "away") and the one that crossed back.  The hardware may
 * have dropped either crossing: with BTS_OFF_USR it does not record the
 * entries into the kernel.  A record from the side the stream thought it
 * had left then tells that the crossing happened, and the pseudo-record
 * says "not seen" (0) for the missing address.
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
 * @size: slots, at least 2 (see struct ds_stream)
 * @priv: which records the stream takes
 * @mode: ring or continuous
 *
 * Context: any; the stream must not be in use.
 */
void ds_stream_init(struct ds_stream *s, struct bts_record *buf, u32 size,
		    enum ds_priv priv, enum ds_mode mode)
{
	WARN_ON_ONCE(size < 2);
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

	/*
	 * Order the publication of the previous record before overwriting
	 * this slot.  Pairs with smp_rmb() in ds_stream_read_last(): a reader
	 * that copied part of this record then sees @head moved past it.
	 */
	smp_wmb();

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
				s->lost_total++;
				return;
			}
			ds_write(s, BTS_PSEUDO(BTS_PSEUDO_LOST, 0), s->lost, 0);
			s->lost = 0;
		} else if (!room) {
			s->lost = 1;
			s->lost_total++;
			return;
		}
	}
	ds_write(s, from, to, flags);
}

/*
 * Copy @n records, at most @size, into the slots from @pos on, wrapping
 * once at most.  Inlined: every run a stream keeps comes through here.
 */
static __always_inline void ds_copy_in(struct ds_stream *s,
				       const struct bts_record *rec, u32 n)
{
	u32 pos = s->pos, left = s->size - pos;

	if (likely(n < left)) {
		memcpy(&s->buf[pos], rec, n * sizeof(*rec));
		s->pos = pos + n;
		return;
	}
	memcpy(&s->buf[pos], rec, left * sizeof(*rec));
	if (n > left)
		memcpy(s->buf, rec + left, (n - left) * sizeof(*rec));
	s->pos = n - left;
}

/*
 * A ring takes @n records as ds_write() one by one would leave it, in at
 * most two copies of the last @size.  It overwrites slots that a reader
 * may be copying, while @head says only one slot is at risk: @claim tells
 * ds_stream_read_last() how far the overwriting may have gone.
 */
static void ds_ring_put_run(struct ds_stream *s, const struct bts_record *rec,
			    u32 n)
{
	u32 skip = n > s->size ? n - s->size : 0;

	WRITE_ONCE(s->claim, s->head + n);
	/*
	 * Order the claim before the overwriting.  Pairs with smp_rmb() in
	 * ds_stream_read_last(): a reader that copied part of a new record
	 * then sees the claim.
	 */
	smp_wmb();
	if (skip)
		s->pos = (s->pos + skip) % s->size;
	ds_copy_in(s, rec + skip, n - skip);
	/* As ds_write()'s: pairs with the readers' acquire of @head. */
	smp_store_release(&s->head, s->head + n);
}

/*
 * Append @n records of the batch, as ds_put() one by one would.  A
 * continuous stream takes them in at most two copies and one publication:
 * its free slots are nobody's until @head moves.
 */
static void ds_put_run(struct ds_stream *s, const struct bts_record *rec,
		       u32 n)
{
	u32 room, k;

	if (s->mode != DS_MODE_CONTINUOUS) {
		ds_ring_put_run(s, rec, n);
		return;
	}
	room = ds_room(s);
	if (likely(!s->lost && n <= room)) {
		ds_copy_in(s, rec, n);
		/* As ds_write()'s: pairs with the consumers' acquire. */
		smp_store_release(&s->head, s->head + n);
		return;
	}
	if (s->lost) {
		if (room < 2) {
			s->lost += n;
			s->lost_total += n;
			return;
		}
		ds_write(s, BTS_PSEUDO(BTS_PSEUDO_LOST, 0), s->lost, 0);
		s->lost = 0;
		room--;
	}
	k = min(n, room);
	if (k < n) {
		s->lost = n - k;
		s->lost_total += n - k;
	}
	if (!k)
		return;
	ds_copy_in(s, rec, k);
	/* As ds_write()'s: pairs with the consumers' acquire of @head. */
	smp_store_release(&s->head, s->head + k);
}

/* A user address, or 0 in place of one of the kernel half. */
static inline u64 ds_user_addr(u64 addr)
{
	return ds_kernel_addr(addr) ? 0 : addr;
}

/* The addresses of four records, or'ed: a kernel address sets the sign. */
static inline u64 ds_addrs4(const struct bts_record *r)
{
	return r[0].from | r[0].to | r[1].from | r[1].to |
	       r[2].from | r[2].to | r[3].from | r[3].to;
}

/* How many records from @rec on have user addresses at both ends. */
static unsigned int ds_user_run(const struct bts_record *rec, unsigned int nr)
{
	const struct bts_record *r = rec, *end = rec + nr;

	/*
	 * Eight at a time, one test of sixteen sign bits, then four, then
	 * one by one: runs of user branches are long, and end at a crossing.
	 */
	while (end - r >= 8 && !ds_kernel_addr(ds_addrs4(r) | ds_addrs4(r + 4)))
		r += 8;
	if (end - r >= 4 && !ds_kernel_addr(ds_addrs4(r)))
		r += 4;
	while (r < end && !ds_kernel_addr(r->from | r->to))
		r++;
	return r - rec;
}

/*
 * A record ds.c staged for a task's user-only streams: BTS_PSEUDO_KERNEL,
 * or the detail before it.
 */
static inline bool ds_staged_kernel_time(u64 from)
{
	return BTS_RECORD_IS_PSEUDO(from) &&
	       (BTS_PSEUDO_TYPE(from) == BTS_PSEUDO_KERNEL ||
		(BTS_PSEUDO_TYPE(from) == BTS_PSEUDO_DETAIL &&
		 BTS_DETAIL_TYPE(from) == BTS_PSEUDO_KERNEL));
}

/*
 * An annotation ds.c staged only for the streams that asked for it: a
 * marker or an address-space change, or a detail of one, or a marker's
 * recipient.
 */
static inline bool ds_staged_optional(u64 from)
{
	u32 type;

	if (!BTS_RECORD_IS_PSEUDO(from))
		return false;
	type = BTS_PSEUDO_TYPE(from);
	if (type == BTS_PSEUDO_DETAIL)
		type = BTS_DETAIL_TYPE(from);
	return type == BTS_PSEUDO_MARKER || type == BTS_PSEUDO_MAP ||
	       type == DS_STAGED_RECIPIENT;
}

/*
 * Whether @s takes the staged annotation @r (ds_staged_optional()).  Called
 * for each such record in order: a marker's recipients come first, and
 * say whether its details and the marker itself are for @s.
 */
static bool ds_takes_optional(struct ds_stream *s, const struct bts_record *r)
{
	u32 type = BTS_PSEUDO_TYPE(r->from);

	switch (type) {
	case DS_STAGED_RECIPIENT:
		if (!BTS_PSEUDO_ARG(r->from))
			s->marker_for_us = false;
		if (s->marker_key && r->to == s->marker_key)
			s->marker_for_us = true;
		return false;
	case BTS_PSEUDO_DETAIL:
		type = BTS_DETAIL_TYPE(r->from);
		break;
	}
	return type == BTS_PSEUDO_MARKER ? s->marker_for_us : s->maps;
}

static inline bool ds_recipient(u64 from)
{
	return BTS_RECORD_IS_PSEUDO(from) &&
	       BTS_PSEUDO_TYPE(from) == DS_STAGED_RECIPIENT;
}

/* The first recipient of a staged marker (ds.c stages them in order). */
static inline bool ds_first_recipient(u64 from)
{
	return ds_recipient(from) && !BTS_PSEUDO_ARG(from);
}

static inline bool ds_marker_detail(u64 from)
{
	return BTS_RECORD_IS_PSEUDO(from) &&
	       BTS_PSEUDO_TYPE(from) == BTS_PSEUDO_DETAIL &&
	       BTS_DETAIL_TYPE(from) == BTS_PSEUDO_MARKER;
}

/*
 * A marker as ds.c stages it, its recipients, its payload's details and the
 * marker, all in this batch: @s takes it whole or not at all, in one pass
 * rather than record by record (a traced application's events are hot).
 * A user-only stream (@user) gets no kernel address from it.  Returns the
 * records it spans; 0 if @rec starts none the batch holds whole, which
 * ds_takes_optional() then takes record by record.
 */
static unsigned int ds_put_marker(struct ds_stream *s,
				  const struct bts_record *rec,
				  unsigned int nr, bool user)
{
	unsigned int i, details;
	const struct bts_record *m;
	bool ours = false;

	for (i = 0; i < nr && ds_recipient(rec[i].from); i++)
		ours |= s->marker_key && rec[i].to == s->marker_key;
	for (details = i; i < nr && ds_marker_detail(rec[i].from); i++)
		;
	if (i == nr || !BTS_RECORD_IS_PSEUDO(rec[i].from) ||
	    BTS_PSEUDO_TYPE(rec[i].from) != BTS_PSEUDO_MARKER)
		return 0;
	m = &rec[i];
	/* The writer's address is a user one but in a forged frame. */
	if (ours && user && ds_kernel_addr(m->to)) {
		ds_put_run(s, rec + details, i - details);
		ds_put(s, m->from, 0, m->flags);
	} else if (ours) {
		ds_put_run(s, rec + details, i + 1 - details);
	}
	s->marker_for_us = false;
	return i + 1;
}

/*
 * A staged record for a user-only stream.  A KERNEL record's ends came from
 * registers user mode may have set (a sigreturn frame), a marker's address
 * from the writer's registers likewise: a kernel-half address is no user
 * address, and shows as "not seen".  A MAP record's range is the user's
 * own, checked the same way.  Details hold numbers, names and the
 * application's own data.
 */
static void ds_put_staged_user(struct ds_stream *s, const struct bts_record *r)
{
	switch (BTS_PSEUDO_TYPE(r->from)) {
	case BTS_PSEUDO_KERNEL:
	case BTS_PSEUDO_MAP:
		ds_put(s, r->from, ds_user_addr(r->to), ds_user_addr(r->flags));
		break;
	case BTS_PSEUDO_MARKER:
		ds_put(s, r->from, ds_user_addr(r->to), r->flags);
		break;
	default:
		ds_put(s, r->from, r->to, r->flags);
		break;
	}
}

/*
 * A staged record at @rec, of the @nr left in the batch, for @s, a stream
 * of the user side only (@user) or not: a marker whole, else the one
 * record if @s takes it.  Returns how many records it used.  Inlined:
 * each splay loop runs it for every record that is no branch it keeps.
 */
static __always_inline unsigned int ds_put_staged(struct ds_stream *s,
						  const struct bts_record *rec,
						  unsigned int nr, bool user)
{
	unsigned int run = ds_first_recipient(rec->from) ?
			   ds_put_marker(s, rec, nr, user) : 0;

	if (run)
		return run;
	/* Kernel time is a user-only stream's; the rest, the takers'. */
	if (!(user && ds_staged_kernel_time(rec->from)) &&
	    !(ds_staged_optional(rec->from) && ds_takes_optional(s, rec)))
		return 1;
	if (user)
		ds_put_staged_user(s, rec);
	else
		ds_put(s, rec->from, rec->to, rec->flags);
	return 1;
}

/*
 * ds_splay() reads each record of a batch once, whatever the number of
 * streams: ds_classify() cuts the batch into runs of one kind, and each
 * stream goes by runs.  Where a stream keeps records as they are, it
 * gathers them across runs and copies them in one go (ds_keep()); it
 * looks at single records only where it changes or drops them.
 */
enum ds_run_kind {
	DS_RUN_USER,		/* user addresses at both ends */
	DS_RUN_KERNEL,		/* kernel addresses at both ends */
	DS_RUN_OTHER,		/* the crossings between the two, and the rest */
	DS_RUN_KERNEL_TIME,	/* kernel time a user-only stream takes as is */
	DS_RUN_PSEUDO,		/* other pseudo-records: staged, or switches */
};

/*
 * Runs classified at a time: what ds_splay() keeps on the stack, in NMI.
 * A batch with more runs is splayed in several goes.
 */
#define DS_SPLAY_RUNS	16

/**
 * struct ds_runs - a stretch of a batch, classified
 * @nr: runs
 * @end: where each run ends, an index into the stretch
 * @kind: enum ds_run_kind of each run; adjacent runs differ, or the first
 *	filled @end and the next one is the next go's
 */
struct ds_runs {
	unsigned int	nr;
	u32		end[DS_SPLAY_RUNS];
	u8		kind[DS_SPLAY_RUNS];
};

/*
 * Bits 63 and 62: set in every kernel address, with 4-level and 5-level
 * paging alike, and in no pseudo-record's source (BTS_PSEUDO_TAG).  A
 * non-canonical address with the sign bit alone is no kernel branch here.
 */
#define DS_KERNEL_BITS	(3ULL << 62)

static inline bool ds_kernel_pair(u64 from_and_to)
{
	return (from_and_to & DS_KERNEL_BITS) == DS_KERNEL_BITS;
}

/* The addresses of four records, and'ed: a kernel pair keeps both bits. */
static inline u64 ds_ands4(const struct bts_record *r)
{
	return r[0].from & r[0].to & r[1].from & r[1].to &
	       r[2].from & r[2].to & r[3].from & r[3].to;
}

/* How many records from @rec on have kernel addresses at both ends. */
static unsigned int ds_kernel_run(const struct bts_record *rec,
				  unsigned int nr)
{
	const struct bts_record *r = rec, *end = rec + nr;

	while (end - r >= 8 && ds_kernel_pair(ds_ands4(r) & ds_ands4(r + 4)))
		r += 8;
	if (end - r >= 4 && ds_kernel_pair(ds_ands4(r)))
		r += 4;
	while (r < end && ds_kernel_pair(r->from & r->to))
		r++;
	return r - rec;
}

/*
 * Kernel time ds.c staged that a user-only stream takes unchanged: no
 * kernel address that ds_put_staged_user() would hide.  The common case:
 * the entry and exit code saw user addresses, and the other streams drop
 * these records, so whole runs of them go or stay at once.
 */
static inline bool ds_kernel_time_as_is(const struct bts_record *r)
{
	return ds_staged_kernel_time(r->from) &&
	       (BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_DETAIL ||
		!ds_kernel_addr(r->to | r->flags));
}

static unsigned int ds_kernel_time_run(const struct bts_record *rec,
				       unsigned int nr)
{
	unsigned int n = 0;

	while (n < nr && ds_kernel_time_as_is(&rec[n]))
		n++;
	return n;
}

static unsigned int ds_pseudo_run(const struct bts_record *rec,
				  unsigned int nr)
{
	unsigned int n = 0;

	while (n < nr && BTS_RECORD_IS_PSEUDO(rec[n].from) &&
	       !ds_kernel_time_as_is(&rec[n]))
		n++;
	return n;
}

/* Branches that are neither user nor kernel pairs: crossings, mostly. */
static unsigned int ds_other_run(const struct bts_record *rec,
				 unsigned int nr)
{
	unsigned int n = 0;

	while (n < nr && !BTS_RECORD_IS_PSEUDO(rec[n].from) &&
	       ds_kernel_addr(rec[n].from | rec[n].to) &&
	       !ds_kernel_pair(rec[n].from & rec[n].to))
		n++;
	return n;
}

/*
 * Classify @rec into at most DS_SPLAY_RUNS runs.  A marker (its recipients,
 * details and the marker itself) is never cut: a run of pseudo-records
 * other than kernel time goes on while they do.  Returns the records
 * classified.
 */
static unsigned int ds_classify(const struct bts_record *rec, unsigned int nr,
				struct ds_runs *runs)
{
	unsigned int i = 0, n;
	u8 kind;

	for (runs->nr = 0; i < nr && runs->nr < DS_SPLAY_RUNS; runs->nr++) {
		const struct bts_record *r = rec + i;

		if (!ds_kernel_addr(r->from | r->to)) {
			n = ds_user_run(r, nr - i);
			kind = DS_RUN_USER;
		} else if (ds_kernel_pair(r->from & r->to)) {
			n = ds_kernel_run(r, nr - i);
			kind = DS_RUN_KERNEL;
		} else if (ds_kernel_time_as_is(r)) {
			n = ds_kernel_time_run(r, nr - i);
			kind = DS_RUN_KERNEL_TIME;
		} else if (BTS_RECORD_IS_PSEUDO(r->from)) {
			n = ds_pseudo_run(r, nr - i);
			kind = DS_RUN_PSEUDO;
		} else {
			n = ds_other_run(r, nr - i);
			kind = DS_RUN_OTHER;
		}
		i += n;
		runs->end[runs->nr] = i;
		runs->kind[runs->nr] = kind;
	}
	return i;
}

/* Copy the records a stream keeps as they are, [@keep, @at) of @rec. */
static inline void ds_keep(struct ds_stream *s, const struct bts_record *rec,
			   unsigned int keep, unsigned int at)
{
	if (at > keep)
		ds_put_run(s, rec + keep, at - keep);
}

/*
 * The user-to-user records, the records of kernel time ds.c staged, and
 * the staged markers and address-space changes if the stream takes them.
 * @nr: records left in the batch from @rec on, for a marker's look ahead.
 */
static void ds_splay_user(struct ds_stream *s, const struct bts_record *rec,
			  unsigned int nr, const struct ds_runs *runs)
{
	unsigned int i, at = 0, keep = 0;

	for (i = 0; i < runs->nr; i++) {
		unsigned int end = runs->end[i];

		switch (runs->kind[i]) {
		case DS_RUN_USER:
		case DS_RUN_KERNEL_TIME:
			at = end;
			break;
		case DS_RUN_PSEUDO:
			ds_keep(s, rec, keep, at);
			while (at < end)
				at += ds_put_staged(s, &rec[at], nr - at, true);
			keep = at;
			break;
		default:
			ds_keep(s, rec, keep, at);
			at = end;
			keep = at;
			break;
		}
	}
	ds_keep(s, rec, keep, at);
}

/* A kernel-only stream is back in the kernel: one record for user time. */
static void ds_kernel_back(struct ds_stream *s, u64 reentry_to)
{
	ds_put(s, BTS_PSEUDO(BTS_PSEUDO_USER, 0), reentry_to, s->away_from);
	s->away = false;
}

/* A branch for a kernel-only stream, with the kernel at one end or none. */
static void ds_kernel_branch(struct ds_stream *s, const struct bts_record *r)
{
	if (ds_kernel_addr(r->from)) {
		/* A kernel source: the entry into it went unseen. */
		if (s->away)
			ds_kernel_back(s, 0);
		if (ds_kernel_addr(r->to)) {
			ds_put(s, r->from, r->to, r->flags);
			return;
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

static void ds_splay_kernel(struct ds_stream *s, const struct bts_record *rec,
			    unsigned int nr, const struct ds_runs *runs)
{
	unsigned int i, at = 0, keep = 0;

	for (i = 0; i < runs->nr; i++) {
		unsigned int end = runs->end[i];

		if (runs->kind[i] == DS_RUN_KERNEL) {
			/* The entry into the kernel went unseen. */
			if (s->away) {
				ds_keep(s, rec, keep, at);
				ds_kernel_back(s, 0);
				keep = at;
			}
			at = end;
			continue;
		}
		ds_keep(s, rec, keep, at);
		switch (runs->kind[i]) {
		case DS_RUN_USER:
			if (!s->away) {
				s->away = true;
				s->away_from = 0;
			}
			at = end;
			break;
		case DS_RUN_OTHER:
			for (; at < end; at++)
				ds_kernel_branch(s, &rec[at]);
			break;
		case DS_RUN_KERNEL_TIME:
			/* Staged kernel time is for user-only streams. */
			at = end;
			break;
		default:
			while (at < end)
				at += ds_put_staged(s, &rec[at], nr - at, false);
			break;
		}
		keep = at;
	}
	ds_keep(s, rec, keep, at);
}

/*
 * The records a stream of both sides takes as they are: all but a task's
 * user-only streams' KERNEL records, which stand for crossings this stream
 * has as they happened, and the annotations only the streams that take
 * them get, which are decided one at a time.
 */
static inline bool ds_all_run(u64 from)
{
	return !ds_staged_kernel_time(from) && !ds_staged_optional(from);
}

static void ds_splay_all(struct ds_stream *s, const struct bts_record *rec,
			 unsigned int nr, const struct ds_runs *runs)
{
	unsigned int i, at = 0, keep = 0;

	for (i = 0; i < runs->nr; i++) {
		unsigned int end = runs->end[i];

		switch (runs->kind[i]) {
		case DS_RUN_KERNEL_TIME:
			ds_keep(s, rec, keep, at);
			at = end;
			keep = at;
			continue;
		case DS_RUN_PSEUDO:
			break;
		default:
			at = end;
			continue;
		}
		while (at < end) {
			if (ds_all_run(rec[at].from)) {
				at++;
				continue;
			}
			ds_keep(s, rec, keep, at);
			at += ds_put_staged(s, &rec[at], nr - at, false);
			keep = at;
		}
	}
	ds_keep(s, rec, keep, at);
}

/* Write the loss record a continuous stream owes, if it has room now. */
static void ds_put_lost(struct ds_stream *s)
{
	if (s->lost && ds_room(s)) {
		ds_write(s, BTS_PSEUDO(BTS_PSEUDO_LOST, 0), s->lost, 0);
		s->lost = 0;
	}
}

/**
 * ds_splay() - copy a batch of hardware records into every interested stream
 * @rec:        the records, oldest first, as the hardware wrote them
 * @nr:         number of records
 * @streams:    the streams the records belong to
 * @nr_streams: number of streams
 *
 * Each stream gets the records of its privilege level, pseudo-records for
 * the time spent on the other side, and, in continuous mode, a loss record
 * for what did not fit.  A batch may end in the middle of a stretch on the
 * other side; a kernel-only stream remembers it for the next batch.  Of
 * the pseudo-records among @rec, BTS_PSEUDO_KERNEL and its detail go to
 * user-only streams only, BTS_PSEUDO_MARKER and its details to the streams
 * its DS_STAGED_RECIPIENT records name (@marker_key), BTS_PSEUDO_MAP and
 * its details to those that take address-space changes (@maps), the others
 * (the SWITCH records of a hardware ring, which serves a recorder of both
 * sides only) to streams of both sides.  A call with no records just
 * reports pending losses of streams that have room again.
 *
 * Context: the producer of every stream in @streams, so never concurrently
 * with another ds_splay() on any of them; no locks taken, no memory
 * allocated, NMI-safe.
 */
void ds_splay(const struct bts_record *rec, unsigned int nr,
	      struct ds_stream *const *streams, unsigned int nr_streams)
{
	struct ds_runs runs;
	unsigned int i, done;

	for (; nr; rec += done, nr -= done) {
		done = ds_classify(rec, nr, &runs);
		for (i = 0; i < nr_streams; i++) {
			struct ds_stream *s = streams[i];

			switch (s->priv) {
			case DS_PRIV_USER:
				ds_splay_user(s, rec, nr, &runs);
				break;
			case DS_PRIV_KERNEL:
				ds_splay_kernel(s, rec, nr, &runs);
				break;
			default:
				ds_splay_all(s, rec, nr, &runs);
				break;
			}
		}
	}
	for (i = 0; i < nr_streams; i++)
		ds_put_lost(streams[i]);
}

/* Copy @n records from the @first-th ever written, in at most two runs. */
static void ds_copy_out(const struct ds_stream *s, struct bts_record *out,
			u64 first, u32 n)
{
	u32 pos = first % s->size, run = min(n, s->size - pos);

	memcpy(out, s->buf + pos, run * sizeof(*out));
	memcpy(out + run, s->buf, (n - run) * sizeof(*out));
}

/*
 * The copies ds_stream_read_last() makes before it keeps the part of the
 * last one the producer did not overwrite: enough to outlast a burst (a
 * drain, a CPU going offline), bounded for a producer that keeps going.
 */
#define DS_READ_LAST_TRIES	16

/**
 * ds_stream_read_last() - copy the newest records of a stream
 * @s:   the stream, in ring mode
 * @out: room for @n records
 * @n:   how many records are wanted
 *
 * The producer may run meanwhile, on another CPU or in an NMI.  A copy it
 * overwrote in part is retried a few times, then its oldest records, the
 * ones overwritten, are left out: the records returned were the newest at
 * one instant, but fewer than asked for when the producer outpaces the
 * copy, as it does for a reader on the CPU it traces, whose copying makes
 * records (the reader would otherwise never finish).
 *
 * Context: any.  Not from NMI on the producer's CPU while it produces.
 * Return: the number of records copied to @out, oldest first: at most @n,
 * fewer if the stream holds fewer or the producer overwrote them.  A ring
 * of @size slots holds @size - 1: the last slot is the one the producer
 * may be overwriting.
 */
u32 ds_stream_read_last(const struct ds_stream *s, struct bts_record *out,
			u32 n)
{
	unsigned int tries = DS_READ_LAST_TRIES;
	u64 head, now, overwritten;

	do {
		/* Pairs with smp_store_release(&s->head) in ds_write(). */
		head = smp_load_acquire(&s->head);
		n = min_t(u64, n, min_t(u64, head, s->size - 1));
		ds_copy_out(s, out, head - n, n);
		/*
		 * The producer may have run on another CPU meanwhile.  It
		 * writes slot @now before publishing @now + 1, or a run up to
		 * @claim after claiming it, so the copy is whole if none of
		 * those slots was one of ours.  Orders the copy before the
		 * loads of @head and @claim; pairs with the release in
		 * ds_write() and the smp_wmb() in ds_ring_put_run().
		 */
		smp_rmb();
		now = max(READ_ONCE(s->head) + 1, READ_ONCE(s->claim));
		overwritten = now - (head - n) > s->size ?
			      min_t(u64, now - (head - n) - s->size, n) : 0;
	} while (overwritten && --tries);
	if (overwritten) {
		n -= overwritten;
		memmove(out, out + overwritten, n * sizeof(*out));
	}
	return n;
}

/**
 * ds_stream_read_last_stopped() - copy the newest records of a stopped ring
 * @s:   the stream, in ring mode
 * @out: room for @n records
 * @n:   how many records are wanted
 *
 * For a crash dump: the producer does not run, but may have stopped
 * anywhere, in the middle of a record or of a run (an oops or an NMI on
 * its CPU).  The slots it may have been writing are left out, and the copy
 * is never retried, so this never waits for a producer that will not come
 * back.
 *
 * Context: any, NMI included; the producer does not run meanwhile.
 * Return: the number of records copied to @out, oldest first.
 */
u32 ds_stream_read_last_stopped(const struct ds_stream *s,
				struct bts_record *out, u32 n)
{
	u64 head = READ_ONCE(s->head);
	/* Slots from @head on that a write under way may have begun. */
	u64 at_risk = max(head + 1, READ_ONCE(s->claim)) - head;

	if (at_risk >= s->size)
		return 0;
	n = min_t(u64, n, min_t(u64, head, s->size - at_risk));
	ds_copy_out(s, out, head - n, n);
	return n;
}

/**
 * ds_stream_peek() - where the oldest records of a continuous stream are
 * @s:    the stream
 * @runs: set to the records, in at most two runs of the stream's storage
 * @nrs:  set to the runs' lengths, 0 for a run not needed
 * @n:    how many records are wanted at most
 *
 * No copy: the records stay where they are, and the producer writes only
 * past them, until ds_stream_discard() gives their slots back; a consumer
 * that cannot deliver all of them (a fault copying to user space) loses
 * none.
 *
 * Context: the stream's only consumer; may run concurrently with the
 * producer.
 * Return: the number of records in the runs, oldest first, at most @n.
 */
u32 ds_stream_peek(const struct ds_stream *s, const struct bts_record *runs[2],
		   u32 nrs[2], u32 n)
{
	u64 tail = s->tail;
	/* Pairs with smp_store_release(&s->head) in ds_write(). */
	u64 head = smp_load_acquire(&s->head);
	u32 pos = tail % s->size;

	n = min_t(u64, n, head - tail);
	runs[0] = s->buf + pos;
	nrs[0] = min(n, s->size - pos);
	runs[1] = s->buf;
	nrs[1] = n - nrs[0];
	return n;
}

/**
 * ds_stream_discard() - free the oldest records of a continuous stream
 * @s: the stream
 * @n: how many, at most what the last ds_stream_peek() returned
 *
 * Context: the stream's only consumer; may run concurrently with the
 * producer.
 */
void ds_stream_discard(struct ds_stream *s, u32 n)
{
	/*
	 * The consumer is done with the slots ds_stream_peek() showed before
	 * the producer may reuse them.  Pairs with smp_load_acquire(&s->tail)
	 * in ds_room().
	 */
	smp_store_release(&s->tail, s->tail + n);
}

/**
 * ds_stream_consume() - take the oldest records from a continuous stream
 * @s:   the stream
 * @out: room for @n records
 * @n:   how many records are wanted at most
 *
 * ds_stream_peek(), a copy, and ds_stream_discard().
 *
 * Context: the stream's only consumer; may run concurrently with the
 * producer.
 * Return: the number of records copied to @out, oldest first.
 */
u32 ds_stream_consume(struct ds_stream *s, struct bts_record *out, u32 n)
{
	const struct bts_record *runs[2];
	u32 nrs[2];

	n = ds_stream_peek(s, runs, nrs, n);
	memcpy(out, runs[0], nrs[0] * sizeof(*out));
	memcpy(out + nrs[0], runs[1], nrs[1] * sizeof(*out));
	ds_stream_discard(s, n);
	return n;
}

/**
 * ds_stream_pending() - how many records a continuous stream holds
 * @s: the stream
 *
 * Context: any; a count others may change right after.
 * Return: records written and not yet consumed.
 */
u32 ds_stream_pending(const struct ds_stream *s)
{
	u64 tail;

	/*
	 * The tail first, pairing with the release in ds_stream_consume():
	 * a reader that is neither side (ds_bts_status()) then never sees a
	 * head behind it, which would count 4 billion.
	 */
	tail = smp_load_acquire(&s->tail);
	/* Pairs with the release in ds_write(). */
	return smp_load_acquire(&s->head) - tail;
}

/**
 * ds_stream_append() - add one record to a stream, in order
 * @s:   the stream
 * @rec: the record, a pseudo-record (SWITCH, a stretch the task ends in)
 *
 * Not filtered: every stream takes it, whatever its type.  A continuous
 * stream that is full counts @rec as lost.
 *
 * Context: the stream's producer (interrupts off or NMI).
 */
void ds_stream_append(struct ds_stream *s, const struct bts_record *rec)
{
	ds_put(s, rec->from, rec->to, rec->flags);
}

/*
 * A kernel-only stream away in user mode gets the pseudo-record for that
 * time now, with nothing to say where it came back: its task exited.  (A
 * user-only stream got its last KERNEL record from ds.c, staged when the
 * task began its exit.)
 */
static void ds_stream_end(struct ds_stream *s)
{
	if (s->away)
		ds_kernel_back(s, 0);
}

/**
 * ds_stream_suspend() - the consumer takes over writing a suspended stream
 * @s: the stream
 *
 * For the loss record a continuous stream may still owe, which
 * ds_stream_flush_lost() writes as room appears.  No-op once the stream
 * is closed, or while its task is closing it.
 *
 * Context: the consumer, once no producer is left that could write:
 * suspended, and a grace period later for producers that missed it.
 */
void ds_stream_suspend(struct ds_stream *s)
{
	u8 old = DS_WRITER_PRODUCER;

	try_cmpxchg(&s->writer, &old, DS_WRITER_CONSUMER);
}

/**
 * ds_stream_resume() - give a suspended stream back to its producer
 * @s: the stream
 *
 * A closed stream stays the consumer's.
 *
 * Context: the consumer, before it lets producers write again.
 */
void ds_stream_resume(struct ds_stream *s)
{
	u8 old = DS_WRITER_CONSUMER;

	try_cmpxchg(&s->writer, &old, DS_WRITER_PRODUCER);
}

/**
 * ds_stream_close() - end the stream of a task that exits
 * @s: the stream
 *
 * A stream still the producer's gets its end (see ds_stream_end()), and
 * then belongs to the consumer for good; a suspended one already does, and
 * gets no end: its consumer stopped it before.
 *
 * Context: the exiting task, once its producers are gone; the consumer may
 * be suspending, resuming or flushing the stream meanwhile.
 */
void ds_stream_close(struct ds_stream *s)
{
	u8 old = READ_ONCE(s->writer);

	for (;;) {
		if (old == DS_WRITER_PRODUCER) {
			if (!try_cmpxchg(&s->writer, &old, DS_WRITER_CLOSING))
				continue;
			ds_stream_end(s);
			/* Pairs with smp_load_acquire() in ds_stream_flush_lost(). */
			smp_store_release(&s->writer, DS_WRITER_CLOSED);
			return;
		}
		if (old != DS_WRITER_CONSUMER)
			return;
		if (try_cmpxchg(&s->writer, &old, DS_WRITER_CLOSED))
			return;
	}
}

/**
 * ds_stream_closed() - whether the stream's task exited
 * @s: the stream
 *
 * Context: any.
 * Return: true once ds_stream_close() made the stream the consumer's for
 * good; what the task's exit did before is visible then.
 */
bool ds_stream_closed(const struct ds_stream *s)
{
	/* Pairs with smp_store_release() in ds_stream_close(). */
	return smp_load_acquire(&s->writer) == DS_WRITER_CLOSED;
}

/**
 * ds_stream_producing() - whether the stream is its producer's to write
 * @s: the stream
 *
 * Context: the producer: nobody else takes the stream from it while it
 * looks (the consumer suspends it only once no producer can write).
 * Return: false once the consumer took the stream over, or its task
 * closed it.
 */
bool ds_stream_producing(const struct ds_stream *s)
{
	return READ_ONCE(s->writer) == DS_WRITER_PRODUCER;
}

/**
 * ds_stream_flush_lost() - write the loss record a stream still owes
 * @s: the stream, continuous
 *
 * Only where the consumer writes (suspended or closed): a producer writes
 * owed loss records itself, as room appears.
 *
 * Context: the consumer.
 */
void ds_stream_flush_lost(struct ds_stream *s)
{
	/*
	 * The end the exiting task wrote, and its @lost, are in place.  Pairs
	 * with smp_store_release() in ds_stream_close().
	 */
	u8 writer = smp_load_acquire(&s->writer);

	if (writer == DS_WRITER_CONSUMER || writer == DS_WRITER_CLOSED)
		ds_put_lost(s);
}

/**
 * ds_splay_overrun() - tell streams that the hardware dropped records
 * @streams: the streams the batch was splayed to
 * @n:       how many
 *
 * After a batch that ds_staging_take() found overrun: the dropped records
 * came after the batch, and may have been of any privilege, so every
 * stream gets a BTS_LOST_OVERRUN record.
 *
 * Context: the streams' producer (interrupts off or NMI).
 */
void ds_splay_overrun(struct ds_stream **streams, unsigned int n)
{
	const struct bts_record lost = {
		.from = BTS_PSEUDO(BTS_PSEUDO_LOST, BTS_LOST_OVERRUN),
	};
	unsigned int i;

	for (i = 0; i < n; i++)
		ds_stream_append(streams[i], &lost);
}

/**
 * ds_stream_swap() - give a continuous stream new storage, taking the old
 * @s:     the stream
 * @buf:   storage for @s->size records
 * @first: set to the slot of the oldest record left in the old storage
 * @count: set to the number of records left there, from @first on,
 *	   wrapping at @s->size
 *
 * The records not consumed stay in the old storage, which is the caller's
 * from now on; the stream goes on empty in @buf, its state (a pending loss,
 * a stretch on the other side) unchanged.
 *
 * Context: the stream's producer, stopped, and its consumer, in one.
 * Return: the old storage.
 */
struct bts_record *ds_stream_swap(struct ds_stream *s, struct bts_record *buf,
				  u32 *first, u32 *count)
{
	struct bts_record *old = s->buf;

	*first = s->tail % s->size;
	*count = s->head - s->tail;
	s->buf = buf;
	/* Pairs with smp_load_acquire(&s->tail) in ds_room(). */
	smp_store_release(&s->tail, s->head);
	return old;
}

/**
 * ds_staging_init() - set up a staging buffer of two sub-buffers
 * @st:  the staging buffer
 * @buf: storage for 2 * @nr records, as the hardware addresses it
 * @nr:  records per sub-buffer, more than @slack
 * @slack: records between the interrupt threshold and the end of a
 *	   sub-buffer, at least DS_STAGING_SLACK: what the hardware writes
 *	   between crossing the threshold and the PMI handler stopping it
 *
 * Context: any; the hardware must not be writing @buf.
 */
void ds_staging_init(struct ds_staging *st, struct bts_record *buf, u32 nr,
		     u32 slack)
{
	WARN_ON_ONCE(slack < DS_STAGING_SLACK || nr <= slack);
	*st = (struct ds_staging) { .buf = buf, .nr = nr, .slack = slack };
}

/**
 * ds_staging_arm() - point the hardware at the active sub-buffer, empty
 * @st: the staging buffer
 * @hw: the BTS fields of the DS save area
 *
 * The threshold is record aligned and @st->slack records short of the end,
 * so that records written while the PMI is pending still fit (SDM Vol. 3B
 * 18.4.9.2).
 *
 * Context: the hardware is not writing (TR or BTS clear).
 */
void ds_staging_arm(const struct ds_staging *st, struct ds_bts_area *hw)
{
	u64 base = (u64)(unsigned long)(st->buf + (u64)st->active * st->nr);
	u64 rec = sizeof(struct bts_record);

	hw->base = base;
	hw->index = base;
	hw->max = base + st->nr * rec;
	hw->threshold = ds_staging_threshold(st, st->active);
}

/**
 * ds_staging_take() - take the records of the active sub-buffer
 * @st:      the staging buffer
 * @hw:      the BTS fields of the DS save area
 * @recs:    set to the first record taken
 * @overran: set when the sub-buffer is full: the threshold interrupt came
 *	     later than the slack allows, and the hardware dropped what
 *	     came after the last record (ds_splay_overrun()); or when
 *	     records staged there found no room (ds_staging_append())
 *
 * Swaps the hardware over to the spare sub-buffer, so the records stay
 * valid while the caller splays them even if tracing resumes, until the
 * next ds_staging_take().
 *
 * Context: the hardware is not writing (TR or BTS clear).
 * Return: the number of records at @recs.
 */
u32 ds_staging_take(struct ds_staging *st, struct ds_bts_area *hw,
		    const struct bts_record **recs, bool *overran)
{
	u64 rec = sizeof(struct bts_record);
	u64 index = min(hw->index, hw->max);
	u32 nr = 0;

	/*
	 * A full sub-buffer may also have been filled exactly by its last
	 * record; a drain comes through code that branches, though, and
	 * that record was dropped.
	 */
	*overran = hw->index >= hw->max || st->dropped;
	st->dropped = false;

	/* An index outside our sub-buffer means someone else programmed it. */
	if (!WARN_ON_ONCE(hw->base != (u64)(unsigned long)
			  (st->buf + (u64)st->active * st->nr) ||
			  index < hw->base))
		nr = (index - hw->base) / rec;
	*recs = st->buf + (u64)st->active * st->nr;
	st->active ^= 1;
	ds_staging_arm(st, hw);
	return nr;
}

/*
 * Where the hardware's ring writes next.  It may leave its index at the
 * absolute maximum after writing the last slot and wrap only at the next
 * record.
 */
static u64 ds_ring_index(const struct ds_bts_area *hw)
{
	return hw->index == hw->max ? hw->base : hw->index;
}

/**
 * ds_staging_arm_ring() - let the hardware write the whole staging buffer
 *	as a ring
 * @st: the staging buffer
 * @hw: the BTS fields of the DS save area
 *
 * For a single consumer that wants the last records and takes them as the
 * hardware writes them: the hardware overwrites its oldest record
 * (DEBUGCTL.BTINT clear) and never interrupts (the threshold is past the
 * end), so nothing runs per record.  ds_staging_take_ring() gets them.
 *
 * Context: the hardware is not writing (TR or BTS clear).
 */
void ds_staging_arm_ring(const struct ds_staging *st, struct ds_bts_area *hw)
{
	u64 base = (u64)(unsigned long)st->buf;
	u64 rec = sizeof(struct bts_record);

	st->buf[2 * st->nr - 1].from = DS_RING_UNWRITTEN;
	hw->base = base;
	hw->index = base;
	hw->max = base + 2 * st->nr * rec;
	hw->threshold = hw->max + rec;
}

/**
 * ds_staging_peek_ring() - what the hardware wrote as a ring, left in place
 * @st:   the staging buffer, armed by ds_staging_arm_ring()
 * @hw:   the BTS fields of the DS save area
 * @segs: set to the older and the newer run of records
 * @nrs:  set to the number of records in each run
 *
 * Context: the hardware is not writing (TR or BTS clear); NMI-safe.
 */
void ds_staging_peek_ring(const struct ds_staging *st,
			  const struct ds_bts_area *hw,
			  const struct bts_record *segs[2], u32 nrs[2])
{
	u64 rec = sizeof(struct bts_record);
	u64 hw_index = ds_ring_index(hw);
	u32 index = 0;

	if (!WARN_ON_ONCE(hw->base != (u64)(unsigned long)st->buf ||
			  hw_index < hw->base || hw_index >= hw->max))
		index = (hw_index - hw->base) / rec;
	/* The run from the index to the end is older, if it was written. */
	segs[0] = st->buf + index;
	nrs[0] = st->buf[2 * st->nr - 1].from == DS_RING_UNWRITTEN ? 0 :
		 2 * st->nr - index;
	segs[1] = st->buf;
	nrs[1] = index;
}

/**
 * ds_staging_take_ring() - take what the hardware wrote as a ring
 * @st:   the staging buffer
 * @hw:   the BTS fields of the DS save area
 * @segs: set to the older and the newer run of records
 * @nrs:  set to the number of records in each run
 *
 * Leaves the hardware pointed at an empty sub-buffer, as ds_staging_arm()
 * does; the records stay valid until the hardware writes again.
 *
 * Context: the hardware is not writing (TR or BTS clear).
 */
void ds_staging_take_ring(struct ds_staging *st, struct ds_bts_area *hw,
			  const struct bts_record *segs[2], u32 nrs[2])
{
	ds_staging_peek_ring(st, hw, segs, nrs);
	st->active = 0;
	ds_staging_arm(st, hw);
}

/*
 * Put @rec in the slot the hardware writes next, then move the index past
 * it from where it was read, with a compare-and-exchange: in instructions
 * none of which is a taken branch, so the hardware, which writes a record
 * at each taken branch this CPU retires, writes none in between.  Only an
 * interrupt can come in between (an NMI: the callers have interrupts off),
 * whose records the hardware writes at the index and moves it; then the
 * exchange fails and @rec is not in the ring.  Returns whether it went in,
 * and in @slot where it was put.
 */
static __always_inline bool ds_ring_try_append(struct ds_bts_area *hw,
					       const struct bts_record *rec,
					       u64 *slot)
{
	u64 index, next;
	u8 moved;

	asm volatile("mov %[index], %[old]\n\t"
		     "mov %[old], %[slot]\n\t"
		     /* The hardware may leave it at the end: ds_ring_index(). */
		     "cmp %[max], %[slot]\n\t"
		     "cmovae %[base], %[slot]\n\t"
		     "mov %[from], (%[slot])\n\t"
		     "mov %[to], 8(%[slot])\n\t"
		     "mov %[flags], 16(%[slot])\n\t"
		     "lea 24(%[slot]), %[next]\n\t"
		     "cmp %[max], %[next]\n\t"
		     "cmovae %[base], %[next]\n\t"
		     "lock cmpxchg %[next], %[index]\n\t"
		     "sete %[moved]"
		     : [index] "+m" (hw->index), [old] "=&a" (index),
		       [slot] "=&r" (*slot), [next] "=&r" (next),
		       [moved] "=q" (moved)
		     : [base] "m" (hw->base), [max] "m" (hw->max),
		       [from] "r" (rec->from), [to] "r" (rec->to),
		       [flags] "r" (rec->flags)
		     : "cc", "memory");
	return moved;
}

/**
 * ds_staging_ring_append() - write a record into the hardware's ring
 * @st:  the staging buffer, armed by ds_staging_arm_ring()
 * @hw:  the BTS fields of the DS save area
 * @rec: the record, a pseudo-record
 *
 * Puts @rec where the hardware would have put its next record, stopped or
 * running: the flight recorder's switch record needs no DEBUGCTL access.
 * A record is in the ring once the index is past it, and whole then: a
 * reader that stops the CPU here (a crash's freeze, a reset) sees it whole
 * or not at all.  When an NMI's records come in between
 * (ds_ring_try_append()), the first of them took the slot @rec was being
 * written to, and one of the two overwrote the other, maybe in part: a
 * BTS_PSEUDO_LOST record of one takes the slot, and @rec goes after the
 * NMI's.  (A reset between the store and the exchange finds @rec at the
 * index, where the reader of the ring a reset keeps leaves the record out:
 * the hardware's own may be torn there.)
 *
 * Context: interrupts off, on the CPU whose DS save area holds @hw.
 */
void ds_staging_ring_append(const struct ds_staging *st,
			    struct ds_bts_area *hw,
			    const struct bts_record *rec)
{
	static const struct bts_record lost = {
		.from	= BTS_PSEUDO(BTS_PSEUDO_LOST, 0),
		.to	= 1,
	};
	u64 base = (u64)(unsigned long)st->buf, max = READ_ONCE(hw->max);
	u64 index = READ_ONCE(hw->index), slot;

	/* A ring's threshold is past its end, a sub-buffer's is not. */
	if (WARN_ON_ONCE(hw->base != base || hw->threshold <= max ||
			 index < base || index > max))
		return;
	/* The slot is behind the index now: the hardware is done with it. */
	while (!ds_ring_try_append(hw, rec, &slot))
		*(struct bts_record *)(unsigned long)slot = lost;
}

/**
 * ds_staging_append() - write records into the active sub-buffer
 * @st:  the staging buffer, armed by ds_staging_arm()
 * @hw:  the BTS fields of the DS save area
 * @rec: the records, pseudo-records
 * @nr:  how many
 *
 * Puts @rec where the hardware would have put its next records, so that
 * they reach the streams in order with the branches around them.  All of
 * them or, in a sub-buffer without room for all, none: a record never
 * loses its details.  Those are dropped as the hardware's are when it
 * finds the sub-buffer full, and reported as they are (ds_staging_take()).
 * No PMI comes for them: a sub-buffer they took to the threshold is the
 * caller's to drain.
 *
 * Context: the hardware is not writing (TR or BTS clear).
 */
void ds_staging_append(struct ds_staging *st, struct ds_bts_area *hw,
		       const struct bts_record *rec, unsigned int nr)
{
	u64 index = hw->index;

	if (WARN_ON_ONCE(hw->base != (u64)(unsigned long)
			 (st->buf + (u64)st->active * st->nr) ||
			 index < hw->base))
		return;
	if (index + nr * sizeof(*rec) <= hw->max) {
		memcpy((void *)(unsigned long)index, rec, nr * sizeof(*rec));
		hw->index = index + nr * sizeof(*rec);
	} else {
		st->dropped = true;
	}
}

/**
 * ds_staging_try_append() - write records into the active sub-buffer, the
 *	hardware left running
 * @st:  the staging buffer, armed by ds_staging_arm()
 * @hw:  the BTS fields of the DS save area
 * @rec: the records, pseudo-records
 * @nr:  how many
 *
 * As ds_staging_append(), with no DEBUGCTL access, on a CPU whose hardware
 * writes no record while the caller runs: it is off, or it leaves out CPL 0
 * (DS_DEBUGCTL_BTS_OFF_OS), and nothing an NMI does in the kernel is
 * recorded.  The index then moves under the caller only when an NMI drains
 * the sub-buffer (ds_staging_take()), swapping the hardware over to the
 * other half.  The records are copied past the index, and the index moved
 * over them with a compare-and-exchange from where it was read: a drain in
 * between makes it fail, the copy having gone into the half the drain took
 * and let go of, and the records are copied again into the other half.
 * So each reaches the streams whole and once, in order with the branches.
 *
 * Context: interrupts off, on the CPU whose DS save area holds @hw.
 * Return: true if the records went in; false, with nothing written, if they
 * would take the sub-buffer to its threshold, which only the hardware may
 * reach (with a hardware that raises its PMI at equality, a threshold
 * passed by software would raise none): stop the hardware, append with
 * ds_staging_append() and drain.
 */
bool ds_staging_try_append(const struct ds_staging *st, struct ds_bts_area *hw,
			   const struct bts_record *rec, unsigned int nr)
{
	u64 second = (u64)(unsigned long)(st->buf + st->nr);
	u64 len = (u64)nr * sizeof(*rec), index = READ_ONCE(hw->index);

	do {
		if (index + len >= ds_staging_threshold(st, index >= second))
			return false;
		memcpy((void *)(unsigned long)index, rec, len);
		/* Same CPU: orders the copy before the index for its NMIs. */
	} while (!try_cmpxchg_local(&hw->index, &index, index + len));
	return true;
}

/**
 * ds_debugctl_for() - the DEBUGCTL bits that trace what consumers want
 * @privs:  the union of enum ds_priv over the CPU's active consumers
 * @ds_cpl: the CPU can filter by privilege (CPUID.01H:ECX.DS-CPL)
 *
 * The hardware filter is used only when every consumer agrees: a
 * user-only set gets BTS_OFF_OS, a kernel-only set BTS_OFF_USR.  The
 * software filter in ds_splay() runs regardless, since the hardware still
 * writes the crossing records that carry the other side's addresses.
 *
 * Return: TR | BTS | BTINT and the filter bits, or 0 if nobody traces.
 */
u64 ds_debugctl_for(unsigned int privs, bool ds_cpl)
{
	u64 bits = DS_DEBUGCTL_TR | DS_DEBUGCTL_BTS | DS_DEBUGCTL_BTINT;

	if (!privs)
		return 0;
	if (ds_cpl && privs == DS_PRIV_USER)
		bits |= DS_DEBUGCTL_BTS_OFF_OS;
	if (ds_cpl && privs == DS_PRIV_KERNEL)
		bits |= DS_DEBUGCTL_BTS_OFF_USR;
	return bits;
}
