// SPDX-License-Identifier: GPL-2.0
/*
 * inherit: a task that creates INHERIT_THREADS threads and INHERIT_FORKS
 * processes, each running a short loop, for the DS_BTS_INHERIT check of
 * tests/ds-guest (guest.sh's inherit phase).
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define INHERIT_THREADS	2
#define INHERIT_FORKS	3

static void *loop(void *arg)
{
	unsigned long i;

	/* The empty asm keeps the compiler from folding the loop away. */
	for (i = 0; i < 1000; i++)
		__asm__ __volatile__("" : "+r" (i));
	return arg;
}

int main(void)
{
	pthread_t t[INHERIT_THREADS];
	int i, status, bad = 0;

	for (i = 0; i < INHERIT_THREADS; i++)
		if (pthread_create(&t[i], NULL, loop, NULL))
			return 1;
	for (i = 0; i < INHERIT_FORKS; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (!pid) {
			loop(NULL);
			_exit(0);
		}
	}
	for (i = 0; i < INHERIT_THREADS; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < INHERIT_FORKS; i++)
		if (wait(&status) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			bad = 1;
	return bad;
}
