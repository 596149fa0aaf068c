// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin, the independent oracle of tests/trace-bts: log, per
 * vCPU and in the order it executed them, every discontinuity of control
 * flow whose source is an instruction in one of the given ranges of
 * virtual addresses.
 *
 *   -plugin libdiscontinuities.so,range=LO-HI[,range=LO-HI...]
 *
 * A discontinuity is the start of a translation block at another address
 * than the one after the instruction the vCPU executed last: a taken branch,
 * an exception or an interrupt.  TCG ends a block at every branch, so
 * watching block starts sees each one; a block can also end without a
 * branch (a page boundary, a size limit), and its successor then starts at
 * the next instruction, which is not logged.  A block that starts again at the
 * instruction executed last is not logged either: that is a string
 * instruction's next iteration, or an instruction TCG restarts, neither of
 * which is a branch.  The plugin knows nothing of the BTS emulation in
 * qemu/patches: it watches execution, not records.
 *
 * At exit, through qemu_plugin_outs() (add "-d plugin -D FILE"), one line
 * per discontinuity:
 *
 *   disc VCPU FROM NEXT TO
 *
 * FROM is the instruction executed last and NEXT the address after it,
 * which is where an interrupt taken between instructions returns to:
 * tests/trace-bts/oracle.py compares these with the BTS records.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_RANGES 8

struct range {
	uint64_t lo, hi;
};

struct discontinuity {
	uint64_t from, next, to;
};

/* One vCPU's view; only that vCPU's thread touches it. */
struct vcpu {
	bool pending;		/* the last instruction was in a range */
	uint64_t from, next;
	GArray *log;		/* of struct discontinuity */
};

/* What an instruction's callback needs, made at translation. */
struct insn_info {
	uint64_t vaddr, next;
	bool in_range;
};

static struct range ranges[MAX_RANGES];
static int nr_ranges;
static struct vcpu *vcpus;
/* Every insn_info made, freed at exit: vCPU threads translate at once. */
static GPtrArray *insn_infos;
static GMutex insn_infos_lock;
static int nr_vcpus;

static bool in_range(uint64_t va)
{
	int i;

	for (i = 0; i < nr_ranges; i++)
		if (va >= ranges[i].lo && va < ranges[i].hi)
			return true;
	return false;
}

static void insn_exec(unsigned int vcpu_index, void *udata)
{
	const struct insn_info *ii = udata;
	struct vcpu *v = &vcpus[vcpu_index];

	v->pending = ii->in_range;
	v->from = ii->vaddr;
	v->next = ii->next;
}

static void tb_exec(unsigned int vcpu_index, void *udata)
{
	uint64_t start = (uintptr_t)udata;
	struct vcpu *v = &vcpus[vcpu_index];
	struct discontinuity d = { v->from, v->next, start };

	if (v->pending && start != v->next && start != v->from)
		g_array_append_val(v->log, d);
	/*
	 * TCG takes interrupts before a block's callbacks, and each
	 * instruction's callback runs before it: the next discontinuity is
	 * from an instruction whose callback says so.
	 */
	v->pending = false;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	uint64_t start = qemu_plugin_tb_vaddr(tb);
	bool any = false;

	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)(uintptr_t)start);
	for (i = 0; i < n; i++)
		any |= in_range(qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i)));
	if (!any)
		return;
	/*
	 * Every instruction of a block that has one in a range: one out of
	 * range after it must end the pending discontinuity.  Per instruction,
	 * since an exception can leave a block early.
	 */
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		struct insn_info *ii = g_new(struct insn_info, 1);

		g_mutex_lock(&insn_infos_lock);
		g_ptr_array_add(insn_infos, ii);
		g_mutex_unlock(&insn_infos_lock);

		ii->vaddr = qemu_plugin_insn_vaddr(insn);
		ii->next = ii->vaddr + qemu_plugin_insn_size(insn);
		ii->in_range = in_range(ii->vaddr);
		qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec,
						       QEMU_PLUGIN_CB_NO_REGS, ii);
	}
}

static void plugin_exit(qemu_plugin_id_t id, void *p)
{
	int c;
	guint i;

	for (c = 0; c < nr_vcpus; c++) {
		for (i = 0; i < vcpus[c].log->len; i++) {
			struct discontinuity *d =
				&g_array_index(vcpus[c].log, struct discontinuity, i);
			g_autofree gchar *line =
				g_strdup_printf("disc %d 0x%" PRIx64 " 0x%" PRIx64
						" 0x%" PRIx64 "\n",
						c, d->from, d->next, d->to);

			qemu_plugin_outs(line);
		}
	}
	g_ptr_array_free(insn_infos, true);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		struct range *r = &ranges[nr_ranges];
		char *end;

		if (strncmp(argv[i], "range=", 6) || nr_ranges == MAX_RANGES) {
			fprintf(stderr, "discontinuities: bad option %s\n", argv[i]);
			return -1;
		}
		r->lo = strtoull(argv[i] + 6, &end, 0);
		if (*end == '-')
			r->hi = strtoull(end + 1, &end, 0);
		if (*end || r->lo >= r->hi) {
			fprintf(stderr, "discontinuities: range=LO-HI, LO < HI: %s\n",
				argv[i]);
			return -1;
		}
		nr_ranges++;
	}
	if (!nr_ranges || !info->system_emulation) {
		fprintf(stderr, "discontinuities: system mode, one range= at least\n");
		return -1;
	}
	nr_vcpus = info->system.max_vcpus;
	vcpus = g_new0(struct vcpu, nr_vcpus);
	insn_infos = g_ptr_array_new_with_free_func(g_free);
	for (i = 0; i < nr_vcpus; i++)
		vcpus[i].log = g_array_new(false, false, sizeof(struct discontinuity));
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
