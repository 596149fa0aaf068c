// SPDX-License-Identifier: GPL-2.0
/*
 * Processes, each with its own known branch pattern: main forks child A,
 * A forks its own child G, and once A is gone main forks child B.  Each
 * calls leaf() a known number of times and rec() with its own depth:
 *
 *	main	leaf() 5 times, rec(1)		(before the forks)
 *	A	child_a(): leaf() 30 times, rec(3), then forks G
 *	G	child_g(): leaf() 10 times, rec(2)
 *	B	child_b(): leaf() 20 times, rec(4)
 *
 * Traces of two runs compare only if every process takes the same path
 * in both, however they are scheduled:
 *
 * - a parent waits for its child in waitpid(), a blocking system call
 *   whose user-mode path is the same however long it blocks, and forks
 *   the next one only after, so the pids are in creation order, by which
 *   the comparison tells the processes apart: main, A, G, B;
 * - SIGCHLD is blocked, so a child's end never interrupts its parent
 *   (under the ptrace oracle, a signal delivered between two instructions
 *   would be a stretch in the kernel that BTS never sees);
 * - a child prints nothing and ends with _exit(), so no stdio buffer is
 *   flushed twice; its parent checks its status.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

/* Where the results go: a global the compiler must keep the stores to. */
long sink;

noipa long leaf(long x)
{
	return x * 3 + 1;
}

noipa long rec(int n)
{
	long r;

	if (!n)
		return 1;
	r = rec(n - 1);
	/* Not a tail call, and not a loop: gcc must keep the recursion. */
	asm volatile("" : "+r" (r));
	return r + n;
}

noipa void work(int leaves, int depth)
{
	int i;

	for (i = 0; i < leaves; i++)
		sink += leaf(i);
	sink += rec(depth);
}

/* Fork a child that runs @fn and ends; wait for it.  Its status. */
noipa int spawn(int (*fn)(void))
{
	int status;
	pid_t pid;

	pid = fork();
	CHECK(pid >= 0);
	if (!pid)
		_exit(fn());
	CHECK(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

noipa int child_g(void)
{
	work(10, 2);
	return 0;
}

noipa int child_a(void)
{
	work(30, 3);
	return spawn(child_g);
}

noipa int child_b(void)
{
	work(20, 4);
	return 0;
}

int main(void)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	CHECK(sigprocmask(SIG_BLOCK, &chld, NULL) == 0);
	work(5, 1);
	CHECK(spawn(child_a) == 0);
	CHECK(spawn(child_b) == 0);
	printf("forks: ok\n");
	return 0;
}
