// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the persistent region's layout and its reading
 * (ds_persist_core.c), in the kernel and in the userspace harness
 * (tools/testing/ds, under ASan and UBSan, where a read out of the region
 * is a failed run).
 */
#include <kunit/test.h>
#include "ds_persist_core.h"

/* A small region: two CPUs, 8 KiB of staging each (341 records). */
#define T_STAGING	(2 * DS_PERSIST_PAGE)
#define T_CPUS		2
#define T_SIZE		(DS_PERSIST_PAGE + T_CPUS * (DS_PERSIST_PAGE + T_STAGING))
#define T_RECORDS	(T_STAGING / sizeof(struct bts_record))
/* Where the previous boot's hardware saw each staging buffer. */
#define T_VA(cpu)	(0xfffffe0000100000ULL + (cpu) * 0x40000ULL)

static const u8 ds_test_prev_boot[16] = { 1, 2, 3 };
static const u8 ds_test_this_boot[16] = { 4, 5, 6 };

/* @region as a previous boot formatted it, every slice given. */
static void ds_test_format(void *region)
{
	struct ds_persist_header boot = {
		.region_size = T_SIZE,
		.nr_cpus = T_CPUS,
		.staging_size = T_STAGING,
		.release = "6.12-test",
		.uts_version = "#1 SMP Sun Nov 29 12:00:00 UTC 2026",
		.kaslr_offset = 0x1000000,
	};
	u32 cpu;

	memcpy(boot.boot_id, ds_test_prev_boot, sizeof(boot.boot_id));
	ds_persist_format(region, &boot);
	for (cpu = 0; cpu < T_CPUS; cpu++)
		ds_persist_cpu_init(region, cpu, T_VA(cpu));
}

static void *ds_test_region(struct kunit *test)
{
	void *region = kunit_kcalloc(test, 1, T_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, region);
	ds_test_format(region);
	return region;
}

static struct ds_bts_area *ds_test_area(void *region, u32 cpu)
{
	return ds_persist_slice(region, cpu);
}

/*
 * The hardware writes records @first.. (@n of them, from = to = the
 * number) from its index: round and round a ring, up to the end of a run.
 */
static void ds_test_write(void *region, u32 cpu, u32 first, u32 n)
{
	struct bts_record *buf = ds_persist_staging(region, cpu);
	struct ds_bts_area *hw = ds_test_area(region, cpu);
	u32 at = (hw->index - T_VA(cpu)) / sizeof(*buf), i;

	for (i = 0; i < n; i++) {
		if (T_VA(cpu) + at * sizeof(*buf) == hw->max) {
			if (hw->threshold <= hw->max)
				break;
			at = (hw->base - T_VA(cpu)) / sizeof(*buf);
		}
		buf[at].from = first + i;
		buf[at].to = first + i;
		at++;
	}
	hw->index = T_VA(cpu) + at * sizeof(*buf);
}

/* Armed as ds_staging_arm_ring() does, or as a run raising a PMI. */
static void ds_test_arm(void *region, u32 cpu, bool ring)
{
	struct bts_record *buf = ds_persist_staging(region, cpu);
	struct ds_bts_area *hw = ds_test_area(region, cpu);

	hw->base = T_VA(cpu);
	hw->index = hw->base;
	hw->max = hw->base + T_RECORDS * sizeof(*buf);
	hw->threshold = ring ? hw->max + sizeof(*buf) : hw->max - 16 * 24;
	if (ring)
		buf[T_RECORDS - 1].from = DS_RING_UNWRITTEN;
}

/* The records read back, oldest first, as their numbers; how many. */
static u32 ds_test_read(struct kunit *test, const void *region, u32 cpu,
			u64 *out, enum ds_persist_cpu_verdict want)
{
	const struct bts_record *segs[2];
	u32 nrs[2], i, j, n = 0;

	KUNIT_EXPECT_EQ(test, ds_persist_cpu_records(region, cpu, segs, nrs),
			want);
	for (i = 0; i < 2; i++)
		for (j = 0; j < nrs[i]; j++)
			out[n++] = segs[i][j].from;
	return n;
}

static void ds_test_persist_run(struct kunit *test)
{
	void *region = ds_test_region(test);
	u64 *got = kunit_kcalloc(test, T_RECORDS, sizeof(*got), GFP_KERNEL);
	u32 n, i;

	KUNIT_EXPECT_EQ(test, ds_persist_check(region, T_SIZE,
					       ds_test_this_boot),
			DS_PERSIST_OK);
	ds_test_arm(region, 0, false);
	ds_test_write(region, 0, 100, 5);
	n = ds_test_read(test, region, 0, got, DS_PERSIST_CPU_OK);
	KUNIT_EXPECT_EQ(test, n, 5);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, got[i], 100 + i);
	/* CPU 1 was given its slice and never traced. */
	KUNIT_EXPECT_EQ(test, ds_test_read(test, region, 1, got,
					   DS_PERSIST_CPU_IDLE), 0);
}

static void ds_test_persist_ring(struct kunit *test)
{
	void *region = ds_test_region(test);
	u64 *got = kunit_kcalloc(test, T_RECORDS, sizeof(*got), GFP_KERNEL);
	u32 n, i;

	/* Not yet round: from the base to the index. */
	ds_test_arm(region, 0, true);
	ds_test_write(region, 0, 1, 10);
	n = ds_test_read(test, region, 0, got, DS_PERSIST_CPU_OK);
	KUNIT_EXPECT_EQ(test, n, 10);
	KUNIT_EXPECT_EQ(test, got[0], 1);
	KUNIT_EXPECT_EQ(test, got[9], 10);

	/*
	 * Round more than once: the last T_RECORDS - 1, oldest first; not
	 * the one at the index, which a reset may have torn.
	 */
	ds_test_write(region, 0, 11, 3 * T_RECORDS + 7);
	n = ds_test_read(test, region, 0, got, DS_PERSIST_CPU_OK);
	KUNIT_EXPECT_EQ(test, n, T_RECORDS - 1);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ_MSG(test, got[i],
				    10 + 3 * T_RECORDS + 7 - n + 1 + i,
				    "record %u", i);

	/* Left at its end after the last slot: the same records. */
	ds_test_arm(region, 1, true);
	ds_test_write(region, 1, 1, T_RECORDS - 1);
	ds_test_area(region, 1)->index = ds_test_area(region, 1)->max;
	((struct bts_record *)ds_persist_staging(region, 1))[T_RECORDS - 1].from =
		T_RECORDS;
	n = ds_test_read(test, region, 1, got, DS_PERSIST_CPU_OK);
	KUNIT_EXPECT_EQ(test, n, T_RECORDS - 1);
	KUNIT_EXPECT_EQ(test, got[0], 2);
	KUNIT_EXPECT_EQ(test, got[n - 1], T_RECORDS);
}

/* Each way a region can be wrong, and what the reader says. */
static void ds_test_persist_verdicts(struct kunit *test)
{
	struct ds_persist_header *h;
	void *region;
	u64 *got = kunit_kcalloc(test, T_RECORDS, sizeof(*got), GFP_KERNEL);

	region = kunit_kcalloc(test, 1, T_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, region);
	KUNIT_EXPECT_EQ(test, ds_persist_check(region, T_SIZE,
					       ds_test_this_boot),
			DS_PERSIST_EMPTY);

	region = ds_test_region(test);
	h = region;
	KUNIT_EXPECT_EQ(test, ds_persist_check(region, T_SIZE,
					       ds_test_prev_boot),
			DS_PERSIST_THIS_BOOT);
	KUNIT_EXPECT_EQ(test, ds_persist_check(region, T_SIZE - 1,
					       ds_test_this_boot),
			DS_PERSIST_CORRUPT);
	h->release[0] ^= 1;
	KUNIT_EXPECT_EQ(test, ds_persist_check(region, T_SIZE,
					       ds_test_this_boot),
			DS_PERSIST_CORRUPT);
	h->release[0] ^= 1;
	h->version++;
	KUNIT_EXPECT_EQ(test, ds_persist_check(region, T_SIZE,
					       ds_test_this_boot),
			DS_PERSIST_OTHER_LAYOUT);
	h->version--;
	/* More slices than the region holds, under a good checksum. */
	h->nr_cpus = T_CPUS + 1;
	h->checksum = ds_persist_checksum(h, offsetof(typeof(*h), checksum));
	KUNIT_EXPECT_EQ(test, ds_persist_check(region, T_SIZE,
					       ds_test_this_boot),
			DS_PERSIST_CORRUPT);

	region = ds_test_region(test);
	ds_test_arm(region, 0, true);
	ds_test_write(region, 0, 1, 4);
	/* An index between two records, or outside the buffer. */
	ds_test_area(region, 0)->index += 8;
	ds_test_read(test, region, 0, got, DS_PERSIST_CPU_BAD_AREA);
	ds_test_area(region, 0)->index = T_VA(0) + T_STAGING + 24;
	ds_test_read(test, region, 0, got, DS_PERSIST_CPU_BAD_AREA);
	/* A base another boot's, or a torn slice header. */
	ds_test_arm(region, 0, true);
	ds_test_area(region, 0)->base -= 24;
	ds_test_read(test, region, 0, got, DS_PERSIST_CPU_BAD_AREA);
	((u8 *)region)[DS_PERSIST_CPU_HEADERS + 32 + 12] ^= 4;
	ds_test_read(test, region, 1, got, DS_PERSIST_CPU_CORRUPT);
}

/* A small xorshift: the same mutations every run, anywhere. */
static u64 ds_test_next(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Bytes flipped anywhere in the header page and the slices' first pages
 * (headers, save areas), or the whole region random: the reader never
 * reads outside the region (ASan in the harness), and what it returns
 * lies in the slice's staging buffer.
 */
static void ds_test_persist_mutations(struct kunit *test)
{
	void *region = ds_test_region(test);
	u64 seed = 0x9e3779b97f4a7c15ULL;
	u32 round, bad = 0, ok = 0;

	for (round = 0; round < 2000; round++) {
		u32 cpu, flips = 1 + ds_test_next(&seed) % 8, i;

		memset(region, 0, T_SIZE);
		ds_test_format(region);
		ds_test_arm(region, 0, round & 1);
		ds_test_write(region, 0, 1, ds_test_next(&seed) % 1000);
		for (i = 0; i < flips; i++) {
			u64 r = ds_test_next(&seed);
			u32 page = r % (1 + T_CPUS);
			u32 off = (r >> 8) % DS_PERSIST_PAGE;
			u8 *p = page ? ds_persist_slice(region, page - 1) :
				       region;

			p[off] ^= 1 << ((r >> 20) % 8);
		}
		if (round % 100 == 99)
			for (i = 0; i < DS_PERSIST_PAGE * 2; i++)
				((u8 *)region)[i] = ds_test_next(&seed);
		if (ds_persist_check(region, T_SIZE, ds_test_this_boot) !=
		    DS_PERSIST_OK)
			continue;
		for (cpu = 0; cpu < ((struct ds_persist_header *)region)->nr_cpus;
		     cpu++) {
			const u8 *lo = ds_persist_staging(region, cpu);
			const struct bts_record *segs[2];
			u32 nrs[2], s;

			if (ds_persist_cpu_records(region, cpu, segs, nrs) !=
			    DS_PERSIST_CPU_OK)
				continue;
			ok++;
			for (s = 0; s < 2; s++)
				if (nrs[s] && ((const u8 *)segs[s] < lo ||
					       (const u8 *)(segs[s] + nrs[s]) >
					       lo + T_STAGING))
					bad++;
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0);
	KUNIT_EXPECT_GT_MSG(test, ok, 100, "slices read after mutation");
}

/*
 * A boot formats whatever the region held (a cold boot's random bytes,
 * another layout): by its own layout, nothing outside the region (ASan
 * in the harness), every slice cleared.
 */
static void ds_test_persist_format_over(struct kunit *test)
{
	u8 *region = kunit_kcalloc(test, 1, T_SIZE, GFP_KERNEL);
	u64 seed = 0x2545f4914f6cdd1dULL;
	u32 i, cpu, dirty = 0;

	KUNIT_ASSERT_NOT_NULL(test, region);
	for (i = 0; i < T_SIZE; i++)
		region[i] = ds_test_next(&seed);
	ds_test_format(region);
	KUNIT_EXPECT_EQ(test, ds_persist_check(region, T_SIZE,
					       ds_test_this_boot),
			DS_PERSIST_OK);
	for (cpu = 0; cpu < T_CPUS; cpu++) {
		const u8 *s = ds_persist_slice(region, cpu);

		for (i = 0; i < DS_PERSIST_PAGE + T_STAGING; i++)
			dirty += s[i] != 0;
		KUNIT_EXPECT_EQ(test, ds_test_read(test, region, cpu, NULL,
						   DS_PERSIST_CPU_IDLE), 0);
	}
	KUNIT_EXPECT_EQ(test, dirty, 0);
}

static struct kunit_case ds_persist_test_cases[] = {
	KUNIT_CASE(ds_test_persist_run),
	KUNIT_CASE(ds_test_persist_ring),
	KUNIT_CASE(ds_test_persist_verdicts),
	KUNIT_CASE(ds_test_persist_mutations),
	KUNIT_CASE(ds_test_persist_format_over),
	{}
};

static struct kunit_suite ds_persist_test_suite = {
	.name = "ds_persist",
	.test_cases = ds_persist_test_cases,
};

kunit_test_suite(ds_persist_test_suite);

MODULE_DESCRIPTION("KUnit tests of the DS layer's persistent region");
MODULE_LICENSE("GPL");
