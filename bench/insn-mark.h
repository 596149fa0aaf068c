/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The benchmarks' region marks, for the TCG plugins insn-marks.c and
 * insn-profile.c: the 7-byte no-op
 *
 *	nopl 0x425453NN(%rax)		0f 1f 80 NN 53 54 42
 *
 * NN < 0x80 opens region NN, NN | 0x80 closes it.
 */
#ifndef BENCH_INSN_MARK_H
#define BENCH_INSN_MARK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <qemu-plugin.h>

/* Whether @insn is a mark; its NN at @nn. */
static inline bool insn_mark(struct qemu_plugin_insn *insn, unsigned int *nn)
{
	static const uint8_t mark[7] = { 0x0f, 0x1f, 0x80, 0, 0x53, 0x54, 0x42 };
	const uint8_t *b = qemu_plugin_insn_data(insn);

	if (qemu_plugin_insn_size(insn) != sizeof(mark) ||
	    memcmp(b, mark, 3) || memcmp(b + 4, mark + 4, 3))
		return false;
	*nn = b[3];
	return true;
}

#endif /* BENCH_INSN_MARK_H */
