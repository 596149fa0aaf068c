// SPDX-License-Identifier: GPL-2.0
/*
 * devbts SECONDS CMD [ARG...]: for SECONDS, run CMD again and again, each
 * run traced through /dev/bts with BTS_ATTACH_INHERIT in a mode picked in
 * turn (lossy, lossless, ring), and end each trace a different way: read
 * to the end, BTS_IOC_DETACH halfway, or close() while CMD still runs.
 * Every record read is checked: whole records, user addresses only,
 * pseudo-records of the kinds a user-only trace has, THREAD records naming
 * a thread; a lossless trace read to its end lost nothing.  Attaching may
 * fail with EBUSY while perf holds the hardware.  Prints counts; exits 1
 * on the first bad record or unexpected error.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bts.h>

#define USER_END	0x800000000000ULL

enum ending { READ_ALL, DETACH, CLOSE, NR_ENDINGS };

static unsigned long records, threads, busy, runs[NR_ENDINGS];

static int fail(const char *what, unsigned long long a, unsigned long long b)
{
	fprintf(stderr, "devbts: %s (%#llx %#llx)\n", what, a, b);
	exit(1);
}

static void check(const struct bts_record *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++, records++) {
		if (!BTS_RECORD_IS_PSEUDO(r[i].from)) {
			if (r[i].from >= USER_END || r[i].to >= USER_END)
				fail("kernel address", r[i].from, r[i].to);
			continue;
		}
		switch (BTS_PSEUDO_TYPE(r[i].from)) {
		case BTS_PSEUDO_KERNEL:
			if (r[i].to >= USER_END || r[i].flags >= USER_END)
				fail("kernel address in KERNEL", r[i].to,
				     r[i].flags);
			break;
		case BTS_PSEUDO_DETAIL:
			/* Numbers, not addresses: only its layout is known. */
			if (BTS_DETAIL_TYPE(r[i].from) != BTS_PSEUDO_KERNEL ||
			    BTS_DETAIL_LAYOUT(r[i].from) !=
			    BTS_DETAIL_KERNEL_ENTRY)
				fail("unknown detail", r[i].from, r[i].to);
			break;
		case BTS_PSEUDO_LOST:
			break;
		case BTS_PSEUDO_THREAD:
			if (!r[i].to || !r[i].flags ||
			    BTS_PSEUDO_ARG(r[i].from) > BTS_THREAD_EXIT)
				fail("bad THREAD record", r[i].from, r[i].to);
			threads += BTS_PSEUDO_ARG(r[i].from) == BTS_THREAD_NEW;
			break;
		default:
			fail("unexpected pseudo-record", r[i].from, r[i].to);
		}
	}
}

/* Read for @ms milliseconds, or to the end with -1.  Return: at the end. */
static int drain(int fd, int ms)
{
	static struct bts_record buf[4096];
	struct timespec t0, t;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t got;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (ms >= 0 && (t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return 0;
		if (poll(&p, 1, 20) < 0 && errno != EINTR)
			fail("poll", errno, 0);
		got = read(fd, buf, sizeof(buf));
		if (got == 0)
			return 1;
		if (got < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			fail("read", errno, 0);
		}
		if (got % sizeof(buf[0]))
			fail("partial record", got, 0);
		check(buf, got / sizeof(buf[0]));
	}
}

static void run(char **cmd, unsigned int nr)
{
	static const struct { __u32 mode, flags, size; } modes[] = {
		{ BTS_MODE_CONTINUOUS, 0, 256 },
		{ BTS_MODE_CONTINUOUS, BTS_ATTACH_LOSSLESS, 1024 },
		{ BTS_MODE_RING, 0, 32 },
	};
	enum ending how = nr / 3 % NR_ENDINGS;
	struct bts_attach a = {
		.size		= sizeof(a),
		.flags		= BTS_ATTACH_INHERIT | modes[nr % 3].flags,
		.mode		= modes[nr % 3].mode,
		.nr_records	= modes[nr % 3].size,
	};
	struct bts_status st = { .size = sizeof(st) };
	int go[2], fd, status;
	pid_t child;
	char c;

	if (pipe(go))
		fail("pipe", errno, 0);
	child = fork();
	if (child < 0)
		fail("fork", errno, 0);
	if (!child) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(0);
		execvp(cmd[0], cmd);
		_exit(127);
	}
	close(go[0]);
	fd = open("/dev/bts", O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		fail("open /dev/bts", errno, 0);
	a.pid = child;
	if (ioctl(fd, BTS_IOC_ATTACH, &a)) {
		if (errno != EBUSY)
			fail("attach", errno, 0);
		busy++;
		close(fd);
		fd = -1;
	}
	if (write(go[1], "g", 1) != 1)
		fail("write", errno, 0);
	close(go[1]);
	if (fd >= 0) {
		switch (how) {
		case READ_ALL:
			drain(fd, -1);
			if (ioctl(fd, BTS_IOC_STATUS, &st))
				fail("status", errno, 0);
			if ((a.flags & BTS_ATTACH_LOSSLESS) && st.lost)
				fail("lossless trace lost records", st.lost, 0);
			break;
		case DETACH:
			drain(fd, rand() % 200);
			if (ioctl(fd, BTS_IOC_DETACH, 0))
				fail("detach", errno, 0);
			drain(fd, -1);
			break;
		case CLOSE:
			drain(fd, rand() % 200);
			break;
		default:
			break;
		}
		runs[how]++;
		close(fd);
	}
	if (waitpid(child, &status, 0) != child)
		fail("waitpid", errno, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("traced command failed", status, 0);
}

int main(int argc, char **argv)
{
	time_t end;
	unsigned int nr;

	if (argc < 3) {
		fprintf(stderr, "usage: devbts SECONDS CMD [ARG...]\n");
		return 2;
	}
	end = time(NULL) + atoi(argv[1]);
	srand(getpid());
	for (nr = 0; time(NULL) < end; nr++)
		run(argv + 2, nr);
	printf("%u traces (read to the end %lu, detached %lu, closed early %lu, busy %lu), %lu threads, %lu records\n",
	       nr, runs[READ_ALL], runs[DETACH], runs[CLOSE], busy, threads,
	       records);
	return 0;
}
