// SPDX-License-Identifier: GPL-2.0
/*
 * Events for gdb's `bts markers`, for tests/user-events: main and two
 * threads each write bts_test_a ROUNDS times (seq = 100 * the thread's
 * role + i) between calls of leaf(), every third round also bts_test_b
 * with writev(); main writes bts_test_big (more than a marker carries)
 * and raises SIGUSR1, whose handler writes bts_test_a with seq 1000, and
 * calls leaf() 3000 times more: more branches than gdb's smallest buffer
 * (a page) keeps.
 * Then the threads tell main they are done and wait in read(), and main
 * calls stop_here(), where the test stops it: every marker's write is in
 * gdb's history then, every thread alive, gdb's threads 1, 2, 3 the roles
 * 0, 1, 2.  Then it lets the threads end and prints "role N tid TID" for
 * each and "ROLE NAME SEQ" for each event in the order its thread wrote
 * them.
 *
 * gdbmarks fork: main also forks a child after its rounds, which writes
 * bts_test_a (seq 2000, tag "child") and prints "child enabled=B", the
 * bit it sees.  gdb does not debug the child: neither the bit nor the
 * event is the subscription's, and main's markers land as before.
 *
 * gdbmarks wait: main first waits for a byte on its standard input, so
 * that bts-dump and gdb can both attach to it before it writes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "user_events.h"

#define NTHREADS	3
#define ROUNDS		8

static int fd, idx_a, idx_b, idx_big, done[2], go[2];
static pid_t tids[NTHREADS];
static volatile long sink;

noipa void emit_b(unsigned int seq)
{
	static __thread char msg[] = "message 000";
	struct __attribute__((packed)) {
		unsigned int msg_loc;
		unsigned long long val;
	} fixed = {
		.msg_loc = sizeof(msg) << 16 | 8,
		.val = 1000ULL * seq,
	};
	struct iovec iov[] = {
		{ &idx_b, sizeof(idx_b) },
		{ &fixed, sizeof(fixed) },
		{ msg, sizeof(msg) },
	};

	msg[8] = '0' + seq / 100 % 10;
	msg[9] = '0' + seq / 10 % 10;
	msg[10] = '0' + seq % 10;
	ue_writev(fd, iov, 3);
}

static void on_usr1(int sig)
{
	emit_a(fd, idx_a, 1000 + sig - SIGUSR1, "signal");
}

/* Where the test stops the program, all its events written. */
noipa void stop_here(void)
{
	asm volatile("" ::: "memory");
}

static void *writer(void *arg)
{
	long n = (long)arg;
	unsigned int i;
	char c;

	tids[n] = gettid();
	for (i = 0; i < ROUNDS; i++) {
		sink += leaf(i);
		emit_a(fd, idx_a, 100 * n + i, "thread");
		if (i % 3 == 0)
			emit_b(100 * n + i);
	}
	if (!n)
		return NULL;
	CHECK(write(done[1], "d", 1) == 1);
	CHECK(read(go[0], &c, 1) == 1);
	return NULL;
}

/* A child that writes an event and says whether its bit is set. */
static void fork_child(void)
{
	int status;
	pid_t pid;

	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		emit_a(fd, idx_a, 2000, "child");
		printf("child enabled=%d\n", enabled[0] & 1);
		fflush(stdout);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && status == 0);
}

int main(int argc, char **argv)
{
	/*
	 * Before the first event: strcmp()'s branches depend on where the
	 * argument lies, which the environment moves (gdb adds LINES and
	 * COLUMNS), and the oracle's run must branch as gdb's.
	 */
	bool forks = argc > 1 && !strcmp(argv[1], "fork");
	pthread_t th[NTHREADS];
	unsigned int i;
	long n;
	char c;

	if (argc > 1 && !strcmp(argv[1], "wait"))
		CHECK(read(0, &c, 1) == 1);
	fd = open(USER_EVENTS_DATA, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	idx_a = ue_register(fd, "bts_test_a u32 seq; char[8] tag", 0);
	idx_b = ue_register(fd, "bts_test_b __rel_loc char[] msg; u64 val", 1);
	idx_big = ue_register(fd, "bts_test_big u32 seq; char[100] blob", 2);
	CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR);
	CHECK(pipe(done) == 0 && pipe(go) == 0);
	for (n = 1; n < NTHREADS; n++)
		CHECK(pthread_create(&th[n], NULL, writer, (void *)n) == 0);
	writer((void *)0);
	if (forks)
		fork_child();
	emit_big(fd, idx_big, 7);
	raise(SIGUSR1);
	/* More branches than gdb's smallest buffer keeps. */
	for (i = 0; i < 3000; i++)
		sink += leaf(i);
	for (n = 1; n < NTHREADS; n++)
		CHECK(read(done[0], &c, 1) == 1);

	stop_here();

	CHECK(write(go[1], "gg", NTHREADS - 1) == NTHREADS - 1);
	for (n = 1; n < NTHREADS; n++)
		CHECK(pthread_join(th[n], NULL) == 0);
	for (n = 0; n < NTHREADS; n++)
		printf("role %ld tid %d\n", n, tids[n]);
	for (n = 0; n < NTHREADS; n++) {
		for (i = 0; i < ROUNDS; i++) {
			printf("%ld bts_test_a %lu\n", n, 100 * n + i);
			if (i % 3 == 0)
				printf("%ld bts_test_b %lu\n", n, 100 * n + i);
		}
	}
	printf("0 bts_test_big 7\n0 bts_test_a 1000\n");
	return 0;
}
