// SPDX-License-Identifier: GPL-2.0
/*
 * Suspend and resume from the traced CPU itself, between loops whose
 * records a consumer must or must not get: the per-CPU consumer R, attached
 * suspended, is resumed after before_resume() ran, and S is suspended
 * before after_suspend() runs.  A short sleep after the first marker
 * drains the staging buffer (the switch away does), and the files are open
 * beforehand, so that before_resume()'s records are still staged (far from
 * the threshold) when R is resumed.
 */
#include "common.h"

#define STEPS	100

volatile unsigned long sink;

#define LOOP(name)							\
unsigned long __attribute__((noinline)) name##_leaf(unsigned long x)	\
{									\
	asm volatile("");						\
	return x * 5 + 3;						\
}									\
unsigned long __attribute__((noinline)) name(unsigned long x)		\
{									\
	unsigned long i;						\
									\
	for (i = 0; i < STEPS; i++)					\
		x = name##_leaf(x) ^ i;					\
	return x;							\
}

LOOP(before_resume)
LOOP(after_resume)
LOOP(after_suspend)

int main(void)
{
	long ctl = dsc_open(DSC_DIR "control");
	long mark = dsc_open(DSC_DIR "marker");
	unsigned long x = 1;

	dsc_put(mark, "0x501");
	nap(1000);
	x = before_resume(x);
	dsc_put(ctl, "resume R\n");
	x = after_resume(x);
	dsc_put(ctl, "suspend S\n");
	x = after_suspend(x);
	dsc_put(mark, "0x502");
	sink = x;
	return 0;
}
