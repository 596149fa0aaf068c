// SPDX-License-Identifier: GPL-2.0
/*
 * perf's intel_bts PMU on the Debug Store layer: a CPU's or a task's
 * branches, in the BTS record format, into the event's AUX buffer.
 *
 * Every CPU has a consumer of the layer for each privilege filter, shared
 * by the intel_bts events of that filter; it records from the
 * pmu::start() of the CPU's event (one at a time: the PMU is exclusive)
 * to its pmu::stop().  Its records are copied into the AUX buffer at the
 * stop and, while the event runs, from the consumer's overflow callback,
 * so the PMU works with PTI, and beside every other consumer of the
 * layer: /dev/bts readers, the bts tracer, perf's BTS sampling events.
 *
 * Where stock could run at all, no copy is made: while the event records
 * the kernel too, is the CPU's only consumer and PTI is off, the layer
 * lends the hardware windows of the AUX buffer (bts_window()), which it
 * writes as on stock, with a PMI that ends each AUX transaction.
 *
 * What the buffer gets is what the hardware writes on stock, but for the
 * kernel addresses a user-only trace must not show: where stock writes a
 * branch into the kernel with its kernel end, a user-only event gets the
 * same record with the kernel end zeroed (to is 0), made from the
 * layer's record of the stretch in the kernel.  perf's decoder shows it
 * as a branch to 0, from the system call, fault or interrupted
 * instruction.  No other pseudo-record is copied.  Records the layer lost
 * mark the AUX record PERF_AUX_FLAG_PARTIAL; a full buffer,
 * PERF_AUX_FLAG_TRUNCATED, and the event records nothing more until perf
 * schedules it in again.
 */

#include <linux/bitops.h>
#include <linux/perf_event.h>
#include <linux/slab.h>
#include <asm/ds.h>
#include <asm/perf_event.h>

#include "../perf_event.h"

/**
 * struct bts_aux_buf - the AUX buffer of an intel_bts event
 * @pages: its pages, @nr_pages of them
 * @nr_pages: the number of pages
 * @snapshot: overwrite mode: a ring of @ring bytes, written continuously,
 *	that perf copies when asked (perf record -S)
 * @ring: snapshot mode: the size of the ring, a whole number of records
 * @pos: snapshot mode: where the next record goes in the ring
 */
struct bts_aux_buf {
	void		**pages;
	unsigned int	nr_pages;
	bool		snapshot;
	unsigned long	ring;
	unsigned long	pos;
};

/**
 * struct bts_ctx - a CPU's intel_bts state
 * @handle: the AUX transaction, open while @active
 * @done: bytes of the transaction in the buffer from handle::head on,
 *	copied or written by the hardware
 * @c: the consumer the CPU's event records through
 * @active: an event records: @handle and @c are valid.  Written and read
 *	on the CPU, interrupts off.
 */
struct bts_ctx {
	struct perf_output_handle	handle;
	unsigned long			done;
	struct ds_consumer		*c;
	bool				active;
};

static DEFINE_PER_CPU(struct bts_ctx, bts_ctx);

static struct pmu bts_pmu;

static enum ds_overflow_action bts_overflow(struct ds_consumer *c,
					    void *data);

static bool bts_window(struct ds_consumer *c, void *data, u32 written,
		       bool overran, struct ds_bts_window *next);

static const struct ds_bts_ops bts_ops = {
	.overflow	= bts_overflow,
	.window		= bts_window,
};

static DEFINE_PER_CPU(struct ds_consumer *, bts_user_consumer);
static DEFINE_PER_CPU(struct ds_consumer *, bts_kernel_consumer);
static DEFINE_PER_CPU(struct ds_consumer *, bts_all_consumer);

static struct intel_ds_consumers bts_user =
	INTEL_DS_CONSUMERS_INIT(bts_user, bts_user_consumer, DS_PRIV_USER,
				&bts_ops);
static struct intel_ds_consumers bts_kernel =
	INTEL_DS_CONSUMERS_INIT(bts_kernel, bts_kernel_consumer,
				DS_PRIV_KERNEL, &bts_ops);
static struct intel_ds_consumers bts_all =
	INTEL_DS_CONSUMERS_INIT(bts_all, bts_all_consumer, DS_PRIV_ALL,
				&bts_ops);

/* The consumers that record what @event asks for, or NULL: nothing. */
static struct intel_ds_consumers *bts_consumers(struct perf_event *event)
{
	if (event->attr.exclude_kernel)
		return event->attr.exclude_user ? NULL : &bts_user;
	return event->attr.exclude_user ? &bts_kernel : &bts_all;
}

static void *bts_setup_aux(struct perf_event *event, void **pages,
			   int nr_pages, bool overwrite)
{
	int node = event->cpu == -1 ? -1 : cpu_to_node(event->cpu);
	unsigned long size = (unsigned long)nr_pages << PAGE_SHIFT;
	struct bts_aux_buf *buf;

	buf = kzalloc_node(sizeof(*buf), GFP_KERNEL, node);
	if (!buf)
		return NULL;
	buf->pages = pages;
	buf->nr_pages = nr_pages;
	buf->snapshot = overwrite;
	buf->ring = size - size % sizeof(struct bts_record);
	return buf;
}

static void bts_free_aux(void *data)
{
	kfree(data);
}

/*
 * Copy @n bytes to byte @off of @buf, going on at byte 0 past @wrap (the
 * buffer's size, or the ring's in snapshot mode); @off < @wrap.  Return
 * where the next byte goes.
 */
static unsigned long bts_aux_write(struct bts_aux_buf *buf, unsigned long off,
				   unsigned long wrap, const void *src,
				   unsigned long n)
{
	unsigned long len;

	while (n) {
		len = min3(n, PAGE_SIZE - offset_in_page(off), wrap - off);
		memcpy(buf->pages[off >> PAGE_SHIFT] + offset_in_page(off), src,
		       len);
		src += len;
		n -= len;
		off += len;
		if (off == wrap)
			off = 0;
	}
	return off;
}

/*
 * The BTS record stock would have written for @rec, into @out, or NULL:
 * none.  Context: the AUX transaction @h, for its PARTIAL flag.
 */
static const struct bts_record *bts_aux_record(struct perf_output_handle *h,
					       const struct bts_record *rec,
					       struct bts_record *out)
{
	if (!BTS_RECORD_IS_PSEUDO(rec->from))
		return rec;
	switch (BTS_PSEUDO_TYPE(rec->from)) {
	case BTS_PSEUDO_KERNEL:
		/* The entry into the kernel, if the trace saw it. */
		if (!rec->flags)
			return NULL;
		*out = (struct bts_record){ .from = rec->flags };
		return out;
	case BTS_PSEUDO_LOST:
		perf_aux_output_flag(h, PERF_AUX_FLAG_PARTIAL);
		return NULL;
	default:
		return NULL;
	}
}

/*
 * Room for records in the open transaction, from handle::head on: what
 * perf gave it but for the mark that ends it (bts_aux_close()).
 */
static unsigned long bts_aux_room(struct perf_output_handle *h)
{
	/* bts_aux_begin() saw room for a record and the mark */
	return h->size - h->size % sizeof(struct bts_record) -
	       sizeof(struct bts_record);
}

/*
 * Put @n records into the transaction, after its @done bytes, or into the
 * snapshot ring, which takes everything.  When the buffer is full, the
 * rest is dropped and *@full set.
 */
static void bts_aux_add(struct bts_ctx *bts, const struct bts_record *recs,
			u32 n, bool *full)
{
	struct perf_output_handle *h = &bts->handle;
	struct bts_aux_buf *buf = perf_get_aux(h);
	unsigned long size = (unsigned long)buf->nr_pages << PAGE_SHIFT;
	unsigned long bytes = (unsigned long)n * sizeof(*recs);
	unsigned long room = bts_aux_room(h) - bts->done;

	if (buf->snapshot) {
		buf->pos = bts_aux_write(buf, buf->pos, buf->ring, recs, bytes);
		return;
	}
	if (bytes > room) {
		bytes = room - room % sizeof(*recs);
		*full = true;
	}
	bts_aux_write(buf, (h->head + bts->done) % size, size, recs, bytes);
	bts->done += bytes;
}

/*
 * Copy the branches the CPU's consumer holds into the AUX buffer, taking
 * them from the stream: each stretch of branches in one go, each
 * pseudo-record as bts_aux_record() says.  A full buffer marks the
 * transaction TRUNCATED.
 */
static void bts_aux_copy(struct bts_ctx *bts)
{
	const struct bts_record *runs[2], *recs, *rec;
	struct bts_record entry;
	u32 nrs[2], got, r, n, span;
	bool full = false;

	while ((got = ds_peek_bts(bts->c, runs, nrs, U32_MAX))) {
		for (r = 0; r < 2; r++) {
			recs = runs[r];
			n = nrs[r];
			while (n) {
				for (span = 0; span < n &&
				     !BTS_RECORD_IS_PSEUDO(recs[span].from);
				     span++)
					;
				if (span)
					bts_aux_add(bts, recs, span, &full);
				if (span < n) {
					rec = bts_aux_record(&bts->handle,
							     &recs[span], &entry);
					if (rec)
						bts_aux_add(bts, rec, 1, &full);
					span++;
				}
				recs += span;
				n -= span;
			}
		}
		ds_discard_bts(bts->c, got);
	}
	if (full)
		perf_aux_output_flag(&bts->handle, PERF_AUX_FLAG_TRUNCATED);
}

/*
 * Close the transaction with what the buffer got; the event is inactive.
 * Safe in NMI.
 *
 * Outside snapshot mode, what a transaction got ends with a record of
 * zeros: perf's decoder (intel_bts_process_buffer()) stops one record
 * short of the end of each piece of AUX data perf record read, and perf
 * reads up to the end of a transaction.  Without the mark it would drop
 * a branch wherever perf read; the mark it skips.
 */
static void bts_aux_close(struct bts_ctx *bts)
{
	static const struct bts_record end_mark;
	struct perf_output_handle *h = &bts->handle;
	struct bts_aux_buf *buf = perf_get_aux(h);
	unsigned long buf_size = (unsigned long)buf->nr_pages << PAGE_SHIFT;
	unsigned long size = 0;

	WRITE_ONCE(bts->active, false);
	if (buf->snapshot) {
		/* The ring's end, and the whole ring, as on stock. */
		h->head = buf->pos;
		size = buf_size;
	} else if (bts->done) {
		bts_aux_write(buf, (h->head + bts->done) % buf_size, buf_size,
			      &end_mark, sizeof(end_mark));
		size = bts->done + sizeof(end_mark);
	}
	perf_aux_output_end(h, size);
}

/* Copy what the stream holds and close the transaction.  Not in NMI. */
static void bts_aux_end(struct bts_ctx *bts)
{
	bts_aux_copy(bts);
	bts_aux_close(bts);
}

/*
 * Open a transaction for @event on this CPU.  Return false when its
 * buffer has no room for a record and the end mark: it then records
 * nothing until the next start.
 */
static bool bts_aux_begin(struct bts_ctx *bts, struct perf_event *event)
{
	struct bts_aux_buf *buf = perf_aux_output_begin(&bts->handle, event);

	if (!buf)
		return false;
	if (!buf->snapshot &&
	    bts->handle.size < 2 * sizeof(struct bts_record)) {
		perf_aux_output_end(&bts->handle, 0);
		return false;
	}
	bts->done = 0;
	WRITE_ONCE(bts->active, true);
	return true;
}

/*
 * The next window of the AUX buffer the hardware may write, in @w: from
 * the end of what the transaction got, as far as the pages run on
 * contiguously in the kernel's map, the transaction has room, and a
 * little past perf's wakeup mark, so that its PMI, which ends the
 * transaction, wakes perf where it asked (as stock places it).  False if
 * that leaves no more than the PMI's slack: the records are then copied,
 * across page runs too, until the layer asks again.
 */
static bool bts_aux_window(struct bts_ctx *bts, struct ds_bts_window *w)
{
	const unsigned long slack = DS_BTS_PMI_SLACK * sizeof(struct bts_record);
	struct perf_output_handle *h = &bts->handle;
	struct bts_aux_buf *buf = perf_get_aux(h);
	unsigned long size = (unsigned long)buf->nr_pages << PAGE_SHIFT;
	unsigned long pos = h->head + bts->done, off = pos % size;
	unsigned long room = bts_aux_room(h) - bts->done;
	unsigned long pg = off >> PAGE_SHIFT, run;

	if (h->wakeup > pos)
		room = min(room, h->wakeup - pos + slack);
	run = PAGE_SIZE - offset_in_page(off);
	while (run < room && pg + 1 < buf->nr_pages &&
	       buf->pages[pg + 1] == buf->pages[pg] + PAGE_SIZE) {
		run += PAGE_SIZE;
		pg++;
	}
	room = min(room, run) / sizeof(struct bts_record);
	if (room <= DS_BTS_PMI_SLACK)
		return false;
	w->base = buf->pages[off >> PAGE_SHIFT] + offset_in_page(off);
	w->nr = room;
	return true;
}

/*
 * Zero copy (struct ds_bts_ops::window): the hardware wrote @written
 * records after the transaction's @done bytes.  At its PMI, in NMI
 * (@written records with a @next wanted), the window is full: the
 * transaction ends, waking perf as stock does, and a new one begins; the
 * stream has had nothing since the window was lent.  Entering (none
 * written), what the stream holds goes first.
 */
static bool bts_window(struct ds_consumer *c, void *data, u32 written,
		       bool overran, struct ds_bts_window *next)
{
	struct bts_ctx *bts = this_cpu_ptr(&bts_ctx);
	struct perf_event *event = bts->handle.event;
	struct bts_aux_buf *buf;

	if (!READ_ONCE(bts->active) || bts->c != c)
		return false;
	bts->done += (unsigned long)written * sizeof(struct bts_record);
	if (overran)
		perf_aux_output_flag(&bts->handle, PERF_AUX_FLAG_TRUNCATED);
	buf = perf_get_aux(&bts->handle);
	/* Snapshot mode's ring is copied into: it wraps on no page run. */
	if (!next || buf->snapshot)
		return false;
	if (written) {
		bts_aux_close(bts);
		if (!bts_aux_begin(bts, event))
			return false;
	} else {
		bts_aux_copy(bts);
	}
	return bts_aux_window(bts, next);
}

/*
 * The CPU's consumer holds a quarter of its stream: copy it on.  With the
 * buffer full, or no room left after perf's wakeup, stop recording until
 * the next start, as the hardware stopped on stock.
 */
static enum ds_overflow_action bts_overflow(struct ds_consumer *c, void *data)
{
	struct bts_ctx *bts = this_cpu_ptr(&bts_ctx);
	struct perf_event *event = bts->handle.event;
	const struct bts_record *runs[2];
	struct bts_aux_buf *buf;
	u32 nrs[2], got;

	if (!READ_ONCE(bts->active) || bts->c != c) {
		/* No event records: these are of none. */
		while ((got = ds_peek_bts(c, runs, nrs, U32_MAX)))
			ds_discard_bts(c, got);
		return DS_OVERFLOW_CONTINUE;
	}
	buf = perf_get_aux(&bts->handle);
	if (buf->snapshot) {
		bts_aux_copy(bts);
		return DS_OVERFLOW_CONTINUE;
	}
	bts_aux_end(bts);
	return bts_aux_begin(bts, event) ? DS_OVERFLOW_CONTINUE :
					   DS_OVERFLOW_SUSPEND;
}

static void bts_event_start(struct perf_event *event, int flags)
{
	struct bts_ctx *bts = this_cpu_ptr(&bts_ctx);

	bts->c = this_cpu_read(*bts_consumers(event)->cons);
	if (!bts_aux_begin(bts, event)) {
		event->hw.state = PERF_HES_STOPPED;
		return;
	}
	perf_event_itrace_started(event);
	event->hw.state = 0;
	ds_resume_local(bts->c);
}

static void bts_event_stop(struct perf_event *event, int flags)
{
	struct bts_ctx *bts = this_cpu_ptr(&bts_ctx);

	if (READ_ONCE(bts->active)) {
		ds_suspend_local(bts->c);
		bts_aux_end(bts);
	}
	event->hw.state |= PERF_HES_STOPPED;
}

static void bts_event_del(struct perf_event *event, int mode)
{
	bts_event_stop(event, PERF_EF_UPDATE);
}

static int bts_event_add(struct perf_event *event, int mode)
{
	struct bts_ctx *bts = this_cpu_ptr(&bts_ctx);

	event->hw.state = PERF_HES_STOPPED;
	if (bts->handle.event)
		return -EBUSY;
	if (mode & PERF_EF_START) {
		bts_event_start(event, 0);
		if (event->hw.state & PERF_HES_STOPPED)
			return -EINVAL;
	}
	return 0;
}

static void bts_event_destroy(struct perf_event *event)
{
	intel_ds_consumers_put(bts_consumers(event));
}

static int bts_event_init(struct perf_event *event)
{
	struct intel_ds_consumers *set;
	int ret;

	if (event->attr.type != bts_pmu.type)
		return -ENOENT;

	/*
	 * Stock's rule: the PMU hands out kernel addresses (the kernel end
	 * of a branch into the kernel), so a user-only event needs what a
	 * kernel one does.  The layer's user-only streams have none, but
	 * the rule is the ABI perf and its users know.
	 */
	if (event->attr.exclude_kernel) {
		ret = perf_allow_kernel();
		if (ret)
			return ret;
	}
	set = bts_consumers(event);
	if (!set)
		return -EINVAL;
	ret = intel_ds_consumers_get(set);
	if (ret)
		return ret;
	event->destroy = bts_event_destroy;
	return 0;
}

static void bts_event_read(struct perf_event *event)
{
}

static __init int bts_init(void)
{
	if (!boot_cpu_has(X86_FEATURE_DTES64) || !x86_pmu.bts)
		return -ENODEV;

	/* Large pages: long runs for the hardware to write without a copy. */
	bts_pmu.capabilities	= PERF_PMU_CAP_ITRACE | PERF_PMU_CAP_EXCLUSIVE |
				  PERF_PMU_CAP_AUX_PREFER_LARGE;
	bts_pmu.task_ctx_nr	= perf_sw_context;
	bts_pmu.event_init	= bts_event_init;
	bts_pmu.add		= bts_event_add;
	bts_pmu.del		= bts_event_del;
	bts_pmu.start		= bts_event_start;
	bts_pmu.stop		= bts_event_stop;
	bts_pmu.read		= bts_event_read;
	bts_pmu.setup_aux	= bts_setup_aux;
	bts_pmu.free_aux	= bts_free_aux;

	return perf_pmu_register(&bts_pmu, "intel_bts", -1);
}
arch_initcall(bts_init);
