// SPDX-License-Identifier: GPL-2.0
/*
 * Branches that outlive a reset.
 *
 * Booted with reserve_mem=SIZE:ALIGN:NAME bts_persist=NAME, each CPU's DS
 * save area and staging buffer are pages of that region (the layout is in
 * ds_persist_core.h), mapped where they always are, in the CPU's
 * cpu_entry_area: the hardware writes the branches, and its own index to
 * them, straight into memory a warm reset keeps.  The flight recorder
 * (the bts tracer) alone on a CPU runs the staging buffer as the
 * hardware's ring (ds_hw_ring()), so up to the instruction that reset the
 * machine its last records are there, nothing copied.  Where other
 * consumers share the CPU the buffer is drained as it fills, and keeps
 * the records since the last drain.
 *
 * The next boot copies the region before it lays it out for itself, and
 * /sys/kernel/tracing/bts_last_boot shows the copy, checked field by
 * field (ds_persist_check(), ds_persist_cpu_records()).
 */
#include <linux/init.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <linux/tracefs.h>
#include <linux/unaligned.h>
#include <linux/utsname.h>
#include <linux/vmalloc.h>
#include <asm/cpu_entry_area.h>
#include <asm/ds.h>
#include <asm/intel_ds.h>
#include <asm/sections.h>
#include <asm/setup.h>
#include <asm/tlbflush.h>

#include "ds_layer.h"
#include "ds_persist_core.h"

static_assert(DS_STAGING_SIZE % DS_PERSIST_PAGE == 0);
static_assert(sizeof(struct debug_store) == DS_PERSIST_PAGE);

static char ds_persist_name[16];
/* The previous boot's region as it was found, or NULL; its CPUs' records. */
static void *ds_persist_prev;
static enum ds_persist_verdict ds_persist_verdict = DS_PERSIST_EMPTY;
static bool ds_persist_found;

/**
 * struct ds_persist_view - a previous boot's CPU, as bts_last_boot shows it
 * @verdict: what its slice holds
 * @segs: its records, oldest first, in the copy
 * @nrs: how many in each run
 */
struct ds_persist_view {
	enum ds_persist_cpu_verdict	verdict;
	const struct bts_record		*segs[2];
	u32				nrs[2];
};

static struct ds_persist_view *ds_persist_views;

static int __init ds_persist_setup(char *name)
{
	strscpy(ds_persist_name, name, sizeof(ds_persist_name));
	return 1;
}
__setup("bts_persist=", ds_persist_setup);

/* Where the layer maps a CPU's staging buffer (ds.c). */
static u64 ds_persist_staging_va(unsigned int cpu)
{
	return (u64)(unsigned long)
	       &get_cpu_entry_area(cpu)->cpu_debug_buffers.ds_staging;
}

/*
 * Make the region's slice @cpu's save area: its fields copied over (perf
 * may have set the PEBS ones), then its page mapped in place of the
 * per-CPU variable's, at the same address the CPU's IA32_DS_AREA holds.
 */
static void __init ds_persist_take_area(void *region, phys_addr_t start,
					unsigned int cpu)
{
	void *slice = ds_persist_slice(region, cpu);
	struct debug_store *ds = ds_area(cpu);

	memcpy(slice, ds, sizeof(*ds));
	ds_persist_cpu_init(region, cpu, ds_persist_staging_va(cpu));
	cea_set_pte(ds, start + (slice - region), PAGE_KERNEL);
	per_cpu(ds_cpu, cpu).persist = start +
		((u8 *)ds_persist_staging(region, cpu) - (u8 *)region);
}

/* Copy what the previous boot left, checked, before this boot writes. */
static void __init ds_persist_keep(const void *region, u64 size,
				   const u8 boot_id[16])
{
	const struct ds_persist_header *h = region;
	unsigned int cpu;
	u64 used;

	ds_persist_verdict = ds_persist_check(region, size, boot_id);
	if (ds_persist_verdict != DS_PERSIST_OK)
		return;
	used = DS_PERSIST_PAGE + (u64)h->nr_cpus * h->cpu_stride;
	ds_persist_prev = vmalloc(used);
	ds_persist_views = kcalloc(h->nr_cpus, sizeof(*ds_persist_views),
				   GFP_KERNEL);
	if (!ds_persist_prev || !ds_persist_views) {
		vfree(ds_persist_prev);
		kfree(ds_persist_views);
		ds_persist_prev = NULL;
		return;
	}
	memcpy(ds_persist_prev, region, used);
	for (cpu = 0; cpu < h->nr_cpus; cpu++) {
		struct ds_persist_view *v = &ds_persist_views[cpu];

		v->verdict = ds_persist_cpu_records(ds_persist_prev, cpu,
						    v->segs, v->nrs);
	}
}

/**
 * ds_persist_init() - keep the previous boot's branches, give this boot's
 *	CPUs their slices
 *
 * Before any consumer exists (ds_init()).  A region too small for every
 * possible CPU serves the first ones.
 */
void __init ds_persist_init(void)
{
	struct ds_persist_header boot = {
		.staging_size = DS_STAGING_SIZE,
		.kaslr_offset = kaslr_offset(),
	};
	phys_addr_t start, size;
	unsigned int cpu, nr;
	void *region;

	if (!ds_persist_name[0])
		return;
	if (!reserve_mem_find_by_name(ds_persist_name, &start, &size)) {
		pr_warn("bts_persist=%s: no reserve_mem= region of that name\n",
			ds_persist_name);
		return;
	}
	/* Its pages are mapped where the hardware writes: whole pages. */
	if (!PAGE_ALIGNED(start) || !PAGE_ALIGNED(size)) {
		pr_warn("bts_persist=%s: the region is not page-aligned (reserve_mem=SIZE:4096:%s)\n",
			ds_persist_name, ds_persist_name);
		return;
	}
	nr = min(nr_cpu_ids, ds_persist_nr_cpus(size, DS_STAGING_SIZE));
	if (!nr) {
		pr_warn("bts_persist=%s: %pa bytes hold no CPU's branches (%lu a CPU, and a page)\n",
			ds_persist_name, &size,
			DS_PERSIST_PAGE + DS_STAGING_SIZE);
		return;
	}
	if (nr < nr_cpu_ids)
		pr_warn("bts_persist=%s: room for CPUs 0-%u of %u\n",
			ds_persist_name, nr - 1, nr_cpu_ids);
	ds_persist_found = true;
	/* reserve_mem= takes it from memblock: it is in the direct map. */
	region = __va(start);
	/*
	 * Random, and the time of day in it: a machine without an early
	 * source of entropy must not take the previous boot for this one.
	 */
	get_random_bytes(boot.boot_id, sizeof(boot.boot_id));
	put_unaligned(get_unaligned((u64 *)boot.boot_id) ^ ktime_get_real_ns(),
		      (u64 *)boot.boot_id);
	ds_persist_keep(region, size, boot.boot_id);
	boot.region_size = size;
	boot.text_start = (unsigned long)_stext;
	boot.text_end = (unsigned long)_etext;
	boot.nr_cpus = nr;
	strscpy(boot.release, init_utsname()->release, sizeof(boot.release));
	strscpy(boot.uts_version, init_utsname()->version,
		sizeof(boot.uts_version));
	ds_persist_format(region, &boot);
	for_each_possible_cpu(cpu)
		if (cpu < nr)
			ds_persist_take_area(region, start, cpu);
	flush_tlb_all();
	pr_info("bts_persist=%s: %u CPUs' last branches kept across a reset; the previous boot's: %s\n",
		ds_persist_name, nr, ds_persist_why(ds_persist_verdict));
}

#ifdef CONFIG_TRACING
/*
 * Whether the previous boot ran this build: its release and its version
 * (the build's number and date).  A reproducible build's fixed timestamp
 * would make two builds alike: their text differs, and names are wrong.
 */
static bool ds_persist_same_build(void)
{
	const struct ds_persist_header *h = ds_persist_prev;

	return h && !strcmp(h->release, init_utsname()->release) &&
	       !strcmp(h->uts_version, init_utsname()->version);
}

/*
 * An address of the previous boot: one in its kernel's text named, if
 * this is its build, the KASLR offset applied; others as numbers.
 */
static void ds_persist_addr(struct seq_file *m, u64 addr, s64 slide)
{
	const struct ds_persist_header *h = ds_persist_prev;

	if ((s64)addr >= 0)
		seq_printf(m, "[user] 0x%llx", addr);
	else if (slide != S64_MAX && addr >= h->text_start &&
		 addr < h->text_end)
		seq_printf(m, "%pS", (void *)(unsigned long)(addr + slide));
	else
		seq_printf(m, "0x%llx", addr);
}

static void ds_persist_record(struct seq_file *m, const struct bts_record *r,
			      s64 slide)
{
	if (BTS_RECORD_IS_PSEUDO(r->from)) {
		if (BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_SWITCH)
			seq_printf(m, "  -- switch to %llu/%llu\n", r->to,
				   r->flags);
		else
			seq_printf(m, "  -- pseudo-record type %u\n",
				   BTS_PSEUDO_TYPE(r->from));
		return;
	}
	seq_puts(m, "  ");
	ds_persist_addr(m, r->from, slide);
	seq_puts(m, " -> ");
	ds_persist_addr(m, r->to, slide);
	seq_putc(m, '\n');
}

/* The lines of CPU @cpu: its own, then its records. */
static u64 ds_persist_lines(unsigned int cpu)
{
	const struct ds_persist_view *v = &ds_persist_views[cpu];

	return 1 + (v->verdict == DS_PERSIST_CPU_OK ?
		    (u64)v->nrs[0] + v->nrs[1] : 0);
}

/*
 * The file is a line per record: its position is a line's number (0: the
 * header, or why there is nothing), a token for it one more.
 */
static void *ds_persist_seq_start(struct seq_file *m, loff_t *pos)
{
	const struct ds_persist_header *h = ds_persist_prev;
	u64 lines = 1;
	unsigned int cpu;

	for (cpu = 0; h && cpu < h->nr_cpus; cpu++)
		lines += ds_persist_lines(cpu);
	return *pos < lines ? (void *)(unsigned long)(*pos + 1) : NULL;
}

static void *ds_persist_seq_next(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return ds_persist_seq_start(m, pos);
}

static void ds_persist_seq_stop(struct seq_file *m, void *v)
{
}

static void ds_persist_show_header(struct seq_file *m)
{
	const struct ds_persist_header *h = ds_persist_prev;

	if (!ds_persist_found)
		seq_printf(m, "no region: boot with reserve_mem=SIZE:4096:NAME bts_persist=NAME%s%s\n",
			   ds_persist_name[0] ? " (bts_persist=" : "",
			   ds_persist_name[0] ? "names no region)" : "");
	else if (!h)
		seq_printf(m, "bts_persist=%s: %s\n", ds_persist_name,
			   ds_persist_verdict == DS_PERSIST_OK ?
			   "no memory to keep the previous boot's branches" :
			   ds_persist_why(ds_persist_verdict));
	else
		seq_printf(m, "previous boot: %s %s, kernel offset 0x%llx%s\n",
			   h->release, h->uts_version, h->kaslr_offset,
			   ds_persist_same_build() ? "" :
			   " (another kernel: its addresses are not named)");
}

static int ds_persist_seq_show(struct seq_file *m, void *v)
{
	const struct ds_persist_header *h = ds_persist_prev;
	u64 line = (unsigned long)v - 1, lines;
	s64 slide = S64_MAX;
	unsigned int cpu;

	if (!line) {
		ds_persist_show_header(m);
		return 0;
	}
	if (ds_persist_same_build())
		slide = kaslr_offset() - h->kaslr_offset;
	for (line--, cpu = 0; cpu < h->nr_cpus; cpu++) {
		const struct ds_persist_view *cv = &ds_persist_views[cpu];

		lines = ds_persist_lines(cpu);
		if (line >= lines) {
			line -= lines;
			continue;
		}
		if (!line) {
			seq_printf(m, "CPU %u: %s", cpu,
				   ds_persist_cpu_why(cv->verdict));
			if (cv->verdict == DS_PERSIST_CPU_OK)
				seq_printf(m, ", %u records, oldest first",
					   cv->nrs[0] + cv->nrs[1]);
			seq_putc(m, '\n');
		} else if (--line < cv->nrs[0]) {
			ds_persist_record(m, &cv->segs[0][line], slide);
		} else {
			ds_persist_record(m, &cv->segs[1][line - cv->nrs[0]],
					  slide);
		}
		break;
	}
	return 0;
}

static const struct seq_operations ds_persist_seq_sops = {
	.start	= ds_persist_seq_start,
	.next	= ds_persist_seq_next,
	.stop	= ds_persist_seq_stop,
	.show	= ds_persist_seq_show,
};
DEFINE_SEQ_ATTRIBUTE(ds_persist_seq);

/* /sys/kernel/tracing/bts_last_boot, root only: kernel addresses. */
static int __init ds_persist_file(void)
{
	if (boot_cpu_has(X86_FEATURE_BTS))
		tracefs_create_file("bts_last_boot", 0400, NULL, NULL,
				    &ds_persist_seq_fops);
	return 0;
}
fs_initcall(ds_persist_file);
#endif /* CONFIG_TRACING */
