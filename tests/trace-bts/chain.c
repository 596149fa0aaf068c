// SPDX-License-Identifier: GPL-2.0
/*
 * chain: on CPU CPU, call a known chain of user functions, run the kernel
 * chain of bts_chain.ko, and open TRACE at once, which copies the flight
 * recorders' rings; write what it reads to OUT.  Prints the thread id and
 * the chain's addresses, for the checks, and at the end how many writes
 * the copy took: what each trace of it must show.
 *
 *	chain CPU CHAIN_FILE TRACE OUT
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) void user_b(int i)
{
	sink += i;
}

__attribute__((noinline)) void user_a(void)
{
	int i;

	for (i = 0; i < 3; i++)
		user_b(i);
}

int main(int argc, char **argv)
{
	char buf[65536];
	int cfd, tfd, ofd;
	cpu_set_t set;
	int writes = 0;
	ssize_t n;

	if (argc != 5)
		return 2;
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[1]), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return 3;
	printf("tid %d user_a %p user_b %p\n", gettid(), (void *)user_a,
	       (void *)user_b);
	fflush(stdout);
	cfd = open(argv[2], O_WRONLY);
	ofd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (cfd < 0 || ofd < 0)
		return 4;
	user_a();
	if (write(cfd, "1", 1) != 1)
		return 5;
	tfd = open(argv[3], O_RDONLY);
	if (tfd < 0)
		return 6;
	while ((n = read(tfd, buf, sizeof(buf))) > 0) {
		if (write(ofd, buf, n) != n)
			return 7;
		writes++;
	}
	printf("writes %d\n", writes);
	return n < 0 ? 8 : 0;
}
