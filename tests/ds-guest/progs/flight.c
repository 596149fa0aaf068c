// SPDX-License-Identifier: GPL-2.0
/*
 * The flight recorder case: a lone per-CPU ring of both sides, F, which
 * the hardware writes directly while nothing else traces CPU 0 (whenever
 * this task, which has a consumer of its own, sleeps), and as an ordinary
 * stream while it runs.  At the end, a marker and F is suspended.
 */
#include "common.h"

#define ROUNDS	6
#define STEPS	100

volatile unsigned long sink;

unsigned long __attribute__((noinline)) step(unsigned long x)
{
	asm volatile("");
	return x * 3 + 1;
}

int main(void)
{
	long ctl = dsc_open(DSC_DIR "control");
	long mark = dsc_open(DSC_DIR "marker");
	unsigned long r, i, x = 1;

	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < STEPS; i++)
			x = step(x) ^ i;
		nap(2000000);
	}
	dsc_put(mark, "0x777");
	dsc_put(ctl, "suspend F\n");
	sink = x;
	return 0;
}
