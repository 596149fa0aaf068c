// SPDX-License-Identifier: GPL-2.0
/*
 * threads SECONDS: keep creating short-lived threads for SECONDS seconds,
 * four at a time, each branching a while before it exits, with a short
 * pause between batches (the attaching side needs CPU time too).  Prints
 * how many.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *work(void *arg)
{
	volatile unsigned long x = (unsigned long)arg;
	unsigned long i;

	for (i = 0; i < 20000; i++)
		x = x * 3 + i;
	return NULL;
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 10);
	unsigned long n = 0;
	pthread_t t[4];
	int i;

	while (time(NULL) < end) {
		for (i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, work, (void *)n))
				return 1;
		for (i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		n += 4;
		usleep(5000);
	}
	printf("%lu threads\n", n);
	return 0;
}
