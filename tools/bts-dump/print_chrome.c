// SPDX-License-Identifier: GPL-2.0
/*
 * --format=chrome: Chrome's trace-event JSON (Perfetto, Chrome's DevTools,
 * speedscope), a per-thread timeline of calls: a complete event for each
 * call as the thread's stack of names (print_tree.c) changes, instant
 * events for its system calls, exceptions, losses and markers.
 *
 * The x-axis is time where the stream has it.  The kernel stamps each
 * return to user mode (BTS_DETAIL_KERNEL_ENTRY, CLOCK_MONOTONIC), and an
 * event between two of a thread's stamps gets the time its record's place
 * among the thread's records gives, linearly; before its first stamp and
 * after its last, at the rate of the nearest interval (of all threads',
 * for a thread with a single stamp or none).  Entries into the kernel
 * are not stamped, so an interval's time in the kernel at its end (a
 * sleep) is spread over its records too.  An event waits in its
 * thread's queue until the stamp after it has come, or until
 * CHROME_UNTIMED_MAX of them wait: then they go at the guessed rate, and
 * a track's time never goes back.  A trace in which a
 * thread ended, or CHROME_UNTIMED_MAX events went by, before any stamp
 * came (a raw file from a kernel without them) keeps the record's index
 * in the trace as its x-axis.  The tracks' names and the document's
 * otherData say which.
 */
#include <search.h>
#include <string.h>

#include "print_tree.h"

enum chrome_axis {
	CHROME_AXIS_UNDECIDED,
	CHROME_AXIS_TIME,
	CHROME_AXIS_RECORDS,
};

#define CHROME_UNTIMED_MAX	65536

/* For a thread whose rate nothing tells: 1 us a record. */
#define CHROME_DEFAULT_NS_PER_RECORD	1000.0

static const char chrome_time_axis[] =
	"time: the kernel's stamps of the returns to user mode, in between by the thread's records";
static const char chrome_record_axis[] =
	"the index of the branch record in the trace, not time";

/* An event, until its time is known. */
struct chrome_pending {
	/* interned; of a 'M' ('P') event: the thread's (process's) name */
	const char *name;
	u64 at;			/* the thread's records before its record */
	u64 seq;		/* the trace's records before it */
	char ph;
};

/*
 * Time on the x-axis, in microseconds: in steps of 1/1024 us, not of a
 * nanosecond, so that every value is a binary fraction a viewer's double
 * holds exactly, and where a call ends (ts + dur) is exactly where the
 * call around it ends or the next one begins.  With decimal nanoseconds,
 * a sum a little past its parent's end had DevTools drop the call.
 */
static u64 chrome_units(u64 ns)
{
	/* Strictly increasing: a step is less than a nanosecond. */
	return ns / 1000 * 1024 + ns % 1000 * 1024 / 1000;
}

/* A point or length on the x-axis in chrome_units(), or records. */
static void chrome_ts(FILE *f, bool timed, u64 v)
{
	/* 1/1024 = 0.0009765625: ten decimals, trailing zeros left out. */
	u64 frac = (v & 1023) * 9765625;
	int digits = 10;

	if (!timed || !frac) {
		fprintf(f, "%llu", (unsigned long long)(timed ? v >> 10 : v));
		return;
	}
	for (; frac % 10 == 0; frac /= 10)
		digits--;
	fprintf(f, "%llu.%0*llu", (unsigned long long)(v >> 10), digits,
		(unsigned long long)frac);
}

/*
 * Write @e, at @ns or its record's index.  A call is written once, as a
 * complete (X) event when it ends: the B only says when it began.  Viewers
 * need not match B/E pairs then, which Chrome's DevTools does across
 * processes (it reported pairs of two processes' calls as mismatched).
 * An E ends the call @out levels out from the innermost begun.
 */
static void chrome_write(struct printer *pr, const struct thread *t,
			 const struct chrome_pending *e, u64 ns, size_t out)
{
	struct tree_thread *tt = t->out;
	struct tree *tr = tree_of(pr);
	bool timed = tr->axis == CHROME_AXIS_TIME;
	u64 at = timed ? chrome_units(ns) : e->seq;
	FILE *f = pr->out;
	u64 begun;

	if (e->ph == 'B') {
		tt->begun[tt->nbegun++] = at;
		return;
	}
	fputs(tr->events ? ",\n" : "{\"traceEvents\":[\n", f);
	tr->events = true;
	fprintf(f, "{\"ph\":\"%c\",\"pid\":%u,\"tid\":%u,\"ts\":",
		e->ph == 'E' ? 'X' : e->ph == 'P' ? 'M' : e->ph, t->pid,
		t->tid);
	if (e->ph == 'E') {
		begun = tt->begun[tt->nbegun - 1 - out];
		chrome_ts(f, timed, begun);
		fputs(",\"dur\":", f);
		chrome_ts(f, timed, at - begun);
	} else {
		chrome_ts(f, timed, at);
	}
	if (e->ph == 'M' || e->ph == 'P') {
		fprintf(f, ",\"name\":\"%s_name\",\"args\":{\"name\":\"",
			e->ph == 'P' ? "process" : "thread");
		json_esc(f, e->name);
		fputs(timed ? " (x-axis: time)\"}}" :
			      " (x-axis: branch records, not time)\"}}", f);
		return;
	}
	fputs(",\"name\":\"", f);
	json_esc(f, e->name);
	putc('"', f);
	/* An instant event marks its thread's track only. */
	if (e->ph == 'i')
		fputs(",\"s\":\"t\"", f);
	putc('}', f);
}

/* The time of the thread's record @at, as the comment on top says. */
static u64 chrome_time(const struct tree *tr, const struct tree_thread *tt,
		       u64 at)
{
	double rate = tr->span_rec ? (double)tr->span_ns / tr->span_rec :
				     CHROME_DEFAULT_NS_PER_RECORD;
	u64 base_at = 0, base_ns = tr->t0;
	double ns;

	if (tt->ntimes >= 2) {
		base_at = tt->prev_at;
		base_ns = tt->prev_ns;
		rate = tt->last_at > tt->prev_at ?
		       (double)(tt->last_ns - tt->prev_ns) /
		       (tt->last_at - tt->prev_at) : 0;
	} else if (tt->ntimes == 1) {
		base_at = tt->last_at;
		base_ns = tt->last_ns;
	}
	ns = (double)base_ns + ((double)at - (double)base_at) * rate + 0.5;
	if (ns <= 0)
		return 0;
	/* Stamps of a malformed trace can take it past any u64. */
	return ns < 0x1p64 ? (u64)ns : UINT64_MAX;
}

/* Write @t's first @n waiting events. */
static void chrome_flush_n(struct printer *pr, struct thread *t, size_t n)
{
	struct tree_thread *tt = t->out;
	struct tree *tr = tree_of(pr);
	size_t i, run, m;

	for (i = 0; i < n; i += run) {
		const struct chrome_pending *e = &tt->pending[i];
		u64 ns = 0;

		for (run = 1; e->ph == 'E' && i + run < n &&
		     e[run].ph == 'E' && e[run].at == e->at; run++)
			;
		if (tr->axis == CHROME_AXIS_TIME) {
			/*
			 * Never back on a track, a nanosecond a record at
			 * least: a queue written early at a guessed rate
			 * (see chrome_event()) may meet a slower one when
			 * the next stamp comes, and an interval's stamps
			 * may be closer than its records.  A call then
			 * lasts: DevTools cuts a call short where a call
			 * of no duration in it begins.
			 */
			ns = max(chrome_time(tr, tt, e->at),
				 tt->written_ns + (e->at - tt->written_at));
			tt->written_ns = ns;
			tt->written_at = e->at;
		}
		/*
		 * The calls that end at one record, outermost first: of two
		 * calls of the same extent (a caller whose name became known
		 * with the call) a viewer takes the first for the outer.
		 */
		for (m = run; m--;)
			chrome_write(pr, t, &e[m], ns, m);
		if (e->ph == 'E')
			tt->nbegun -= run;
	}
	memmove(tt->pending, tt->pending + n,
		(tt->npending - n) * sizeof(*tt->pending));
	tt->npending -= n;
}

/* Write @t's waiting events up to its record @last, all if ~0. */
static void chrome_flush(struct printer *pr, struct thread *t, u64 last)
{
	struct tree_thread *tt = t->out;
	size_t n = 0;

	if (!tt)
		return;
	while (n < tt->npending && tt->pending[n].at <= last)
		n++;
	chrome_flush_n(pr, t, n);
}

/* @t's first waiting event's place in the trace, ~0 if none. */
static u64 chrome_next_seq(const struct thread *t)
{
	const struct tree_thread *tt = t->out;

	return tt && tt->npending ? tt->pending[0].seq : ~0ULL;
}

/*
 * No stamp came in time: the record index it is, for every thread.  What
 * waits is written in the trace's order, as it would have been at once.
 */
static void chrome_untimed(struct printer *pr)
{
	struct tree_thread *ft;
	struct thread *t, *first;
	u64 seq, next;
	size_t b, i;

	tree_of(pr)->axis = CHROME_AXIS_RECORDS;
	for (;;) {
		first = NULL;
		seq = ~0ULL;
		next = ~0ULL;
		hash_for_each(pr->threads, b, t, node) {
			u64 s = chrome_next_seq(t);

			if (s < seq) {
				next = seq;
				seq = s;
				first = t;
			} else if (s < next) {
				next = s;
			}
		}
		if (!first)
			return;
		/* Its events up to where another thread's come first. */
		ft = first->out;
		for (i = 0; i < ft->npending && ft->pending[i].seq <= next; i++)
			;
		chrome_flush_n(pr, first, i);
	}
}

/* One of @t's events, at its current record; @name interned. */
static void chrome_event(struct printer *pr, struct thread *t, char ph,
			 const char *name)
{
	struct tree_thread *tt = tree_thread(t, 1);
	struct tree *tr = tree_of(pr);
	struct chrome_pending *e;

	if (tt->npending == tt->pending_cap) {
		tt->pending_cap = tt->pending_cap ? 2 * tt->pending_cap : 64;
		tt->pending = xrealloc(tt->pending, tt->pending_cap *
				       sizeof(*tt->pending));
	}
	e = &tt->pending[tt->npending++];
	*e = (struct chrome_pending) {
		.name = name, .at = tt->nrec, .seq = pr->nrecords, .ph = ph,
	};
	if (tr->axis == CHROME_AXIS_RECORDS)
		chrome_flush(pr, t, ~0ULL);
	else if (tr->axis == CHROME_AXIS_UNDECIDED &&
		 ++tr->untimed > CHROME_UNTIMED_MAX)
		chrome_untimed(pr);
	else if (tr->axis == CHROME_AXIS_TIME &&
		 tt->npending > CHROME_UNTIMED_MAX)
		/* Bounded: a thread that goes without stamps gets a guess. */
		chrome_flush(pr, t, ~0ULL);
}

/* The kernel's stamp of @t's current record: @ns. */
static void chrome_stamp(struct printer *pr, struct thread *t, u64 ns)
{
	struct tree_thread *tt = tree_thread(t, 1);
	struct tree *tr = tree_of(pr);

	if (tr->axis == CHROME_AXIS_RECORDS)
		return;
	if (tr->axis == CHROME_AXIS_UNDECIDED) {
		tr->axis = CHROME_AXIS_TIME;
		tr->t0 = ns;
	}
	if (!tt->ntimes) {
		tt->last_at = tt->nrec;
		tt->last_ns = ns;
		tt->ntimes = 1;
		return;
	}
	tt->prev_at = tt->last_at;
	tt->prev_ns = tt->last_ns;
	tt->last_at = tt->nrec;
	/* CLOCK_MONOTONIC: a stamp never goes back. */
	tt->last_ns = max(ns, tt->prev_ns);
	tt->ntimes++;
	tr->span_ns += tt->last_ns - tt->prev_ns;
	tr->span_rec += tt->last_at - tt->prev_at;
	/* Its record's own events wait: they are the next interval's start. */
	if (tt->last_at)
		chrome_flush(pr, t, tt->last_at - 1);
}

static int pid_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y ? -1 : x > y;
}

/*
 * @t's track, named (chrome_write() says what its x-axis is) first; and
 * its process's group of tracks, the first time, for the viewer shows a
 * group's name where a track's is folded away.
 */
static void chrome_track(struct printer *pr, struct thread *t)
{
	struct tree *tr = tree_of(pr);
	char label[80 + COMM_MAX];
	void *pid = (void *)(uintptr_t)t->pid;
	const char *comm;

	if (t->out)
		return;
	comm = proc_comm(t->proc);
	if (!tfind(pid, &tr->named_pids, pid_cmp)) {
		if (!tsearch(pid, &tr->named_pids, pid_cmp))
			abort();
		/* The viewer adds the pid. */
		chrome_event(pr, t, 'P', intern(tr, comm ? comm : "process"));
	}
	comm = thread_comm(t);
	snprintf(label, sizeof(label), "%s%stid %u", comm ? comm : "",
		 comm ? " " : "", t->tid);
	chrome_event(pr, t, 'M', intern(tr, label));
}

/* An instant event on @t's track: a system call, a loss, a marker. */
static void chrome_instant(struct printer *pr, struct thread *t,
			   const char *name)
{
	chrome_track(pr, t);
	chrome_event(pr, t, 'i', intern(tree_of(pr), name));
}

/* End the calls @t has left and begin those it entered, it being at @at. */
static void chrome_move(struct printer *pr, struct thread *t, u64 at)
{
	struct tree_thread *tt;
	unsigned int keep = 0, i;

	chrome_track(pr, t);
	tree_update(pr, t, t->nframes, at);
	tt = t->out;
	while (keep < tt->nopen && keep < tt->len &&
	       tt->open[keep] == tt->names[keep])
		keep++;
	for (; tt->nopen > keep; tt->nopen--)
		chrome_event(pr, t, 'E', tt->open[tt->nopen - 1]);
	for (i = keep; i < tt->len; i++) {
		chrome_event(pr, t, 'B', tt->names[i]);
		tt->open[i] = tt->names[i];
	}
	tt->nopen = tt->len;
}

/* End all of @t's calls, and write what waits: the thread is done. */
static void chrome_close(struct printer *pr, struct thread *t)
{
	struct tree_thread *tt = t->out;

	if (!tt)
		return;
	for (; tt->nopen; tt->nopen--)
		chrome_event(pr, t, 'E', tt->open[tt->nopen - 1]);
	if (tree_of(pr)->axis == CHROME_AXIS_UNDECIDED)
		chrome_untimed(pr);
	chrome_flush(pr, t, ~0ULL);
}

/* Count @t's record: events from here on are at the next one. */
static void chrome_next(struct thread *t)
{
	tree_thread(t, 1)->nrec++;
}

static void chrome_branch(struct printer *pr, struct thread *t,
			  const struct branch *b)
{
	chrome_move(pr, t, b->to);
	chrome_next(t);
}

static void chrome_kernel(struct printer *pr, struct thread *t,
			  const struct kernel *k)
{
	chrome_track(pr, t);
	if (k->have_detail)
		chrome_stamp(pr, t, k->time);
	chrome_instant(pr, t, k->what);
	/* A signal handler's entry, its return, an exec: calls change. */
	if (k->resume)
		chrome_move(pr, t, k->resume);
	chrome_next(t);
}

static void chrome_lost(struct printer *pr, struct thread *t,
			const struct lost *l)
{
	chrome_instant(pr, t, l->what);
	chrome_next(t);
}

static void chrome_marker(struct printer *pr, struct thread *t,
			  const struct marker *m)
{
	char name[64];

	if (m->event)
		snprintf(name, sizeof(name), "event u:%s",
			 event_name(m->event));
	else
		snprintf(name, sizeof(name), "marker %u",
			 BTS_MARKER_ID(m->r->flags));
	chrome_instant(pr, t, name);
	chrome_next(t);
}

static void chrome_thread(struct printer *pr, struct thread *t,
			  unsigned int event)
{
	if (event == BTS_THREAD_EXIT)
		chrome_close(pr, t);
}

/* The thread starts over (a new thread, or its id reused): end its calls. */
static void chrome_thread_free(struct printer *pr, struct thread *t)
{
	chrome_close(pr, t);
	tree_thread_free(pr, t);
}

static int chrome_finish(struct printer *pr)
{
	struct tree *tr = tree_of(pr);
	struct thread *t;
	size_t b;

	/* The trace ends after its last record. */
	pr->nrecords++;
	if (tr->axis == CHROME_AXIS_UNDECIDED)
		chrome_untimed(pr);
	hash_for_each(pr->threads, b, t, node)
		chrome_close(pr, t);
	fputs(tr->events ? "\n]," : "{\"traceEvents\":[],", pr->out);
	fprintf(pr->out, "\"otherData\":{\"x-axis\":\"%s\"}}\n",
		tr->axis == CHROME_AXIS_TIME ? chrome_time_axis :
					       chrome_record_axis);
	return 0;
}

const struct output output_chrome = {
	.branch		= chrome_branch,
	.kernel		= chrome_kernel,
	.lost		= chrome_lost,
	.marker		= chrome_marker,
	.thread		= chrome_thread,
	.finish		= chrome_finish,
	.thread_free	= chrome_thread_free,
	.free		= tree_free,
};
