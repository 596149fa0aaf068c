// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of filtering and splaying branch records, for bench/ds-splay:
 *
 *   ds_bench splay N [user]   splay a synthetic trace into N streams (1..5)
 *   ds_bench memcpy N [user]  copy the same records N times, the baseline
 *
 * "user": the trace as the hardware writes it with only user-only
 * consumers on the CPU (BTS_OFF_OS); otherwise with both privileges.
 *
 * Both work in batches of BATCH records, as a drain of one hardware
 * sub-buffer would, and consume continuous streams between batches.  Run
 * under callgrind with --toggle-collect=ds_splay or =bench_copy to count
 * the instructions of the work alone.
 */
#include <string.h>
#include "ds_internal.h"
#include "../../../arch/x86/kernel/ds_core.c"

#define NR_RECORDS	1048576
#define BATCH		256
#define STREAM_SIZE	4096

/*
 * A user program's trace: mostly user branches, a syscall every 64
 * records with a few kernel branches behind it, an interrupt every 1000,
 * and before each return to user mode the KERNEL record ds.c stages,
 * after its detail.
 * With @user_only, what the hardware writes of it with BTS_OFF_OS (all
 * consumers user-only), under the target-CPL semantics: the user branches
 * and the returns to user mode.
 */
static void make_trace(struct bts_record *rec, unsigned int nr,
		       bool user_only)
{
	u64 user = 0x400000, kernel = 0xffffffff81000000ULL;
	unsigned int i, n = 0;

	for (i = 0; n < nr; i++) {
		unsigned int k = i % 64;
		u64 from, to;

		if (k == 60 || i % 1000 == 999) {
			from = user + i % 4096;		/* syscall, interrupt */
			to = kernel;
		} else if (k > 60 || i % 1000 == 0) {
			from = kernel + k;		/* in the kernel */
			to = k == 63 ? user + i % 4096 + 2 : kernel + k * 16;
		} else {
			from = user + i % 4096;
			to = user + (i * 7) % 4096;
		}
		if (user_only && (s64)from < 0 && (s64)to < 0)
			continue;
		if (user_only && (s64)from >= 0 && (s64)to < 0)
			continue;
		if ((s64)from < 0 && (s64)to >= 0 && n + 2 < nr) {
			/* staged: the detail and KERNEL; then sysret */
			rec[n++] = (struct bts_record){
				.from = BTS_PSEUDO(BTS_PSEUDO_DETAIL,
						   BTS_DETAIL_ARG(BTS_PSEUDO_KERNEL,
								  BTS_DETAIL_KERNEL_ENTRY,
								  BTS_ABI_X86_64)),
				.to = 39, .flags = i,
			};
			rec[n++] = (struct bts_record){
				.from = BTS_PSEUDO(BTS_PSEUDO_KERNEL,
						   BTS_ENTRY_SYSCALL),
				.to = to, .flags = to - 2,
			};
		}
		if (n < nr)
			rec[n++] = (struct bts_record){ .from = from, .to = to };
	}
}

/* Kept out of line so that callgrind can count it alone. */
static noinline void bench_copy(struct bts_record *dst,
				const struct bts_record *src, unsigned int nr)
{
	memcpy(dst, src, nr * sizeof(*src));
}

int main(int argc, char **argv)
{
	static const enum ds_priv privs[] = {
		DS_PRIV_USER, DS_PRIV_KERNEL, DS_PRIV_ALL, DS_PRIV_USER,
		DS_PRIV_ALL
	};
	static struct bts_record bufs[5][STREAM_SIZE], out[STREAM_SIZE];
	struct ds_stream s[5], *streams[5];
	struct bts_record *trace;
	unsigned int n, i, j;
	u64 kept = 0;

	if (argc < 3 || argc > 4 ||
	    (strcmp(argv[1], "splay") && strcmp(argv[1], "memcpy")) ||
	    (argc == 4 && strcmp(argv[3], "user"))) {
		fprintf(stderr, "usage: ds_bench splay|memcpy N [user]\n");
		return 2;
	}
	n = atoi(argv[2]);
	if (n < 1 || n > 5) {
		fprintf(stderr, "ds_bench: N must be 1..5\n");
		return 2;
	}
	trace = malloc(NR_RECORDS * sizeof(*trace));
	if (!trace)
		return 1;
	make_trace(trace, NR_RECORDS, argc == 4);

	for (i = 0; i < n; i++) {
		/* The fourth and fifth are rings, as flight recorders are. */
		ds_stream_init(&s[i], bufs[i], STREAM_SIZE, privs[i],
			       i < 3 ? DS_MODE_CONTINUOUS : DS_MODE_RING);
		streams[i] = &s[i];
	}
	for (i = 0; i < NR_RECORDS; i += BATCH) {
		if (!strcmp(argv[1], "memcpy")) {
			for (j = 0; j < n; j++)
				bench_copy(bufs[j] + i % STREAM_SIZE, trace + i,
					   BATCH);
			kept += n * BATCH;
			continue;
		}
		ds_splay(trace + i, BATCH, streams, n);
		for (j = 0; j < n; j++)
			if (s[j].mode == DS_MODE_CONTINUOUS)
				kept += ds_stream_consume(&s[j], out,
							  STREAM_SIZE);
	}
	printf("records %d streams %u kept %llu\n", NR_RECORDS, n,
	       (unsigned long long)kept);
	free(trace);
	return 0;
}
