// SPDX-License-Identifier: GPL-2.0
/*
 * comm: the thread names of /dev/bts (BTS_MAP_COMM, with BTS_ATTACH_MAPS),
 * in the test VM.  Prints TAP.
 *
 *	comm [PROGRAM]
 *
 * A traced child renames itself with prctl() and creates a thread, which
 * renames itself too and is then renamed by the child through its comm
 * file in /proc (pthread_setname_np() of another thread) while it waits.
 * After each rename the renamed thread calls a function of its own, and
 * at the end the child executes PROGRAM (/bin/true by default).  Each
 * thread's stream must start with its name, before its first branch, and
 * name it anew after each rename, before the call that follows it; the
 * exec's name before the EXEC record.  A second child is attached while it
 * runs in user mode: its stream starts with its name too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/bts.h>

#include "tap.h"

#define MAX_RECORDS	(1 << 21)
#define MAX_THREADS	4

/* Functions each thread calls right after a rename. */
void __attribute__((noinline)) after_prctl(void) { asm volatile(""); }
void __attribute__((noinline)) after_own(void) { asm volatile(""); }
void __attribute__((noinline)) after_other(void) { asm volatile(""); }
void __attribute__((noinline)) spin(void) { asm volatile(""); }

/* One thread's stream, as read() framed it. */
struct stream {
	unsigned int tid;
	struct bts_record *r;
	long n;
};

struct trace {
	struct stream s[MAX_THREADS];
	int nr_streams;
	long records;
	struct stream *cur;	/* whose records read() gives now */
};

static struct stream *stream_of(struct trace *t, unsigned int tid)
{
	int i;

	for (i = 0; i < t->nr_streams; i++)
		if (t->s[i].tid == tid)
			return &t->s[i];
	if (t->nr_streams == MAX_THREADS)
		return NULL;
	t->s[i].r = calloc(MAX_RECORDS, sizeof(*t->s[i].r));
	if (!t->s[i].r)
		return NULL;
	t->s[i].tid = tid;
	t->nr_streams++;
	return &t->s[i];
}

/* Split what read() returned into the threads' streams. */
static void split(struct trace *t, const struct bts_record *r, long n)
{
	long i;

	for (i = 0; i < n; i++, r++) {
		t->records++;
		if (BTS_RECORD_IS_PSEUDO(r->from) &&
		    BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_THREAD) {
			t->cur = stream_of(t, r->to);
			continue;
		}
		if (t->cur && t->cur->n < MAX_RECORDS)
			t->cur->r[t->cur->n++] = *r;
	}
}

static int is_comm(const struct bts_record *r)
{
	return BTS_RECORD_IS_PSEUDO(r->from) &&
	       BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_MAP &&
	       BTS_MAP_EVENT(r->from) == BTS_MAP_COMM;
}

static long count_comms(const struct stream *s)
{
	long i, n = 0;

	for (i = 0; i < s->n; i++)
		n += is_comm(&s->r[i]);
	return n;
}

/* The name a COMM record at @i says, from its detail; NULL if none. */
static const char *comm_at(const struct stream *s, long i, char name[17])
{
	const struct bts_record *d;

	if (i < 1 || !is_comm(&s->r[i]))
		return NULL;
	d = &s->r[i - 1];
	if (!BTS_RECORD_IS_PSEUDO(d->from) ||
	    BTS_PSEUDO_TYPE(d->from) != BTS_PSEUDO_DETAIL ||
	    BTS_DETAIL_TYPE(d->from) != BTS_PSEUDO_MAP ||
	    BTS_DETAIL_LAYOUT(d->from) != BTS_DETAIL_MAP_NAME ||
	    BTS_DETAIL_VAL(d->from) != 0)
		return NULL;
	memcpy(name, &d->to, 8);
	memcpy(name + 8, &d->flags, 8);
	name[16] = 0;
	return name;
}

/* The first record from @from on that is a COMM of @name; -1 if none. */
static long find_comm(const struct stream *s, long from, const char *want)
{
	char name[17];
	long i;

	for (i = from; i < s->n; i++) {
		const char *got = comm_at(s, i, name);

		if (got && !strcmp(got, want))
			return i;
	}
	return -1;
}

/* The first branch from @from on into @fn; -1 if none. */
static long find_call(const struct stream *s, long from, void (*fn)(void))
{
	long i;

	for (i = from; i < s->n; i++)
		if (!BTS_RECORD_IS_PSEUDO(s->r[i].from) &&
		    s->r[i].to == (uintptr_t)fn)
			return i;
	return -1;
}

static long find_exec(const struct stream *s)
{
	long i;

	for (i = 0; i < s->n; i++)
		if (BTS_RECORD_IS_PSEUDO(s->r[i].from) &&
		    BTS_PSEUDO_TYPE(s->r[i].from) == BTS_PSEUDO_MAP &&
		    BTS_MAP_EVENT(s->r[i].from) == BTS_MAP_EXEC)
			return i;
	return -1;
}

static long first_branch(const struct stream *s)
{
	long i;

	for (i = 0; i < s->n; i++)
		if (!BTS_RECORD_IS_PSEUDO(s->r[i].from))
			return i;
	return -1;
}

/* Whether @s starts with @want: its detail, then a COMM record. */
static int starts_named(const struct stream *s, const char *want)
{
	char name[17];
	const char *got = s->n > 1 ? comm_at(s, 1, name) : NULL;

	if (!got || strcmp(got, want)) {
		diag("tid %u starts with %#llx %#llx (%s), not its name %s",
		     s->tid, s->n ? (unsigned long long)s->r[0].from : 0ULL,
		     s->n > 1 ? (unsigned long long)s->r[1].from : 0ULL,
		     got ? got : "no name", want);
		return 0;
	}
	return 1;
}

static int to_main[2], to_worker[2];

static void *worker(void *unused)
{
	char c;

	prctl(PR_SET_NAME, "own-name");
	after_own();
	if (write(to_main[1], "w", 1) != 1 || read(to_worker[0], &c, 1) != 1)
		_exit(125);
	after_other();
	return unused;
}

static void child(int go, const char *program)
{
	pthread_t th;
	char c;

	if (read(go, &c, 1) != 1 || pipe(to_main) || pipe(to_worker))
		_exit(126);
	prctl(PR_SET_NAME, "by-prctl");
	after_prctl();
	if (pthread_create(&th, NULL, worker, NULL) ||
	    read(to_main[0], &c, 1) != 1 ||
	    pthread_setname_np(th, "by-other") ||
	    write(to_worker[1], "m", 1) != 1 || pthread_join(th, NULL))
		_exit(125);
	execl(program, program, (char *)NULL);
	_exit(127);
}

static int read_all(struct trace *t, int fd)
{
	static struct bts_record buf[4096];
	long got;

	for (;;) {
		got = read(fd, buf, sizeof(buf));
		if (got <= 0)
			return got;
		split(t, buf, got / (long)sizeof(*buf));
	}
}

static int attach(pid_t pid)
{
	struct bts_attach a = {
		.size = sizeof(a),
		.flags = BTS_ATTACH_MAPS | BTS_ATTACH_INHERIT,
		.pid = pid,
	};
	int fd = open("/dev/bts", O_RDONLY);

	if (fd < 0 || ioctl(fd, BTS_IOC_ATTACH, &a)) {
		diag("attach: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return fd;
}

/* The renames: traced from before the first, to the exit of PROGRAM. */
static void check_renames(const char *program)
{
	static struct trace t;
	const struct stream *m, *w;
	long at, call, call2, exec, comms;
	int p[2], fd, status;
	const char *base;
	pid_t pid;

	if (pipe(p))
		return;
	pid = fork();
	if (!pid) {
		close(p[1]);
		prctl(PR_SET_NAME, "first-name");
		child(p[0], program);
	}
	close(p[0]);
	/* Let it take its first name, then attach while it waits. */
	usleep(100000);
	fd = attach(pid);
	if (fd < 0 || write(p[1], "x", 1) != 1)
		return;
	close(p[1]);
	read_all(&t, fd);
	waitpid(pid, &status, 0);
	close(fd);
	tap(WIFEXITED(status) && !WEXITSTATUS(status) && t.nr_streams == 2,
	    "a child and its thread traced with BTS_ATTACH_MAPS: %ld records, %d threads (status %#x)",
	    t.records, t.nr_streams, status);
	if (t.nr_streams != 2)
		return;
	m = t.s[0].tid == (unsigned int)pid ? &t.s[0] : &t.s[1];
	w = m == &t.s[0] ? &t.s[1] : &t.s[0];

	tap(starts_named(m, "first-name") && first_branch(m) > 1,
	    "the child's stream starts with its name, before its first branch");
	at = find_comm(m, 2, "by-prctl");
	call = find_call(m, 0, after_prctl);
	tap(at > 1 && call > at,
	    "prctl(PR_SET_NAME): the new name before the call after it (#%ld, #%ld)",
	    at, call);
	tap(starts_named(w, "by-prctl"),
	    "a new thread's stream starts with the name it inherited");
	at = find_comm(w, 2, "own-name");
	call = find_call(w, 0, after_own);
	tap(at > 1 && call > at,
	    "a thread's own rename: the name before the call after it (#%ld, #%ld)",
	    at, call);
	at = find_comm(w, call > 0 ? call : 0, "by-other");
	call2 = find_call(w, 0, after_other);
	tap(call > 0 && at > call && call2 > at,
	    "a rename by another thread through /proc: the name after the thread's last call before it and before its next (#%ld < #%ld < #%ld)",
	    call, at, call2);
	base = strrchr(program, '/');
	base = base ? base + 1 : program;
	call = find_call(m, 0, after_prctl);
	at = find_comm(m, call > 0 ? call : 0, base);
	exec = find_exec(m);
	tap(call > 0 && at > call && exec > at,
	    "exec: the program's name, then its EXEC record (#%ld, #%ld)",
	    at, exec);
	comms = count_comms(m) + count_comms(w);
	tap(comms == 6, "six names in all, no other (%ld)", comms);
}

/* A child attached while it runs in user mode, from another CPU. */
static void check_running(void)
{
	static struct trace t;
	int fd, status;
	pid_t pid;

	pid = fork();
	if (!pid) {
		prctl(PR_SET_NAME, "spinner");
		for (;;)
			spin();
	}
	usleep(200000);
	fd = attach(pid);
	if (fd < 0)
		return;
	usleep(200000);
	kill(pid, SIGKILL);
	read_all(&t, fd);
	waitpid(pid, &status, 0);
	close(fd);
	tap(t.nr_streams == 1 && t.s[0].n > 100 &&
	    starts_named(&t.s[0], "spinner") &&
	    find_call(&t.s[0], 0, spin) > 1,
	    "a child attached while it spins: its stream starts with its name (%ld records)",
	    t.nr_streams ? t.s[0].n : 0);
}

int main(int argc, char **argv)
{
	check_renames(argc > 1 ? argv[1] : "/bin/true");
	check_running();
	printf("1..%d\n", nr);
	return failed != 0;
}
