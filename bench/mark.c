// SPDX-License-Identifier: GPL-2.0
/*
 * mark open|close: execute the marker instruction that opens or closes
 * region 1 of the TCG plugin insn-marks.c, for scripts that count what a
 * whole command line costs (bench/delivery-cost.sh).
 */
#include <stdio.h>
#include <string.h>

/* The marker: nopl 0x425453NN(%rax), see insn-marks.c. */
#define MARK(nn) asm volatile(".byte 0x0f, 0x1f, 0x80, " #nn ", 0x53, 0x54, 0x42" \
			      ::: "memory")

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "open")) {
		MARK(0x01);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "close")) {
		MARK(0x81);
		return 0;
	}
	fprintf(stderr, "usage: mark open|close\n");
	return 2;
}
