// SPDX-License-Identifier: GPL-2.0
/*
 * The guest side of bench/idle-cost.sh: two loops, each between marks that
 * the TCG plugin insn-marks.c sees, which counts every guest instruction,
 * user and kernel, in between.
 *
 *   idle-cost GETPIDS SWITCHES REPS [consumer | partner]
 *
 * Region 1: GETPIDS calls of getpid() (glibc's wrapper: a real syscall).
 * Region 2: SWITCHES context switches: two processes pinned to CPU 0, each
 * calling sched_yield() in a loop, so that each yield hands the CPU to the
 * other one; the parent yields SWITCHES / 2 times, each iteration being
 * two switches (parent to child, child to parent).  The kernel's own count
 * of context switches ("ctxt" in /proc/stat, all CPUs), read outside the
 * marks, says how many there really were.
 *
 * With "consumer", a /dev/bts consumer traces a child that sleeps all the
 * while: the layer is active, but not for the tasks measured.  With
 * "partner", a /dev/bts ring consumer traces region 2's child, the task
 * the measuring process switches to and from: with the flight recorder
 * on, each switch to the child takes the CPU out of the hardware ring and
 * each switch back returns it there.
 *
 * Prints, per region, one line
 *   region ID NAME iters=N ctxt=SWITCHES ticks=TIMER_INTERRUPTS
 * with the switches and local timer interrupts between the two marks'
 * neighbourhood (read just outside them).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/bts.h>

/* The marker: nopl 0x425453NN(%rax), see insn-marks.c. */
#define MARK(nn) asm volatile(".byte 0x0f, 0x1f, 0x80, " #nn ", 0x53, 0x54, 0x42" \
			      ::: "memory")

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Sum of "ctxt" in /proc/stat, or of the LOC: line of /proc/interrupts. */
static unsigned long long counter(const char *file, const char *key)
{
	static char buf[1 << 16];
	unsigned long long sum = 0, v;
	char *p, *end;
	FILE *f = fopen(file, "r");
	size_t n;

	if (!f)
		die(file);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strstr(buf, key);
	if (!p)
		return 0;
	p += strlen(key);
	for (;;) {
		v = strtoull(p, &end, 10);
		if (end == p)
			break;
		sum += v;
		p = end;
	}
	return sum;
}

static unsigned long long ctxt(void)
{
	return counter("/proc/stat", "\nctxt ");
}

static unsigned long long ticks(void)
{
	return counter("/proc/interrupts", "LOC:");
}

static void pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

static void report(int id, const char *name, long iters,
		   unsigned long long c0, unsigned long long t0)
{
	unsigned long long c1 = ctxt(), t1 = ticks();

	printf("region %d %s iters=%ld ctxt=%llu ticks=%llu\n",
	       id, name, iters, c1 - c0, t1 - t0);
}

/* Let work that earlier steps left pending (RCU, workqueues) run first. */
static void settle(void)
{
	usleep(100000);
}

static void getpids(long n)
{
	unsigned long long c0, t0;
	long i;

	for (i = 0; i < 1000; i++)	/* warm-up */
		getpid();
	settle();
	c0 = ctxt();
	t0 = ticks();
	MARK(0x01);
	for (i = 0; i < n; i++)
		getpid();
	MARK(0x81);
	report(1, "getpid", n, c0, t0);
}

/* A /dev/bts ring consumer of @pid, its file left open until exit. */
static void attach(pid_t pid)
{
	struct bts_attach a = {
		.size		= sizeof(a),
		.pid		= pid,
		.mode		= BTS_MODE_RING,
		.nr_records	= 1024,
	};
	int fd = open("/dev/bts", O_RDONLY);

	if (fd < 0 || ioctl(fd, BTS_IOC_ATTACH, &a))
		die("/dev/bts");
}

static void switches(long n, bool partner)
{
	volatile int *shared;
	unsigned long long c0, t0;
	long i;
	pid_t child;

	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		die("mmap");
	pin();
	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		shared[0] = 1;
		while (!shared[1])
			sched_yield();
		_exit(0);
	}
	while (!shared[0])
		sched_yield();
	if (partner)
		attach(child);
	for (i = 0; i < 1000; i++)	/* warm-up */
		sched_yield();
	settle();
	c0 = ctxt();
	t0 = ticks();
	MARK(0x02);
	for (i = 0; i < n / 2; i++)
		sched_yield();
	MARK(0x82);
	report(2, "switch", n / 2 * 2, c0, t0);
	shared[1] = 1;
	if (waitpid(child, NULL, 0) != child)
		die("waitpid");
}

/* A /dev/bts consumer of a child that sleeps until killed. */
static pid_t consumer(void)
{
	pid_t child = fork();

	if (child < 0)
		die("fork");
	if (!child) {
		pause();
		_exit(0);
	}
	attach(child);
	return child;
}

int main(int argc, char **argv)
{
	bool partner = argc == 5 && !strcmp(argv[4], "partner");
	pid_t traced = 0;
	int r, reps;

	if (argc != 4 && !(argc == 5 && (partner ||
					 !strcmp(argv[4], "consumer")))) {
		fprintf(stderr, "usage: idle-cost GETPIDS SWITCHES REPS [consumer | partner]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !partner)
		traced = consumer();
	reps = atoi(argv[3]);
	for (r = 0; r < reps; r++) {
		getpids(atol(argv[1]));
		switches(atol(argv[2]), partner);
	}
	if (traced)
		kill(traced, SIGKILL);
	return 0;
}
