// SPDX-License-Identifier: GPL-2.0
/*
 * Threads that never stop switching: each of NTHREADS spins briefly and
 * sleeps a microsecond, again and again, until the process is killed.  A
 * tracer that lets go of it almost always finds some thread running, which
 * then blocks soon after: the CPUs must stop recording for it all the same
 * (guest.sh's released/).
 */
#include <pthread.h>
#include <time.h>

#define NTHREADS	6

static volatile unsigned long sink;

static void *nap(void *unused)
{
	const struct timespec us = { .tv_nsec = 1000 };
	unsigned long i;

	for (;;) {
		for (i = 0; i < 100; i++)
			sink += i;
		nanosleep(&us, NULL);
	}
	return unused;
}

int main(void)
{
	pthread_t th;
	int i;

	for (i = 1; i < NTHREADS; i++)
		if (pthread_create(&th, NULL, nap, NULL))
			return 1;
	nap(NULL);
	return 0;
}
