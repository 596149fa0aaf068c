// SPDX-License-Identifier: GPL-2.0
/*
 * execer N: branch a while, then exec itself with N - 1, down to 0: a
 * per-task trace survives exec.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	volatile unsigned long x = 0;
	unsigned long i;
	char arg[16];

	for (i = 0; i < 5000; i++)
		x = x * 3 + i;
	if (n <= 0)
		return 0;
	snprintf(arg, sizeof(arg), "%d", n - 1);
	execl("/proc/self/exe", argv[0], arg, (char *)NULL);
	perror("execer: exec");
	return 1;
}
