// SPDX-License-Identifier: GPL-2.0
/*
 * Waits for a byte on the FIFO named by its argument, then calls leaf()
 * 100 times: bts-dump -p of a process whose program file was deleted
 * after it started names leaf() only from a copy of the file as mapped.
 */
#include <fcntl.h>
#include <unistd.h>

__attribute__((noinline)) int leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int work(int n)
{
	int i, sum = 0;

	for (i = 0; i < n; i++)
		sum += leaf(i);
	return sum;
}

int main(int argc, char **argv)
{
	char c;
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;

	if (fd < 0 || read(fd, &c, 1) != 1)
		return 1;
	return work(100) == 0;
}
