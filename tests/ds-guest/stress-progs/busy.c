// SPDX-License-Identifier: GPL-2.0
/*
 * busy N: N calls of a tiny function and nothing else, no system call:
 * a steady stream of user-mode branches for lossless consumers.
 */
#include <stdlib.h>

unsigned long __attribute__((noinline)) step(unsigned long x)
{
	asm volatile("");
	return x * 3 + 1;
}

volatile unsigned long sink;

int main(int argc, char **argv)
{
	unsigned long i, n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000;
	unsigned long x = 1;

	for (i = 0; i < n; i++)
		x = step(x) ^ i;
	sink = x;
	return 0;
}
