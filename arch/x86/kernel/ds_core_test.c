// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the Debug Store core (ds_core.c).
 *
 * The same file runs in two places: built into the kernel as a KUnit suite
 * (CONFIG_X86_DS_KUNIT_TEST), and in the userspace harness in
 * tools/testing/ds, which provides a small <kunit/test.h> of its own and
 * runs it under ASan and UBSan.  So it uses only the core's API and plain
 * KUnit expectations.
 */
#include <kunit/test.h>
#include "ds_core.h"

/* Addresses in the user and the kernel half of the address space. */
#define U(off)	(0x400000ULL + (off))
#define K(off)	(0xffffffff81200000ULL + (off))

/* Kernel entry points the test classifier knows. */
#define K_SYSCALL	0xffffffff81000000ULL
#define K_PAGE_FAULT	0xffffffff81000100ULL
#define K_TIMER_IRQ	0xffffffff81000200ULL

/* Room for every stream and output of the tests below. */
#define DS_TEST_MAX	64

#define KIND(kind, vector)	((kind) | (vector) << 8)

static u32 ds_test_classify(u64 kernel_to)
{
	switch (kernel_to) {
	case K_SYSCALL:
		return KIND(BTS_ENTRY_SYSCALL, 0);
	case K_PAGE_FAULT:
		return KIND(BTS_ENTRY_EXCEPTION, 14);
	case K_TIMER_IRQ:
		return KIND(BTS_ENTRY_INTERRUPT, 0xec);
	default:
		return BTS_ENTRY_UNKNOWN;
	}
}

#define REC(f, t)	{ .from = (f), .to = (t) }
#define PSEUDO(type, arg, t, fl) \
	{ .from = BTS_PSEUDO(type, arg), .to = (t), .flags = (fl) }

/*
 * A user program: a call, a syscall (the kernel runs and returns behind
 * sysret), a page fault, an interrupt, and a return.
 */
static const struct bts_record ds_test_trace[] = {
	REC(U(0x10), U(0x100)),			/* call */
	REC(U(0x120), K_SYSCALL),		/* syscall */
	REC(K(0x10), K(0x80)),
	REC(K(0x90), U(0x122)),			/* sysret */
	REC(U(0x130), K_PAGE_FAULT),		/* #PF */
	REC(K(0x200), K(0x300)),
	REC(K(0x310), U(0x130)),		/* iret */
	REC(U(0x140), K_TIMER_IRQ),		/* interrupt */
	REC(K(0x400), U(0x140)),		/* iret */
	REC(U(0x150), U(0x14)),			/* ret */
};

/* What each kind of stream makes of it. */
static const struct bts_record ds_test_trace_user[] = {
	REC(U(0x10), U(0x100)),
	PSEUDO(BTS_PSEUDO_KERNEL, KIND(BTS_ENTRY_SYSCALL, 0), U(0x122), U(0x120)),
	PSEUDO(BTS_PSEUDO_KERNEL, KIND(BTS_ENTRY_EXCEPTION, 14), U(0x130), U(0x130)),
	PSEUDO(BTS_PSEUDO_KERNEL, KIND(BTS_ENTRY_INTERRUPT, 0xec), U(0x140), U(0x140)),
	REC(U(0x150), U(0x14)),
};

static const struct bts_record ds_test_trace_kernel[] = {
	/* user time before the first entry: neither end seen */
	PSEUDO(BTS_PSEUDO_USER, 0, K_SYSCALL, 0),
	REC(K(0x10), K(0x80)),
	PSEUDO(BTS_PSEUDO_USER, 0, K_PAGE_FAULT, K(0x90)),
	REC(K(0x200), K(0x300)),
	PSEUDO(BTS_PSEUDO_USER, 0, K_TIMER_IRQ, K(0x310)),
};

/* Check that @got holds exactly @want; report the first difference. */
static void ds_test_expect_records(struct kunit *test, const char *what,
				   const struct bts_record *got, u32 n_got,
				   const struct bts_record *want, u32 n_want)
{
	u32 i;

	for (i = 0; i < min(n_got, n_want); i++) {
		if (got[i].from != want[i].from || got[i].to != want[i].to ||
		    got[i].flags != want[i].flags) {
			KUNIT_FAIL(test,
				   "%s: record %u is {%#llx, %#llx, %#llx}, want {%#llx, %#llx, %#llx}",
				   what, i, got[i].from, got[i].to, got[i].flags,
				   want[i].from, want[i].to, want[i].flags);
			return;
		}
	}
	KUNIT_EXPECT_EQ_MSG(test, n_got, n_want, "%s: number of records", what);
}

/* Room for @n records, freed when the test case ends. */
static struct bts_record *ds_test_records(struct kunit *test, unsigned int n)
{
	struct bts_record *r = kunit_kcalloc(test, n, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	return r;
}

/* Splay @rec into one fresh stream in one batch; return what it holds. */
static u32 ds_test_one_stream(struct kunit *test, enum ds_priv priv,
			      const struct bts_record *rec, unsigned int nr,
			      struct bts_record *out, u32 size)
{
	struct bts_record *buf = ds_test_records(test, size);
	struct ds_stream s, *streams[] = { &s };

	ds_stream_init(&s, buf, size, priv, DS_MODE_CONTINUOUS);
	ds_splay(rec, nr, streams, 1, ds_test_classify);
	return ds_stream_consume(&s, out, size);
}

/* Check what one stream of kind @priv makes of ds_test_trace. */
static void ds_test_expect_trace(struct kunit *test, enum ds_priv priv,
				 const char *what,
				 const struct bts_record *want, u32 n_want)
{
	struct bts_record *out = ds_test_records(test, DS_TEST_MAX);
	u32 n;

	n = ds_test_one_stream(test, priv, ds_test_trace,
			       ARRAY_SIZE(ds_test_trace), out, DS_TEST_MAX);
	ds_test_expect_records(test, what, out, n, want, n_want);
}

static void ds_test_all_keeps_every_record(struct kunit *test)
{
	ds_test_expect_trace(test, DS_PRIV_ALL, "kernel+user", ds_test_trace,
			     ARRAY_SIZE(ds_test_trace));
}

static void ds_test_user_time_in_kernel(struct kunit *test)
{
	ds_test_expect_trace(test, DS_PRIV_USER, "user-only",
			     ds_test_trace_user,
			     ARRAY_SIZE(ds_test_trace_user));
}

static void ds_test_kernel_time_in_user(struct kunit *test)
{
	ds_test_expect_trace(test, DS_PRIV_KERNEL, "kernel-only",
			     ds_test_trace_kernel,
			     ARRAY_SIZE(ds_test_trace_kernel));
}

/*
 * With BTS_OFF_OS the hardware does not record the kernel's returns to user
 * mode; the next user record closes the kernel time, resume address unseen.
 */
static void ds_test_user_return_unseen(struct kunit *test)
{
	static const struct bts_record in[] = {
		REC(U(0x120), K_SYSCALL),
		REC(U(0x130), K_PAGE_FAULT),
		REC(U(0x150), U(0x14)),
	};
	static const struct bts_record want[] = {
		PSEUDO(BTS_PSEUDO_KERNEL, KIND(BTS_ENTRY_SYSCALL, 0), 0, U(0x120)),
		PSEUDO(BTS_PSEUDO_KERNEL, KIND(BTS_ENTRY_EXCEPTION, 14), 0, U(0x130)),
		REC(U(0x150), U(0x14)),
	};
	struct bts_record *out = ds_test_records(test, DS_TEST_MAX);
	u32 n;

	n = ds_test_one_stream(test, DS_PRIV_USER, in, ARRAY_SIZE(in), out,
			       DS_TEST_MAX);
	ds_test_expect_records(test, "user-only, returns unseen", out, n, want,
			       ARRAY_SIZE(want));
}

/*
 * With BTS_OFF_USR the hardware does not record entries into the kernel;
 * the next kernel record closes the user time, re-entry address unseen.
 */
static void ds_test_kernel_entry_unseen(struct kunit *test)
{
	static const struct bts_record in[] = {
		REC(K(0x10), K(0x80)),
		REC(K(0x90), U(0x122)),
		REC(K(0x200), K(0x300)),
		REC(K(0x310), U(0x130)),
	};
	static const struct bts_record want[] = {
		REC(K(0x10), K(0x80)),
		PSEUDO(BTS_PSEUDO_USER, 0, 0, K(0x90)),
		REC(K(0x200), K(0x300)),
	};
	struct bts_record *out = ds_test_records(test, DS_TEST_MAX);
	u32 n;

	n = ds_test_one_stream(test, DS_PRIV_KERNEL, in, ARRAY_SIZE(in), out,
			       DS_TEST_MAX);
	ds_test_expect_records(test, "kernel-only, entries unseen", out, n,
			       want, ARRAY_SIZE(want));
}

/* A trace that starts in the kernel has no entry to report. */
static void ds_test_user_starts_in_kernel(struct kunit *test)
{
	static const struct bts_record in[] = {
		REC(K(0x10), K(0x80)),
		REC(K(0x90), U(0x1000)),
		REC(U(0x1010), U(0x1100)),
	};
	static const struct bts_record want[] = {
		PSEUDO(BTS_PSEUDO_KERNEL, BTS_ENTRY_UNKNOWN, U(0x1000), 0),
		REC(U(0x1010), U(0x1100)),
	};
	struct bts_record *out = ds_test_records(test, DS_TEST_MAX);
	u32 n;

	n = ds_test_one_stream(test, DS_PRIV_USER, in, ARRAY_SIZE(in), out,
			       DS_TEST_MAX);
	ds_test_expect_records(test, "user-only from the kernel", out, n, want,
			       ARRAY_SIZE(want));
}

/* The drain may cut the trace anywhere: batches must not change a stream. */
static void ds_test_batches_split_anywhere(struct kunit *test)
{
	static const enum ds_priv privs[] = {
		DS_PRIV_USER, DS_PRIV_KERNEL, DS_PRIV_ALL
	};
	unsigned int nr = ARRAY_SIZE(ds_test_trace), cut, p;

	for (p = 0; p < ARRAY_SIZE(privs); p++) {
		struct bts_record *whole = ds_test_records(test, DS_TEST_MAX);
		struct bts_record *split = ds_test_records(test, DS_TEST_MAX);
		struct bts_record *buf = ds_test_records(test, DS_TEST_MAX);
		struct ds_stream s, *streams[] = { &s };
		u32 n_whole, n_split;

		n_whole = ds_test_one_stream(test, privs[p], ds_test_trace, nr,
					     whole, DS_TEST_MAX);
		for (cut = 0; cut <= nr; cut++) {
			ds_stream_init(&s, buf, DS_TEST_MAX, privs[p],
				       DS_MODE_CONTINUOUS);
			ds_splay(ds_test_trace, cut, streams, 1,
				 ds_test_classify);
			ds_splay(ds_test_trace + cut, nr - cut, streams, 1,
				 ds_test_classify);
			n_split = ds_stream_consume(&s, split, DS_TEST_MAX);
			ds_test_expect_records(test, "split batch", split,
					       n_split, whole, n_whole);
		}
	}
}

/* Ring mode keeps exactly the newest records. */
static void ds_test_ring_keeps_last_n(struct kunit *test)
{
	struct bts_record *in = ds_test_records(test, 10);
	struct bts_record buf[4], out[10];
	struct ds_stream s, *streams[] = { &s };
	unsigned int i;
	u32 n;

	for (i = 0; i < 10; i++)
		in[i] = (struct bts_record)REC(U(i * 0x10), U(i * 0x10 + 8));

	ds_stream_init(&s, buf, ARRAY_SIZE(buf), DS_PRIV_USER, DS_MODE_RING);
	n = ds_stream_read_last(&s, out, 4);
	KUNIT_EXPECT_EQ_MSG(test, n, 0, "empty ring");

	ds_splay(in, 3, streams, 1, ds_test_classify);
	n = ds_stream_read_last(&s, out, 10);
	ds_test_expect_records(test, "3 records in a ring of 4", out, n, in, 3);

	ds_splay(in + 3, 7, streams, 1, ds_test_classify);
	n = ds_stream_read_last(&s, out, 10);
	ds_test_expect_records(test, "10 records in a ring of 4", out, n,
			       in + 6, 4);
	n = ds_stream_read_last(&s, out, 2);
	ds_test_expect_records(test, "last 2 of 10", out, n, in + 8, 2);
}

/* A continuous stream that overflows says how much it lost, in place. */
static void ds_test_continuous_reports_loss(struct kunit *test)
{
	struct bts_record *in = ds_test_records(test, 11);
	struct bts_record buf[4], out[8];
	struct ds_stream s, *streams[] = { &s };
	struct bts_record want[4];
	unsigned int i;
	u32 n;

	for (i = 0; i < 11; i++)
		in[i] = (struct bts_record)REC(K(i * 0x10), K(i * 0x10 + 8));

	ds_stream_init(&s, buf, ARRAY_SIZE(buf), DS_PRIV_KERNEL,
		       DS_MODE_CONTINUOUS);
	ds_splay(in, 10, streams, 1, ds_test_classify);
	KUNIT_EXPECT_EQ_MSG(test, ds_stream_pending(&s), 4,
			    "a full stream holds its size");
	n = ds_stream_consume(&s, out, 8);
	ds_test_expect_records(test, "the records that fit", out, n, in, 4);

	/* Room again: the loss is reported before the next record. */
	ds_splay(in + 10, 1, streams, 1, ds_test_classify);
	n = ds_stream_consume(&s, out, 8);
	want[0] = (struct bts_record)PSEUDO(BTS_PSEUDO_LOST, 0, 6, 0);
	want[1] = in[10];
	ds_test_expect_records(test, "loss, then the next record", out, n,
			       want, 2);

	/* A loss with nothing after it is reported once there is room. */
	ds_splay(in, 6, streams, 1, ds_test_classify);
	n = ds_stream_consume(&s, out, 8);
	ds_test_expect_records(test, "the next 4 that fit", out, n, in, 4);
	ds_splay(NULL, 0, streams, 1, ds_test_classify);
	n = ds_stream_consume(&s, out, 8);
	want[0] = (struct bts_record)PSEUDO(BTS_PSEUDO_LOST, 0, 2, 0);
	ds_test_expect_records(test, "a trailing loss", out, n, want, 1);

	/*
	 * One free slot and a loss pending: the loss record takes the slot
	 * and the new record is lost too, never overwriting unread ones.
	 */
	ds_splay(in, 5, streams, 1, ds_test_classify);
	n = ds_stream_consume(&s, out, 1);
	ds_splay(in + 5, 1, streams, 1, ds_test_classify);
	KUNIT_EXPECT_EQ_MSG(test, ds_stream_pending(&s), 4,
			    "never more records than slots");
	n = ds_stream_consume(&s, out, 8);
	want[0] = in[1];
	want[1] = in[2];
	want[2] = in[3];
	want[3] = (struct bts_record)PSEUDO(BTS_PSEUDO_LOST, 0, 2, 0);
	ds_test_expect_records(test, "a loss in the last slot", out, n, want,
			       4);
}

/* A consumer that keeps up loses nothing, through many wraps. */
static void ds_test_continuous_keeps_everything(struct kunit *test)
{
	struct bts_record in[3], buf[4], out[4];
	struct ds_stream s, *streams[] = { &s };
	unsigned int round, i, seen = 0;
	bool in_order = true;
	u32 n;

	ds_stream_init(&s, buf, ARRAY_SIZE(buf), DS_PRIV_ALL,
		       DS_MODE_CONTINUOUS);
	for (round = 0; round < 100; round++) {
		for (i = 0; i < ARRAY_SIZE(in); i++)
			in[i] = (struct bts_record)REC(U(round * 3 + i), U(0));
		ds_splay(in, ARRAY_SIZE(in), streams, 1, ds_test_classify);
		n = ds_stream_consume(&s, out, ARRAY_SIZE(out));
		for (i = 0; i < n; i++, seen++)
			in_order &= out[i].from == U(seen);
	}
	KUNIT_EXPECT_EQ(test, seen, 300);
	KUNIT_EXPECT_TRUE_MSG(test, in_order, "records out of order or lost");
}

/* Streams of every kind on one batch do not affect each other. */
static void ds_test_streams_independent(struct kunit *test)
{
	static const enum ds_priv privs[] = {
		DS_PRIV_USER, DS_PRIV_KERNEL, DS_PRIV_ALL, DS_PRIV_USER,
		DS_PRIV_KERNEL
	};
	struct bts_record *out = ds_test_records(test, DS_TEST_MAX);
	struct bts_record *alone = ds_test_records(test, DS_TEST_MAX);
	struct ds_stream s[ARRAY_SIZE(privs)];
	struct ds_stream *streams[ARRAY_SIZE(privs)];
	unsigned int i;
	u32 n, n_alone;

	for (i = 0; i < ARRAY_SIZE(privs); i++) {
		ds_stream_init(&s[i], ds_test_records(test, DS_TEST_MAX),
			       DS_TEST_MAX, privs[i],
			       i < 3 ? DS_MODE_CONTINUOUS : DS_MODE_RING);
		streams[i] = &s[i];
	}
	ds_splay(ds_test_trace, ARRAY_SIZE(ds_test_trace), streams,
		 ARRAY_SIZE(streams), ds_test_classify);
	for (i = 0; i < ARRAY_SIZE(privs); i++) {
		n_alone = ds_test_one_stream(test, privs[i], ds_test_trace,
					     ARRAY_SIZE(ds_test_trace), alone,
					     DS_TEST_MAX);
		if (s[i].mode == DS_MODE_CONTINUOUS)
			n = ds_stream_consume(&s[i], out, DS_TEST_MAX);
		else
			n = ds_stream_read_last(&s[i], out, DS_TEST_MAX);
		ds_test_expect_records(test, "one of five streams", out, n,
				       alone, n_alone);
	}
}

/*
 * Whatever the hardware writes, a user-only stream holds no kernel address
 * and a kernel-only stream no user address: random traces, tiny streams.
 */
static void ds_test_no_address_leaks(struct kunit *test)
{
	static const u64 addrs[] = {
		U(0x10), U(0x2000), K(0x10), K(0x800), K_SYSCALL, K_PAGE_FAULT,
		K_TIMER_IRQ,
	};
	struct bts_record *in = ds_test_records(test, 32);
	struct bts_record buf[5], out[5];
	struct ds_stream user, kernel, *streams[] = { &user, &kernel };
	u64 rnd = 0x2545f4914f6cdd1dULL;
	unsigned int round, i;
	u32 n, leaks = 0, pseudo = 0;

	ds_stream_init(&user, buf, 3, DS_PRIV_USER, DS_MODE_CONTINUOUS);
	ds_stream_init(&kernel, buf + 3, 2, DS_PRIV_KERNEL,
		       DS_MODE_CONTINUOUS);
	for (round = 0; round < 2000; round++) {
		for (i = 0; i < 32; i++) {
			/* xorshift64 */
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			in[i] = (struct bts_record)REC(addrs[rnd % 7],
						       addrs[(rnd >> 8) % 7]);
		}
		ds_splay(in, rnd % 32, streams, 2,
			 ds_test_classify);
		n = ds_stream_consume(&user, out, 3);
		for (i = 0; i < n; i++) {
			pseudo += BTS_RECORD_IS_PSEUDO(out[i].from);
			if (!BTS_RECORD_IS_PSEUDO(out[i].from))
				leaks += (s64)out[i].from < 0;
			leaks += (s64)out[i].to < 0;
			if (BTS_PSEUDO_TYPE(out[i].from) == BTS_PSEUDO_KERNEL)
				leaks += (s64)out[i].flags < 0;
		}
		n = ds_stream_consume(&kernel, out, 2);
		for (i = 0; i < n; i++) {
			if (BTS_RECORD_IS_PSEUDO(out[i].from)) {
				if (BTS_PSEUDO_TYPE(out[i].from) ==
				    BTS_PSEUDO_LOST)
					continue;
			} else {
				leaks += out[i].from && (s64)out[i].from >= 0;
			}
			leaks += out[i].to && (s64)out[i].to >= 0;
		}
	}
	KUNIT_EXPECT_EQ_MSG(test, leaks, 0,
			    "addresses of the other privilege level leaked");
	KUNIT_EXPECT_GT_MSG(test, pseudo, 100,
			    "the random traces should cross over often");
}

static struct kunit_case ds_core_test_cases[] = {
	KUNIT_CASE(ds_test_all_keeps_every_record),
	KUNIT_CASE(ds_test_user_time_in_kernel),
	KUNIT_CASE(ds_test_kernel_time_in_user),
	KUNIT_CASE(ds_test_user_return_unseen),
	KUNIT_CASE(ds_test_kernel_entry_unseen),
	KUNIT_CASE(ds_test_user_starts_in_kernel),
	KUNIT_CASE(ds_test_batches_split_anywhere),
	KUNIT_CASE(ds_test_ring_keeps_last_n),
	KUNIT_CASE(ds_test_continuous_reports_loss),
	KUNIT_CASE(ds_test_continuous_keeps_everything),
	KUNIT_CASE(ds_test_streams_independent),
	KUNIT_CASE(ds_test_no_address_leaks),
	{}
};

static struct kunit_suite ds_core_test_suite = {
	.name = "x86_ds_core",
	.test_cases = ds_core_test_cases,
};

kunit_test_suite(ds_core_test_suite);

MODULE_DESCRIPTION("KUnit tests of the x86 Debug Store core");
MODULE_LICENSE("GPL");
