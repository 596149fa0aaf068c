// SPDX-License-Identifier: GPL-2.0
/*
 * bts_persist_plant: damage the region that keeps the last branches across
 * a reset (reserve_mem=...:NAME bts_persist=NAME) before the machine
 * resets, as a torn write, another kernel or a cold boot would leave it,
 * for tests/trace-bts/last-boot.  The next boot's bts_last_boot must say
 * what it found, and show nothing it cannot trust.
 *
 * A write to /sys/kernel/debug/bts_persist_plant of:
 *
 *   header  one byte of the header's build changed, its checksum not:
 *           a torn header
 *   build   another build's header (its build changed, the checksum
 *           made again), and CPU 1's slice header torn: CPU 0's
 *           records shown without names, CPU 1's not at all
 *   offset  the header's KASLR offset 2 MiB off (the checksum made
 *           again): the next boot names every kernel address wrongly
 *   area    CPU 1's save area's BTS index past its staging buffer
 *   random  the whole region random bytes, as a cold boot leaves DRAM
 *
 * area and random write where the hardware and the layer do: stop the
 * recorder first.  They fail with EBUSY until the layer has let every
 * CPU's buffers go (a second after its last consumer), which clears the
 * save areas; retry.
 *
 * The layout is the kernel's own (ds_persist_core.c, built in here).
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/memblock.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <asm/intel_ds.h>

#include "ds_persist_core.c"

static char *region_name = "bts";
module_param(region_name, charp, 0400);
MODULE_PARM_DESC(region_name, "the reserve_mem= region's name (bts_persist=)");

static void *bts_plant_region;
static phys_addr_t bts_plant_size;

static void bts_plant_header(struct ds_persist_header *h)
{
	h->uts_version[1] ^= 0x20;
}

static void bts_plant_build(struct ds_persist_header *h)
{
	struct ds_persist_cpu *c = (void *)((u8 *)h + DS_PERSIST_CPU_HEADERS);

	strscpy(h->uts_version, "#1 SMP a build that is not this one",
		sizeof(h->uts_version));
	h->checksum = ds_persist_checksum(h, offsetof(typeof(*h), checksum));
	c[1].staging_va ^= DS_PERSIST_PAGE;
}

static void bts_plant_offset(struct ds_persist_header *h)
{
	h->kaslr_offset += SZ_2M;
	h->checksum = ds_persist_checksum(h, offsetof(typeof(*h), checksum));
}

static void bts_plant_area(struct ds_persist_header *h)
{
	struct debug_store *ds = ds_persist_slice(h, 1);
	u64 base = ((struct ds_persist_cpu *)((u8 *)h +
					      DS_PERSIST_CPU_HEADERS))[1].staging_va;

	/* As the layer arms a ring, then the index one record past it. */
	ds->bts_buffer_base = base;
	ds->bts_absolute_maximum = base + h->staging_size -
				   h->staging_size % sizeof(struct bts_record);
	ds->bts_interrupt_threshold = ds->bts_absolute_maximum +
				      sizeof(struct bts_record);
	ds->bts_index = ds->bts_interrupt_threshold;
}

/* Whether the layer has let every CPU's save area go (all zero). */
static bool bts_plant_idle(struct ds_persist_header *h)
{
	u32 cpu;

	for (cpu = 0; cpu < h->nr_cpus; cpu++) {
		struct debug_store *ds = ds_persist_slice(h, cpu);

		if (ds->bts_buffer_base || ds->bts_index ||
		    ds->bts_absolute_maximum)
			return false;
	}
	return true;
}

static ssize_t bts_plant_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *pos)
{
	struct ds_persist_header *h = bts_plant_region;
	char what[16];

	if (len >= sizeof(what))
		return -EINVAL;
	if (copy_from_user(what, ubuf, len))
		return -EFAULT;
	what[len] = '\0';
	strim(what);
	if (h->nr_cpus < 2 && strcmp(what, "random"))
		return -ENODEV;
	if ((!strcmp(what, "area") || !strcmp(what, "random")) &&
	    !bts_plant_idle(h))
		return -EBUSY;
	if (!strcmp(what, "header"))
		bts_plant_header(h);
	else if (!strcmp(what, "build"))
		bts_plant_build(h);
	else if (!strcmp(what, "offset"))
		bts_plant_offset(h);
	else if (!strcmp(what, "area"))
		bts_plant_area(h);
	else if (!strcmp(what, "random"))
		get_random_bytes(h, bts_plant_size);
	else
		return -EINVAL;
	pr_info("bts_persist_plant: %s planted in the region %s\n", what,
		region_name);
	return len;
}

static const struct file_operations bts_plant_fops = {
	.write	= bts_plant_write,
};

static struct dentry *bts_plant_file;

static int __init bts_plant_init(void)
{
	phys_addr_t start;

	if (!reserve_mem_find_by_name(region_name, &start, &bts_plant_size))
		return -ENODEV;
	/* reserve_mem= takes it from memblock: it is in the direct map. */
	bts_plant_region = __va(start);
	bts_plant_file = debugfs_create_file("bts_persist_plant", 0200, NULL,
					     NULL, &bts_plant_fops);
	return 0;
}

static void __exit bts_plant_exit(void)
{
	debugfs_remove(bts_plant_file);
}

module_init(bts_plant_init);
module_exit(bts_plant_exit);
MODULE_DESCRIPTION("Damage the bts_persist region, for the reader's tests");
MODULE_LICENSE("GPL");
