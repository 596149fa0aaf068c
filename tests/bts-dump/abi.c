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
 * checks are skipped.  Run as root, it also checks the per-user limit on
 * trace buffers, lowering it for a while and trying it as nobody.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bts.h>

#include "tap.h"
#include <linux/sched.h>

extern char **environ;

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

/*
 * The system calls whose records abi looks for are made here, at a known
 * address: a KERNEL record of entry SYSCALL whose @flags is exec_insn is
 * that execve, one at clone3_insn that clone3.  A child of fork() has them
 * at the same address as its parent.
 */
extern const char exec_syscall[], exec_insn[], clone3_syscall[], clone3_insn[];
extern const char getpid_syscall[], getpid_insn[];

#define SYSCALL_FN(fn, insn)						\
	asm(".text\n"							\
	    ".type " #fn ", @function\n"				\
	    #fn ":\n"							\
	    "	mov %rdi, %rax\n"					\
	    "	mov %rsi, %rdi\n"					\
	    "	mov %rdx, %rsi\n"					\
	    "	mov %rcx, %rdx\n"					\
	    ".hidden " #insn "\n"					\
	    #insn ":\n"							\
	    "	syscall\n"						\
	    "	ret\n"							\
	    ".size " #fn ", .-" #fn "\n")

SYSCALL_FN(exec_syscall, exec_insn);
SYSCALL_FN(clone3_syscall, clone3_insn);
SYSCALL_FN(getpid_syscall, getpid_insn);

/* int $0x80 at int80_insn: the i386 system call eax names. */
extern const char int80_insn[];
static long int80(long nr)
{
	long ret;

	asm volatile(".hidden int80_insn\n"
		     "int80_insn: int $0x80"
		     : "=a"(ret) : "a"(nr) : "memory");
	return ret;
}

/* System call @nr by the function @fn of SYSCALL_FN(). */
static long syscall_by(const char *fn, long nr, long a, long b, long c)
{
	long (*call)(long, long, long, long) = (void *)fn;

	return call(nr, a, b, c);
}

/* A KERNEL record of a system call made at @insn? */
static int syscall_at(const struct bts_record *r, const char *insn)
{
	return BTS_RECORD_IS_PSEUDO(r->from) &&
	       BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_KERNEL &&
	       (BTS_PSEUDO_ARG(r->from) & 0xff) == BTS_ENTRY_SYSCALL &&
	       r->flags == (__u64)(unsigned long)insn;
}

/*
 * Wait until @pid is in the read() system call (/proc/PID/syscall names
 * system call 0 once the thread is off the CPU in one), where the
 * children here wait for their parent: attached then, their trace starts
 * in the kernel, and there is nothing to read until they are let go.
 */
static void wait_in_read(pid_t pid)
{
	char path[64], buf[64];
	int i, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	for (i = 0; i < 60000; i++) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			break;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 2 && !strncmp(buf, "0 ", 2))
			return;
		poll(NULL, 0, 1);
	}
	printf("Bail out! %d never waited in read() (%s)\n", pid, path);
	exit(1);
}

/*
 * A child that waits for a byte on a pipe, then runs @fn (if any) and
 * exits with its status.  It is in the read() when this returns.  It
 * keeps no other file open: a /dev/bts file closed here is released.
 */
static pid_t waiter_fn(int *go, int (*fn)(void))
{
	int p[2], fd;
	pid_t pid;
	char c;

	if (pipe(p))
		exit(1);
	pid = fork();
	if (!pid) {
		for (fd = 3; fd < 1024; fd++)
			if (fd != p[0])
				close(fd);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		_exit(fn ? fn() : 0);
	}
	close(p[0]);
	*go = p[1];
	wait_in_read(pid);
	return pid;
}

static pid_t waiter(int *go)
{
	return waiter_fn(go, NULL);
}

/*
 * Attach @fd as @a says to a waiter_fn(@fn) child, let it go and wait for
 * it; its status in @status.  Return: the attach's errno, 0 on success.
 */
static int attach_run(int fd, struct bts_attach *a, int (*fn)(void),
		      int *status)
{
	int go, err;

	a->pid = waiter_fn(&go, fn);
	err = ioctl_err(fd, BTS_IOC_ATTACH, a);
	if (write(go, "x", 1) != 1)
		exit(1);
	close(go);
	waitpid(a->pid, status, 0);
	return err;
}

/* 100 clone3() calls that fail late, with EFAULT; 0 if they all did. */
static int clone_child(void)
{
	struct clone_args ca = {
		.flags		= CLONE_PIDFD,
		.pidfd		= 8,	/* not a user address */
		.exit_signal	= SIGCHLD,
	};
	int i, bad = 0;

	for (i = 0; i < 100; i++) {
		long ret = syscall_by(clone3_syscall, SYS_clone3, (long)&ca,
				      sizeof(ca), 0);

		if (!ret)
			_exit(3);	/* must not happen */
		bad += ret != -EFAULT;
	}
	return bad ? 2 : 0;
}

/*
 * BTS_ATTACH_MARKERS's glob and BTS_IOC_EVENT_FORMAT's rules (the markers
 * themselves are tests/user-events').
 */
static void marker_rules(void)
{
	struct bts_attach a = { .size = sizeof(a), .pid = getpid() };
	char glob[BTS_MARKERS_GLOB_MAX + 1], buf[64];
	struct bts_event_format e = {
		.size = sizeof(e),
		.id = ~0U,
		.len = sizeof(buf),
		.format = (uintptr_t)buf,
	};
	int fd, err;

	a.markers = (uintptr_t)"*";
	tap(attach_err(&a) == EINVAL,
	    "attach: a markers glob without BTS_ATTACH_MARKERS is EINVAL");
	a.flags = BTS_ATTACH_MARKERS;
	a.markers = 8;
	tap(attach_err(&a) == EFAULT, "attach: a bad markers glob pointer is EFAULT");
	memset(glob, 'x', sizeof(glob) - 1);
	glob[sizeof(glob) - 1] = 0;
	a.markers = (uintptr_t)glob;
	tap(attach_err(&a) == EINVAL,
	    "attach: a markers glob past BTS_MARKERS_GLOB_MAX is EINVAL");

	fd = dev();
	tap(ioctl_err(fd, BTS_IOC_EVENT_FORMAT, &e) == EINVAL,
	    "event format: a file without markers is EINVAL");
	a.markers = 0;
	err = ioctl_err(fd, BTS_IOC_ATTACH, &a);
	tap(!err, "attach: BTS_ATTACH_MARKERS, every event (%s)", strerror(err));
	err = ioctl_err(fd, BTS_IOC_EVENT_FORMAT, &e);
	tap(err == ENOENT, "event format: an event never registered is ENOENT (%s)",
	    strerror(err));
	e.flags = 1;
	tap(ioctl_err(fd, BTS_IOC_EVENT_FORMAT, &e) == EINVAL,
	    "event format: an unknown flag is EINVAL");
	e.flags = 0;
	e.reserved = 1;
	tap(ioctl_err(fd, BTS_IOC_EVENT_FORMAT, &e) == EINVAL,
	    "event format: a reserved field not zero is EINVAL");
	e.reserved = 0;
	e.size = BTS_EVENT_FORMAT_SIZE_VER0 - 4;
	tap(ioctl_err(fd, BTS_IOC_EVENT_FORMAT, &e) == EINVAL,
	    "event format: a size below the first version is EINVAL");
	close(fd);
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

	tap(sizeof(struct bts_attach) == BTS_ATTACH_SIZE_VER1 &&
	    sizeof(struct bts_status) == BTS_STATUS_SIZE_VER0,
	    "struct sizes are the current versions' (%zu, %zu)",
	    sizeof(struct bts_attach), sizeof(struct bts_status));

	a.size = BTS_ATTACH_SIZE_VER0 - 4;
	tap(attach_err(&a) == EINVAL, "attach: a size below the first version is EINVAL");
	a.size = BTS_ATTACH_SIZE_VER0;
	err = attach_err(&a);
	tap(!err, "attach: the first version's size works (%s)", strerror(err));
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
	marker_rules();

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

/* What the trace of a child that execs a program showed. */
struct exec_trace {
	int attached;		/* the attach worked */
	int execs;		/* KERNEL records of its execve */
	__u64 resume;		/* where that execve came back to user mode */
	long before, after;	/* branches before and after it */
	int exited;		/* the trace ended with the thread's EXIT */
	int late;		/* records after the EXIT */
};

/*
 * The trace of a child that execs @path --help, from before the exec to
 * its end, read until EOF.
 */
static void exec_records(const char *path, struct exec_trace *x)
{
	struct bts_attach a = { .size = sizeof(a) };
	struct bts_record r[512];
	int p[2], fd, status;
	long got, i;
	pid_t pid;
	char c;

	memset(x, 0, sizeof(*x));
	if (pipe(p))
		exit(1);
	pid = fork();
	if (!pid) {
		const char **argv = (const char *[]){ path, "--help", NULL };

		close(p[1]);
		if (read(p[0], &c, 1) == 1) {
			close(1);
			close(2);
			syscall_by(exec_syscall, SYS_execve, (long)path,
				   (long)argv, (long)environ);
		}
		_exit(127);
	}
	close(p[0]);
	wait_in_read(pid);
	fd = dev();
	a.pid = pid;
	x->attached = !ioctl_err(fd, BTS_IOC_ATTACH, &a);
	if (write(p[1], "x", 1) != 1)
		exit(1);
	close(p[1]);
	while (x->attached) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		if (poll(&pf, 1, 60000) != 1)
			break;		/* nothing for a minute: a failure */
		got = read(fd, r, sizeof(r));
		if (got < 0 && errno == EAGAIN)
			continue;
		if (got <= 0)
			break;
		for (i = 0; i < got / (long)sizeof(r[0]); i++) {
			x->late += x->exited;
			if (syscall_at(&r[i], exec_insn)) {
				x->execs++;
				x->resume = r[i].to;
			} else if (!BTS_RECORD_IS_PSEUDO(r[i].from)) {
				if (x->execs)
					x->after++;
				else
					x->before++;
			} else if (BTS_PSEUDO_TYPE(r[i].from) == BTS_PSEUDO_THREAD &&
				   BTS_PSEUDO_ARG(r[i].from) == BTS_THREAD_EXIT) {
				x->exited = 1;
			}
		}
	}
	waitpid(pid, &status, 0);
	close(fd);
}

/*
 * An exec the caller could not ptrace ends the trace; another does not.
 * Both children make their execve at exec_insn, so its record is known:
 * after an ordinary exec the new program's branches follow it, after a
 * set-user-ID one nothing but the thread's EXIT.
 */
static void setuid_exec(const char *path)
{
	struct exec_trace plain, suid;

	exec_records("/bin/true", &plain);
	exec_records(path, &suid);
	tap(plain.attached && plain.execs == 1 && plain.resume &&
	    plain.after > 0 && plain.exited && !plain.late,
	    "an ordinary exec goes on being traced (%d execve records, back in user mode at %#llx, %ld branches before it, %ld after, %sEXIT)",
	    plain.execs, (unsigned long long)plain.resume, plain.before,
	    plain.after, plain.exited ? "" : "no ");
	tap(suid.attached && suid.execs == 1 && suid.before > 0 &&
	    !suid.after && suid.exited && !suid.late,
	    "an exec of set-user-ID %s ends the trace there (%d execve records, %ld branches before it, %ld after, %sEXIT)",
	    path, suid.execs, suid.before, suid.after,
	    suid.exited ? "" : "no ");
}

/*
 * A clone that fails late (clone3() with CLONE_PIDFD and a bad pidfd
 * pointer fails after the child was copied) leaves no traced thread: the
 * layer only follows children once a clone cannot fail.  The child makes
 * its clones only once the attach is done, and the trace must show each
 * of them: 100 KERNEL records at clone3_insn.
 */
static void failed_clone(void)
{
	struct bts_attach a = { .size = sizeof(a), .flags = BTS_ATTACH_INHERIT };
	struct bts_status st = { .size = sizeof(st) };
	struct bts_record r[512];
	int fd, status, err, clones = 0;
	long got, i;

	fd = dev();
	err = attach_run(fd, &a, clone_child, &status);
	tap(!err && WIFEXITED(status) && !WEXITSTATUS(status),
	    "100 clone3() calls failing late with EFAULT in a traced process (attach: %s, status %#x)",
	    strerror(err), status);
	while ((got = read(fd, r, sizeof(r))) > 0)
		for (i = 0; i < got / (long)sizeof(r[0]); i++)
			clones += syscall_at(&r[i], clone3_insn);
	err = ioctl_err(fd, BTS_IOC_STATUS, &st);
	tap(!err && clones == 100 && st.threads == 1 && !st.untraced,
	    "the failed clones, all 100 traced, left no traced thread (%d clone3 records, %u threads, %u untraced)",
	    clones, st.threads, st.untraced);
	close(fd);
}

static void *thread_exits(void *arg)
{
	return arg;
}

/* A thread and a forked process, each gone at once; 0 if both were. */
static int thread_and_fork(void)
{
	pthread_t thread;
	int status;
	pid_t pid;

	if (pthread_create(&thread, NULL, thread_exits, NULL) ||
	    pthread_join(thread, NULL))
		return 2;
	pid = fork();
	if (!pid)
		_exit(0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status)
		return 3;
	return 0;
}

/*
 * BTS_ATTACH_INHERIT follows the process's threads and the processes it
 * forks, BTS_ATTACH_INHERIT_THREADS its threads alone: the process, its
 * thread and its child are 3 threads traced, then 2.  Not both flags.
 */
static void inherit_threads(void)
{
	static const struct {
		__u32 flags;
		unsigned int threads;
		const char *what;
	} cases[] = {
		{ BTS_ATTACH_INHERIT, 3, "INHERIT traces a thread and a forked child" },
		{ BTS_ATTACH_INHERIT_THREADS, 2,
		  "INHERIT_THREADS traces a thread, not a forked child" },
	};
	struct bts_attach a = { .size = sizeof(a), .pid = getpid(),
				.flags = BTS_ATTACH_INHERIT |
					 BTS_ATTACH_INHERIT_THREADS };
	struct bts_record r[512];
	unsigned int i;

	tap(attach_err(&a) == EINVAL, "attach: INHERIT with INHERIT_THREADS is EINVAL");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bts_status st = { .size = sizeof(st) };
		int fd = dev(), err, status = -1;

		a.flags = cases[i].flags;
		a.nr_records = 256;
		err = attach_run(fd, &a, thread_and_fork, &status);
		while (read(fd, r, sizeof(r)) > 0)
			;
		if (!err)
			err = ioctl_err(fd, BTS_IOC_STATUS, &st);
		tap(!err && WIFEXITED(status) && !WEXITSTATUS(status) &&
		    st.threads == cases[i].threads,
		    "%s (%s, status %#x, %u threads traced)", cases[i].what,
		    strerror(err), status, st.threads);
		close(fd);
	}
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

/* Shared with snapshot_child(): what it is asked to do, and its loops' counts. */
static volatile unsigned long *snap_shm;
enum { SNAP_PHASE, SNAP_A, SNAP_B };

static __attribute__((noinline)) void snap_loop_a(void)
{
	asm volatile("" ::: "memory");
}

static __attribute__((noinline)) void snap_loop_b(void)
{
	asm volatile("" ::: "memory");
}

/* Loop A, then loop B when asked, then stop itself; exit when continued. */
static int snapshot_child(void)
{
	while (snap_shm[SNAP_PHASE] == 0) {
		snap_loop_a();
		snap_shm[SNAP_A]++;
	}
	while (snap_shm[SNAP_PHASE] == 1) {
		snap_loop_b();
		snap_shm[SNAP_B]++;
	}
	raise(SIGSTOP);
	return 0;
}

static int snapshot_err(int fd, struct bts_snapshot *s)
{
	return ioctl_err(fd, BTS_IOC_SNAPSHOT, s);
}

/*
 * Wait until the child's count @idx reaches @min: spinning, so as to see
 * it soon after, while the child's newest records may still be in its
 * CPU's staging buffer; yielding now and then, in case both run on one.
 */
static void wait_count(int idx, unsigned long min)
{
	long i;

	for (i = 0; i < 100000000 && snap_shm[idx] < min; i++)
		if (!(i % 4096))
			sched_yield();
}

/* Calls into @fn among @n records, and the index of the newest, or -1. */
static int calls_into(const struct bts_record *r, unsigned int n, void (*fn)(void),
		      int *newest)
{
	unsigned int i, calls = 0;

	*newest = -1;
	for (i = 0; i < n; i++) {
		if (r[i].to == (__u64)(unsigned long)fn) {
			calls++;
			*newest = i;
		}
	}
	return calls;
}

/* Records holding a kernel address (branches only; pseudo-records aside). */
static int kernel_addresses(const struct bts_record *r, unsigned int n)
{
	unsigned int i, bad = 0;

	for (i = 0; i < n; i++)
		bad += !BTS_RECORD_IS_PSEUDO(r[i].from) &&
		       ((r[i].from | r[i].to) >> 47);
	return bad;
}

/*
 * BTS_IOC_SNAPSHOT: a ring's last records while its thread runs, the
 * newest at the end (a loop the thread just entered), only what fits,
 * nothing after the thread exited, and the struct's rules.
 */
static void snapshots(void)
{
	struct bts_attach a = { .size = sizeof(a), .mode = BTS_MODE_RING,
				.nr_records = 64 };
	static struct bts_record full[100], part[8];
	struct bts_snapshot s = { .size = sizeof(s) };
	int fd, go, status, err, na, nb, newest_a, newest_b;
	pid_t pid;

	tap(sizeof(struct bts_snapshot) == BTS_SNAPSHOT_SIZE_VER0,
	    "snapshot: the struct's size is the first version's (%zu)",
	    sizeof(struct bts_snapshot));
	snap_shm = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (snap_shm == MAP_FAILED)
		exit(1);
	fd = dev();
	s.pid = getpid();
	s.nr_records = 1;
	s.records = (unsigned long)full;
	tap(snapshot_err(fd, &s) == EINVAL, "snapshot: before attach is EINVAL");
	pid = waiter_fn(&go, snapshot_child);
	a.pid = pid;
	tap(!ioctl_err(fd, BTS_IOC_ATTACH, &a), "snapshot: attach a ring of 64");
	if (write(go, "x", 1) != 1)
		exit(1);
	close(go);

	s.pid = pid;
	s.nr_records = 100;
	wait_count(SNAP_A, 10000);
	err = snapshot_err(fd, &s);
	na = calls_into(full, s.nr_records, snap_loop_a, &newest_a);
	nb = calls_into(full, s.nr_records, snap_loop_b, &newest_b);
	tap(!err && s.nr_records == 64 && na >= 10 && !nb &&
	    !kernel_addresses(full, s.nr_records),
	    "snapshot: the last 64 of a running thread, in loop A (%s, %u records, %d calls into A, %d into B)",
	    strerror(err), s.nr_records, na, nb);

	snap_shm[SNAP_PHASE] = 1;
	wait_count(SNAP_B, 1);
	s.nr_records = 100;
	err = snapshot_err(fd, &s);
	calls_into(full, s.nr_records, snap_loop_a, &newest_a);
	nb = calls_into(full, s.nr_records, snap_loop_b, &newest_b);
	tap(!err && nb >= 1 && newest_b > newest_a,
	    "snapshot: taken as the thread entered loop B, it ends there (%s, %d calls into B, newest A at %d, B at %d)",
	    strerror(err), nb, newest_a, newest_b);

	snap_shm[SNAP_PHASE] = 2;
	waitpid(pid, &status, WUNTRACED);
	s.nr_records = 100;
	err = snapshot_err(fd, &s);
	s.nr_records = 8;
	s.records = (unsigned long)part;
	err = err ? err : snapshot_err(fd, &s);
	tap(!err && s.nr_records == 8 && !memcmp(part, full + 56, sizeof(part)),
	    "snapshot: room for 8 of a stopped thread's 64 gets the newest 8 (%s, %u)",
	    strerror(err), s.nr_records);

	s.flags = 1;
	tap(snapshot_err(fd, &s) == EINVAL, "snapshot: an unknown flag is EINVAL");
	s.flags = 0;
	s.nr_records = 0;
	tap(snapshot_err(fd, &s) == EINVAL, "snapshot: room for no record is EINVAL");
	s.nr_records = 8;
	s.size = BTS_SNAPSHOT_SIZE_VER0 - 8;
	tap(snapshot_err(fd, &s) == EINVAL,
	    "snapshot: a size below the first version is EINVAL");
	s.size = sizeof(s);
	s.records = 8;
	tap(snapshot_err(fd, &s) == EFAULT, "snapshot: a bad records pointer is EFAULT");
	s.records = (unsigned long)part;
	s.pid = getpid();
	tap(snapshot_err(fd, &s) == ESRCH, "snapshot: a thread the file does not trace is ESRCH");

	kill(pid, SIGCONT);
	waitpid(pid, &status, 0);
	s.pid = pid;
	tap(snapshot_err(fd, &s) == ESRCH, "snapshot: a thread that exited is ESRCH");
	close(fd);

	fd = dev();
	pid = waiter(&go);
	a.pid = pid;
	a.mode = BTS_MODE_CONTINUOUS;
	s.pid = pid;
	err = ioctl_err(fd, BTS_IOC_ATTACH, &a);
	tap(!err && snapshot_err(fd, &s) == EINVAL,
	    "snapshot: a file in continuous mode is EINVAL");
	close(go);
	waitpid(pid, &status, 0);
	close(fd);
	munmap((void *)snap_shm, 4096);
}

#define LIMIT_PATH	"/proc/sys/kernel/bts_user_max_kb"
#define LIMIT_KB	4096	/* 4 MiB: one buffer of 100000 records fits */

static long read_long(const char *path, const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			v = strtol(line + strlen(key), NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int write_limit(long kb)
{
	FILE *f = fopen(LIMIT_PATH, "w");
	int bad;

	if (!f)
		return -1;
	bad = fprintf(f, "%ld\n", kb) < 0;
	return fclose(f) || bad ? -1 : 0;
}

/* A process whose three children all live until it is killed. */
static int three_children(void)
{
	int i;

	for (i = 0; i < 3; i++)
		if (!fork()) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pause();
			_exit(0);
		}
	pause();
	return 0;
}

/* What user_limit_steps() found, in memory its parent shares. */
struct limit_result {
	int first, second, ring, after_close;
	struct bts_status inherit;
	int lossless, lossy;
};

/* Attach a file to a new waiter with @nr_records; the errno, 0 if traced. */
static int limited_attach(int fd, __u32 mode, __u32 flags, __u32 nr_records,
			  pid_t *pid, int *go, int (*fn)(void))
{
	struct bts_attach a = { .size = sizeof(a), .mode = mode,
				.flags = flags, .nr_records = nr_records };

	*pid = waiter_fn(go, fn);
	a.pid = *pid;
	return ioctl_err(fd, BTS_IOC_ATTACH, &a);
}

/* As an unprivileged user (nobody), against the limit LIMIT_KB. */
static void user_limit_steps(struct limit_result *r)
{
	int fa = dev(), fb = dev(), fc = dev(), go[4], i;
	pid_t pid[4];

	/* 2.4 MB, then 2.4 MB more: past 4 MiB. */
	r->first = limited_attach(fa, BTS_MODE_CONTINUOUS, 0, 100000, &pid[0],
				  &go[0], NULL);
	r->second = limited_attach(fb, BTS_MODE_CONTINUOUS, 0, 100000,
				   &pid[1], &go[1], NULL);
	/* A ring counts twice (its snapshot): 2 x 1.2 MB is too much too. */
	r->ring = limited_attach(fb, BTS_MODE_RING, 0, 50000, &pid[2], &go[2],
				 NULL);
	close(fa);
	r->after_close = ioctl_err(fb, BTS_IOC_ATTACH, &(struct bts_attach){
		.size = sizeof(struct bts_attach), .pid = pid[1],
		.nr_records = 100000 });
	close(fb);
	/* 1.44 MB each: the process and one child fit, two children not. */
	limited_attach(fc, BTS_MODE_CONTINUOUS, BTS_ATTACH_INHERIT, 60000,
		       &pid[3], &go[3], three_children);
	if (write(go[3], "x", 1) != 1)
		exit(1);
	for (i = 0; i < 300; i++) {
		r->inherit = (struct bts_status){ .size = sizeof(r->inherit) };
		if (ioctl(fc, BTS_IOC_STATUS, &r->inherit) ||
		    r->inherit.threads + r->inherit.untraced >= 4)
			break;
		usleep(10000);
	}
	for (i = 0; i < 4; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
	close(fc);
}

/*
 * As nobody, against a limit of 64 KiB: 64 records fit, but not with
 * lossless mode's headroom (2,730 records, 64 KiB).
 */
static void lossless_limit_steps(struct limit_result *r)
{
	int fd = dev(), go[2];
	pid_t pid[2];

	r->lossless = limited_attach(fd, BTS_MODE_CONTINUOUS,
				     BTS_ATTACH_LOSSLESS, 64, &pid[0], &go[0],
				     NULL);
	r->lossy = limited_attach(fd, BTS_MODE_CONTINUOUS, 0, 64, &pid[1],
				  &go[1], NULL);
	kill(pid[0], SIGKILL);
	kill(pid[1], SIGKILL);
	waitpid(pid[0], NULL, 0);
	waitpid(pid[1], NULL, 0);
	close(fd);
}

/* Run @steps as nobody, traceable; its exit status. */
static int as_nobody(void (*steps)(struct limit_result *),
		     struct limit_result *r)
{
	pid_t child;
	int status;

	fflush(stdout);
	child = fork();
	if (!child) {
		/* Dumpable again after the change, to be traceable. */
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534) ||
		    prctl(PR_SET_DUMPABLE, 1))
			_exit(1);
		steps(r);
		_exit(0);
	}
	waitpid(child, &status, 0);
	return status;
}

/*
 * The per-user limit on trace buffers: its default, EDQUOT past it for an
 * unprivileged user, its memory back when a file is closed, created
 * threads past it counted as untraced, and no limit with CAP_PERFMON.
 * Context: root.
 */
static void user_limit(void)
{
	long def = read_long(LIMIT_PATH, ""), mem;
	struct limit_result *r;
	int fa, fb, go[2], first, second, status;
	pid_t pid[2];

	/* Of the RAM at boot: the kernel frees its init memory later. */
	mem = read_long("/proc/meminfo", "MemTotal:");
	tap(def <= mem / 16 && def >= mem / 16 * 98 / 100,
	    "the per-user limit is a sixteenth of RAM by default (%ld KiB of %ld)",
	    def, mem);
	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED || write_limit(LIMIT_KB)) {
		printf("Bail out! cannot set %s\n", LIMIT_PATH);
		exit(1);
	}
	status = as_nobody(user_limit_steps, r);
	tap(WIFEXITED(status) && !WEXITSTATUS(status),
	    "the per-user limit: the steps as nobody ran (status %#x)", status);
	tap(r->first == 0 && r->second == EDQUOT,
	    "the per-user limit: a second 2.4 MB buffer past 4 MiB is EDQUOT (%s, then %s)",
	    strerror(r->first), strerror(r->second));
	tap(r->ring == EDQUOT, "the per-user limit counts a ring twice (%s)",
	    strerror(r->ring));
	tap(r->after_close == 0,
	    "the per-user limit: closing a file gives its buffers back (%s)",
	    strerror(r->after_close));
	tap(r->inherit.threads == 2 && r->inherit.untraced == 2,
	    "the per-user limit: created threads past it are counted untraced (%u traced, %u untraced)",
	    r->inherit.threads, r->inherit.untraced);

	/* CAP_PERFMON: both fit. */
	fa = dev();
	fb = dev();
	first = limited_attach(fa, BTS_MODE_CONTINUOUS, 0, 100000, &pid[0],
			       &go[0], NULL);
	second = limited_attach(fb, BTS_MODE_CONTINUOUS, 0, 100000, &pid[1],
				&go[1], NULL);
	tap(!first && !second, "the per-user limit does not apply with CAP_PERFMON (%s, %s)",
	    strerror(first), strerror(second));
	kill(pid[0], SIGKILL);
	kill(pid[1], SIGKILL);
	waitpid(pid[0], NULL, 0);
	waitpid(pid[1], NULL, 0);
	close(fa);
	close(fb);

	if (write_limit(64)) {
		printf("Bail out! cannot set %s\n", LIMIT_PATH);
		exit(1);
	}
	status = as_nobody(lossless_limit_steps, r);
	tap(WIFEXITED(status) && !WEXITSTATUS(status) &&
	    r->lossless == EDQUOT && r->lossy == 0,
	    "the per-user limit counts lossless mode's headroom: 64 records past 64 KiB lossless, within it lossy (%s, %s)",
	    strerror(r->lossless), strerror(r->lossy));
	if (write_limit(def))
		printf("Bail out! cannot restore %s\n", LIMIT_PATH);
	munmap(r, sizeof(*r));
}

#define GONE_CHILDREN	400

/* Objects in use of the slab cache @name, from /proc/slabinfo. */
static long slab_active(const char *name)
{
	char line[512], cache[64];
	long active = -1, v;
	FILE *f = fopen("/proc/slabinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", cache, &v) == 2 &&
		    !strcmp(cache, name))
			active = v;
	fclose(f);
	return active;
}

/* GONE_CHILDREN processes that exit at once; 0 once all are reaped. */
static int short_children(void)
{
	int i;

	for (i = 0; i < GONE_CHILDREN; i++)
		if (!fork())
			_exit(0);
	while (wait(NULL) > 0)
		;
	return 0;
}

/*
 * Threads that exited and were read to the end no longer hold their task:
 * the task_structs of a traced process's many short children are freed
 * before the file is closed.  Context: root (/proc/slabinfo).
 */
static void gone_threads(void)
{
	struct bts_attach a = { .size = sizeof(a), .flags = BTS_ATTACH_INHERIT,
				.nr_records = 256 };
	struct bts_status st = { .size = sizeof(st) };
	static struct bts_record r[4096];
	long before, after = -1;
	int fd = dev(), go, i;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t got;
	pid_t pid;

	pid = waiter_fn(&go, short_children);
	a.pid = pid;
	if (ioctl_err(fd, BTS_IOC_ATTACH, &a)) {
		tap(0, "attach for the exited threads");
		return;
	}
	before = slab_active("task_struct");
	if (write(go, "x", 1) != 1)
		exit(1);
	close(go);
	waitpid(pid, NULL, 0);
	/* Everything, to the end of the file. */
	while (poll(&p, 1, 10000) == 1) {
		got = read(fd, r, sizeof(r));
		if (got <= 0 && !(got < 0 && errno == EAGAIN))
			break;
	}
	/* Freed at the last reference, or a grace period after it. */
	for (i = 0; i < 100; i++) {
		after = slab_active("task_struct");
		if (after - before < GONE_CHILDREN / 4)
			break;
		usleep(50000);
	}
	ioctl(fd, BTS_IOC_STATUS, &st);
	tap(st.threads == GONE_CHILDREN + 1 && st.live == 0,
	    "status counts the threads that are gone (%u threads, %u live)",
	    st.threads, st.live);
	tap(before > 0 && after - before < GONE_CHILDREN / 4,
	    "exited threads read to the end let go of their tasks before the close (task_struct in use: %ld, then %ld after %d exits)",
	    before, after, GONE_CHILDREN + 1);
	close(fd);
}

/* Some thousands of branches, the same every time. */
static int branchy(void)
{
	volatile unsigned long sum = 0;
	int i;

	for (i = 0; i < 3000; i++)
		sum += i & 3 ? i : 1;
	return sum ? 0 : 1;
}

/*
 * Reads into a buffer that ends in an inaccessible page: the records copied
 * before the fault are the reader's, and those after it stay in the stream
 * for the next read.  A read that faults on its first record is EFAULT and
 * loses nothing either.  In all, the reader gets every record the status
 * counts.
 */
static void fault_reads(void)
{
	struct bts_attach a = {
		.size = sizeof(a), .mode = BTS_MODE_CONTINUOUS,
		.nr_records = 1 << 16,
	};
	struct bts_status st = { .size = sizeof(st) };
	const long fit = 10, page = sysconf(_SC_PAGESIZE);
	long got, i, reads = 0, faults = 0, n = 0, exits = 0;
	struct bts_record *r;
	int fd, go, status;
	char *map;
	pid_t pid;

	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map + page, page, PROT_NONE))
		exit(1);
	/* @fit records, then the inaccessible page. */
	r = (struct bts_record *)(map + page) - fit;

	fd = dev();
	pid = waiter_fn(&go, branchy);
	a.pid = pid;
	if (ioctl_err(fd, BTS_IOC_ATTACH, &a))
		exit(1);
	if (write(go, "x", 1) != 1)
		exit(1);
	close(go);
	waitpid(pid, &status, 0);

	tap(read(fd, map + page, page) < 0 && errno == EFAULT,
	    "a read into an inaccessible buffer is EFAULT");
	while ((got = read(fd, r, fit * sizeof(*r) + page))) {
		if (got < 0) {
			if (errno != EFAULT || ++faults > 100)
				break;
			continue;
		}
		reads++;
		for (i = 0; i < got / (long)sizeof(*r); i++) {
			if (BTS_RECORD_IS_PSEUDO(r[i].from) &&
			    BTS_PSEUDO_TYPE(r[i].from) == BTS_PSEUDO_THREAD) {
				exits += BTS_PSEUDO_ARG(r[i].from) ==
					 BTS_THREAD_EXIT;
				continue;
			}
			n++;
		}
	}
	ioctl_err(fd, BTS_IOC_STATUS, &st);
	tap(got == 0 && exits == 1 && !faults && !st.lost &&
	    n == (long)st.records && n > 3000,
	    "reads that fault after %ld records: every record arrives (%ld of %llu in %ld reads, %ld EFAULT, %llu lost)",
	    fit, n, (unsigned long long)st.records, reads, faults,
	    (unsigned long long)st.lost);
	close(fd);
	munmap(map, 2 * page);
}

/* The system calls the detail test makes, in order, and what it expects. */
#define I386_GETPID	20
#define X32_BIT		0x40000000UL

static int detail_calls(void)
{
	volatile char *page;

	syscall_by(getpid_syscall, SYS_getpid, 0, 0, 0);
	/* x32's getpid; -ENOSYS without CONFIG_X86_X32_ABI, entered all the same. */
	syscall_by(getpid_syscall, X32_BIT | SYS_getpid, 0, 0, 0);
	int80(I386_GETPID);
	/* A write fault on a fresh page: error code "user, write, not present". */
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	*page = 1;
	return 0;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * Every KERNEL record comes after its detail: the system call number and
 * table the thread used (64-bit, x32, int $0x80) and a page fault's error
 * code, and the time it went back to user mode, in CLOCK_MONOTONIC
 * between the release of the child and its reaping, never going back.
 */
static void kernel_details(void)
{
	struct bts_attach a = { .size = sizeof(a) };
	struct bts_record r[4096];
	int fd, go, status, kernel = 0, detailed = 0, back = 0, late = 0;
	int seen64 = 0, seenx32 = 0, seen386 = 0, seenpf = 0;
	struct bts_record d = {};
	__u64 t0, t1, last = 0;
	long got, i;
	pid_t pid;

	fd = dev();
	pid = waiter_fn(&go, detail_calls);
	a.pid = pid;
	tap(!ioctl_err(fd, BTS_IOC_ATTACH, &a), "details: attach");
	t0 = now_ns();
	if (write(go, "x", 1) != 1)
		exit(1);
	close(go);
	waitpid(pid, &status, 0);
	t1 = now_ns();
	while ((got = read(fd, r, sizeof(r))) > 0) {
		for (i = 0; i < got / (long)sizeof(r[0]); i++) {
			__u32 type = BTS_PSEUDO_TYPE(r[i].from);
			__u32 arg = BTS_PSEUDO_ARG(r[i].from);

			if (!BTS_RECORD_IS_PSEUDO(r[i].from)) {
				d.from = 0;
				continue;
			}
			if (type == BTS_PSEUDO_THREAD)
				continue;
			if (type == BTS_PSEUDO_DETAIL) {
				d = r[i];
				continue;
			}
			if (type != BTS_PSEUDO_KERNEL)
				continue;
			kernel++;
			if (!d.from || BTS_DETAIL_TYPE(d.from) !=
			    BTS_PSEUDO_KERNEL ||
			    BTS_DETAIL_LAYOUT(d.from) != BTS_DETAIL_KERNEL_ENTRY) {
				d.from = 0;
				continue;
			}
			detailed++;
			back += d.flags < last;
			late += d.flags < t0 || d.flags > t1;
			last = d.flags;
			if ((arg & 0xff) == BTS_ENTRY_SYSCALL &&
			    r[i].flags == (__u64)(unsigned long)getpid_insn) {
				seen64 += BTS_DETAIL_VAL(d.from) ==
					  BTS_ABI_X86_64 && d.to == SYS_getpid;
				seenx32 += BTS_DETAIL_VAL(d.from) == BTS_ABI_X32 &&
					   d.to == (X32_BIT | SYS_getpid);
			}
			if ((arg & 0xff) == BTS_ENTRY_SYSCALL &&
			    r[i].flags == (__u64)(unsigned long)int80_insn)
				seen386 += BTS_DETAIL_VAL(d.from) == BTS_ABI_I386 &&
					   d.to == I386_GETPID;
			if ((arg & 0xff) == BTS_ENTRY_EXCEPTION &&
			    (arg >> 8 & 0xff) == 14)
				seenpf += BTS_DETAIL_VAL(d.from) == BTS_ABI_NONE &&
					  (d.to & 6) == 6;
			d.from = 0;
		}
	}
	close(fd);
	tap(WIFEXITED(status) && !WEXITSTATUS(status) && kernel > 3 &&
	    detailed == kernel,
	    "details: every KERNEL record has its detail (%d of %d)",
	    detailed, kernel);
	tap(seen64 == 1 && seenx32 == 1 && seen386 == 1,
	    "details: system call numbers and tables: x86-64 %d, x32 %d, int $0x80 %d",
	    seen64, seenx32, seen386);
	tap(seenpf > 0, "details: a write fault's error code (%d)", seenpf);
	tap(!back && !late,
	    "details: times in CLOCK_MONOTONIC while the child ran, in order (%d out of [%llu, %llu], %d back)",
	    late, (unsigned long long)t0, (unsigned long long)t1, back);
}

int main(int argc, char **argv)
{
	struct_rules();
	targets(argc > 1 ? argv[1] : NULL);
	session(512);
	session(1);
	fault_reads();
	failed_clone();
	inherit_threads();
	ring();
	snapshots();
	kernel_details();
	if (!getuid()) {
		user_limit();
		gone_threads();
	}
	if (argc > 2)
		setuid_exec(argv[2]);
	printf("1..%d\n", nr);
	return failed != 0;
}
