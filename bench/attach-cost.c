// SPDX-License-Identifier: GPL-2.0
/*
 * attach-cost: what a /dev/bts attach and close cost, in the guest, when
 * they are the only consumer (each close releases the layer's last one)
 * and when another consumer stays attached throughout.  For each case it
 * prints the median wall time of one cycle, in microseconds, of ROUNDS
 * rounds of CYCLES cycles each, and what every CPU took per cycle from
 * /proc/interrupts: function-call IPIs (CAL) and TLB shootdowns (TLB):
 *	alone US CAL TLB
 *	beside US CAL TLB
 *
 *	attach-cost [CYCLES [ROUNDS]]
 */
#include <fcntl.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bts.h>

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (!pid) {
		pause();
		_exit(0);
	}
	return pid;
}

static int attach(pid_t pid)
{
	struct bts_attach a = { .size = sizeof(a), .pid = pid,
				.mode = BTS_MODE_CONTINUOUS,
				.nr_records = 1024 };
	int fd = open("/dev/bts", O_RDONLY);

	if (fd < 0 || ioctl(fd, BTS_IOC_ATTACH, &a)) {
		perror("attach-cost: /dev/bts");
		exit(1);
	}
	return fd;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The count of /proc/interrupts row @name, summed over the CPUs. */
static long interrupts(const char *name)
{
	char line[512], *p, *end;
	long sum = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, name, strlen(name)) || p[strlen(name)] != ':')
			continue;
		p += strlen(name) + 1;
		for (;;) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
	}
	fclose(f);
	return sum;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median over @rounds of the mean time of one attach-close cycle. */
static double cycle_us(pid_t pid, int cycles, int rounds)
{
	double *t = calloc(rounds, sizeof(*t)), start, median;
	int r, i;

	for (r = 0; r < rounds; r++) {
		start = now_us();
		for (i = 0; i < cycles; i++)
			close(attach(pid));
		t[r] = (now_us() - start) / cycles;
	}
	qsort(t, rounds, sizeof(*t), cmp);
	median = t[rounds / 2];
	free(t);
	return median;
}

/* One case: its line of figures, "NAME US CAL TLB". */
static void report(const char *name, pid_t pid, int cycles, int rounds)
{
	long cal = interrupts("CAL"), tlb = interrupts("TLB");
	long n = (long)cycles * rounds;
	double us = cycle_us(pid, cycles, rounds);

	printf("%s %.1f %.2f %.2f\n", name, us,
	       (double)(interrupts("CAL") - cal) / n,
	       (double)(interrupts("TLB") - tlb) / n);
}

int main(int argc, char **argv)
{
	int cycles = argc > 1 ? atoi(argv[1]) : 100;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	pid_t pid = sleeper(), other = sleeper();
	int keep;

	report("alone", pid, cycles, rounds);
	keep = attach(other);
	report("beside", pid, cycles, rounds);
	close(keep);
	kill(pid, SIGKILL);
	kill(other, SIGKILL);
	while (wait(NULL) > 0)
		;
	return 0;
}
