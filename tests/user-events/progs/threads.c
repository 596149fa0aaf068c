// SPDX-License-Identifier: GPL-2.0
/*
 * Threads writing user_events at the same time, for tests/user-events:
 * main and two threads each write bts_test_a 50 times (seq = 100 * the
 * thread's number + i), the threads started together.  Then main prints
 * who wrote what, one line per event, "TID bts_test_a SEQ".  Each marker
 * must be in its writer's stream, and only there.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "user_events.h"

#define NTHREADS	3
#define WRITES		50

static int fd, idx_a, go[2];
static pid_t tids[NTHREADS];
static volatile long sink;

static void *writer(void *arg)
{
	long n = (long)arg;
	char c;
	int i;

	tids[n] = gettid();
	if (n)
		CHECK(read(go[0], &c, 1) == 1);
	for (i = 0; i < WRITES; i++) {
		sink += leaf(i);
		emit_a(fd, idx_a, 100 * n + i, "thread");
	}
	return NULL;
}

int main(void)
{
	pthread_t th[NTHREADS];
	long i, j;

	fd = open(USER_EVENTS_DATA, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	idx_a = ue_register(fd, "bts_test_a u32 seq; char[8] tag", 0);
	CHECK(pipe(go) == 0);
	for (i = 1; i < NTHREADS; i++)
		CHECK(pthread_create(&th[i], NULL, writer, (void *)i) == 0);
	CHECK(write(go[1], "gg", NTHREADS - 1) == NTHREADS - 1);
	writer((void *)0);
	for (i = 1; i < NTHREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	for (i = 0; i < NTHREADS; i++)
		for (j = 0; j < WRITES; j++)
			printf("%d bts_test_a %ld\n", tids[i], 100 * i + j);
	return 0;
}
