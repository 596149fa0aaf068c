// SPDX-License-Identifier: GPL-2.0
/*
 * slowread: a deliberately slow reader of /dev/bts, to show lossless mode's
 * backpressure at work.
 *
 *	slowread [-n RECORDS] [-r RECORDS] -o FILE -- CMD [ARG...]
 *
 * Runs CMD with a lossless, continuous, inheriting trace of RECORDS (-n,
 * default 64) records per thread, attached at CMD's exec as bts-dump
 * attaches (ptrace's exec stop, before CMD's first instruction), and reads
 * it slowly: nothing until a traced thread waits for it, that is until the
 * file's throttle count (BTS_IOC_STATUS) has gone up, or nothing is left
 * running; then all there is, never more than -r records at a time
 * (default 16); then again.  So whether the traced threads wait, and
 * whether a read follows a wait, does not depend on timing: a thread that
 * fills its buffer always waits, and the first read always follows.  A
 * reader that never sees the count go up would wait forever: after a
 * minute without it, slowread reads anyway (and the counts it prints show
 * it).
 *
 * Everything read goes to FILE, the records as read(2) returned them
 * (24 bytes each).  At the end slowread prints the file's status:
 *
 *	records=R lost=L throttled=T threads=N untraced=U read=M slow_reads=S
 *
 * R, L, T, N, U as BTS_IOC_STATUS says, M records read, S reads made after
 * the throttle count went up.  It exits with CMD's status (128 + signal),
 * or 125 when something went wrong itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bts.h>

#define FAIL	125
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
/* The longest slowread waits for the throttle count to go up, in ms. */
#define PATIENCE_MS	60000

static void die(const char *what)
{
	fprintf(stderr, "slowread: %s: %s\n", what, strerror(errno));
	exit(FAIL);
}

static void bad_usage(void)
{
	fprintf(stderr,
		"usage: slowread [-n RECORDS] [-r RECORDS] -o FILE -- CMD [ARG...]\n");
	exit(FAIL);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void status(int fd, struct bts_status *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	if (ioctl(fd, BTS_IOC_STATUS, st))
		die("BTS_IOC_STATUS");
}

/*
 * Wait until a traced thread waits for the reader (the throttle count is
 * above @seen), or none runs; poll()'s timeout is the polling interval.
 * Did a thread wait?
 */
static int wait_for_throttle(int fd, unsigned long long seen)
{
	long long until = now_ms() + PATIENCE_MS;
	struct bts_status st;

	for (;;) {
		status(fd, &st);
		if (st.throttled > seen)
			return 1;
		if (!st.live || now_ms() > until)
			return 0;
		poll(NULL, 0, 1);
	}
}

int main(int argc, char **argv)
{
	struct bts_attach a = {
		.size = sizeof(a), .mode = BTS_MODE_CONTINUOUS,
		.flags = BTS_ATTACH_INHERIT | BTS_ATTACH_LOSSLESS,
		.nr_records = 64,
	};
	unsigned long long seen = 0, nread = 0, slow = 0;
	struct bts_record r[4096];
	const char *out_name = NULL;
	long per_read = 16, got;
	struct bts_status st;
	int opt, fd, wst;
	FILE *out;
	pid_t pid;

	while ((opt = getopt(argc, argv, "+n:r:o:")) != -1) {
		switch (opt) {
		case 'n':
			a.nr_records = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			per_read = strtol(optarg, NULL, 0);
			break;
		case 'o':
			out_name = optarg;
			break;
		default:
			bad_usage();
		}
	}
	if (optind >= argc || !out_name || per_read < 1 ||
	    per_read > (long)ARRAY_SIZE(r))
		bad_usage();
	out = fopen(out_name, "w");
	if (!out)
		die(out_name);
	fd = open("/dev/bts", O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		die("/dev/bts");

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			die("PTRACE_TRACEME");
		execvp(argv[optind], &argv[optind]);
		fprintf(stderr, "slowread: exec %s: %s\n", argv[optind],
			strerror(errno));
		_exit(127);
	}
	/* The exec stop: before CMD's first instruction. */
	if (waitpid(pid, &wst, 0) != pid)
		die("waitpid");
	if (!WIFSTOPPED(wst) || WSTOPSIG(wst) != SIGTRAP) {
		fprintf(stderr, "slowread: %s did not start (status %#x)\n",
			argv[optind], wst);
		return FAIL;
	}
	a.pid = pid;
	if (ioctl(fd, BTS_IOC_ATTACH, &a))
		die("BTS_IOC_ATTACH");
	if (ptrace(PTRACE_DETACH, pid, NULL, NULL))
		die("PTRACE_DETACH");

	/*
	 * Nothing until a thread waits for us (or none runs), then everything
	 * there is, per_read records at a time, then again.  The first wait
	 * comes whatever the timing: no record is read before it, and a
	 * thread that fills its buffer waits.
	 */
	if (wait_for_throttle(fd, seen))
		slow++;
	status(fd, &st);
	seen = st.throttled;
	for (;;) {
		got = read(fd, r, per_read * sizeof(r[0]));
		if (got < 0 && errno == EAGAIN) {
			status(fd, &st);
			if (!st.live) {
				/* Only what the last threads left: take it. */
				struct pollfd p = { .fd = fd, .events = POLLIN };

				poll(&p, 1, 1000);
				continue;
			}
			if (wait_for_throttle(fd, seen))
				slow++;
			status(fd, &st);
			seen = st.throttled;
			continue;
		}
		if (got < 0)
			die("read /dev/bts");
		if (!got)
			break;
		if (got % sizeof(r[0])) {
			fprintf(stderr, "slowread: read %ld bytes\n", got);
			return FAIL;
		}
		if (fwrite(r, got, 1, out) != 1)
			die(out_name);
		nread += got / sizeof(r[0]);
	}
	if (fclose(out))
		die(out_name);
	if (waitpid(pid, &wst, 0) != pid)
		die("waitpid");
	status(fd, &st);
	printf("records=%llu lost=%llu throttled=%llu threads=%u untraced=%u",
	       (unsigned long long)st.records, (unsigned long long)st.lost,
	       (unsigned long long)st.throttled, st.threads, st.untraced);
	printf(" read=%llu slow_reads=%llu\n", nread, slow);
	close(fd);
	if (WIFSIGNALED(wst))
		return 128 + WTERMSIG(wst);
	return WEXITSTATUS(wst);
}
