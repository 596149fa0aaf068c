// SPDX-License-Identifier: GPL-2.0
/*
 * setjmp/longjmp out of recursions of known depth: longjmp ends in an
 * indirect jmp back into main, skipping the returns of deep(); setjmp is
 * a chain of tail calls in glibc.  Then stop_here(), where the gdb test
 * stops recording.
 */
#include <setjmp.h>
#include "common.h"

static jmp_buf env;
static volatile int depth_seen;

noipa void deep(int n)
{
	depth_seen++;
	if (n < 0)
		return;		/* not reached: keeps -Winfinite-recursion quiet */
	if (!n)
		longjmp(env, 7);
	deep(n - 1);
	/* Never reached; keeps the recursion a real call. */
	asm volatile("");
}

/* Where the gdb test stops recording. */
noipa void stop_here(void)
{
	asm volatile("");
}

int main(void)
{
	/* volatile: live across setjmp() returning twice */
	volatile int i, total = 0;
	int r;

	for (i = 0; i < 5; i++) {
		r = setjmp(env);
		if (!r)
			deep(i + 2);
		else
			total += r;
	}
	stop_here();
	/* deep(2..6) runs 3 + 4 + 5 + 6 + 7 times. */
	CHECK(total == 35 && depth_seen == 25);
	printf("setjmp ok\n");
	return 0;
}
