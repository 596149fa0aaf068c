// SPDX-License-Identifier: GPL-2.0
/*
 * The workload every consumer kind traces at once: loops of known counts
 * (step() is called exactly STEPS1 + STEPS2 times), system calls, page
 * faults, short sleeps, and three markers.
 */
#include "common.h"

#define STEPS1	1200
#define STEPS2	400
#define PAGES	32

volatile char pages[PAGES * 4096];
volatile unsigned long sink;

unsigned long __attribute__((noinline)) step(unsigned long x)
{
	asm volatile("");
	return x * 3 + 1;
}

int main(void)
{
	unsigned long i, x = 1;

	marker("0x111 0x1111 0x11111");
	for (i = 0; i < STEPS1; i++)
		x = step(x) ^ i;
	for (i = 0; i < 10; i++)
		sys3(SYS_getpid, 0, 0, 0);
	/* One page fault per page. */
	for (i = 0; i < PAGES; i++)
		pages[i * 4096] = i;
	nap(1000000);
	marker("0x222 0x2222 0x22222");
	for (i = 0; i < STEPS2; i++)
		x = step(x) ^ i;
	nap(1000000);
	nap(1000000);
	marker("0x333 0x3333 0x33333");
	sink = x;
	return 0;
}
