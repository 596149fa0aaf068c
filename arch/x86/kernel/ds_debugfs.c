// SPDX-License-Identifier: GPL-2.0
/*
 * Counters that tests read in /sys/kernel/debug/x86 (CONFIG_X86_DS_DEBUGFS),
 * kept out of kernels built for use:
 *
 * ds_kernel_records: from when a write turns it on, the staged records
 *	with a kernel address outside the entry code, which PTI maps for
 *	user mode anyway.  With only user-only consumers it must stay 0
 *	(tests/ds-guest, tests/bts-dump): the proof that the hardware filter
 *	is set whenever nobody asked for kernel-mode records.
 * ds_windows: the windows of their own memory that consumers lent the
 *	hardware (zero-copy mode), so a test can tell that mode ran.
 */
#include <linux/debugfs.h>
#include <linux/init.h>
#include <linux/percpu.h>

#include <asm/ds.h>
#include <asm/sections.h>

#include "ds_core.h"
#include "ds_layer.h"

bool ds_audit;
static DEFINE_PER_CPU(u64, ds_audit_kernel_records);
DEFINE_PER_CPU(u64, ds_windows);

static u64 ds_counter_sum(u64 __percpu *counter)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(counter, cpu);
	return sum;
}

static bool ds_kernel_text_addr(u64 addr)
{
	return (s64)addr < 0 &&
	       (addr < (unsigned long)__entry_text_start ||
		addr >= (unsigned long)__entry_text_end);
}

/* Count @recs' kernel addresses.  Context: the splay, interrupts off or NMI. */
void ds_audit_staged(const struct bts_record *recs, u32 nr)
{
	u32 i, n = 0;

	for (i = 0; i < nr; i++)
		n += !BTS_RECORD_IS_PSEUDO(recs[i].from) &&
		     (ds_kernel_text_addr(recs[i].from) ||
		      ds_kernel_text_addr(recs[i].to));
	this_cpu_add(ds_audit_kernel_records, n);
}

static int ds_audit_get(void *data, u64 *val)
{
	*val = ds_counter_sum(&ds_audit_kernel_records);
	return 0;
}

/* Any write starts counting afresh. */
static int ds_audit_set(void *data, u64 val)
{
	int cpu;

	WRITE_ONCE(ds_audit, false);
	for_each_possible_cpu(cpu)
		per_cpu(ds_audit_kernel_records, cpu) = 0;
	WRITE_ONCE(ds_audit, true);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(ds_audit_fops, ds_audit_get, ds_audit_set,
			 "%llu\n");

static int ds_windows_get(void *data, u64 *val)
{
	*val = ds_counter_sum(&ds_windows);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(ds_windows_fops, ds_windows_get, NULL, "%llu\n");

/* After arch_kdebugfs_init(), of the same initcall level as ds_init(). */
static int __init ds_debugfs_init(void)
{
	if (!ds_bts_available())
		return 0;
	debugfs_create_file_unsafe("ds_kernel_records", 0600, arch_debugfs_dir,
				   NULL, &ds_audit_fops);
	debugfs_create_file_unsafe("ds_windows", 0400, arch_debugfs_dir, NULL,
				   &ds_windows_fops);
	return 0;
}
late_initcall(ds_debugfs_init);
