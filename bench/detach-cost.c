// SPDX-License-Identifier: GPL-2.0
/*
 * detach-cost: how long a tracer takes to let go of a process with many
 * running threads, as bts-dump -p does when it is stopped: the wall time
 * of BTS_IOC_DETACH and then of close(), and of a close() without a
 * detach, in milliseconds, for a file tracing THREADS threads
 * (BTS_ATTACH_INHERIT from their process's start) that compute briefly
 * and sleep a millisecond, over and over.
 *	detach MS
 *	close-after-detach MS
 *	close MS
 *
 *	detach-cost [THREADS]
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bts.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *worker(void *arg)
{
	struct timespec ms = { .tv_nsec = 1000000 };
	volatile unsigned int spin;

	for (;;) {
		for (spin = 0; spin < 2000; spin++)
			;
		nanosleep(&ms, NULL);
	}
	return arg;
}

/* The traced process: @threads workers, then a byte on @ready. */
static void traced(int threads, int go, int ready)
{
	pthread_t t;
	char c;
	int i;

	if (read(go, &c, 1) != 1)
		_exit(1);
	for (i = 0; i < threads; i++)
		if (pthread_create(&t, NULL, worker, NULL))
			_exit(1);
	if (write(ready, "x", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

/* Trace a new process of @threads threads; let go of it, timed. */
static void run(int threads, int detach)
{
	struct bts_attach a = { .size = sizeof(a),
				.flags = BTS_ATTACH_INHERIT,
				.mode = BTS_MODE_CONTINUOUS,
				.nr_records = 1024 };
	struct timespec settle = { .tv_sec = 1 };
	int go[2], ready[2], fd;
	double start;
	pid_t pid;
	char c;

	if (pipe(go) || pipe(ready))
		exit(1);
	pid = fork();
	if (!pid)
		traced(threads, go[0], ready[1]);
	fd = open("/dev/bts", O_RDONLY | O_NONBLOCK);
	a.pid = pid;
	if (fd < 0 || ioctl(fd, BTS_IOC_ATTACH, &a)) {
		perror("detach-cost: /dev/bts");
		exit(1);
	}
	if (write(go[1], "x", 1) != 1 || read(ready[0], &c, 1) != 1)
		exit(1);
	nanosleep(&settle, NULL);
	if (detach) {
		start = now_ms();
		if (ioctl(fd, BTS_IOC_DETACH, 0)) {
			perror("detach-cost: BTS_IOC_DETACH");
			exit(1);
		}
		printf("detach %.1f\n", now_ms() - start);
	}
	start = now_ms();
	close(fd);
	printf("%s %.1f\n", detach ? "close-after-detach" : "close",
	       now_ms() - start);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 128;

	setvbuf(stdout, NULL, _IOLBF, 0);
	run(threads, 1);
	run(threads, 0);
	return 0;
}
