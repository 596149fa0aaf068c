// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin: where the instructions counted between two marks go.
 * The marks are insn-marks.c's (nopl 0x425453NN(%rax)); of region NN
 * (region=NN, default 2) this counts, for every guest instruction address,
 * how often it executed while the region was open, and prints one line
 * per address at the region's close:
 *
 *	pc ADDR COUNT
 *
 * through qemu_plugin_outs() (-d plugin -D FILE).  bench/insn-profile.py
 * adds the counts up by kernel function with System.map.  With kernel=on
 * only kernel addresses (the upper half) are counted.  One vCPU only.
 *
 * Each address has a counter every execution adds to, inline; opening the
 * region notes every counter's value, closing it prints the differences,
 * so nothing but the marks costs more than an add.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include <qemu-plugin.h>

#include "insn-mark.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;


struct counter {
	uint64_t pc;
	uint64_t count;
	uint64_t at_open;
};

static GHashTable *counters;	/* pc -> struct counter */
static unsigned int region = 2;
static bool kernel_only;

static void note(gpointer key, gpointer value, gpointer data)
{
	struct counter *c = value;

	c->at_open = c->count;
}

static void report(gpointer key, gpointer value, gpointer data)
{
	struct counter *c = value;
	GString *out = data;

	if (c->count != c->at_open)
		g_string_append_printf(out, "pc %" PRIx64 " %" PRIu64 "\n",
				       c->pc, c->count - c->at_open);
}

static void at_mark(unsigned int vcpu_index, void *udata)
{
	unsigned int nn = GPOINTER_TO_UINT(udata);
	g_autoptr(GString) out = NULL;

	if ((nn & 0x7f) != region)
		return;
	if (!(nn & 0x80)) {
		g_hash_table_foreach(counters, note, NULL);
		return;
	}
	out = g_string_new(NULL);
	g_hash_table_foreach(counters, report, out);
	g_string_append_printf(out, "region %u end\n", region);
	qemu_plugin_outs(out->str);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		unsigned int nn;
		uint64_t pc = qemu_plugin_insn_vaddr(insn);
		struct counter *c;

		if (insn_mark(insn, &nn))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, at_mark,
				QEMU_PLUGIN_CB_NO_REGS, GUINT_TO_POINTER(nn));
		if (kernel_only && (int64_t)pc >= 0)
			continue;
		c = g_hash_table_lookup(counters, &pc);
		if (!c) {
			c = g_new0(struct counter, 1);
			c->pc = pc;
			g_hash_table_insert(counters, &c->pc, c);
		}
		qemu_plugin_register_vcpu_insn_exec_inline(insn,
			QEMU_PLUGIN_INLINE_ADD_U64, &c->count, 1);
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
		} else if (!strncmp(argv[i], "region=", 7)) {
			region = strtoul(argv[i] + 7, NULL, 0) & 0x7f;
		} else {
			fprintf(stderr, "insn-profile: unknown option %s\n",
				argv[i]);
			return -1;
		}
	}
	if (info->system_emulation && info->system.max_vcpus > 1) {
		fprintf(stderr, "insn-profile: needs a single vCPU (-smp 1)\n");
		return -1;
	}
	counters = g_hash_table_new(g_int64_hash, g_int64_equal);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
