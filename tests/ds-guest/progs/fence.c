// SPDX-License-Identifier: GPL-2.0
/*
 * Run on CPU 0 after the main workload: a marker in CPU 0's streams, then
 * the per-CPU rings stop, then the per-CPU continuous streams, with as
 * little as possible in between, so that the marker is still in the rings.
 */
#include "common.h"

int main(void)
{
	marker("0x999 0x9999 0x99999");
	control("suspend cpu_all_ring cpu_user_ring cpu_kernel_ring\n");
	/*
	 * cpu_all last: it holds everything the filtered streams hold, to
	 * their very end (check.py compares them with it).
	 */
	control("suspend cpu_user cpu_kernel cpu_tiny cpu_all\n");
	return 0;
}
