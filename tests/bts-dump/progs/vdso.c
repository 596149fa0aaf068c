// SPDX-License-Identifier: GPL-2.0
/*
 * Calls through the vDSO, which static glibc looks up at start-up and
 * calls through function pointers: time() and clock_getres() twice each,
 * clock_gettime() three times, gettimeofday() twice.  The test VM boots
 * with clocksource=hpet, which the vDSO cannot read: clock_gettime() and
 * gettimeofday() look at the clock mode and make the system call from
 * the vDSO (a kernel record from a vDSO address).  Nothing here branches
 * on the time read.
 */
#include <sys/time.h>
#include <time.h>
#include "common.h"

volatile long sink;

int main(void)
{
	struct timespec ts;
	struct timeval tv;
	int i;

	sink = time(NULL);
	sink = time(NULL);
	CHECK(clock_getres(CLOCK_MONOTONIC, &ts) == 0);
	CHECK(clock_getres(CLOCK_REALTIME, &ts) == 0);
	for (i = 0; i < 3; i++) {
		CHECK(clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
		sink = ts.tv_nsec;
	}
	for (i = 0; i < 2; i++) {
		CHECK(gettimeofday(&tv, NULL) == 0);
		sink = tv.tv_usec;
	}
	printf("vdso ok\n");
	return 0;
}
