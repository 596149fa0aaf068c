// SPDX-License-Identifier: GPL-2.0
/*
 * A sink that passes what it is given to another sink, in a thread of its
 * own: live tracing reads /dev/bts while the printer decodes and prints
 * what was read before.  Printing a branch costs a symbol lookup or two
 * and a line of text; done in the loop that reads the streams, it held
 * the streams back, and with them (lossless tracing) the traced program.
 *
 * Calls are queued in order, their data copied.  The queue holds up to a
 * bound of bytes; past it the producer waits, so that a printer that
 * cannot keep up (a slow disk, a terminal) slows the reading, and through
 * the lossless streams the program, instead of bts-dump's memory growing
 * without end.  An error of the printer is the producer's on its next
 * call.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "bts-dump.h"

enum call {
	CALL_RECORDS,
	CALL_MAPS,
	CALL_MEMORY,
	CALL_EXIT,
	CALL_EVENT_FORMAT,
	CALL_COMM,
};

struct queued {
	struct queued *next;
	enum call call;
	u32 id;			/* stream, pid or event id */
	u32 arg;		/* ppid or generation */
	u64 addr;
	int status;
	size_t len;		/* of @data, in bytes */
	unsigned char data[];
};

struct async_sink {
	struct sink sink;
	struct sink *next;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t queued_cond;	/* the queue got a call, or closed */
	pthread_cond_t room_cond;	/* the queue got room */
	struct queued *head, **tail;
	size_t bytes;
	size_t max_bytes;
	bool closed;
	int error;
};

static int async_queue(struct async_sink *a, enum call call, u32 id,
		       u32 arg, u64 addr, int status, const void *data,
		       size_t len)
{
	struct queued *q = xmalloc(sizeof(*q) + len);
	int error;

	q->next = NULL;
	q->call = call;
	q->id = id;
	q->arg = arg;
	q->addr = addr;
	q->status = status;
	q->len = len;
	memcpy(q->data, data, len);

	pthread_mutex_lock(&a->lock);
	/* One call larger than the bound is let through an empty queue. */
	while (a->bytes && a->bytes + len > a->max_bytes && !a->error)
		pthread_cond_wait(&a->room_cond, &a->lock);
	error = a->error;
	if (!error) {
		*a->tail = q;
		a->tail = &q->next;
		a->bytes += len;
		pthread_cond_signal(&a->queued_cond);
	}
	pthread_mutex_unlock(&a->lock);
	if (error)
		free(q);
	return error;
}

static int async_call(struct sink *s, const struct queued *q)
{
	switch (q->call) {
	case CALL_RECORDS:
		return s->records(s, q->id, (const void *)q->data,
				  q->len / sizeof(struct bts_record));
	case CALL_MAPS:
		return s->maps(s, q->id, q->arg, (const char *)q->data, q->len);
	case CALL_MEMORY:
		return s->memory(s, q->id, q->addr, q->data, q->len);
	case CALL_EXIT:
		return s->exit(s, q->id, q->status, (const char *)q->data,
			       q->len);
	case CALL_EVENT_FORMAT:
		return s->event_format(s, q->id, q->arg, (const char *)q->data,
				       q->len);
	case CALL_COMM:
		return s->comm(s, q->id, (const char *)q->data, q->len);
	}
	return -1;
}

static void *async_thread(void *arg)
{
	struct async_sink *a = arg;
	struct queued *q;
	int error;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!a->head && !a->closed)
			pthread_cond_wait(&a->queued_cond, &a->lock);
		q = a->head;
		if (!q)
			break;
		a->head = q->next;
		if (!a->head)
			a->tail = &a->head;
		pthread_mutex_unlock(&a->lock);

		error = a->error ? 0 : async_call(a->next, q);

		pthread_mutex_lock(&a->lock);
		a->bytes -= q->len;
		if (error && !a->error)
			a->error = error;
		pthread_cond_signal(&a->room_cond);
		free(q);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

static int as_records(struct sink *s, u32 stream, const struct bts_record *r,
		      size_t n)
{
	return async_queue((struct async_sink *)s, CALL_RECORDS, stream, 0, 0,
			   0, r, n * sizeof(*r));
}

static int as_maps(struct sink *s, u32 pid, u32 ppid, const char *text,
		   size_t len)
{
	return async_queue((struct async_sink *)s, CALL_MAPS, pid, ppid, 0, 0,
			   text, len);
}

static int as_memory(struct sink *s, u32 pid, u64 addr, const void *data,
		     size_t len)
{
	return async_queue((struct async_sink *)s, CALL_MEMORY, pid, 0, addr,
			   0, data, len);
}

static int as_exit(struct sink *s, u32 pid, int status, const char *cmd,
		   size_t len)
{
	return async_queue((struct async_sink *)s, CALL_EXIT, pid, 0, 0,
			   status, cmd, len);
}

static int as_event_format(struct sink *s, u32 id, u32 gen,
			   const char *text, size_t len)
{
	return async_queue((struct async_sink *)s, CALL_EVENT_FORMAT, id, gen,
			   0, 0, text, len);
}

static int as_comm(struct sink *s, u32 pid, const char *name, size_t len)
{
	return async_queue((struct async_sink *)s, CALL_COMM, pid, 0, 0, 0,
			   name, len);
}

/**
 * async_sink_new() - a sink that calls @next from a thread of its own
 * @next: the sink to call, only ever from that thread until
 *	async_sink_finish() returns
 * @max_bytes: how much data may wait before a call waits for room
 *
 * Return: the new sink (async_sink() gives its struct sink); exits if the
 * thread cannot be made.
 */
struct async_sink *async_sink_new(struct sink *next, size_t max_bytes)
{
	struct async_sink *a = xcalloc(1, sizeof(*a));
	sigset_t all, old;
	int e;

	a->sink = (struct sink) {
		.records	= as_records,
		.maps		= as_maps,
		.memory		= as_memory,
		.exit		= as_exit,
		.event_format	= as_event_format,
		.comm		= as_comm,
	};
	a->next = next;
	a->tail = &a->head;
	a->max_bytes = max_bytes;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->queued_cond, NULL);
	pthread_cond_init(&a->room_cond, NULL);
	/*
	 * The signals live tracing reads from a signalfd are not its; a
	 * write to a closed pipe ends bts-dump, as from the main thread.
	 */
	sigfillset(&all);
	sigdelset(&all, SIGPIPE);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&a->thread, NULL, async_thread, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		errno = e;
		err(1, "a thread for the printer");
	}
	return a;
}

struct sink *async_sink(struct async_sink *a)
{
	return &a->sink;
}

/**
 * async_sink_finish() - pass on what is queued, end the thread, free @a
 * @a: the sink
 *
 * Return: 0, or the first error the sink it calls returned.
 */
int async_sink_finish(struct async_sink *a)
{
	int error;

	pthread_mutex_lock(&a->lock);
	a->closed = true;
	pthread_cond_signal(&a->queued_cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	error = a->error;
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->queued_cond);
	pthread_cond_destroy(&a->room_cond);
	free(a);
	return error;
}
