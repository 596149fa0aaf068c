// SPDX-License-Identifier: GPL-2.0
/*
 * A 32-bit program without a C library (no gcc-multilib needed) for
 * tests/run's synthetic traces; never run.  See prog32-asm.S.
 */

int leaf32(int x) { return x + 2; }			/* @leaf32 */

void raw_write32(void);

void _start(void)
{
	raw_write32();
	for (;;)
		leaf32(0);
}
