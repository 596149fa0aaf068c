// SPDX-License-Identifier: GPL-2.0
/*
 * Some known work, then a store through a null pointer: the process dies
 * of SIGSEGV, and bts-dump --ring must still print the last branches,
 * the call of crash() among the last ones.
 */
#include "common.h"

volatile long sink;

noipa long leaf(long x)
{
	return x * 3 + 1;
}

noipa void crash(volatile int *p)
{
	*p = 1;
}

int main(void)
{
	long acc = 0;
	int i;

	for (i = 0; i < 100; i++)
		acc = leaf(acc);
	sink = acc;
	/* Through sink, so gcc cannot see the null pointer. */
	crash((volatile int *)(sink & 0));
	printf("crash: still alive\n");
	return 0;
}
