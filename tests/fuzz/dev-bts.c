// SPDX-License-Identifier: GPL-2.0
/*
 * dev-bts: fuzz the /dev/bts user interface from inside the test VM.
 *
 *	dev-bts SECONDS SEED [--strict-einval]
 *
 * Three workers, each with its own random sequence, open and close files,
 * attach them with random struct bts_attach contents (sizes, flags, modes,
 * record counts, reserved fields and bytes past the struct, pids of live,
 * exiting, exec'ing and reaped processes, markers globs good and bad, bad
 * pointers), ask for the status with random sizes and for event formats
 * with random ids, detach, issue unknown commands, read() with random
 * sizes into good, unmapped and read-only buffers, poll, pass files to
 * children that close them later, and start and kill the processes they
 * trace.  Every failure must come with an errno the ABI documents for that
 * call (include/uapi/linux/bts.h); anything else is counted and printed.
 * The kernel's side is checked by the VM runner: a debug kernel must
 * report nothing.  --strict-einval counts EINVAL as unexpected too, to
 * show that the checker fails a run.
 *
 * Prints one line per worker, "worker N: OPS ops, UNEXPECTED unexpected",
 * and exits 1 if any error was unexpected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bts.h>

#define WORKERS	3
#define FDS	6
#define KIDS	6

static bool strict_einval;
static uint64_t rng;
static long ops, unexpected;
static int fds[FDS];
static pid_t kids[KIDS], reaped;
static char *page_none, *page_ro;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static unsigned int below(unsigned int n)
{
	return rnd() % n;
}

/* Whether @err is one @op may fail with; counts and prints it if not. */
static void check(const char *op, int err, const int *allowed)
{
	for (; *allowed; allowed++)
		if (err == *allowed && !(strict_einval && err == EINVAL))
			return;
	unexpected++;
	if (unexpected <= 20)
		printf("unexpected errno %d (%s) from %s\n", err, strerror(err),
		       op);
}

/* The errors each call may return (include/uapi/linux/bts.h), 0-ended. */
static const int attach_errs[] = {
	EINVAL, EFAULT, ESRCH, EPERM, EBUSY, EDQUOT, ENOMEM, EINTR, 0
};

static const int status_errs[] = { EINVAL, EFAULT, 0 };
static const int format_errs[] = { EINVAL, EFAULT, ENOENT, ENOSPC, 0 };
static const int detach_errs[] = { EINVAL, 0 };
static const int unknown_errs[] = { ENOTTY, EINVAL, EFAULT, 0 };
static const int read_errs[] = { EAGAIN, EINVAL, EFAULT, EINTR, 0 };
static const int open_errs[] = { ENOMEM, EMFILE, ENFILE, 0 };

/* A pointer for the kernel to use: mostly good, sometimes not. */
static void *some_buffer(void *good)
{
	switch (below(16)) {
	case 0:
		return NULL;
	case 1:
		return page_none;
	case 2:
		return page_ro;
	case 3:
		return (void *)1;
	default:
		return good;
	}
}

/* A process to trace: one of ours, alive, exited or reaped, or another. */
static pid_t some_pid(void)
{
	switch (below(8)) {
	case 0:
		return getpid();
	case 1:
		return getppid();
	case 2:
		return below(2) ? 1 : 0;
	case 3:
		return below(2) ? (pid_t)rnd() : reaped;
	default:
		return kids[below(KIDS)];
	}
}

/* Reap what exited; a reaped kid's pid is only ever an attach target. */
static void reap(void)
{
	pid_t pid;
	int i;

	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0) {
		for (i = 0; i < KIDS; i++)
			if (kids[i] == pid)
				kids[i] = 0;
		reaped = pid;
	}
}

/* A child that branches, maybe forks or execs, and exits. */
static void kid_body(void)
{
	volatile unsigned long x = 0;
	unsigned long i, n = below(2000000);

	for (i = 0; i < n; i++)
		x += i & 1 ? i : x >> 1;
	switch (below(6)) {
	case 0:
		if (!fork())
			_exit(0);
		break;
	case 1:
		execl("/bin/true", "true", (char *)NULL);
		break;
	case 2:
		usleep(below(200000));
		break;
	}
	_exit(0);
}

static void op_open(void)
{
	int i = below(FDS), fd;

	if (fds[i] >= 0)
		return;
	fd = open("/dev/bts", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		check("open", errno, open_errs);
	fds[i] = fd;
}

static void op_close(void)
{
	int i = below(FDS);

	if (fds[i] < 0)
		return;
	close(fds[i]);
	fds[i] = -1;
}

static const uint32_t sizes[] = {
	0, 4, BTS_ATTACH_SIZE_VER0 - 1, BTS_ATTACH_SIZE_VER0,
	BTS_ATTACH_SIZE_VER0 + 4, BTS_ATTACH_SIZE_VER0 + 8, 4096, 4097,
};

static void op_attach(int fd)
{
	static uint32_t buf[4096 / 4 + 8];
	struct bts_attach *a = (struct bts_attach *)buf;
	static const uint32_t records[] = {
		0, 1, 2, 3, 64, 1000, 65536, BTS_MAX_RECORDS,
		BTS_MAX_RECORDS + 1, UINT32_MAX,
	};
	unsigned int i;

	for (i = 0; i < sizeof(buf) / 4; i++)
		buf[i] = below(4) ? 0 : (uint32_t)rnd();
	a->size = below(8) ? sizes[below(4) + 2] : sizes[below(8)];
	if (!below(16))
		a->size = (uint32_t)rnd();
	a->flags = below(2) ? (uint32_t)below(4) : (uint32_t)rnd();
	a->pid = some_pid();
	a->mode = below(4) ? below(2) : (uint32_t)rnd();
	/* The big buffers rarely: root's are not limited. */
	a->nr_records = records[below(20) ? below(6) : below(10)];
	a->reserved = below(8) ? 0 : (uint32_t)rnd();
	/* Markers, of every event or some, or with a glob to fault on. */
	if (a->size >= BTS_ATTACH_SIZE_VER1 && below(2)) {
		static const char *const globs[] = { "*", "bts_*", "[a-", "" };

		a->flags |= BTS_ATTACH_MARKERS;
		a->markers = below(8) ? (uintptr_t)globs[below(4)] :
			     (uintptr_t)some_buffer(buf);
	}
	/* Nobody would read for the worker while it waits for a reader. */
	if (a->pid == (uint32_t)getpid())
		a->flags &= ~BTS_ATTACH_LOSSLESS;
	if (ioctl(fd, BTS_IOC_ATTACH, some_buffer(a)))
		check("attach", errno, attach_errs);
}

static void op_status(int fd)
{
	static uint32_t buf[4096 / 4 + 8];
	struct bts_status *st = (struct bts_status *)buf;

	memset(buf, 0, sizeof(buf));
	st->size = below(4) ? sizeof(*st) : (uint32_t)below(64);
	if (!below(16))
		st->size = (uint32_t)rnd();
	if (ioctl(fd, BTS_IOC_STATUS, some_buffer(st)))
		check("status", errno, status_errs);
}

static void op_event_format(int fd)
{
	static uint32_t buf[4096 / 4 + 8];
	struct bts_event_format *e = (struct bts_event_format *)buf;
	static char format[600];

	memset(buf, 0, sizeof(buf));
	e->size = below(4) ? sizeof(*e) : (uint32_t)below(64);
	e->flags = below(8) ? 0 : (uint32_t)rnd();
	e->id = below(2) ? below(64) : (uint32_t)rnd();
	e->gen = below(2) ? below(8) : (uint32_t)rnd();
	e->len = below(2) ? sizeof(format) : below(32);
	e->format = (uintptr_t)some_buffer(format);
	if (ioctl(fd, BTS_IOC_EVENT_FORMAT, some_buffer(e)))
		check("event format", errno, format_errs);
}

static void op_detach(int fd)
{
	if (ioctl(fd, BTS_IOC_DETACH, below(4) ? 0UL : (unsigned long)rnd()))
		check("detach", errno, detach_errs);
}

static void op_unknown(int fd)
{
	static char buf[4096];
	/* The device's magic: other commands may be the VFS's own. */
	unsigned long cmd = _IOC(below(4), BTS_IOC_MAGIC, below(256),
				 below(2) ? 0 : below(1 << _IOC_SIZEBITS));

	/* Only the commands of the ABI work: the others must fail. */
	if (cmd == BTS_IOC_ATTACH || cmd == BTS_IOC_STATUS ||
	    cmd == BTS_IOC_DETACH || cmd == BTS_IOC_EVENT_FORMAT)
		return;
	if (!ioctl(fd, cmd, some_buffer(buf))) {
		unexpected++;
		printf("unknown command %#lx succeeded\n", cmd);
		return;
	}
	check("unknown ioctl", errno, unknown_errs);
}

static void op_read(int fd)
{
	static struct bts_record recs[4096];
	static const size_t lens[] = {
		0, 1, sizeof(recs[0]) - 1, sizeof(recs[0]),
		sizeof(recs[0]) + 1, 100 * sizeof(recs[0]), sizeof(recs),
	};
	size_t len = lens[below(7)];
	char *buf = some_buffer(recs);

	if (buf == page_none || buf == page_ro)
		len = below(4096);
	if (read(fd, buf, len) < 0)
		check("read", errno, read_errs);
}

static void op_poll(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 0) < 0 && errno != EINTR)
		check("poll", errno, (const int[]){ 0 });
}

/* A child holds a copy of the file a while, and closes it there. */
static void op_share(int fd)
{
	pid_t pid = fork();

	if (!pid) {
		usleep(below(100000));
		close(fd);
		_exit(0);
	}
	(void)pid;
}

static void op_kid(void)
{
	int i = below(KIDS);
	pid_t pid;

	if (kids[i] && below(2)) {
		/* Not reaped yet: the pid is still the kid's. */
		kill(kids[i], SIGKILL);
		return;
	}
	if (kids[i])
		return;
	pid = fork();
	if (!pid)
		kid_body();
	if (pid > 0)
		kids[i] = pid;
}

static void worker(int id, uint64_t seed, time_t deadline)
{
	int i, fd;

	rng = seed * 0x9e3779b97f4a7c15ULL + id + 1;
	for (i = 0; i < FDS; i++)
		fds[i] = -1;
	for (i = 0; i < KIDS; i++)
		kids[i] = 0;
	while (time(NULL) < deadline) {
		ops++;
		reap();
		fd = fds[below(FDS)];
		switch (below(12)) {
		case 0:
			op_open();
			break;
		case 1:
			op_close();
			break;
		case 2:
		case 3:
			op_kid();
			break;
		default:
			if (fd < 0) {
				op_open();
				break;
			}
			switch (below(8)) {
			case 0:
				op_attach(fd);
				break;
			case 6:
				op_event_format(fd);
				break;
			case 1:
				op_status(fd);
				break;
			case 2:
				op_detach(fd);
				break;
			case 3:
				op_unknown(fd);
				break;
			case 4:
				op_read(fd);
				break;
			case 5:
				op_poll(fd);
				break;
			default:
				op_share(fd);
				break;
			}
		}
	}
	for (i = 0; i < FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	reap();
	for (i = 0; i < KIDS; i++)
		if (kids[i])
			kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	printf("worker %d: %ld ops, %ld unexpected\n", id, ops, unexpected);
	fflush(stdout);
	_exit(unexpected ? 1 : 0);
}

int main(int argc, char **argv)
{
	int secs, status, i, failed = 0;
	uint64_t seed;
	time_t deadline;

	if (argc < 3) {
		fprintf(stderr, "usage: dev-bts SECONDS SEED [--strict-einval]\n");
		return 2;
	}
	secs = atoi(argv[1]);
	seed = strtoull(argv[2], NULL, 0);
	strict_einval = argc > 3 && !strcmp(argv[3], "--strict-einval");
	page_none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	page_ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (page_none == MAP_FAILED || page_ro == MAP_FAILED)
		return 2;
	deadline = time(NULL) + secs;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < WORKERS; i++)
		if (!fork())
			worker(i, seed, deadline);
	while (wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status);
	return failed;
}
