// SPDX-License-Identifier: GPL-2.0
/*
 * abi: the /dev/bts ABI's rules, checked one by one in the test VM: the
 * size-first structs, unknown flags and reserved fields, permissions, the
 * order of the calls, and what read() and poll() return.  Prints TAP.
 *
 *	abi [OTHER_PID SETUID_PROG]
 *
 * OTHER_PID is a process of another user, which an unprivileged caller
 * must get EPERM for, and SETUID_PROG a set-user-ID program that accepts
 * --help, whose exec must end the trace; without them (run as root) those
 * checks are skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/bts.h>
#include <linux/sched.h>

static int nr, failed;

static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++nr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failed += !ok;
}

/* The errno of an ioctl, 0 on success. */
static int ioctl_err(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

static int dev(void)
{
	int fd = open("/dev/bts", O_RDONLY | O_NONBLOCK);

	if (fd < 0) {
		printf("Bail out! open /dev/bts: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static int attach_err(struct bts_attach *a)
{
	int fd = dev(), err = ioctl_err(fd, BTS_IOC_ATTACH, a);

	close(fd);
	return err;
}

/* A child that waits for a byte on a pipe, then exits. */
static pid_t waiter(int *go)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		exit(1);
	pid = fork();
	if (!pid) {
		close(p[1]);
		_exit(read(p[0], &c, 1) == 1 ? 0 : 1);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

static void struct_rules(void)
{
	struct {
		struct bts_attach a;
		__u64 later;
	} big = { .a = { .size = sizeof(big), .pid = getpid() } };
	struct bts_attach a = { .size = sizeof(a), .pid = getpid() };
	struct bts_status st = { .size = BTS_STATUS_SIZE_VER0 - 8 };
	int fd, err;

	tap(sizeof(struct bts_attach) == BTS_ATTACH_SIZE_VER0 &&
	    sizeof(struct bts_status) == BTS_STATUS_SIZE_VER0,
	    "struct sizes are the first versions' (%zu, %zu)",
	    sizeof(struct bts_attach), sizeof(struct bts_status));

	a.size = BTS_ATTACH_SIZE_VER0 - 4;
	tap(attach_err(&a) == EINVAL, "attach: a size below the first version is EINVAL");
	a.size = sizeof(a);
	a.flags = 1U << 31;
	tap(attach_err(&a) == EINVAL, "attach: an unknown flag is EINVAL");
	a.flags = 0;
	a.reserved = 1;
	tap(attach_err(&a) == EINVAL, "attach: a reserved field not zero is EINVAL");
	a.reserved = 0;
	a.mode = 7;
	tap(attach_err(&a) == EINVAL, "attach: an unknown mode is EINVAL");
	a.mode = BTS_MODE_RING;
	a.flags = BTS_ATTACH_LOSSLESS;
	tap(attach_err(&a) == EINVAL, "attach: a lossless ring is EINVAL");
	a.mode = BTS_MODE_CONTINUOUS;
	a.flags = 0;
	a.nr_records = BTS_MAX_RECORDS + 1;
	tap(attach_err(&a) == EINVAL, "attach: more than BTS_MAX_RECORDS is EINVAL");
	a.nr_records = 0;
	big.later = 1;
	tap(attach_err(&big.a) == EINVAL,
	    "attach: a later version's field the kernel does not know, not zero, is EINVAL");
	big.later = 0;
	err = attach_err(&big.a);
	tap(!err, "attach: a later version's size with that field zero works (%s)",
	    strerror(err));
	tap(attach_err((void *)8) == EFAULT, "attach: a bad pointer is EFAULT");

	fd = dev();
	tap(ioctl_err(fd, BTS_IOC_STATUS, &st) == EINVAL,
	    "status: a size below the first version is EINVAL");
	tap(read(fd, &a, sizeof(a)) < 0 && errno == EINVAL,
	    "read before attach is EINVAL");
	tap(ioctl_err(fd, BTS_IOC_DETACH, NULL) == EINVAL,
	    "detach before attach is EINVAL");
	tap(ioctl_err(fd, _IO(BTS_IOC_MAGIC, 0x7f), NULL) == ENOTTY,
	    "an unknown command is ENOTTY");
	close(fd);
}

static void targets(const char *other)
{
	struct bts_attach a = { .size = sizeof(a) };
	int err;

	a.pid = 0x7ffffff0;
	tap(attach_err(&a) == ESRCH, "attach: no such thread is ESRCH");
	if (!getuid()) {
		a.pid = 2;	/* kthreadd */
		tap(attach_err(&a) == EINVAL, "attach: a kernel thread is EINVAL");
	}
	if (other) {
		a.pid = atoi(other);
		err = attach_err(&a);
		tap(err == EPERM, "attach: another user's process is EPERM (%s)",
		    strerror(err));
	}
}

/*
 * A whole session with a child: records, THREAD framing, status, EOF;
 * reading @per_read records at a time.
 */
static void session(size_t per_read)
{
	struct bts_attach a = { .size = sizeof(a), .mode = BTS_MODE_CONTINUOUS };
	struct bts_status st = { .size = sizeof(st) + 8 };
	struct bts_record r[512];
	struct pollfd p;
	int fd, go, status, err, thread = 0, exits = 0, bad = 0;
	long n = 0, i, got;
	pid_t pid;

	fd = dev();
	pid = waiter(&go);
	a.pid = pid;
	err = ioctl_err(fd, BTS_IOC_ATTACH, &a);
	tap(!err, "attach to one's own child (%s)", strerror(err));
	tap(ioctl_err(fd, BTS_IOC_ATTACH, &a) == EBUSY,
	    "a second attach on one file is EBUSY");
	tap(read(fd, r, sizeof(r)) < 0 && errno == EAGAIN,
	    "nothing to read yet: EAGAIN with O_NONBLOCK");
	tap(read(fd, r, sizeof(r[0]) - 1) < 0 && errno == EINVAL,
	    "a read smaller than a record is EINVAL");
	if (write(go, "x", 1) != 1)
		exit(1);
	close(go);
	waitpid(pid, &status, 0);

	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	tap(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN),
	    "poll: POLLIN once the thread exited");
	while ((got = read(fd, r, per_read * sizeof(r[0]))) > 0) {
		bad += got % sizeof(r[0]) != 0;
		for (i = 0; i < got / (long)sizeof(r[0]); i++, n++) {
			if (!BTS_RECORD_IS_PSEUDO(r[i].from)) {
				bad += !thread || r[i].from >= 1ULL << 47 ||
				       r[i].to >= 1ULL << 47;
				continue;
			}
			if (BTS_PSEUDO_TYPE(r[i].from) != BTS_PSEUDO_THREAD)
				continue;
			bad += r[i].to != (__u64)pid || r[i].flags != (__u64)pid;
			if (BTS_PSEUDO_ARG(r[i].from) == BTS_THREAD_NEW)
				bad += thread++ != 0;
			if (BTS_PSEUDO_ARG(r[i].from) == BTS_THREAD_EXIT)
				exits++;
		}
	}
	tap(got == 0 && n > 2 && thread == 1 && exits == 1 && !bad,
	    "read %zu at a time: %ld records, one NEW and one EXIT for the child, user addresses only, then EOF",
	    per_read, n);
	p.revents = 0;
	tap(poll(&p, 1, 0) == 1 && (p.revents & POLLHUP), "poll: POLLHUP at the end");
	err = ioctl_err(fd, BTS_IOC_STATUS, &st);
	tap(!err && st.size == sizeof(struct bts_status) && st.threads == 1 &&
	    !st.live && st.records > 0 && !st.lost,
	    "status: size %u, %u thread, %u live, %llu records, %llu lost",
	    st.size, st.threads, st.live, (unsigned long long)st.records,
	    (unsigned long long)st.lost);
	close(fd);
}

/*
 * The user records of a child that execs @path --help: all of them, or
 * only those before the exec if the exec ends the trace.  Also says
 * whether the trace ended with the thread's EXIT record.
 */
static long exec_records(const char *path, int *exited)
{
	struct bts_attach a = { .size = sizeof(a) };
	struct bts_record r[512];
	int p[2], fd, status;
	long got, i, n = 0;
	pid_t pid;
	char c;

	if (pipe(p))
		exit(1);
	pid = fork();
	if (!pid) {
		close(p[1]);
		if (read(p[0], &c, 1) == 1) {
			close(1);
			close(2);
			execl(path, path, "--help", (char *)NULL);
		}
		_exit(127);
	}
	close(p[0]);
	fd = dev();
	a.pid = pid;
	if (ioctl_err(fd, BTS_IOC_ATTACH, &a))
		return -1;
	if (write(p[1], "x", 1) != 1)
		exit(1);
	close(p[1]);
	*exited = 0;
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		poll(&pf, 1, 10000);
		got = read(fd, r, sizeof(r));
		if (got <= 0 && errno != EAGAIN)
			break;
		for (i = 0; i < got / (long)sizeof(r[0]); i++) {
			if (!BTS_RECORD_IS_PSEUDO(r[i].from))
				n++;
			else if (BTS_PSEUDO_TYPE(r[i].from) == BTS_PSEUDO_THREAD &&
				 BTS_PSEUDO_ARG(r[i].from) == BTS_THREAD_EXIT)
				*exited = 1;
		}
	}
	waitpid(pid, &status, 0);
	close(fd);
	return n;
}

/* An exec the caller could not ptrace ends the trace; another does not. */
static void setuid_exec(const char *path)
{
	int exited, exited_plain;
	long plain = exec_records("/bin/true", &exited_plain);
	long suid = exec_records(path, &exited);

	tap(plain > 1000 && exited_plain,
	    "an ordinary exec goes on being traced (%ld branches of /bin/true)",
	    plain);
	tap(suid >= 0 && suid < 200 && exited,
	    "an exec of set-user-ID %s ends the trace there (%ld branches before it, then EXIT)",
	    path, suid);
}

/*
 * A clone that fails late (clone3() with CLONE_PIDFD and a bad pidfd
 * pointer fails after the child was copied) leaves no traced thread: the
 * layer only follows children once a clone cannot fail.
 */
static void failed_clone(void)
{
	struct bts_attach a = { .size = sizeof(a), .flags = BTS_ATTACH_INHERIT };
	struct bts_status st = { .size = sizeof(st) };
	struct bts_record r[512];
	int fd, status, err;
	pid_t pid;

	fd = dev();
	pid = fork();
	if (!pid) {
		struct clone_args ca = {
			.flags		= CLONE_PIDFD,
			.pidfd		= 8,	/* not a user address */
			.exit_signal	= SIGCHLD,
		};
		int i, bad = 0;

		sleep(1);	/* the parent attaches */
		for (i = 0; i < 100; i++) {
			long ret = syscall(SYS_clone3, &ca, sizeof(ca));

			if (!ret)
				_exit(0);	/* must not happen */
			bad += ret != -1 || errno != EFAULT;
		}
		_exit(bad ? 2 : 0);
	}
	a.pid = pid;
	err = ioctl_err(fd, BTS_IOC_ATTACH, &a);
	waitpid(pid, &status, 0);
	tap(!err && WIFEXITED(status) && !WEXITSTATUS(status),
	    "100 clone3() calls failing late with EFAULT in a traced process (status %#x)",
	    status);
	while (read(fd, r, sizeof(r)) > 0)
		;
	err = ioctl_err(fd, BTS_IOC_STATUS, &st);
	tap(!err && st.threads == 1 && !st.untraced,
	    "the failed clones left no traced thread (%u threads, %u untraced)",
	    st.threads, st.untraced);
	close(fd);
}

/* A ring of 4: the last 4 branches, readable once the thread is gone. */
static void ring(void)
{
	struct bts_attach a = { .size = sizeof(a), .mode = BTS_MODE_RING,
				.nr_records = 4 };
	struct bts_record r[64];
	int fd, go, status, branches = 0;
	long got, i;
	pid_t pid;

	fd = dev();
	pid = waiter(&go);
	a.pid = pid;
	tap(!ioctl_err(fd, BTS_IOC_ATTACH, &a), "attach a ring of 4");
	if (write(go, "x", 1) != 1)
		exit(1);
	close(go);
	waitpid(pid, &status, 0);
	while ((got = read(fd, r, sizeof(r))) > 0)
		for (i = 0; i < got / (long)sizeof(r[0]); i++)
			branches += !BTS_RECORD_IS_PSEUDO(r[i].from) ||
				    BTS_PSEUDO_TYPE(r[i].from) != BTS_PSEUDO_THREAD;
	tap(branches == 4, "ring: exactly 4 records of the thread (%d)", branches);
	close(fd);
}

int main(int argc, char **argv)
{
	struct_rules();
	targets(argc > 1 ? argv[1] : NULL);
	session(512);
	session(1);
	failed_clone();
	ring();
	if (argc > 2)
		setuid_exec(argv[2]);
	printf("1..%d\n", nr);
	return failed != 0;
}
