// SPDX-License-Identifier: GPL-2.0
/*
 * exiter FIFO: start a thread, print its thread id, and let it exit once
 * a byte arrives on FIFO: a thread to attach consumers to and then end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static const char *fifo;

static void *thread(void *arg)
{
	volatile unsigned long x = 0;
	unsigned long i;
	char c;
	int fd;

	printf("%d\n", gettid());
	fflush(stdout);
	fd = open(fifo, O_RDONLY);
	if (fd < 0 || read(fd, &c, 1) != 1)
		return arg;
	for (i = 0; i < 1000; i++)
		x = x * 3 + i;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *ret;

	if (argc < 2)
		return 2;
	fifo = argv[1];
	if (pthread_create(&t, NULL, thread, NULL))
		return 1;
	pthread_join(t, &ret);
	return ret ? 1 : 0;
}
