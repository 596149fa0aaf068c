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

#include "bts-dump.h"

struct async_sink {
	struct call_sink in;
	struct sink *next;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t queued_cond;	/* the queue got a call, or closed */
	pthread_cond_t room_cond;	/* the queue got room */
	struct sink_call *head, **tail;
	size_t bytes;
	size_t max_bytes;
	bool closed;
	int error;
};

static int async_take(struct call_sink *cs, struct sink_call *c)
{
	struct async_sink *a = (struct async_sink *)cs;
	int error;

	pthread_mutex_lock(&a->lock);
	/* One call larger than the bound is let through an empty queue. */
	while (a->bytes && a->bytes + c->len > a->max_bytes && !a->error)
		pthread_cond_wait(&a->room_cond, &a->lock);
	error = a->error;
	if (!error) {
		*a->tail = c;
		a->tail = &c->next;
		a->bytes += c->len;
		pthread_cond_signal(&a->queued_cond);
	}
	pthread_mutex_unlock(&a->lock);
	if (error)
		free(c);
	return error;
}

static void *async_thread(void *arg)
{
	struct async_sink *a = arg;
	struct sink_call *c;
	int error;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (!a->head && !a->closed)
			pthread_cond_wait(&a->queued_cond, &a->lock);
		c = a->head;
		if (!c)
			break;
		a->head = c->next;
		if (!a->head)
			a->tail = &a->head;
		pthread_mutex_unlock(&a->lock);

		error = a->error ? 0 : sink_call_make(a->next, c);

		pthread_mutex_lock(&a->lock);
		a->bytes -= c->len;
		if (error && !a->error)
			a->error = error;
		pthread_cond_signal(&a->room_cond);
		free(c);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
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

	call_sink_init(&a->in, async_take);
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
	return &a->in.sink;
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
