// SPDX-License-Identifier: GPL-2.0
/*
 * Direct calls, recursion and calls through function pointers, in a fixed
 * order that gdb's "record function-call-history /c" must reproduce (the
 * tree the oracle's branches imply): main calls rec(4), which recurses
 * down to rec(0), which calls leaf(); then main calls ops[i % 3] for
 * i = 0..5 through a writable table (so gcc cannot turn them into direct
 * calls), then stop_here(), where the gdb test stops recording.
 */
#include "common.h"

typedef long (*op_fn)(long);

noipa long op_inc(long x)
{
	return x + 1;
}

noipa long op_dbl(long x)
{
	return x * 2;
}

noipa long op_neg(long x)
{
	return -x;
}

op_fn ops[] = { op_inc, op_dbl, op_neg };

noipa long leaf(long x)
{
	return x + 7;
}

noipa long rec(int n)
{
	long r;

	if (!n)
		return leaf(n);
	r = rec(n - 1);
	/* Not a tail call, and not a loop: gcc must keep the recursion. */
	asm volatile("" : "+r" (r));
	return r + n;
}

/* Where the gdb test stops recording. */
noipa void stop_here(void)
{
	asm volatile("");
}

int main(void)
{
	long acc = rec(4);
	int i;

	for (i = 0; i < 6; i++)
		acc = ops[i % 3](acc);
	stop_here();
	/* rec(4) = 7 + 1 + 2 + 3 + 4 = 17; 17 -> 18 -> 36 -> -36 -> -35 -> -70 -> 70 */
	CHECK(acc == 70);
	printf("calls ok\n");
	return 0;
}
