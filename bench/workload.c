// SPDX-License-Identifier: GPL-2.0
/*
 * A fixed, deterministic guest workload for bench/qemu-bts.sh: user-mode code
 * with many taken branches (direct and indirect calls, returns, a
 * mispredictable-looking but fixed conditional pattern, loop back-edges)
 * and a getpid() system call every K iterations.
 *
 * usage: workload ITERATIONS SYSCALL_EVERY REPEATS
 *
 * Runs the loop REPEATS times and prints one line per run:
 *   workload iters=N syscalls=S ns=T checksum=C
 * where T is the wall time of that run alone (CLOCK_MONOTONIC), so the
 * guest's boot and the program's start-up are not counted.  The checksum
 * depends only on N and K: it shows every run did the same work.
 *
 * With $BENCH_MARK naming a serial port (bench/qemu-bts.sh gives the VM a second
 * one, /dev/ttyS1, whose other end is bench/vmclock.py on the host), the
 * program writes 's' to it before each run and 'e' after, outside the
 * timed part, so the host can take its own times of the run too.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define noipa __attribute__((noipa))

typedef unsigned long (*op_fn)(unsigned long);

noipa static unsigned long op_add(unsigned long x)
{
	return x + 0x9e3779b9;
}

noipa static unsigned long op_xor(unsigned long x)
{
	return x ^ (x >> 7);
}

noipa static unsigned long op_mul(unsigned long x)
{
	return x * 0x2545f491;
}

noipa static unsigned long op_rot(unsigned long x)
{
	return (x << 13) | (x >> 51);
}

/* Writable, so gcc cannot turn the calls through it into direct ones. */
static op_fn ops[] = { op_add, op_xor, op_mul, op_rot };

/* A short inner loop with a data-dependent branch: several taken jumps. */
noipa static unsigned long mix(unsigned long x)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (x & (1UL << i))
			x += i;
		else
			x ^= i << 3;
	}
	return x;
}

noipa static unsigned long step(unsigned long x, unsigned long i)
{
	x = ops[i & 3](x);
	return mix(x);
}

static unsigned long run(unsigned long iters, unsigned long every,
			 unsigned long *nsys)
{
	unsigned long i, x = 1, s = 0;

	for (i = 0; i < iters; i++) {
		x = step(x, i);
		if (every && i % every == 0) {
			x += syscall(SYS_getpid) != 0;
			s++;
		}
	}
	*nsys = s;
	return x;
}

static int mark_fd = -1;

static void mark(char c)
{
	if (mark_fd >= 0 && write(mark_fd, &c, 1) != 1) {
		perror("workload: write to $BENCH_MARK");
		exit(1);
	}
	if (mark_fd >= 0)
		tcdrain(mark_fd);
}

int main(int argc, char **argv)
{
	const char *mark_dev = getenv("BENCH_MARK");
	unsigned long iters, every, nsys, sum;
	struct timespec t0, t1;
	int reps, r;

	if (argc != 4) {
		fprintf(stderr, "usage: workload ITERATIONS SYSCALL_EVERY REPEATS\n");
		return 2;
	}
	iters = strtoul(argv[1], NULL, 0);
	every = strtoul(argv[2], NULL, 0);
	reps = atoi(argv[3]);
	if (mark_dev && *mark_dev) {
		struct termios tio;

		mark_fd = open(mark_dev, O_WRONLY | O_NOCTTY);
		if (mark_fd < 0 || tcgetattr(mark_fd, &tio)) {
			perror(mark_dev);
			return 1;
		}
		cfmakeraw(&tio);
		tcsetattr(mark_fd, TCSANOW, &tio);
	}
	for (r = 0; r < reps; r++) {
		mark('s');
		clock_gettime(CLOCK_MONOTONIC, &t0);
		sum = run(iters, every, &nsys);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		mark('e');
		printf("workload iters=%lu syscalls=%lu ns=%lld checksum=%lx\n",
		       iters, nsys,
		       (t1.tv_sec - t0.tv_sec) * 1000000000LL +
		       (t1.tv_nsec - t0.tv_nsec), sum);
		fflush(stdout);
	}
	return 0;
}
