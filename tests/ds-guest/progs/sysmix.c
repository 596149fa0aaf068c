// SPDX-License-Identifier: GPL-2.0
/*
 * System calls between compute stretches longer than lossless mode's
 * headroom.  When the record of a system call's kernel time is what takes
 * the staging sub-buffer to its threshold, the drain happens on the way
 * out to user mode, after the exit work ran: the throttle it queues must
 * still hold the task back before the stretch overruns the headroom.  At
 * 2 records per system call, about 1 system call in 550 drains so.
 */
#include "common.h"

#define ROUNDS	4000
#define STRETCH	3000

volatile unsigned long sink;

int main(void)
{
	unsigned long i, j, x = 1;

	for (i = 0; i < ROUNDS; i++) {
		x += sys3(SYS_getpid, 0, 0, 0);
		for (j = 0; j < STRETCH; j++)
			x = x * 3 + j;
	}
	sink = x;
	return 0;
}
