// SPDX-License-Identifier: GPL-2.0
/*
 * Waits for a byte on the FIFO named by its argument, or with "-" deletes
 * its own program file, then calls leaf() 100 times: bts-dump names
 * leaf() only from a copy of the file as mapped.
 */
#include <fcntl.h>
#include <string.h>
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
	int fd;

	if (argc < 2)
		return 1;
	if (!strcmp(argv[1], "-")) {
		if (unlink(argv[0]))
			return 1;
	} else {
		fd = open(argv[1], O_RDONLY);
		if (fd < 0 || read(fd, &c, 1) != 1)
			return 1;
	}
	return work(100) == 0;
}
