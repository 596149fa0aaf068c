// SPDX-License-Identifier: GPL-2.0
/*
 * Bursts of branches, each shorter than a staging sub-buffer, between
 * sleeps: the drain of each burst happens when the task is switched out.
 */
#include "common.h"

#define BURSTS	10
#define STEPS	150

volatile unsigned long sink;

unsigned long __attribute__((noinline)) step(unsigned long x)
{
	asm volatile("");
	return x * 3 + 1;
}

int main(void)
{
	unsigned long i, j, x = 1;

	for (i = 0; i < BURSTS; i++) {
		for (j = 0; j < STEPS; j++)
			x = step(x) ^ j;
		nap(1000000);
	}
	sink = x;
	return 0;
}
