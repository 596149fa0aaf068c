// SPDX-License-Identifier: GPL-2.0
/*
 * The layout of a branch-trace region that outlives a reset, and its
 * reading in the next boot: see ds_persist_core.h.
 */
#include "ds_persist_core.h"

/**
 * ds_persist_checksum() - FNV-1a of some bytes
 * @p: the bytes
 * @len: how many
 *
 * Not a defense against anyone: it tells a header the layer wrote from
 * one a reset tore or a cold boot left.
 *
 * Return: the checksum.
 */
u64 ds_persist_checksum(const void *p, size_t len)
{
	const u8 *b = p;
	u64 h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static u64 ds_persist_stride(u32 staging_size)
{
	return DS_PERSIST_PAGE + (u64)staging_size;
}

static struct ds_persist_cpu *ds_persist_cpu(const void *region, u32 cpu)
{
	return (struct ds_persist_cpu *)((u8 *)region +
					 DS_PERSIST_CPU_HEADERS) + cpu;
}

/**
 * ds_persist_nr_cpus() - how many CPUs a region has slices for
 * @region_size: its size, in bytes
 * @staging_size: bytes of a CPU's staging buffer, a multiple of
 *	DS_PERSIST_PAGE
 *
 * Return: the number of slices after the header page, at most
 * DS_PERSIST_MAX_CPUS.
 */
u32 ds_persist_nr_cpus(u64 region_size, u32 staging_size)
{
	if (region_size < DS_PERSIST_PAGE)
		return 0;
	return min_t(u64, (region_size - DS_PERSIST_PAGE) /
			  ds_persist_stride(staging_size), DS_PERSIST_MAX_CPUS);
}

/**
 * ds_persist_format() - lay out a region for this boot
 * @region: the region, @boot->region_size bytes
 * @boot: this boot's header: every field but @magic, @version,
 *	@header_size, @cpu_stride and @checksum, which this fills in; its
 *	@nr_cpus slices must fit @region_size
 *
 * The slices are cleared, save areas and staging buffers: no CPU's slice
 * is in use until ds_persist_cpu_init(), and nothing of a previous boot
 * stays where the hardware's buffers are mapped.  The layout is @boot's,
 * whatever the region held.
 */
void ds_persist_format(void *region, const struct ds_persist_header *boot)
{
	struct ds_persist_header *h = region;

	memset(region, 0, DS_PERSIST_PAGE);
	*h = *boot;
	h->magic = DS_PERSIST_MAGIC;
	h->version = DS_PERSIST_VERSION;
	h->header_size = sizeof(*h);
	h->cpu_stride = ds_persist_stride(boot->staging_size);
	memset((u8 *)region + DS_PERSIST_PAGE, 0,
	       (u64)boot->nr_cpus * h->cpu_stride);
	h->checksum = ds_persist_checksum(h, offsetof(typeof(*h), checksum));
}

/**
 * ds_persist_slice() - a CPU's slice: its DS save area's page
 * @region: a formatted region
 * @cpu: the CPU, below the header's @nr_cpus
 *
 * Return: the page.
 */
void *ds_persist_slice(void *region, u32 cpu)
{
	const struct ds_persist_header *h = region;

	return (u8 *)region + DS_PERSIST_PAGE +
	       (u64)cpu * ds_persist_stride(h->staging_size);
}

/**
 * ds_persist_staging() - a CPU's staging buffer in the region
 * @region: a formatted region
 * @cpu: the CPU, below the header's @nr_cpus
 *
 * Return: its first byte.
 */
void *ds_persist_staging(void *region, u32 cpu)
{
	return (u8 *)ds_persist_slice(region, cpu) + DS_PERSIST_PAGE;
}

/**
 * ds_persist_cpu_init() - give a CPU its slice
 * @region: a formatted region
 * @cpu: the CPU
 * @staging_va: the address the hardware will be given for the slice's
 *	staging buffer
 *
 * Before the CPU's save area and staging buffer are the slice's pages.
 */
void ds_persist_cpu_init(void *region, u32 cpu, u64 staging_va)
{
	const struct ds_persist_header *h = region;
	struct ds_persist_cpu *c = ds_persist_cpu(region, cpu);

	c->magic = DS_PERSIST_CPU_MAGIC;
	c->cpu = cpu;
	c->staging_size = h->staging_size;
	c->staging_va = staging_va;
	c->checksum = ds_persist_checksum(c, offsetof(typeof(*c), checksum));
}

/**
 * ds_persist_check() - whether a region holds a previous boot's branches
 * @region: the region, read-only, @size bytes
 * @size: its size
 * @this_boot: the running boot's ID, which a region formatted by this
 *	boot carries
 *
 * Return: DS_PERSIST_OK when the header and the layout it describes can
 * be read (each slice is checked by ds_persist_cpu_records()).
 */
enum ds_persist_verdict ds_persist_check(const void *region, u64 size,
					 const u8 this_boot[16])
{
	const struct ds_persist_header *h = region;
	u64 end;

	if (size < DS_PERSIST_PAGE || h->magic != DS_PERSIST_MAGIC)
		return DS_PERSIST_EMPTY;
	if (h->version != DS_PERSIST_VERSION ||
	    h->header_size != sizeof(*h))
		return DS_PERSIST_OTHER_LAYOUT;
	if (h->checksum !=
	    ds_persist_checksum(h, offsetof(typeof(*h), checksum)))
		return DS_PERSIST_CORRUPT;
	if (h->region_size != size || !h->staging_size ||
	    h->staging_size % DS_PERSIST_PAGE ||
	    h->cpu_stride != ds_persist_stride(h->staging_size) ||
	    h->nr_cpus > DS_PERSIST_MAX_CPUS ||
	    h->release[DS_PERSIST_UTS_LEN - 1] ||
	    h->uts_version[DS_PERSIST_UTS_LEN - 1])
		return DS_PERSIST_CORRUPT;
	end = DS_PERSIST_PAGE + (u64)h->nr_cpus * h->cpu_stride;
	if (end > size)
		return DS_PERSIST_CORRUPT;
	if (!memcmp(h->boot_id, this_boot, sizeof(h->boot_id)))
		return DS_PERSIST_THIS_BOOT;
	return DS_PERSIST_OK;
}

/* Whether @addr is a record's place in [@base, @end] of a staging buffer. */
static bool ds_persist_slot(u64 addr, u64 base, u64 end)
{
	return addr >= base && addr <= end &&
	       !((addr - base) % sizeof(struct bts_record));
}

/**
 * ds_persist_cpu_records() - a CPU's last records, as the hardware left them
 * @region: a region ds_persist_check() found OK
 * @cpu: the CPU, below the header's @nr_cpus
 * @segs: set to the older and the newer run of records, oldest first
 * @nrs: set to the number of records in each
 *
 * The save area's fields are addresses the hardware was given: each must
 * be a record's place in the staging buffer, as the layer arms it.  A
 * ring (its threshold past its end: ds_staging_arm_ring()) that has been
 * round starts after its index (the record there is not taken: the
 * hardware may have been writing it); one that has not, or a run armed to
 * raise a PMI, at its base.
 *
 * Return: DS_PERSIST_CPU_OK with the runs, which lie in the slice's
 * staging buffer, or why there are none (@nrs zero).
 */
enum ds_persist_cpu_verdict
ds_persist_cpu_records(const void *region, u32 cpu,
		       const struct bts_record *segs[2], u32 nrs[2])
{
	const struct ds_persist_header *h = region;
	const struct bts_record *buf;
	const struct ds_persist_cpu *c;
	const struct ds_bts_area *hw;
	u64 start, end, index;
	const u8 *slice;

	memset(nrs, 0, 2 * sizeof(*nrs));
	memset(segs, 0, 2 * sizeof(*segs));
	slice = (const u8 *)region + DS_PERSIST_PAGE + (u64)cpu * h->cpu_stride;
	c = ds_persist_cpu(region, cpu);
	hw = (const void *)slice;
	buf = (const void *)(slice + DS_PERSIST_PAGE);

	if (!c->magic)
		return DS_PERSIST_CPU_ABSENT;
	if (c->magic != DS_PERSIST_CPU_MAGIC || c->cpu != cpu ||
	    c->staging_size != h->staging_size ||
	    c->checksum != ds_persist_checksum(c, offsetof(typeof(*c),
							  checksum)))
		return DS_PERSIST_CPU_CORRUPT;
	if (!hw->base && !hw->index && !hw->max)
		return DS_PERSIST_CPU_IDLE;
	start = c->staging_va;
	end = start + c->staging_size;
	if (end < start || !ds_persist_slot(hw->base, start, end) ||
	    !ds_persist_slot(hw->max, hw->base, end) || hw->max == hw->base ||
	    !ds_persist_slot(hw->index, hw->base, hw->max))
		return DS_PERSIST_CPU_BAD_AREA;

	segs[0] = buf + (hw->base - start) / sizeof(*buf);
	segs[1] = segs[0];
	if (hw->threshold > hw->max) {
		/* A ring: it may leave its index at its end, see ds_core.c. */
		u32 n = (hw->max - hw->base) / sizeof(*buf);

		index = hw->index == hw->max ? hw->base : hw->index;
		nrs[1] = (index - hw->base) / sizeof(*buf);
		if (segs[0][n - 1].from != DS_RING_UNWRITTEN &&
		    nrs[1] + 1 < n) {
			segs[0] += nrs[1] + 1;
			nrs[0] = n - nrs[1] - 1;
		}
	} else {
		nrs[1] = (hw->index - hw->base) / sizeof(*buf);
	}
	return DS_PERSIST_CPU_OK;
}

/**
 * ds_persist_why() - a region's verdict, for a reader
 * @v: the verdict
 *
 * Return: a phrase saying why there is nothing to show.
 */
const char *ds_persist_why(enum ds_persist_verdict v)
{
	switch (v) {
	case DS_PERSIST_OK:
		return "the previous boot's branches";
	case DS_PERSIST_EMPTY:
		return "no previous boot's branches (a cold boot, or never written)";
	case DS_PERSIST_OTHER_LAYOUT:
		return "written by a kernel with another layout";
	case DS_PERSIST_CORRUPT:
		return "the region's header does not check (torn, or not ours)";
	case DS_PERSIST_THIS_BOOT:
		return "the region already holds this boot's branches";
	}
	return "?";
}

/**
 * ds_persist_cpu_why() - a CPU's verdict, for a reader
 * @v: the verdict
 *
 * Return: a phrase saying why the CPU has no records to show.
 */
const char *ds_persist_cpu_why(enum ds_persist_cpu_verdict v)
{
	switch (v) {
	case DS_PERSIST_CPU_OK:
		return "its last branches";
	case DS_PERSIST_CPU_ABSENT:
		return "not given a slice";
	case DS_PERSIST_CPU_CORRUPT:
		return "its slice's header does not check";
	case DS_PERSIST_CPU_IDLE:
		return "it did not trace";
	case DS_PERSIST_CPU_BAD_AREA:
		return "its DS save area does not point into its staging buffer";
	}
	return "?";
}
