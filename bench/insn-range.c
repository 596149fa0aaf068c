// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for bench/qemu-bts.sh: count the guest instructions executed
 * at virtual addresses in [lo, hi), in practice the .text of the static,
 * non-PIE bench workload (no other program in the test VM lives there).
 * QEMU's own tests/plugin/insn.c counts the whole VM, whose boot varies
 * by tens of millions of instructions from run to run; this count is
 * exact and the same on every run.
 *
 *   -plugin libinsn-range.so,lo=0x401000,hi=0x4a0000
 *
 * Prints "insns-in-range: N" through qemu_plugin_outs() at exit, which
 * QEMU writes to its log: add "-d plugin -D FILE".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static uint64_t lo, hi;
static uint64_t count;

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(insn);

		/* Per instruction: a TB can be left early by an exception. */
		if (va >= lo && va < hi)
			qemu_plugin_register_vcpu_insn_exec_inline(insn,
				QEMU_PLUGIN_INLINE_ADD_U64, &count, 1);
	}
}

static void plugin_exit(qemu_plugin_id_t id, void *p)
{
	g_autofree gchar *out =
		g_strdup_printf("insns-in-range: %" PRIu64 "\n", count);

	qemu_plugin_outs(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "lo=", 3)) {
			lo = strtoull(argv[i] + 3, NULL, 0);
		} else if (!strncmp(argv[i], "hi=", 3)) {
			hi = strtoull(argv[i] + 3, NULL, 0);
		} else {
			fprintf(stderr, "insn-range: unknown option %s\n", argv[i]);
			return -1;
		}
	}
	if (lo >= hi) {
		fprintf(stderr, "insn-range: needs lo=ADDR,hi=ADDR with lo < hi\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
