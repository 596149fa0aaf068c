// SPDX-License-Identifier: GPL-2.0
/*
 * Threads in time order, for the outputs a person reads line by line
 * (text, --calls, jsonl).
 *
 * The kernel hands out each thread's records in order, but the threads'
 * in the order the reads took them: a thread's whole time slice, or
 * more, at once.  What puts threads in order is the time the kernel
 * stamps on each stretch in the kernel of a user-only stream, when the
 * thread returned to user mode (BTS_DETAIL_KERNEL_ENTRY): the records
 * from one return to the next ran after it.  So this stage cuts each
 * thread's records into runs at those stamps and passes the runs on in
 * the order of their stamps.  A run is passed on whole: runs of threads
 * that ran at once on two CPUs come one after the other, by their
 * starts.  A thread's records before its first stamp go just before it.
 *
 * It holds back up to ORDER_WINDOW records (the other calls count as
 * records of their size); when it holds that many, it passes on the
 * earlier half by time and keeps the rest.  A thread's records that come
 * more than that late follow later runs of other threads: they are
 * counted and reported at the end.  The other calls are passed on before
 * the first run that came after them: a process's mappings, memory and
 * name before the first such run of that process (a run of another may
 * come first yet have run later), the events' formats before any.
 */
#define _GNU_SOURCE
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include <linux/hashtable.h>

#include "bts-dump.h"

/* 24 MB of records: traces up to this size come in exact order. */
#define ORDER_WINDOW		BIT(20)
#define ORDER_HASH_BITS		10

struct ostream;

/* A thread of a stream. */
struct othread {
	struct ostream *s;
	u32 tid;
	u32 pid;
	u64 time;	/* the stamp of the run being read; 0: none yet */
	u64 first;	/* its first stamp; 0: none yet */
	bool said_unordered;	/* a run without stamp was passed on */
	struct hlist_node node;
};

struct ostream {
	u32 id;
	/* the thread whose records the stream carries now */
	struct othread *cur;
	/* the thread the next sink takes the stream's records to be of */
	struct othread *passed;
};

/* Records of one thread that came in a row, all of one run. */
struct piece {
	struct othread *t;
	/*
	 * The run's stamp; before the thread's first stamp, the newest of
	 * any thread's seen before the piece came (@before_first).
	 */
	u64 time;
	bool before_first;
	u64 seq;		/* when it came, among pieces and calls */
	size_t first, n;	/* in order_sink::recs */
};

/* A call other than records, held until the runs that came before it. */
struct held {
	struct held *next;
	u64 seq;
	struct sink_call *c;
};

/* The calls held for one process (or, order_sink::any, for all). */
struct held_queue {
	u32 pid;
	struct held *head, **tail;
	struct hlist_node node;		/* in order_sink::held, by pid */
};

struct order_sink {
	struct call_sink in;
	struct sink *next;
	void (*unordered)(void *arg, u32 tid, u32 pid);
	void (*arrived)(void *arg, const struct bts_record *r, size_t n);
	void *arg;
	DECLARE_HASHTABLE(threads, ORDER_HASH_BITS);
	struct ostream **streams;
	size_t nstreams;
	struct bts_record *recs;
	size_t nrecs, recs_cap;
	struct piece *pieces;
	size_t npieces, pieces_cap;
	/* the next append starts a piece: a run or a held call began */
	bool cut;
	DECLARE_HASHTABLE(held, ORDER_HASH_BITS);
	struct held_queue any;
	size_t held_bytes;
	u64 seq;
	u64 newest;		/* the newest stamp seen */
	bool said_unordered;
	unsigned int nthreads;	/* threads with ids seen, up to 2 */
	bool passed_any;
	u64 passed_time;	/* the latest run's passed on */
	u64 late;		/* records passed on after later runs */
	int error;
};

static struct ostream *stream_get(struct order_sink *o, u32 id)
{
	struct ostream *s;
	size_t i;

	for (i = 0; i < o->nstreams; i++)
		if (o->streams[i]->id == id)
			return o->streams[i];
	s = xcalloc(1, sizeof(*s));
	s->id = id;
	o->streams = xrealloc(o->streams,
			      (o->nstreams + 1) * sizeof(*o->streams));
	o->streams[o->nstreams++] = s;
	return s;
}

static struct othread *thread_get(struct order_sink *o, struct ostream *s,
				  u32 tid, u32 pid)
{
	struct othread *t;

	hash_for_each_possible(o->threads, t, node, tid)
		if (t->s == s && t->tid == tid && t->pid == pid)
			return t;
	t = xcalloc(1, sizeof(*t));
	t->s = s;
	t->tid = tid;
	t->pid = pid;
	hash_add(o->threads, &t->node, tid);
	if ((tid || pid) && o->nthreads < 2)
		o->nthreads++;
	return t;
}

/* A THREAD record: whose records follow; a new thread starts afresh. */
static struct othread *thread_begin(struct order_sink *o, struct ostream *s,
				    const struct bts_record *r)
{
	struct othread *t = thread_get(o, s, (u32)r->to, (u32)r->flags);

	/* Ids used again: its stamps are not those of the one before. */
	if (BTS_PSEUDO_ARG(r->from) == BTS_THREAD_NEW) {
		t->time = 0;
		t->first = 0;
		o->cut = true;
	}
	return t;
}

/* @t returned to user mode at @time: a new run starts. */
static void stamp(struct order_sink *o, struct othread *t, u64 time)
{
	/* A clock that went back would put a run before its thread's last. */
	if (time > t->time)
		t->time = time;
	if (!t->first)
		t->first = t->time;
	if (time > o->newest)
		o->newest = time;
	o->cut = true;
}

static void append(struct order_sink *o, struct othread *t,
		   const struct bts_record *r)
{
	struct piece *p = o->npieces ? &o->pieces[o->npieces - 1] : NULL;

	if (!p || o->cut || p->t != t || p->first + p->n != o->nrecs) {
		if (o->npieces == o->pieces_cap) {
			o->pieces_cap = o->pieces_cap ? 2 * o->pieces_cap : 256;
			o->pieces = xrealloc(o->pieces, o->pieces_cap *
					     sizeof(*o->pieces));
		}
		p = &o->pieces[o->npieces++];
		p->t = t;
		p->before_first = !t->time;
		p->time = t->time ? t->time : o->newest;
		p->seq = o->seq++;
		p->first = o->nrecs;
		p->n = 0;
		o->cut = false;
	}
	if (o->nrecs == o->recs_cap) {
		o->recs_cap = o->recs_cap ? 2 * o->recs_cap : 4096;
		o->recs = xrealloc(o->recs, o->recs_cap * sizeof(*o->recs));
	}
	o->recs[o->nrecs++] = *r;
	p->n++;
}

static bool is_stamp(const struct bts_record *r)
{
	return BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_DETAIL &&
	       BTS_DETAIL_TYPE(r->from) == BTS_PSEUDO_KERNEL &&
	       BTS_DETAIL_LAYOUT(r->from) == BTS_DETAIL_KERNEL_ENTRY &&
	       r->flags;
}

static void add_records(struct order_sink *o, u32 stream,
			const struct bts_record *r, size_t n)
{
	struct ostream *s = stream_get(o, stream);
	size_t i;

	/* Records before any THREAD record: a thread nobody named. */
	if (!s->cur)
		s->cur = thread_get(o, s, 0, 0);
	for (i = 0; i < n; i++, r++) {
		if (BTS_RECORD_IS_PSEUDO(r->from)) {
			if (BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_THREAD)
				s->cur = thread_begin(o, s, r);
			else if (is_stamp(r))
				stamp(o, s->cur, r->flags);
		}
		append(o, s->cur, r);
	}
}

static struct held_queue *held_queue(struct order_sink *o, u32 pid,
				     bool make)
{
	struct held_queue *q;

	hash_for_each_possible(o->held, q, node, pid)
		if (q->pid == pid)
			return q;
	if (!make)
		return NULL;
	q = xcalloc(1, sizeof(*q));
	q->pid = pid;
	q->tail = &q->head;
	hash_add(o->held, &q->node, pid);
	return q;
}

/* Pass on the calls of @q that came before @seq. */
static void pass_queue(struct order_sink *o, struct held_queue *q, u64 seq)
{
	struct held *h;

	while ((h = q->head) && h->seq < seq) {
		q->head = h->next;
		if (!q->head)
			q->tail = &q->head;
		if (!o->error)
			o->error = sink_call_make(o->next, h->c);
		o->held_bytes -= h->c->len;
		free(h->c);
		free(h);
	}
}

/* Pass on every held call that came before @seq. */
static void pass_calls(struct order_sink *o, u64 seq)
{
	struct held_queue *q;
	size_t b;

	pass_queue(o, &o->any, seq);
	hash_for_each(o->held, b, q, node)
		pass_queue(o, q, seq);
}

static void pass_piece(struct order_sink *o, const struct piece *p)
{
	const struct bts_record *r = o->recs + p->first;
	struct ostream *s = p->t->s;
	struct held_queue *q = held_queue(o, p->t->pid, false);
	struct bts_record framing = {
		.from = BTS_PSEUDO(BTS_PSEUDO_THREAD, BTS_THREAD_RECORDS),
		.to = p->t->tid,
		.flags = p->t->pid,
	};

	pass_queue(o, &o->any, p->seq);
	if (q)
		pass_queue(o, q, p->seq);
	if (o->error)
		return;
	/* Say whose records follow, unless the piece does. */
	if (s->passed != p->t &&
	    !(BTS_RECORD_IS_PSEUDO(r->from) &&
	      BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_THREAD))
		o->error = o->next->records(o->next, s->id, &framing, 1);
	if (!o->error)
		o->error = o->next->records(o->next, s->id, r, p->n);
	s->passed = p->t;
}

static int by_time(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Whether the pieces are of two threads or more (records nobody named
 * before a THREAD record are not a thread of their own).
 */
static bool threads_mixed(const struct order_sink *o)
{
	const struct othread *one = NULL, *t;
	size_t i;

	for (i = 0; i < o->npieces; i++) {
		t = o->pieces[i].t;
		if (!t->tid && !t->pid)
			continue;
		if (!one)
			one = t;
		else if (t->tid != one->tid || t->pid != one->pid)
			return true;
	}
	return false;
}

/*
 * A run of a thread that has no stamp yet, in a trace whose others have
 * them: it goes where it was read, which may not be when it ran.  Said
 * once per thread.
 */
static void unstamped(struct order_sink *o, const struct piece *p)
{
	struct othread *t = p->t;

	if (!p->before_first || t->first || !o->newest || o->nthreads < 2 ||
	    t->said_unordered || !o->unordered || (!t->tid && !t->pid))
		return;
	o->unordered(o->arg, t->tid, t->pid);
	t->said_unordered = true;
}

/*
 * Pass on, in time order, the runs stamped up to @until, until @target
 * records are passed (the last run passed whole).
 */
static void pass_on(struct order_sink *o, size_t target, u64 until)
{
	size_t i, k, done = 0;
	struct bts_record *recs;
	u64 before = o->passed_time;
	bool earlier = o->passed_any;

	if (!o->npieces) {
		pass_calls(o, UINT64_MAX);
		return;
	}
	if (!o->said_unordered && !o->newest && o->unordered &&
	    threads_mixed(o)) {
		o->unordered(o->arg, 0, 0);
		o->said_unordered = true;
	}
	for (i = 0; i < o->npieces; i++) {
		struct piece *p = &o->pieces[i];

		if (p->before_first && p->t->first) {
			p->time = p->t->first;
			p->before_first = false;
		}
	}
	qsort(o->pieces, o->npieces, sizeof(*o->pieces), by_time);
	for (k = 0; k < o->npieces && done < target; k++) {
		struct piece *p = &o->pieces[k];

		if (p->time > until)
			break;
		if (earlier && p->time < before)
			o->late += p->n;
		unstamped(o, p);
		pass_piece(o, p);
		done += p->n;
		if (!o->passed_any || p->time > o->passed_time)
			o->passed_time = p->time;
		o->passed_any = true;
	}

	/* Keep the rest, their records in a row again. */
	memmove(o->pieces, o->pieces + k, (o->npieces - k) * sizeof(*o->pieces));
	o->npieces -= k;
	recs = xmalloc((o->nrecs - done) * sizeof(*recs));
	for (i = 0, done = 0; i < o->npieces; i++) {
		struct piece *p = &o->pieces[i];

		memcpy(recs + done, o->recs + p->first, p->n * sizeof(*recs));
		p->first = done;
		done += p->n;
	}
	free(o->recs);
	o->recs = recs;
	o->nrecs = done;
	o->recs_cap = done;
	o->cut = true;

	/* The calls that came before every piece kept can go too. */
	if (!o->npieces) {
		pass_calls(o, UINT64_MAX);
	} else {
		u64 min = o->pieces[0].seq;

		for (i = 1; i < o->npieces; i++)
			if (o->pieces[i].seq < min)
				min = o->pieces[i].seq;
		pass_calls(o, min);
	}
}

static void pass_on_if_full(struct order_sink *o)
{
	if (o->nrecs + o->held_bytes / sizeof(struct bts_record) >=
	    ORDER_WINDOW)
		pass_on(o, o->nrecs / 2, UINT64_MAX);
}

/* Records are copied once, into the window, not held as a call. */
static int order_records(struct sink *s, u32 stream,
			 const struct bts_record *r, size_t n)
{
	struct order_sink *o = (struct order_sink *)s;

	if (!o->error) {
		if (o->arrived)
			o->arrived(o->arg, r, n);
		add_records(o, stream, r, n);
		pass_on_if_full(o);
	}
	return o->error;
}

/* The order stage's window settles first: the runs stamped before it go. */
static int order_settle(struct sink *s, u64 before_ns)
{
	struct order_sink *o = (struct order_sink *)s;

	if (!o->error && before_ns)
		pass_on(o, SIZE_MAX, before_ns - 1);
	if (!o->error)
		o->error = o->next->settle(o->next, before_ns);
	return o->error;
}

/* The other calls: held until the runs that came before them pass. */
static int order_take(struct call_sink *cs, struct sink_call *c)
{
	struct order_sink *o = (struct order_sink *)cs;
	struct held_queue *q;
	struct held *h;

	if (o->error) {
		free(c);
		return o->error;
	}
	/*
	 * A mapped file's copy says what a mapping was, not what happened
	 * when: records held from before it came may need it.
	 */
	if (c->kind == CALL_FILE) {
		o->error = sink_call_make(o->next, c);
		free(c);
		return o->error;
	}
	h = xmalloc(sizeof(*h));
	h->next = NULL;
	h->seq = o->seq++;
	h->c = c;
	/* The others' id is a pid; an event's format is everyone's. */
	q = c->kind == CALL_EVENT_FORMAT || c->kind == CALL_EXIT ?
	    &o->any : held_queue(o, c->id, true);
	*q->tail = h;
	q->tail = &h->next;
	o->held_bytes += c->len;
	/* Records after it must not join a piece from before it. */
	o->cut = true;
	pass_on_if_full(o);
	return o->error;
}

/**
 * order_sink_new() - a sink that passes threads' records on in time order
 * @next: the sink to pass them to
 * @unordered: called once, with @tid and @pid 0, before the records of a
 *	second thread are passed on, if they have no time stamps to order
 *	them by: they are passed on in the order they came; and, in a
 *	trace with stamps, once with a thread's ids before its first
 *	records passed on without any
 * @arrived: called with each run of records as it comes, before it is
 *	held, or NULL
 * @arg: for @unordered and @arrived
 *
 * Return: the new sink (order_sink() gives its struct sink).
 */
struct order_sink *order_sink_new(struct sink *next,
				  void (*unordered)(void *arg, u32 tid,
						    u32 pid),
				  void (*arrived)(void *arg,
						  const struct bts_record *r,
						  size_t n),
				  void *arg)
{
	struct order_sink *o = xcalloc(1, sizeof(*o));

	call_sink_init(&o->in, order_take);
	o->in.sink.records = order_records;
	o->in.sink.settle = order_settle;
	o->next = next;
	o->unordered = unordered;
	o->arrived = arrived;
	o->arg = arg;
	o->any.tail = &o->any.head;
	hash_init(o->held);
	hash_init(o->threads);
	return o;
}

struct sink *order_sink(struct order_sink *o)
{
	return &o->in.sink;
}

/**
 * order_sink_finish() - pass on all that is held, and free @o
 * @o: the sink
 *
 * Reports records that came too late to be put in order.
 *
 * Return: 0, or the first error of the sink it passes to.
 */
int order_sink_finish(struct order_sink *o)
{
	struct hlist_node *tmp;
	struct held_queue *q;
	struct othread *t;
	int error;
	size_t b;

	pass_on(o, SIZE_MAX, UINT64_MAX);
	error = o->error;
	if (o->late && !error)
		warnx("%llu records came too late to be put in time order (more than %lu records, or live, more than %u s): they follow later ones of other threads",
		      (unsigned long long)o->late, ORDER_WINDOW,
		      LIVE_SETTLE_SECONDS);
	hash_for_each_safe(o->threads, b, tmp, t, node)
		free(t);
	hash_for_each_safe(o->held, b, tmp, q, node)
		free(q);
	for (b = 0; b < o->nstreams; b++)
		free(o->streams[b]);
	free(o->streams);
	free(o->recs);
	free(o->pieces);
	free(o);
	return error;
}
