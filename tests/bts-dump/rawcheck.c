// SPDX-License-Identifier: GPL-2.0
/*
 * rawcheck: check and count the records of a bts-dump raw file.
 *
 *	rawcheck [-r LO-HI]... FILE
 *
 * Reads the raw format (bts-dump.1, RAW FORMAT: a 16-byte header, then
 * chunks of type, size and payload; records chunks carry struct
 * bts_record after an 8-byte stream header) without bts-dump's code, so
 * a bug in its reader cannot hide one in its writer, and at the speed a
 * ten-million-record trace needs in the test VM.  Every record of a
 * user-only trace must hold user addresses only: a branch has both ends
 * below the kernel half and flags 0; a KERNEL pseudo-record user
 * addresses (or 0) in @to and @flags; there is no USER or SWITCH record,
 * and nothing else looks like a kernel address at a record position.
 * Every KERNEL record comes right after its detail (THREAD records may
 * come between), a known layout whose times never go back in a thread.
 * MAP records (address-space changes, thread names) hold user addresses
 * or none, after details of their own.
 *
 * Prints one line of counts,
 *
 *	records=N branches=N kernel=N lost_records=N lost=N threads=N
 *	exits=N markers=N details=N maps=N bad=N
 *
 * then, for each -r, "range LO-HI N": the branches whose source is in
 * [LO, HI) (hex).  Exit status 1 when a record is bad or the file is not
 * a well-formed raw file, 2 on usage or I/O errors.
 */
#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bts.h>

#define USER_TOP	0x800000000000ULL
#define MAX_RANGES	8
#define RAW_MAGIC	"BTSDUMP\n"
#define RAW_HEADER_SIZE	16
#define RAW_RECORDS	1
#define RECORD_SIZE	24
#define STREAM_HEADER	8

struct range {
	uint64_t lo, hi, n;
};

static struct range ranges[MAX_RANGES];
static int nr_ranges;
static uint64_t records, branches, kernel, lost_records, lost, threads;
static uint64_t exits, markers, details, maps, bad;
/*
 * Of each thread, by tid modulo the size: the time of its last detail,
 * and whether that waits for its record.  @cur: the thread whose records
 * these are (the last THREAD record).
 */
#define THREADS	65536
static struct thread {
	uint64_t tid, time;
	bool pending;
} thread[THREADS], *cur = &thread[0];

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static void complain(uint64_t off, uint64_t from, uint64_t to,
		     uint64_t flags, const char *why)
{
	/* The first few are enough to see what is wrong. */
	if (++bad <= 5)
		printf("bad record at offset %llu (%s): from %#llx to %#llx flags %#llx\n",
		       (unsigned long long)off, why, (unsigned long long)from,
		       (unsigned long long)to, (unsigned long long)flags);
}

static void check_record(const unsigned char *p, uint64_t off)
{
	uint64_t from = get64(p), to = get64(p + 8), flags = get64(p + 16);
	int i;

	records++;
	if (!BTS_RECORD_IS_PSEUDO(from)) {
		branches++;
		if (cur->pending)
			complain(off, from, to, flags,
				 "a detail without its record");
		cur->pending = false;
		if (from >= USER_TOP || to >= USER_TOP)
			complain(off, from, to, flags, "kernel address");
		else if (flags)
			complain(off, from, to, flags, "branch with flags");
		for (i = 0; i < nr_ranges; i++)
			if (from >= ranges[i].lo && from < ranges[i].hi)
				ranges[i].n++;
		return;
	}
	/* A MAP record's details: bytes of names and IDs, no addresses. */
	if (BTS_PSEUDO_TYPE(from) == BTS_PSEUDO_DETAIL &&
	    BTS_DETAIL_TYPE(from) == BTS_PSEUDO_MAP) {
		if (cur->pending)
			complain(off, from, to, flags,
				 "a detail without its record");
		cur->pending = false;
		return;
	}
	if (cur->pending && BTS_PSEUDO_TYPE(from) != BTS_PSEUDO_KERNEL &&
	    BTS_PSEUDO_TYPE(from) != BTS_PSEUDO_THREAD)
		complain(off, from, to, flags, "a detail without its record");
	if (BTS_PSEUDO_TYPE(from) != BTS_PSEUDO_THREAD &&
	    BTS_PSEUDO_TYPE(from) != BTS_PSEUDO_KERNEL &&
	    BTS_PSEUDO_TYPE(from) != BTS_PSEUDO_DETAIL)
		cur->pending = false;
	switch (BTS_PSEUDO_TYPE(from)) {
	case BTS_PSEUDO_KERNEL:
		kernel++;
		if (to >= USER_TOP || flags >= USER_TOP)
			complain(off, from, to, flags, "kernel address");
		if (!cur->pending)
			complain(off, from, to, flags, "KERNEL without detail");
		cur->pending = false;
		break;
	case BTS_PSEUDO_DETAIL:
		details++;
		if (cur->pending)
			complain(off, from, to, flags, "two details");
		if (BTS_DETAIL_TYPE(from) != BTS_PSEUDO_KERNEL ||
		    BTS_DETAIL_LAYOUT(from) != BTS_DETAIL_KERNEL_ENTRY ||
		    BTS_DETAIL_VAL(from) > BTS_ABI_I386)
			complain(off, from, to, flags, "detail");
		if (flags < cur->time)
			complain(off, from, to, flags, "time went back");
		cur->time = flags;
		cur->pending = true;
		break;
	case BTS_PSEUDO_LOST:
		lost_records++;
		lost += to;
		break;
	case BTS_PSEUDO_MARKER:
		/* Where the thread wrote it; the id and payload are its own. */
		markers++;
		if (to >= USER_TOP)
			complain(off, from, to, flags, "kernel address");
		break;
	case BTS_PSEUDO_MAP:
		maps++;
		if (to >= USER_TOP || flags > USER_TOP)
			complain(off, from, to, flags, "kernel address");
		else if (BTS_MAP_EVENT(from) != BTS_MAP_MMAP &&
			 BTS_MAP_EVENT(from) != BTS_MAP_MUNMAP && (to || flags))
			complain(off, from, to, flags, "MAP record with a range");
		break;
	case BTS_PSEUDO_THREAD:
		if (to > UINT32_MAX || flags > UINT32_MAX)
			complain(off, from, to, flags, "thread id");
		threads += BTS_PSEUDO_ARG(from) == BTS_THREAD_NEW;
		exits += BTS_PSEUDO_ARG(from) == BTS_THREAD_EXIT;
		cur = &thread[to % THREADS];
		if (cur->tid != to)
			*cur = (struct thread){ .tid = to };
		break;
	default:
		complain(off, from, to, flags, "pseudo-record type");
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: rawcheck [-r LO-HI]... FILE\n");
	return 2;
}

int main(int argc, char **argv)
{
	unsigned char hdr[RAW_HEADER_SIZE], chdr[8], *buf = NULL;
	uint32_t type, len, cap = 0, i;
	uint64_t off;
	size_t n;
	FILE *f;
	int a;

	for (a = 1; a < argc - 1 && !strcmp(argv[a], "-r"); a += 2) {
		if (nr_ranges == MAX_RANGES ||
		    sscanf(argv[a + 1], "%llx-%llx",
			   (unsigned long long *)&ranges[nr_ranges].lo,
			   (unsigned long long *)&ranges[nr_ranges].hi) != 2)
			return usage();
		nr_ranges++;
	}
	if (a != argc - 1)
		return usage();
	f = fopen(argv[a], "r");
	if (!f) {
		perror(argv[a]);
		return 2;
	}
	if (fread(hdr, sizeof(hdr), 1, f) != 1 ||
	    memcmp(hdr, RAW_MAGIC, 8) || get32(hdr + 12) != RAW_HEADER_SIZE) {
		printf("%s: not a raw file of version 1's header size\n", argv[a]);
		return 1;
	}
	for (off = RAW_HEADER_SIZE; (n = fread(chdr, 1, sizeof(chdr), f));
	     off += sizeof(chdr) + len) {
		if (n != sizeof(chdr)) {
			printf("chunk at offset %llu: truncated header\n",
			       (unsigned long long)off);
			return 1;
		}
		type = get32(chdr);
		len = get32(chdr + 4);
		if (len > cap) {
			cap = len;
			buf = realloc(buf, cap);
			if (!buf) {
				perror("realloc");
				return 2;
			}
		}
		if (fread(buf, 1, len, f) != len) {
			printf("chunk at offset %llu: truncated\n",
			       (unsigned long long)off);
			return 1;
		}
		if (type != RAW_RECORDS)
			continue;
		if (len < STREAM_HEADER ||
		    (len - STREAM_HEADER) % RECORD_SIZE) {
			printf("chunk at offset %llu: %u bytes of records\n",
			       (unsigned long long)off, len);
			return 1;
		}
		for (i = STREAM_HEADER; i < len; i += RECORD_SIZE)
			check_record(buf + i, off + sizeof(chdr) + i);
	}
	if (ferror(f)) {
		perror(argv[a]);
		return 2;
	}
	printf("records=%llu branches=%llu kernel=%llu lost_records=%llu lost=%llu threads=%llu exits=%llu markers=%llu details=%llu maps=%llu bad=%llu\n",
	       (unsigned long long)records, (unsigned long long)branches,
	       (unsigned long long)kernel, (unsigned long long)lost_records,
	       (unsigned long long)lost, (unsigned long long)threads,
	       (unsigned long long)exits, (unsigned long long)markers,
	       (unsigned long long)details, (unsigned long long)maps,
	       (unsigned long long)bad);
	for (i = 0; i < (uint32_t)nr_ranges; i++)
		printf("range %llx-%llx %llu\n",
		       (unsigned long long)ranges[i].lo,
		       (unsigned long long)ranges[i].hi,
		       (unsigned long long)ranges[i].n);
	free(buf);
	return bad ? 1 : 0;
}
