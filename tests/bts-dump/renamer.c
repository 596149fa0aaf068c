// SPDX-License-Identifier: GPL-2.0
/*
 * renamer N: what renaming a sleeping thread costs the kernel while a
 * branch trace takes thread names somewhere on the system.
 *
 * A thread blocks in read() on a pipe; the main thread writes a new name
 * to its /proc/self/task/TID/comm N times (as pthread_setname_np() does),
 * then wakes it and joins it.  Prints
 *
 *	renames=N unreclaimable_kb=DELTA
 *
 * DELTA the growth of SUnreclaim (/proc/meminfo) over the renames, while
 * the thread still slept: the kernel's unreclaimable memory that the
 * renames made it hold for a thread that cannot run.  Run plainly (the
 * thread is traced by nobody) and under bts-dump (it is traced, with
 * thread names): in neither may it grow with N.  Exits 125 on errors.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int pipefd[2];
static pid_t sleeper_tid;

static void *sleeper(void *unused)
{
	char c;

	__atomic_store_n(&sleeper_tid, (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	if (read(pipefd[0], &c, 1) != 1)
		return "read";
	return unused;
}

static long unreclaimable_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SUnreclaim: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	long i, n = argc > 1 ? atol(argv[1]) : 100000, before, after;
	char path[64], name[16];
	pthread_t th;
	void *ret;
	int fd;

	if (pipe(pipefd) || pthread_create(&th, NULL, sleeper, NULL))
		return 125;
	while (!__atomic_load_n(&sleeper_tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	/* Asleep in read() by now, most likely; either way it stays. */
	usleep(100000);
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", sleeper_tid);
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		perror(path);
		return 125;
	}
	before = unreclaimable_kb();
	for (i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), "r%ld", i % 100000);

		if (write(fd, name, len) != len) {
			perror("comm");
			return 125;
		}
	}
	after = unreclaimable_kb();
	close(fd);
	if (write(pipefd[1], "x", 1) != 1 || pthread_join(th, &ret) || ret)
		return 125;
	if (before < 0 || after < 0) {
		fprintf(stderr, "renamer: no SUnreclaim in /proc/meminfo\n");
		return 125;
	}
	printf("renames=%ld unreclaimable_kb=%ld\n", n, after - before);
	return 0;
}
