// SPDX-License-Identifier: GPL-2.0
/*
 * reuse PROGRAM: a child executes PROGRAM; after it is gone, children
 * are created until one gets its pid again (the kernel hands pids out in
 * turn up to kernel.pid_max, which the test lowers, then from 300 on):
 * that one calls second_leaf() 1000 times without executing anything,
 * the others exit at once.  Prints both pids; exits 0 if the pid was
 * reused.  A trace names the second child's calls only if it takes the
 * pid for a new process, with this program's mappings, not PROGRAM's.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int second_leaf(int x)
{
	return x * 5 + 3;
}

__attribute__((noinline)) int second_child(int n)
{
	int i, sum = 0;

	for (i = 0; i < n; i++)
		sum += second_leaf(i);
	return sum;
}

int main(int argc, char **argv)
{
	pid_t first, second = 0;
	int i, st;

	if (argc < 2)
		return 2;
	first = fork();
	if (first < 0)
		return 2;
	if (!first) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	if (waitpid(first, &st, 0) != first)
		return 2;
	for (i = 0; i < 100000 && second != first; i++) {
		second = fork();
		if (second < 0)
			return 2;
		if (!second)
			_exit(getpid() == first ? second_child(1000) == 0 : 0);
		if (waitpid(second, &st, 0) != second)
			return 2;
	}
	printf("%d %d\n", first, second);
	return second != first;
}
