// SPDX-License-Identifier: GPL-2.0
/*
 * Five threads besides main, traced at once, each with its own known
 * branch pattern: thread i (1..5) calls leaf() 50 * i times and then
 * rec(i), which recurses i times.  main creates threads 1 to 4; thread 1
 * creates thread 5, so inheritance is tested from a thread too.  Thread i
 * names itself "worker-i" (pthread_setname_np()) as it starts.
 *
 * Traces of two runs can only be compared if every thread takes the same
 * path in both, however the threads are scheduled.  So whatever touches
 * state glibc shares between threads (creating them, their stacks, malloc
 * arenas, exiting and joining) happens one thread at a time, and every wait
 * is a blocking system call whose user-mode path is the same however long
 * it blocks:
 *
 * - a new thread stores its tid, writes a byte to its "ready" pipe and
 *   blocks reading "go"; its creator waits for that byte before creating
 *   the next thread.  This also orders the tids, by which the comparison
 *   tells the threads apart: main, 1, 5, 2, 3, 4;
 * - after "go" the threads compute at the same time (leaf() and rec()
 *   share nothing), then block reading their "quit" pipe;
 * - main lets them end one at a time: it opens a pidfd of the thread
 *   (PIDFD_THREAD), writes to its "quit" pipe, waits in poll() until the
 *   thread is gone, and only then joins it, so that pthread_join() finds
 *   it gone and does not wait.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/pidfd.h>
#include <unistd.h>
#include "common.h"

/* Linux 6.9; glibc 2.36 does not know it yet. */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD	O_EXCL
#endif

#define NTHREADS	5

static pthread_t th[NTHREADS + 1];
static pid_t tids[NTHREADS + 1];
static int ready[NTHREADS + 1][2], quit[NTHREADS + 1][2], go[2];
static volatile long sink[NTHREADS + 1];

noipa long leaf(long x)
{
	return x * 3 + 1;
}

noipa long rec(int n)
{
	long r;

	if (!n)
		return 1;
	r = rec(n - 1);
	/* Not a tail call, and not a loop: gcc must keep the recursion. */
	asm volatile("" : "+r" (r));
	return r + n;
}

static void wait_byte(int fd)
{
	char c;

	CHECK(read(fd, &c, 1) == 1);
}

static void put_byte(int fd)
{
	CHECK(write(fd, "x", 1) == 1);
}

noipa void spawn(int i);

noipa void *thread_main(void *arg)
{
	int i = (int)(long)arg, k;
	long acc = i;
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", i);
	CHECK(pthread_setname_np(pthread_self(), name) == 0);
	if (i == 1)
		spawn(5);
	tids[i] = gettid();
	put_byte(ready[i][1]);
	wait_byte(go[0]);
	for (k = 0; k < 50 * i; k++)
		acc = leaf(acc);
	sink[i] = acc + rec(i);
	wait_byte(quit[i][0]);
	return NULL;
}

/* Create thread @i and wait until it is past its set-up. */
noipa void spawn(int i)
{
	CHECK(pthread_create(&th[i], NULL, thread_main, (void *)(long)i) == 0);
	wait_byte(ready[i][0]);
}

/* Let thread @i end, wait until it is gone, join it. */
noipa void reap(int i)
{
	struct pollfd p = { .events = POLLIN };

	p.fd = pidfd_open(tids[i], PIDFD_THREAD);
	CHECK(p.fd >= 0);
	put_byte(quit[i][1]);
	CHECK(poll(&p, 1, -1) == 1);
	CHECK(close(p.fd) == 0);
	CHECK(pthread_join(th[i], NULL) == 0);
}

int main(void)
{
	int i;

	CHECK(pipe(go) == 0);
	for (i = 1; i <= NTHREADS; i++)
		CHECK(pipe(ready[i]) == 0 && pipe(quit[i]) == 0);
	for (i = 1; i <= 4; i++)
		spawn(i);
	for (i = 1; i <= NTHREADS; i++)
		put_byte(go[1]);
	for (i = 1; i <= NTHREADS; i++)
		reap(i);
	printf("threads ok %ld %ld\n", sink[1], sink[NTHREADS]);
	return 0;
}
