// SPDX-License-Identifier: GPL-2.0
/*
 * A ring's reader against its producer on another CPU: every copy that
 * ds_stream_read_last() returns must hold records that were the newest at
 * one instant, each whole, never one whose slot was overwritten under the
 * copy, whatever the size of the producer's batches (ds_ring_put_run()
 * overwrites a run of slots at once); a copy cut short, when the producer
 * kept overwriting it, the same.  Built without ThreadSanitizer: the
 * reader copies slots the producer may be overwriting, by design, and
 * retries (a seqlock's protocol), which it would report as a race; the
 * check here is on what the reader gets.  Prints TAP.
 */
#include <pthread.h>

#include "ds_internal.h"
#include "../../../arch/x86/kernel/ds_core.c"

#define RING_SIZE	64
#define RECORDS		100000000
#define MAX_BATCH	(3 * RING_SIZE)

/* Record @seq: a user branch from @seq to @seq + 1, both ends telling. */
#define SEQ_ADDR(seq)	(0x400000ULL + (seq))

struct ring_race {
	struct ds_stream s;
	struct bts_record buf[RING_SIZE];
	bool done;
};

static void *ring_produce(void *p)
{
	static struct bts_record batch[MAX_BATCH];
	struct ring_race *r = p;
	struct ds_stream *streams[] = { &r->s };
	u64 seq = 0, rnd = 1;

	while (seq < RECORDS) {
		u32 i, n;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		n = 1 + rnd % MAX_BATCH;
		for (i = 0; i < n; i++, seq++)
			batch[i] = (struct bts_record){
				.from	= SEQ_ADDR(seq),
				.to	= SEQ_ADDR(seq) + 1,
			};
		ds_splay(batch, n, streams, 1);
	}
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

int main(void)
{
	static struct ring_race r;
	struct bts_record out[RING_SIZE];
	u64 copies = 0, torn = 0, gaps = 0, full = 0, short_ = 0;
	pthread_t t;
	u32 i, n;
	bool ok;

	ds_stream_init(&r.s, r.buf, RING_SIZE, DS_PRIV_ALL, DS_MODE_RING);
	if (pthread_create(&t, NULL, ring_produce, &r))
		return 2;
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		n = ds_stream_read_last(&r.s, out, RING_SIZE - 1);
		copies++;
		full += n == RING_SIZE - 1;
		/* Once full, the ring stays full: a shorter copy was cut. */
		short_ += full && n < RING_SIZE - 1;
		for (i = 0; i < n; i++) {
			torn += out[i].to != out[i].from + 1 || out[i].flags;
			gaps += i && out[i].from != out[i - 1].from + 1;
		}
	}
	pthread_join(t, NULL);
	printf("# %llu copies, %llu of the last %u records while the ring was full, ",
	       (unsigned long long)copies, (unsigned long long)full,
	       RING_SIZE - 1);
	printf("%llu cut short\n", (unsigned long long)short_);
	/* A run where the two hardly met proves nothing. */
	ok = !torn && !gaps && full >= 10000;
	printf("%sok 1 - ring_reader_vs_batches\n", ok ? "" : "not ");
	if (!ok)
		printf("#   %llu torn records, %llu gaps in copies, %llu full copies\n",
		       (unsigned long long)torn, (unsigned long long)gaps,
		       (unsigned long long)full);
	printf("1..1\n");
	return !ok;
}
