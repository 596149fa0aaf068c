// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for bench/idle-cost.sh: count every guest instruction
 * the VM executes, user and kernel (interrupts included), between two marks
 * that the guest program sets by executing a marker instruction, the 7-byte
 * no-op
 *
 *	nopl 0x425453NN(%rax)		0f 1f 80 NN 53 54 42
 *
 * NN < 0x80 opens region NN, NN | 0x80 closes it.  The marker is matched by
 * its bytes, wherever it runs, so it needs no address and no symbol; nothing
 * else executes these bytes (the displacement spells "BTS").  The count is
 * exact: an inline add on every instruction, so a TB left early by an
 * exception counts only what ran.  One vCPU only (the counter is shared and
 * not atomic): the plugin refuses -smp > 1.
 *
 *   -plugin libinsn-marks.so -d plugin -D FILE
 *
 * Each closed region prints "region NN insns=COUNT rdmsr=R wrmsr=W"
 * through qemu_plugin_outs(), which QEMU writes to its log (-d plugin -D
 * FILE); COUNT runs from the opening marker to the closing one, the
 * closing one excluded; R and W count the RDMSR and WRMSR instructions
 * among them, whatever the MSR (a plugin sees no registers): on hardware
 * each costs far more than its one instruction.
 *
 * With the option kernel=on (-plugin libinsn-marks.so,kernel=on), only the
 * instructions at kernel addresses (the upper half) count.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>

#include <qemu-plugin.h>

#include "insn-mark.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;


/* Instructions executed so far: all of them, RDMSRs, WRMSRs. */
enum { ALL, RDMSR, WRMSR, COUNTS };
static uint64_t total[COUNTS];
static bool kernel_only;		/* kernel=on: the upper half's only */
static uint64_t opened[0x80][COUNTS];	/* @total at each open region's mark */
static bool is_open[0x80];

static void at_mark(unsigned int vcpu_index, void *udata)
{
	unsigned int nn = GPOINTER_TO_UINT(udata), id = nn & 0x7f;
	g_autofree gchar *out = NULL;

	if (!(nn & 0x80)) {
		memcpy(opened[id], total, sizeof(total));
		is_open[id] = true;
		return;
	}
	if (!is_open[id])
		out = g_strdup_printf("region %u closed, not open\n", id);
	else
		out = g_strdup_printf("region %u insns=%" PRIu64 " rdmsr=%"
				      PRIu64 " wrmsr=%" PRIu64 "\n", id,
				      total[ALL] - opened[id][ALL],
				      total[RDMSR] - opened[id][RDMSR],
				      total[WRMSR] - opened[id][WRMSR]);
	is_open[id] = false;
	qemu_plugin_outs(out);
}

/* RDMSR (0f 32), WRMSR (0f 30), or ALL for any other instruction. */
static int insn_msr(struct qemu_plugin_insn *insn)
{
	const uint8_t *b = qemu_plugin_insn_data(insn);

	if (qemu_plugin_insn_size(insn) != 2 || b[0] != 0x0f)
		return ALL;
	return b[1] == 0x32 ? RDMSR : b[1] == 0x30 ? WRMSR : ALL;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		unsigned int nn;

		if (insn_mark(insn, &nn))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, at_mark,
				QEMU_PLUGIN_CB_NO_REGS, GUINT_TO_POINTER(nn));
		if (kernel_only && (int64_t)qemu_plugin_insn_vaddr(insn) >= 0)
			continue;
		qemu_plugin_register_vcpu_insn_exec_inline(insn,
			QEMU_PLUGIN_INLINE_ADD_U64, &total[ALL], 1);
		if (insn_msr(insn) != ALL)
			qemu_plugin_register_vcpu_insn_exec_inline(insn,
				QEMU_PLUGIN_INLINE_ADD_U64,
				&total[insn_msr(insn)], 1);
	}
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "kernel=on")) {
			kernel_only = true;
		} else {
			fprintf(stderr, "insn-marks: unknown option %s\n",
				argv[i]);
			return -1;
		}
	}
	if (info->system_emulation && info->system.max_vcpus > 1) {
		fprintf(stderr, "insn-marks: needs a single vCPU (-smp 1)\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
