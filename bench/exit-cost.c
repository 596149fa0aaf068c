// SPDX-License-Identifier: GPL-2.0
/*
 * exit-cost: what tracing costs a process that starts short children, as
 * a build does: the wall time of one fork, exit and wait of a child, in
 * microseconds, median of ROUNDS rounds of CHILDREN children, untraced and
 * with /dev/bts attached (BTS_ATTACH_INHERIT, read as it goes).
 *	untraced US
 *	traced US
 *
 *	exit-cost [CHILDREN [ROUNDS]]
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bts.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Start @children that exit at once, one at a time; the mean in us. */
static double round_us(int children)
{
	double start = now_us();
	int i;

	for (i = 0; i < children; i++) {
		if (!fork())
			_exit(0);
		wait(NULL);
	}
	return (now_us() - start) / children;
}

/*
 * The measuring process, in a child of its own so that it can be traced
 * from the start; reports the median over @rounds on @out.
 */
static void measure(int children, int rounds, int out)
{
	double *t = calloc(rounds, sizeof(*t));
	int r;

	for (r = 0; r < rounds; r++)
		t[r] = round_us(children);
	qsort(t, rounds, sizeof(*t), cmp);
	if (write(out, &t[rounds / 2], sizeof(t[0])) != sizeof(t[0]))
		_exit(1);
	_exit(0);
}

static double run(int children, int rounds, int traced)
{
	static struct bts_record recs[4096];
	struct bts_attach a = { .size = sizeof(a),
				.flags = BTS_ATTACH_INHERIT,
				.mode = BTS_MODE_CONTINUOUS,
				.nr_records = 4096 };
	int go[2], res[2], fd = -1;
	struct pollfd p;
	double us = -1;
	pid_t pid;
	char c;

	if (pipe(go) || pipe(res))
		exit(1);
	pid = fork();
	if (!pid) {
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		measure(children, rounds, res[1]);
	}
	close(res[1]);
	if (traced) {
		fd = open("/dev/bts", O_RDONLY | O_NONBLOCK);
		a.pid = pid;
		if (fd < 0 || ioctl(fd, BTS_IOC_ATTACH, &a)) {
			perror("exit-cost: /dev/bts");
			exit(1);
		}
	}
	if (write(go[1], "x", 1) != 1)
		exit(1);
	/* Read the trace as it comes, until the measuring process is done. */
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (traced && poll(&p, 1, 1000) >= 0) {
		if (read(fd, recs, sizeof(recs)) == 0)
			break;
	}
	if (read(res[0], &us, sizeof(us)) != sizeof(us))
		us = -1;
	waitpid(pid, NULL, 0);
	if (fd >= 0)
		close(fd);
	close(go[0]);
	close(go[1]);
	close(res[0]);
	return us;
}

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 100;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;

	printf("untraced %.1f\n", run(children, rounds, 0));
	printf("traced %.1f\n", run(children, rounds, 1));
	return 0;
}
