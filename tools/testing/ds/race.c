// SPDX-License-Identifier: GPL-2.0
/*
 * The Debug Store core's lockless protocols under real concurrency: two
 * threads run what the kernel runs on two CPUs, many times, built with
 * ThreadSanitizer, which reports any access pair the protocol leaves
 * unordered.  Each case also checks the records that come out: a loss
 * counted twice or a record written by two writers shows there as well.
 * Prints TAP; a ThreadSanitizer report fails the run (exit status 66).
 */
#include <pthread.h>

#include "ds_internal.h"
#include "../../../arch/x86/kernel/ds_core.c"

#define U(x)		(0x400000ULL + (x))
#define KERNEL_ENTRY	0xffffffff81000000ULL

static int tests, failures;

static void result(bool ok, const char *name, const char *why)
{
	tests++;
	failures += !ok;
	printf("%sok %d - %s\n", ok ? "" : "not ", tests, name);
	if (!ok)
		printf("#   %s\n", why);
}

/*
 * The accounting of a continuous stream's losses: the loss records it
 * holds and the loss it still owes add up to every record ever dropped,
 * and it holds no more records than were written.  @recs are everything
 * consumed from the stream, @n of them.
 */
static bool losses_add_up(const struct ds_stream *s,
			  const struct bts_record *recs, u32 n)
{
	u64 reported = 0;
	u32 i;

	for (i = 0; i < n; i++)
		if (recs[i].from == BTS_PSEUDO(BTS_PSEUDO_LOST, 0))
			reported += recs[i].to;
	return reported + s->lost == s->lost_total && n <= s->head;
}

/*
 * Exit against suspension: the exiting task closes the stream (its end
 * record) while the consumer, suspending, takes over the stream to write
 * the loss record it owes (BTS_IOC_DETACH of a thread that is exiting).
 */
struct close_race {
	struct ds_stream s;
	struct bts_record buf[4];
	struct bts_record out[16];
	u32 got;
	/* The round the consumer may start, the last one it finished. */
	int go, finished;
	/* Whose the stream was right after the consumer's suspension. */
	u8 seen;
};

#define CLOSE_ROUNDS	4000

/*
 * The consumer, in a thread of its own: each round it takes two records,
 * suspends the stream and flushes the loss it owes, and notes whose the
 * stream was right after it suspended.
 */
static void *close_race_suspend(void *p)
{
	struct close_race *r = p;
	int round;

	for (round = 1; round <= CLOSE_ROUNDS; round++) {
		while (__atomic_load_n(&r->go, __ATOMIC_ACQUIRE) != round)
			;
		r->got = ds_stream_consume(&r->s, r->out, 2);
		ds_stream_suspend(&r->s);
		r->seen = __atomic_load_n(&r->s.writer, __ATOMIC_RELAXED);
		ds_stream_flush_lost(&r->s);
		__atomic_store_n(&r->finished, round, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* A full stream, owing a loss, its task in the kernel. */
static void close_race_setup(struct close_race *r)
{
	static const struct bts_record in[] = {
		{ U(0x10), U(0x20), 0 }, { U(0x30), U(0x40), 0 },
		{ U(0x50), U(0x60), 0 }, { U(0x70), U(0x80), 0 },
		{ U(0x90), U(0xa0), 0 }, { U(0xb0), KERNEL_ENTRY, 0 },
	};
	struct ds_stream *streams[] = { &r->s };

	memset(&r->s, 0, sizeof(r->s));
	memset(r->out, 0, sizeof(r->out));
	r->got = 0;
	ds_stream_init(&r->s, r->buf, ARRAY_SIZE(r->buf), DS_PRIV_USER,
		       DS_MODE_CONTINUOUS);
	ds_splay(in, ARRAY_SIZE(in), streams, 1);
}

/*
 * The exiting task is this thread: each round it starts the consumer and
 * closes the stream 0 to 4032 spins later, so the rounds sweep the close
 * across the suspension.  The window must be reached from both sides:
 * rounds where the consumer took the stream over first (it saw the
 * stream its own after suspending) and rounds where the exit closed it
 * first; how many met the close in progress is shown too.
 */
static void test_close_vs_suspend(void)
{
	struct close_race *r = calloc(1, sizeof(*r));
	unsigned int seen[DS_WRITER_CLOSED + 1] = { 0 };
	bool ok = true;
	pthread_t consumer;
	int round;

	pthread_create(&consumer, NULL, close_race_suspend, r);
	for (round = 1; round <= CLOSE_ROUNDS; round++) {
		int spin = round % 64 * 64;

		close_race_setup(r);
		__atomic_store_n(&r->go, round, __ATOMIC_RELEASE);
		/* A delay that varies by round: the close lands all over. */
		while (spin--)
			__asm__ __volatile__("" ::: "memory");
		ds_stream_close(&r->s);
		while (__atomic_load_n(&r->finished, __ATOMIC_ACQUIRE) != round)
			;
		r->got += ds_stream_consume(&r->s, r->out + r->got,
					    ARRAY_SIZE(r->out) - r->got);
		ok &= losses_add_up(&r->s, r->out, r->got) &&
		      r->s.writer == DS_WRITER_CLOSED;
		if (r->seen < ARRAY_SIZE(seen))
			seen[r->seen]++;
	}
	pthread_join(consumer, NULL);
	result(ok && seen[DS_WRITER_CONSUMER] && seen[DS_WRITER_CLOSED],
	       "close_vs_suspend", !ok ?
	       "the loss records do not add up to the records dropped" :
	       "one side won every round: the window was not reached");
	printf("# close_vs_suspend: the suspension first in %u rounds, ",
	       seen[DS_WRITER_CONSUMER]);
	printf("the exit in %u, during the close in %u\n", seen[DS_WRITER_CLOSED],
	       seen[DS_WRITER_CLOSING]);
	free(r);
}

/*
 * The checker catches a loss reported twice (two writers that both found
 * the same loss owed).
 */
static void test_checker_catches_double_loss(void)
{
	struct close_race *r = calloc(1, sizeof(*r));

	close_race_setup(r);
	r->got = ds_stream_consume(&r->s, r->out, 2);
	ds_stream_suspend(&r->s);
	ds_stream_flush_lost(&r->s);
	r->got += ds_stream_consume(&r->s, r->out + r->got, 8);
	r->out[r->got] = r->out[r->got - 1];	/* the planted duplicate */
	result(r->out[r->got].from == BTS_PSEUDO(BTS_PSEUDO_LOST, 0) &&
	       losses_add_up(&r->s, r->out, r->got) &&
	       !losses_add_up(&r->s, r->out, r->got + 1),
	       "checker_catches_double_loss",
	       "a loss record reported twice went unnoticed");
	free(r);
}

/*
 * A producer splaying into a continuous stream while its consumer reads:
 * every record arrives once, in order, or is reported lost.
 */
#define FLOW_RECORDS	(FLOW_BATCH * 30000)
#define FLOW_BATCH	7

struct flow {
	struct ds_stream s;
	struct bts_record buf[64];
	bool done;
};

static void *flow_produce(void *p)
{
	struct flow *f = p;
	struct ds_stream *streams[] = { &f->s };
	struct bts_record batch[FLOW_BATCH];
	u64 seq = 0;
	int i;

	while (seq < FLOW_RECORDS) {
		for (i = 0; i < FLOW_BATCH; i++, seq++)
			batch[i] = (struct bts_record){ U(seq * 16),
							U(seq * 16 + 8), 0 };
		ds_splay(batch, FLOW_BATCH, streams, 1);
	}
	/* The task exits: the consumer writes the loss it still owes. */
	ds_stream_close(&f->s);
	__atomic_store_n(&f->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void test_producer_vs_consumer(void)
{
	struct flow *f = calloc(1, sizeof(*f));
	const struct bts_record *runs[2], *r;
	u64 next = U(0), delivered = 0, reported = 0, live_reads = 0;
	bool in_order = true, done;
	pthread_t prod;
	u32 i, k, n, nrs[2];

	ds_stream_init(&f->s, f->buf, ARRAY_SIZE(f->buf), DS_PRIV_USER,
		       DS_MODE_CONTINUOUS);
	pthread_create(&prod, NULL, flow_produce, f);
	do {
		done = __atomic_load_n(&f->done, __ATOMIC_ACQUIRE);
		if (done)
			ds_stream_flush_lost(&f->s);
		/* Read in place, while the producer writes past them. */
		n = ds_stream_peek(&f->s, runs, nrs, 16);
		live_reads += n && !done;
		for (k = 0; k < 2; k++) {
			for (i = 0; i < nrs[k]; i++) {
				r = &runs[k][i];
				if (r->from == BTS_PSEUDO(BTS_PSEUDO_LOST, 0)) {
					reported += r->to;
					next = U(0) + 16 * (delivered + reported);
					continue;
				}
				in_order &= r->from == next;
				next = r->from + 16;
				delivered++;
			}
		}
		ds_stream_discard(&f->s, n);
	} while (!done || n);
	pthread_join(prod, NULL);
	/* The window: reads that found records while the producer wrote. */
	result(in_order && delivered + reported == FLOW_RECORDS &&
	       reported == f->s.lost_total && !f->s.lost && live_reads,
	       "producer_vs_consumer", live_reads ?
	       "records were duplicated, reordered or lost unreported" :
	       "no read found records while the producer wrote");
	printf("# %llu delivered, %llu reported lost, %llu reads while the producer wrote\n",
	       (unsigned long long)delivered, (unsigned long long)reported,
	       (unsigned long long)live_reads);
	free(f);
}

int main(void)
{
	test_checker_catches_double_loss();
	test_close_vs_suspend();
	test_producer_vs_consumer();
	printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
