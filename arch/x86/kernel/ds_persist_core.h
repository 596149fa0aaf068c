/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A region of memory that keeps each CPU's last branches across a reset
 * (reserve_mem=SIZE:ALIGN:NAME bts_persist=NAME, ds_persist.c): its
 * layout, how a boot formats it, and how the next boot reads back what
 * the hardware left there.
 *
 * The hardware writes the region itself: each CPU's DS save area and
 * staging buffer are pages of the region, mapped where the layer maps
 * them (the CPU's cpu_entry_area), so nothing has to run between the last
 * branch and the reset.  The save area's BTS fields then say, in the next
 * boot, where the hardware was writing: the records are read in the order
 * the staging buffer was armed in (a ring, or a run from its base).
 *
 * The reader trusts nothing it finds: a cold boot leaves random bytes, a
 * reset may come in the middle of a write, another kernel may have laid
 * the region out otherwise.  Every field is checked before it is used, and
 * what is returned lies within the region.
 *
 * The same file is built into the userspace harness (tools/testing/ds).
 */
#ifndef __X86_KERNEL_DS_PERSIST_CORE_H
#define __X86_KERNEL_DS_PERSIST_CORE_H

#include "ds_core.h"

/* "BTSPERS1" and "BTSCPU01", as little-endian words. */
#define DS_PERSIST_MAGIC	0x3153524550535442ULL
#define DS_PERSIST_CPU_MAGIC	0x3130555043535442ULL
#define DS_PERSIST_VERSION	1
/* The unit of the layout: the pages the cpu_entry_area maps. */
#define DS_PERSIST_PAGE		4096U
/*
 * The slices' headers, in the header page from here on: not in a slice's
 * own first page, the DS save area's, which perf clears to its end.
 */
#define DS_PERSIST_CPU_HEADERS	2048U
#define DS_PERSIST_MAX_CPUS	((DS_PERSIST_PAGE - DS_PERSIST_CPU_HEADERS) / \
				 sizeof(struct ds_persist_cpu))
/* utsname's fields, with their NUL. */
#define DS_PERSIST_UTS_LEN	65

/**
 * struct ds_persist_header - the region's first page
 * @magic: DS_PERSIST_MAGIC
 * @version: DS_PERSIST_VERSION
 * @header_size: sizeof(struct ds_persist_header)
 * @region_size: the region's size, in bytes
 * @nr_cpus: the slices that follow, one per possible CPU (by number), at
 *	most DS_PERSIST_MAX_CPUS
 * @cpu_stride: bytes from a slice to the next; the first starts at
 *	DS_PERSIST_PAGE
 * @staging_size: bytes of each slice's staging buffer, after its first
 *	page
 * @boot_id: random, per boot: the boot that formatted the region
 * @release: the kernel's release (utsname), NUL-terminated
 * @uts_version: the kernel's build (utsname's version: its number and date),
 *	NUL-terminated: with @release, whether a kernel can name the
 *	addresses
 * @pad: zero
 * @kaslr_offset: the kernel's text offset (kaslr_offset())
 * @text_start: the kernel's text (_stext): only addresses in it are
 *	named, the KASLR offset applied (modules, BPF and the like are not
 *	where they were)
 * @text_end: its end (_etext)
 * @checksum: ds_persist_checksum() of the fields above
 */
struct ds_persist_header {
	u64	magic;
	u32	version;
	u32	header_size;
	u64	region_size;
	u32	nr_cpus;
	u32	cpu_stride;
	u32	staging_size;
	u8	boot_id[16];
	char	release[DS_PERSIST_UTS_LEN];
	char	uts_version[DS_PERSIST_UTS_LEN];
	u8	pad[10];
	u64	kaslr_offset;
	u64	text_start;
	u64	text_end;
	u64	checksum;
};

/**
 * struct ds_persist_cpu - a slice's header, in the header page's array at
 *	DS_PERSIST_CPU_HEADERS
 * @magic: DS_PERSIST_CPU_MAGIC
 * @cpu: the CPU whose slice this is
 * @staging_size: the header's @staging_size again
 * @staging_va: the address the hardware was given for the staging
 *	buffer (its cpu_entry_area address): the save area's fields are
 *	addresses, made offsets with it
 * @checksum: ds_persist_checksum() of the fields above
 */
struct ds_persist_cpu {
	u64	magic;
	u32	cpu;
	u32	staging_size;
	u64	staging_va;
	u64	checksum;
};

/* No hole the checksums would cover unseen. */
static_assert(offsetof(struct ds_persist_header, kaslr_offset) ==
	      offsetof(struct ds_persist_header, pad) + 10, "a hole");
static_assert(sizeof(struct ds_persist_header) <= DS_PERSIST_CPU_HEADERS,
	      "the header runs into the slices' headers");
static_assert(sizeof(struct ds_persist_cpu) == 32, "a hole");

/**
 * enum ds_persist_verdict - what a region holds, as ds_persist_check()
 *	finds it
 * @DS_PERSIST_OK: a previous boot's region, laid out as this kernel reads
 * @DS_PERSIST_EMPTY: no magic: a cold boot, or a region never formatted
 * @DS_PERSIST_OTHER_LAYOUT: a layout this kernel does not know
 * @DS_PERSIST_CORRUPT: a checksum that does not match, or a layout that
 *	does not fit the region
 * @DS_PERSIST_THIS_BOOT: formatted by the running boot, not a previous one
 */
enum ds_persist_verdict {
	DS_PERSIST_OK,
	DS_PERSIST_EMPTY,
	DS_PERSIST_OTHER_LAYOUT,
	DS_PERSIST_CORRUPT,
	DS_PERSIST_THIS_BOOT,
};

/**
 * enum ds_persist_cpu_verdict - what a CPU's slice holds
 * @DS_PERSIST_CPU_OK: records, as the hardware left them
 * @DS_PERSIST_CPU_ABSENT: the slice was never given to the CPU (it was
 *	not possible, or the boot ended before)
 * @DS_PERSIST_CPU_CORRUPT: the slice's header does not check
 * @DS_PERSIST_CPU_IDLE: the CPU never traced into its staging buffer
 * @DS_PERSIST_CPU_BAD_AREA: the save area's fields do not point into the
 *	staging buffer as the layer arms it (a torn write, stray bytes)
 */
enum ds_persist_cpu_verdict {
	DS_PERSIST_CPU_OK,
	DS_PERSIST_CPU_ABSENT,
	DS_PERSIST_CPU_CORRUPT,
	DS_PERSIST_CPU_IDLE,
	DS_PERSIST_CPU_BAD_AREA,
};

u64 ds_persist_checksum(const void *p, size_t len);
u32 ds_persist_nr_cpus(u64 region_size, u32 staging_size);
void ds_persist_format(void *region, const struct ds_persist_header *boot);
void *ds_persist_slice(void *region, u32 cpu);
void *ds_persist_staging(void *region, u32 cpu);
void ds_persist_cpu_init(void *region, u32 cpu, u64 staging_va);
enum ds_persist_verdict ds_persist_check(const void *region, u64 size,
					 const u8 this_boot[16]);
enum ds_persist_cpu_verdict
ds_persist_cpu_records(const void *region, u32 cpu,
		       const struct bts_record *segs[2], u32 nrs[2]);
const char *ds_persist_why(enum ds_persist_verdict v);
const char *ds_persist_cpu_why(enum ds_persist_cpu_verdict v);

#endif /* __X86_KERNEL_DS_PERSIST_CORE_H */
