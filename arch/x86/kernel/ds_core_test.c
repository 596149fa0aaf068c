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

/* Kernel entry points. */
#define K_SYSCALL	0xffffffff81000000ULL
#define K_PAGE_FAULT	0xffffffff81000100ULL
#define K_TIMER_IRQ	0xffffffff81000200ULL

/* Room for every stream and output of the tests below. */
#define DS_TEST_MAX	64

#define KIND(kind, vector)	((kind) | (vector) << 8)

#define REC(f, t)	{ .from = (f), .to = (t) }
#define PSEUDO(type, arg, t, fl) \
	{ .from = BTS_PSEUDO(type, arg), .to = (t), .flags = (fl) }

/*
 * A user program: a call, a syscall (the kernel runs and returns behind
 * sysret), a page fault, an interrupt, and a return.  Before each return to
 * user mode, the KERNEL record ds.c stages from what the entry and exit
 * code saw.
 */
#define STAGED(kind, vector, resume, entered) \
	PSEUDO(BTS_PSEUDO_KERNEL, KIND(kind, vector), resume, entered)
/* ...and before it, its detail: ABI, orig_ax and time. */
#define DETAIL(abi, ax, ns)						\
	PSEUDO(BTS_PSEUDO_DETAIL,					\
	       BTS_DETAIL_ARG(BTS_PSEUDO_KERNEL, BTS_DETAIL_KERNEL_ENTRY, \
			      abi), ax, ns)

static const struct bts_record ds_test_trace[] = {
	REC(U(0x10), U(0x100)),			/* call */
	REC(U(0x120), K_SYSCALL),		/* syscall */
	REC(K(0x10), K(0x80)),
	DETAIL(BTS_ABI_X86_64, 39, 1000),
	STAGED(BTS_ENTRY_SYSCALL, 0, U(0x122), U(0x120)),
	REC(K(0x90), U(0x122)),			/* sysret */
	REC(U(0x130), K_PAGE_FAULT),		/* #PF */
	REC(K(0x200), K(0x300)),
	DETAIL(BTS_ABI_NONE, 6, 2000),
	STAGED(BTS_ENTRY_EXCEPTION, 14, U(0x130), U(0x130)),
	REC(K(0x310), U(0x130)),		/* iret */
	REC(U(0x140), K_TIMER_IRQ),		/* interrupt */
	DETAIL(BTS_ABI_NONE, ~0ULL, 3000),
	STAGED(BTS_ENTRY_INTERRUPT, 0xec, U(0x140), U(0x140)),
	REC(K(0x400), U(0x140)),		/* iret */
	REC(U(0x150), U(0x14)),			/* ret */
};

/* What each kind of stream makes of it. */
static const struct bts_record ds_test_trace_user[] = {
	REC(U(0x10), U(0x100)),
	DETAIL(BTS_ABI_X86_64, 39, 1000),
	STAGED(BTS_ENTRY_SYSCALL, 0, U(0x122), U(0x120)),
	DETAIL(BTS_ABI_NONE, 6, 2000),
	STAGED(BTS_ENTRY_EXCEPTION, 14, U(0x130), U(0x130)),
	DETAIL(BTS_ABI_NONE, ~0ULL, 3000),
	STAGED(BTS_ENTRY_INTERRUPT, 0xec, U(0x140), U(0x140)),
	REC(U(0x150), U(0x14)),
};

/* The hardware's records, as it wrote them. */
static const struct bts_record ds_test_trace_all[] = {
	REC(U(0x10), U(0x100)),
	REC(U(0x120), K_SYSCALL),
	REC(K(0x10), K(0x80)),
	REC(K(0x90), U(0x122)),
	REC(U(0x130), K_PAGE_FAULT),
	REC(K(0x200), K(0x300)),
	REC(K(0x310), U(0x130)),
	REC(U(0x140), K_TIMER_IRQ),
	REC(K(0x400), U(0x140)),
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
	ds_splay(rec, nr, streams, 1);
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

static void ds_test_all_keeps_every_branch(struct kunit *test)
{
	ds_test_expect_trace(test, DS_PRIV_ALL, "kernel+user",
			     ds_test_trace_all, ARRAY_SIZE(ds_test_trace_all));
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
 * What the hardware writes of a crossing depends on the CPU: under
 * BTS_OFF_OS the entry, the return, both or neither, by which CPL the
 * filter tests.  A user-only stream is the same whichever: its KERNEL
 * records are the staged ones.
 */
static void ds_test_user_crossings_staged(struct kunit *test)
{
	static const struct bts_record entry = REC(U(0x120), K_SYSCALL);
	static const struct bts_record staged[] = {
		DETAIL(BTS_ABI_I386, 1, 10),
		STAGED(BTS_ENTRY_SYSCALL, 0, U(0x122), U(0x120)),
	};
	static const struct bts_record ret = REC(K(0x90), U(0x122));
	static const struct bts_record user = REC(U(0x150), U(0x14));
	static const struct bts_record want[] = {
		DETAIL(BTS_ABI_I386, 1, 10),
		STAGED(BTS_ENTRY_SYSCALL, 0, U(0x122), U(0x120)),
		REC(U(0x150), U(0x14)),
	};
	struct bts_record *out = ds_test_records(test, DS_TEST_MAX);
	struct bts_record in[5];
	unsigned int shape, nr;
	char what[48];
	u32 n;

	for (shape = 0; shape < 4; shape++) {
		nr = 0;
		if (shape & 1)
			in[nr++] = entry;
		in[nr++] = staged[0];
		in[nr++] = staged[1];
		if (shape & 2)
			in[nr++] = ret;
		in[nr++] = user;
		n = ds_test_one_stream(test, DS_PRIV_USER, in, nr, out,
				       DS_TEST_MAX);
		snprintf(what, sizeof(what), "entry %d, return %d", shape & 1,
			 !!(shape & 2));
		ds_test_expect_records(test, what, out, n, want,
				       ARRAY_SIZE(want));
	}
}

/*
 * A staged KERNEL record's ends come from registers user mode may have set
 * (a sigreturn frame can point anywhere): a kernel-half address in them
 * reaches a user-only stream as 0, "not seen".  Its detail holds numbers,
 * which reach it as they are, ~0 too.
 */
static void ds_test_user_staged_kernel_ends(struct kunit *test)
{
	static const struct bts_record in[] = {
		DETAIL(BTS_ABI_NONE, ~0ULL, 1),
		STAGED(BTS_ENTRY_EXCEPTION, 14, K(0x10), U(0x130)),
		DETAIL(BTS_ABI_X32, 0x40000000ULL | 39, ~0ULL),
		STAGED(BTS_ENTRY_SYSCALL, 0, U(0x122), K_SYSCALL),
	};
	static const struct bts_record want[] = {
		DETAIL(BTS_ABI_NONE, ~0ULL, 1),
		STAGED(BTS_ENTRY_EXCEPTION, 14, 0, U(0x130)),
		DETAIL(BTS_ABI_X32, 0x40000000ULL | 39, ~0ULL),
		STAGED(BTS_ENTRY_SYSCALL, 0, U(0x122), 0),
	};
	struct bts_record *out = ds_test_records(test, DS_TEST_MAX);
	u32 n;

	n = ds_test_one_stream(test, DS_PRIV_USER, in, ARRAY_SIZE(in), out,
			       DS_TEST_MAX);
	ds_test_expect_records(test, "kernel ends of staged records", out, n,
			       want, ARRAY_SIZE(want));
}

/*
 * A kernel-only stream whose task exits while the trace is in user mode
 * still reports that stretch at its end, with where it began.
 */
static void ds_test_kernel_ends_in_user(struct kunit *test)
{
	static const struct bts_record in[] = {
		REC(K(0x100), K(0x110)),
		REC(K(0x130), U(0x200)),
		REC(U(0x210), U(0x220)),
	};
	static const struct bts_record want[] = {
		REC(K(0x100), K(0x110)),
		PSEUDO(BTS_PSEUDO_USER, 0, 0, K(0x130)),
	};
	struct bts_record *buf = ds_test_records(test, DS_TEST_MAX);
	struct bts_record *out = ds_test_records(test, DS_TEST_MAX);
	struct ds_stream s, *streams[] = { &s };
	u32 n;

	ds_stream_init(&s, buf, DS_TEST_MAX, DS_PRIV_KERNEL,
		       DS_MODE_CONTINUOUS);
	ds_splay(in, ARRAY_SIZE(in), streams, 1);
	KUNIT_EXPECT_EQ_MSG(test, ds_stream_pending(&s), 1,
			    "the user time is held until the return");
	KUNIT_EXPECT_TRUE_MSG(test, !ds_stream_closed(&s), "closed early");
	ds_stream_close(&s);
	KUNIT_EXPECT_TRUE_MSG(test, ds_stream_closed(&s), "not closed");
	ds_stream_close(&s);
	n = ds_stream_consume(&s, out, DS_TEST_MAX);
	ds_test_expect_records(test, "kernel-only, ends in user mode", out, n,
			       want, ARRAY_SIZE(want));
}

/*
 * Whose a stream is to write: its producer's from the start and again once
 * resumed; the consumer's while suspended and for good once closed, when
 * the producer must leave it alone (ds_name_stream()).
 */
static void ds_test_stream_producing(struct kunit *test)
{
	struct bts_record *buf = ds_test_records(test, DS_TEST_MAX);
	struct ds_stream s;

	ds_stream_init(&s, buf, DS_TEST_MAX, DS_PRIV_USER, DS_MODE_CONTINUOUS);
	KUNIT_EXPECT_TRUE_MSG(test, ds_stream_producing(&s), "new");
	ds_stream_suspend(&s);
	KUNIT_EXPECT_TRUE_MSG(test, !ds_stream_producing(&s), "suspended");
	ds_stream_resume(&s);
	KUNIT_EXPECT_TRUE_MSG(test, ds_stream_producing(&s), "resumed");
	ds_stream_close(&s);
	KUNIT_EXPECT_TRUE_MSG(test, !ds_stream_producing(&s), "closed");
	ds_stream_resume(&s);
	KUNIT_EXPECT_TRUE_MSG(test, !ds_stream_producing(&s),
			      "closed, then resumed");
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
			ds_splay(ds_test_trace, cut, streams, 1);
			ds_splay(ds_test_trace + cut, nr - cut, streams, 1);
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
	struct bts_record buf[5], out[10];	/* a ring of 4 records */
	struct ds_stream s, *streams[] = { &s };
	unsigned int i;
	u32 n;

	for (i = 0; i < 10; i++)
		in[i] = (struct bts_record)REC(U(i * 0x10), U(i * 0x10 + 8));

	ds_stream_init(&s, buf, ARRAY_SIZE(buf), DS_PRIV_USER, DS_MODE_RING);
	n = ds_stream_read_last(&s, out, 4);
	KUNIT_EXPECT_EQ_MSG(test, n, 0, "empty ring");

	ds_splay(in, 3, streams, 1);
	n = ds_stream_read_last(&s, out, 10);
	ds_test_expect_records(test, "3 records in a ring of 4", out, n, in, 3);

	ds_splay(in + 3, 7, streams, 1);
	n = ds_stream_read_last(&s, out, 10);
	ds_test_expect_records(test, "10 records in a ring of 4", out, n,
			       in + 6, 4);
	n = ds_stream_read_last(&s, out, 2);
	ds_test_expect_records(test, "last 2 of 10", out, n, in + 8, 2);
}

/*
 * A ring whose producer stopped in the middle of a run (an oops on its
 * CPU): the crash-time copy leaves out the slots the run claimed, and
 * returns the newest whole records before them; one stopped between runs
 * loses nothing but the slot being written.
 */
static void ds_test_ring_read_stopped(struct kunit *test)
{
	struct bts_record *buf = ds_test_records(test, 8);
	struct bts_record *in = ds_test_records(test, 20);
	struct bts_record out[8];
	struct ds_stream s, *streams[] = { &s };
	u32 i, n;

	for (i = 0; i < 20; i++)
		in[i] = (struct bts_record)REC(U(i), U(i + 1));
	ds_stream_init(&s, buf, 8, DS_PRIV_USER, DS_MODE_RING);
	ds_splay(in, 20, streams, 1);

	n = ds_stream_read_last_stopped(&s, out, 8);
	KUNIT_EXPECT_EQ_MSG(test, n, 7, "a ring of 8 slots shows 7 records");
	ds_test_expect_records(test, "stopped between runs", out, n,
			       in + 13, 7);

	/* A run of 3 claimed, as ds_ring_put_run() does before it copies. */
	s.claim = s.head + 3;
	n = ds_stream_read_last_stopped(&s, out, 8);
	ds_test_expect_records(test, "stopped in a run of 3", out, n,
			       in + 15, 5);
	n = ds_stream_read_last_stopped(&s, out, 2);
	ds_test_expect_records(test, "the newest 2 only", out, n, in + 18, 2);
	s.claim = s.head + 8;
	KUNIT_EXPECT_EQ_MSG(test, ds_stream_read_last_stopped(&s, out, 8), 0,
			    "a run over the whole ring leaves nothing whole");
}

/* ds_stream_peek() into @out: its runs, one after the other. */
static u32 ds_test_peek(struct kunit *test, struct ds_stream *s,
			struct bts_record *out, u32 n)
{
	const struct bts_record *runs[2];
	u32 nrs[2], got;

	got = ds_stream_peek(s, runs, nrs, n);
	KUNIT_EXPECT_EQ_MSG(test, nrs[0] + nrs[1], got, "runs of a peek");
	KUNIT_EXPECT_TRUE_MSG(test, runs[0] >= s->buf &&
			      runs[0] + nrs[0] <= s->buf + s->size &&
			      (!nrs[1] || runs[1] == s->buf),
			      "a peek's runs lie in the stream's storage");
	memcpy(out, runs[0], nrs[0] * sizeof(*out));
	memcpy(out + nrs[0], runs[1], nrs[1] * sizeof(*out));
	return got;
}

/*
 * Records shown by ds_stream_peek() stay in the stream, where they are,
 * and keep their slots from the producer, until ds_stream_discard() frees
 * them; a peek across the end of the storage is two runs.
 */
static void ds_test_peek_keeps_records(struct kunit *test)
{
	struct bts_record *in = ds_test_records(test, 8);
	struct bts_record buf[4], out[8];
	struct ds_stream s, *streams[] = { &s };
	const struct bts_record *runs[2];
	unsigned int i;
	u32 n, nrs[2];

	for (i = 0; i < 8; i++)
		in[i] = (struct bts_record)REC(K(i * 0x10), K(i * 0x10 + 8));

	ds_stream_init(&s, buf, ARRAY_SIZE(buf), DS_PRIV_KERNEL,
		       DS_MODE_CONTINUOUS);
	ds_splay(in, 3, streams, 1);
	n = ds_test_peek(test, &s, out, 2);
	ds_test_expect_records(test, "a peek of two", out, n, in, 2);
	n = ds_test_peek(test, &s, out, 8);
	ds_test_expect_records(test, "a second peek sees them all", out, n,
			       in, 3);

	/* Peeked records are not freed: one slot left, two lost. */
	ds_splay(in + 3, 3, streams, 1);
	KUNIT_EXPECT_EQ_MSG(test, ds_stream_pending(&s), 4,
			    "peeked records keep their slots");
	KUNIT_EXPECT_EQ(test, s.lost_total, 2);

	ds_stream_discard(&s, 1);
	KUNIT_EXPECT_EQ(test, ds_stream_pending(&s), 3);
	n = ds_test_peek(test, &s, out, 8);
	ds_test_expect_records(test, "after a discard of one, the rest", out,
			       n, in + 1, 3);
	n = ds_stream_peek(&s, runs, nrs, 8);
	KUNIT_EXPECT_TRUE_MSG(test, n == 3 && nrs[0] == 3 && !nrs[1] &&
			      runs[0] == buf + 1,
			      "the rest, in place: %u records, runs of %u and %u",
			      n, nrs[0], nrs[1]);

	/*
	 * The storage wraps: the record left at its end, then at its start
	 * the loss record owed since and the two new ones.
	 */
	ds_stream_discard(&s, 2);
	ds_splay(in + 6, 2, streams, 1);
	n = ds_stream_peek(&s, runs, nrs, 8);
	KUNIT_EXPECT_TRUE_MSG(test, n == 4 && nrs[0] == 1 && nrs[1] == 3 &&
			      runs[0] == buf + 3 && runs[1] == buf,
			      "across the end: %u records, runs of %u and %u",
			      n, nrs[0], nrs[1]);
	n = ds_test_peek(test, &s, out, 8);
	KUNIT_EXPECT_TRUE_MSG(test, n == 4 &&
			      BTS_PSEUDO_TYPE(out[1].from) == BTS_PSEUDO_LOST &&
			      out[2].from == in[6].from && out[3].from == in[7].from,
			      "across the end, in order");
	n = ds_stream_consume(&s, out, 8);
	KUNIT_EXPECT_EQ(test, n, 4);
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
	ds_splay(in, 10, streams, 1);
	KUNIT_EXPECT_EQ_MSG(test, ds_stream_pending(&s), 4,
			    "a full stream holds its size");
	n = ds_stream_consume(&s, out, 8);
	ds_test_expect_records(test, "the records that fit", out, n, in, 4);

	/* Room again: the loss is reported before the next record. */
	ds_splay(in + 10, 1, streams, 1);
	n = ds_stream_consume(&s, out, 8);
	want[0] = (struct bts_record)PSEUDO(BTS_PSEUDO_LOST, 0, 6, 0);
	want[1] = in[10];
	ds_test_expect_records(test, "loss, then the next record", out, n,
			       want, 2);

	/* A loss with nothing after it is reported once there is room. */
	ds_splay(in, 6, streams, 1);
	n = ds_stream_consume(&s, out, 8);
	ds_test_expect_records(test, "the next 4 that fit", out, n, in, 4);
	ds_splay(NULL, 0, streams, 1);
	n = ds_stream_consume(&s, out, 8);
	want[0] = (struct bts_record)PSEUDO(BTS_PSEUDO_LOST, 0, 2, 0);
	ds_test_expect_records(test, "a trailing loss", out, n, want, 1);

	/*
	 * One free slot and a loss pending: the loss record takes the slot
	 * and the new record is lost too, never overwriting unread ones.
	 */
	ds_splay(in, 5, streams, 1);
	n = ds_stream_consume(&s, out, 1);
	ds_splay(in + 5, 1, streams, 1);
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
		ds_splay(in, ARRAY_SIZE(in), streams, 1);
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
		 ARRAY_SIZE(streams));
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
 * Whatever the hardware writes and ds.c stages, a user-only stream holds no
 * kernel address and a kernel-only stream no user address: random traces,
 * tiny streams.
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
			if (!((rnd >> 16) % 4))
				in[i] = (struct bts_record)
					STAGED(BTS_ENTRY_SYSCALL, 0,
					       addrs[rnd % 7],
					       addrs[(rnd >> 8) % 7]);
		}
		ds_splay(in, rnd % 32, streams, 2);
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

/* A marker as ds.c stages it: two details of payload, then the marker. */
#define MARKER_PAYLOAD(i, lo, hi)					\
	PSEUDO(BTS_PSEUDO_DETAIL,					\
	       BTS_DETAIL_ARG(BTS_PSEUDO_MARKER, BTS_DETAIL_MARKER_PAYLOAD, i), \
	       lo, hi)
#define MARKER(addr)							\
	PSEUDO(BTS_PSEUDO_MARKER,					\
	       BTS_MARKER_ARG(BTS_MARKER_USER_EVENT, 0, 20), addr,	\
	       (7ULL << 32) | 42)

/* An executable mapping as ds.c stages it: file, build ID, name, record. */
#define MAP_DETAIL(layout, i, lo, hi)					\
	PSEUDO(BTS_PSEUDO_DETAIL,					\
	       BTS_DETAIL_ARG(BTS_PSEUDO_MAP, layout, i), lo, hi)
#define MAP(event, start, end)						\
	PSEUDO(BTS_PSEUDO_MAP, BTS_MAP_ARG(event, 0, 20), start, end)

/* What a stream asks for: markers, address-space changes. */
#define TAKES_MARKERS	BIT(0)
#define TAKES_MAPS	BIT(1)

/* The marker key of a stream that takes markers, and one of another. */
#define OUR_KEY		7
#define OTHER_KEY	8

/*
 * Splay ds_test_trace with @staged (an annotation of the kind @kind)
 * staged after its first @cut records into a stream of @priv that takes
 * @takes (markers for OUR_KEY).  It must hold what it makes of the trace
 * without the annotation, with the annotation (as @shown) between what it
 * makes of the records before the cut and after it if it takes that kind,
 * whether the annotation comes in one batch or in two.
 */
static void ds_test_staged_at(struct kunit *test, struct bts_record *room,
			      enum ds_priv priv, unsigned int takes,
			      unsigned int cut, unsigned int kind,
			      const struct bts_record *staged,
			      unsigned int nr_staged,
			      const struct bts_record *shown,
			      unsigned int nr_shown)
{
	const unsigned int nr = ARRAY_SIZE(ds_test_trace);
	struct bts_record *in = room, *out = room + DS_TEST_MAX;
	struct bts_record *want = room + 2 * DS_TEST_MAX;
	struct bts_record *buf = room + 3 * DS_TEST_MAX;
	struct ds_stream s, *streams[] = { &s };
	unsigned int split;
	char what[80];
	u32 n, n_want;

	memcpy(in, ds_test_trace, cut * sizeof(*in));
	memcpy(in + cut, staged, nr_staged * sizeof(*in));
	memcpy(in + cut + nr_staged, ds_test_trace + cut,
	       (nr - cut) * sizeof(*in));

	/* The trace without the annotation, in two batches split at the cut. */
	ds_stream_init(&s, buf, DS_TEST_MAX, priv, DS_MODE_CONTINUOUS);
	ds_splay(ds_test_trace, cut, streams, 1);
	n_want = ds_stream_consume(&s, want, DS_TEST_MAX);
	if (takes & kind) {
		memcpy(want + n_want, shown, nr_shown * sizeof(*want));
		n_want += nr_shown;
	}
	ds_splay(ds_test_trace + cut, nr - cut, streams, 1);
	n_want += ds_stream_consume(&s, want + n_want, DS_TEST_MAX - n_want);

	/*
	 * In one batch, and cut anywhere inside the annotation: ds.c stages
	 * it at once, but a reader must not depend on that.
	 */
	for (split = 0; split < nr_staged; split++) {
		ds_stream_init(&s, buf, DS_TEST_MAX, priv, DS_MODE_CONTINUOUS);
		s.marker_key = takes & TAKES_MARKERS ? OUR_KEY : 0;
		s.maps = takes & TAKES_MAPS;
		ds_splay(in, cut + split, streams, 1);
		ds_splay(in + cut + split, nr + nr_staged - cut - split,
			 streams, 1);
		n = ds_stream_consume(&s, out, DS_TEST_MAX);
		snprintf(what, sizeof(what),
			 "priv %d, takes %#x, kind %#x after %u, split %u",
			 priv, takes, kind, cut, split);
		ds_test_expect_records(test, what, out, n, want, n_want);
	}
}

/*
 * A staged marker or address-space change, with its details, reaches the
 * streams that take its kind, of every privilege, exactly where it was
 * staged, and no other stream: a marker only the streams among its
 * recipients, which no stream ever sees.  A user-only stream gets no
 * kernel address from one.
 */
static void ds_test_staged_markers(struct kunit *test)
{
	static const enum ds_priv privs[] = {
		DS_PRIV_USER, DS_PRIV_KERNEL, DS_PRIV_ALL,
	};
	static const struct bts_record marker[] = {
		DS_RECIPIENT(0, OUR_KEY),
		MARKER_PAYLOAD(0, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL),
		MARKER_PAYLOAD(1, 0x13121110ULL, 0),
		MARKER(U(0x120)),
	};
	static const struct bts_record shared[] = {
		DS_RECIPIENT(0, OTHER_KEY), DS_RECIPIENT(1, OUR_KEY),
		DS_RECIPIENT(2, OTHER_KEY + 1),
		MARKER_PAYLOAD(0, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL),
		MARKER_PAYLOAD(1, 0x13121110ULL, 0),
		MARKER(U(0x120)),
	};
	static const struct bts_record shown[] = {
		MARKER_PAYLOAD(0, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL),
		MARKER_PAYLOAD(1, 0x13121110ULL, 0),
		MARKER(U(0x120)),
	};
	/* Another stream's marker, then ours: only ours is shown. */
	static const struct bts_record others[] = {
		DS_RECIPIENT(0, OTHER_KEY),
		MARKER_PAYLOAD(0, 0x1111111111111111ULL, 0),
		MARKER(U(0x110)),
		DS_RECIPIENT(0, OUR_KEY),
		MARKER_PAYLOAD(0, 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL),
		MARKER_PAYLOAD(1, 0x13121110ULL, 0),
		MARKER(U(0x120)),
		DS_RECIPIENT(0, OTHER_KEY), MARKER(U(0x130)),
	};
	static const struct bts_record wild[] = {
		DS_RECIPIENT(0, OUR_KEY), MARKER(K(0x10)),
	};
	static const struct bts_record wild_shown[] = {
		MARKER(K(0x10)),
	};
	static const struct bts_record wild_user[] = {
		MARKER(0),
	};
	static const struct bts_record map[] = {
		MAP_DETAIL(BTS_DETAIL_MAP_FILE, 0, 0x2000, 1234),
		MAP_DETAIL(BTS_DETAIL_MAP_FILE, 1, 8ULL << 32 | 1, 1700000000),
		MAP_DETAIL(BTS_DETAIL_MAP_BUILD_ID, 0, 0x0706050403020100ULL,
			   0x0f0e0d0c0b0a0908ULL),
		MAP_DETAIL(BTS_DETAIL_MAP_BUILD_ID, 1, 0x13121110ULL, 0),
		MAP_DETAIL(BTS_DETAIL_MAP_NAME, 0, 0x62696c2f7273752fULL,
			   0x6f732e6f6f662fULL),
		MAP(BTS_MAP_MMAP, U(0x10000), U(0x20000)),
		MAP(BTS_MAP_MUNMAP, U(0x10000), U(0x20000)),
		MAP(BTS_MAP_EXEC, 0, 0),
	};
	static const struct bts_record wild_map[] = {
		MAP(BTS_MAP_MMAP, K(0x10000), K(0x20000)),
	};
	static const struct bts_record wild_map_user[] = {
		MAP(BTS_MAP_MMAP, 0, 0),
	};
	struct bts_record *room = ds_test_records(test, 4 * DS_TEST_MAX);
	unsigned int i, cut, takes;

	for (i = 0; i < ARRAY_SIZE(privs); i++) {
		for (cut = 0; cut <= ARRAY_SIZE(ds_test_trace); cut++) {
			/* ds.c stages a detail and its record at once. */
			if (cut && BTS_PSEUDO_TYPE(ds_test_trace[cut - 1].from) ==
			    BTS_PSEUDO_DETAIL &&
			    BTS_RECORD_IS_PSEUDO(ds_test_trace[cut - 1].from))
				continue;
			for (takes = 0; takes < 4; takes++) {
				ds_test_staged_at(test, room, privs[i], takes,
						  cut, TAKES_MARKERS, marker,
						  ARRAY_SIZE(marker), shown,
						  ARRAY_SIZE(shown));
				ds_test_staged_at(test, room, privs[i], takes,
						  cut, TAKES_MARKERS, shared,
						  ARRAY_SIZE(shared), shown,
						  ARRAY_SIZE(shown));
				ds_test_staged_at(test, room, privs[i], takes,
						  cut, TAKES_MARKERS, others,
						  ARRAY_SIZE(others), shown,
						  ARRAY_SIZE(shown));
				ds_test_staged_at(test, room, privs[i], takes,
						  cut, TAKES_MAPS, map,
						  ARRAY_SIZE(map), map,
						  ARRAY_SIZE(map));
			}
			ds_test_staged_at(test, room, privs[i], TAKES_MARKERS,
					  cut, TAKES_MARKERS, wild,
					  ARRAY_SIZE(wild),
					  privs[i] == DS_PRIV_USER ? wild_user :
					  wild_shown, ARRAY_SIZE(wild_shown));
			ds_test_staged_at(test, room, privs[i], TAKES_MAPS,
					  cut, TAKES_MAPS, wild_map,
					  ARRAY_SIZE(wild_map),
					  privs[i] == DS_PRIV_USER ?
					  wild_map_user : wild_map,
					  ARRAY_SIZE(wild_map));
		}
	}
}

/*
 * The hardware, faked.  ds.c programs each CPU's DS save area and DEBUGCTL,
 * and at every threshold PMI takes the staging buffer's records and splays
 * them.  The cases below do the same against a model of what the SDM says
 * BTS hardware writes, so that the staging buffer, ds_debugctl_for() and
 * ds_splay() are checked together, record by record, without Intel
 * hardware: each stream must hold exactly what ds_splay() makes of the
 * whole trace in one go, save where the hardware filter legitimately hid a
 * privilege crossing (ds_test_expected()).
 */

/* Records of a synthetic trace, at most; and consumers of one CPU. */
#define DS_TEST_TRACE_MAX	512
#define DS_TEST_CONSUMERS	8
/* Slots of a stream that holds a whole trace, a marker and a loss. */
#define DS_TEST_WHOLE		(DS_TEST_TRACE_MAX + 4)
/* The largest sub-buffer of the cases, in records. */
#define DS_TEST_NR_MAX		128

#define DS_TEST_ON		(DS_DEBUGCTL_TR | DS_DEBUGCTL_BTS)
#define DS_TEST_TRACING		(DS_TEST_ON | DS_DEBUGCTL_BTINT)
#define DS_TEST_FILTERS		(DS_DEBUGCTL_BTS_OFF_OS | \
				 DS_DEBUGCTL_BTS_OFF_USR)

/* A record ds.c appends between batches; the core passes it on unfiltered. */
#define DS_TEST_APPENDED	PSEUDO(BTS_PSEUDO_SWITCH, 0, 1234, 42)

static bool ds_test_kernel_addr(u64 addr)
{
	return (s64)addr < 0;
}

static u64 ds_test_addr(const void *p)
{
	return (u64)(unsigned long)p;
}

/**
 * struct ds_test_cpu - a CPU's BTS hardware, as the SDM describes it
 * @hw:		the BTS fields of its DS save area
 * @debugctl:	IA32_DEBUGCTL; only the DS_DEBUGCTL_* bits matter
 * @ds_cpl:	CPUID.01H:ECX.DS-CPL: BTS_OFF_OS and BTS_OFF_USR exist
 * @mem:	the memory the test lets the hardware write
 * @mem_nr:	records at @mem
 * @pmi_delay:	records the hardware writes (or drops) after raising a
 *		threshold PMI and before the handler runs
 * @pmi_wait:	records still to go before the raised PMI is delivered
 * @pmi_raised:	a threshold PMI is on its way
 * @pmis:	threshold PMIs raised
 * @written:	records written to memory
 * @dropped:	records dropped because the buffer was full (BTINT set)
 * @gp:		writes to DEBUGCTL refused: filter bits without DS-CPL
 * @wild:	writes refused: the DS save area pointed outside @mem
 */
struct ds_test_cpu {
	struct ds_bts_area	hw;
	u64			debugctl;
	bool			ds_cpl;
	struct bts_record	*mem;
	u32			mem_nr;
	u32			pmi_delay;
	u32			pmi_wait;
	bool			pmi_raised;
	u32			pmis;
	u32			written;
	u32			dropped;
	u32			gp;
	u32			wild;
};

/*
 * WRMSR to IA32_DEBUGCTL.  Without DS-CPL, BTS_OFF_OS and BTS_OFF_USR are
 * reserved and setting them faults: count it, keep the old value.
 */
static void ds_test_wrmsr(struct ds_test_cpu *cpu, u64 val)
{
	if (!cpu->ds_cpl && (val & DS_TEST_FILTERS)) {
		cpu->gp++;
		return;
	}
	cpu->debugctl = val;
}

/* The hardware writes where it is told; the test only lets it into @mem. */
static bool ds_test_cpu_may_write(const struct ds_test_cpu *cpu)
{
	u64 rec = sizeof(struct bts_record);
	u64 lo = ds_test_addr(cpu->mem);
	u64 at = cpu->hw.index;

	return at >= lo && at + rec <= lo + cpu->mem_nr * rec &&
	       !((at - lo) % rec);
}

/**
 * ds_test_cpu_branch() - the CPU takes a branch, and BTS records it or not
 * @cpu: the CPU
 * @r:   the branch; the half of the address space of its source tells
 *	 the CPL it was taken at
 *
 * Nothing is recorded unless TR and BTS are both set.  BTS_OFF_OS skips
 * branches taken at CPL 0, BTS_OFF_USR those taken above: a user-to-kernel
 * entry is taken in user mode and a return to user mode in the kernel.
 * With BTINT the hardware raises a PMI when a write brings the index to the
 * threshold and drops records once the index is at the end; without it,
 * the buffer is circular.
 *
 * Return: true if a threshold PMI is delivered right after this branch.
 */
static bool ds_test_cpu_branch(struct ds_test_cpu *cpu,
			       const struct bts_record *r)
{
	u64 rec = sizeof(*r), ctl = cpu->debugctl;
	bool btint = ctl & DS_DEBUGCTL_BTINT;
	bool cpl0 = ds_test_kernel_addr(r->from);
	bool raised = false;

	if ((ctl & DS_TEST_ON) != DS_TEST_ON)
		return false;
	if ((cpl0 && (ctl & DS_DEBUGCTL_BTS_OFF_OS)) ||
	    (!cpl0 && (ctl & DS_DEBUGCTL_BTS_OFF_USR)))
		return false;

	if (btint && cpu->hw.index >= cpu->hw.max) {
		cpu->dropped++;
	} else if (!ds_test_cpu_may_write(cpu)) {
		cpu->wild++;
	} else {
		*(struct bts_record *)(unsigned long)cpu->hw.index = *r;
		cpu->hw.index += rec;
		cpu->written++;
		raised = btint && cpu->hw.index >= cpu->hw.threshold &&
			 cpu->hw.index - rec < cpu->hw.threshold;
		if (!btint && cpu->hw.index >= cpu->hw.max)
			cpu->hw.index = cpu->hw.base;
	}

	if (raised) {
		cpu->pmis++;
		cpu->pmi_raised = true;
		cpu->pmi_wait = cpu->pmi_delay;
	} else if (cpu->pmi_raised && cpu->pmi_wait) {
		cpu->pmi_wait--;
	}
	if (!cpu->pmi_raised || cpu->pmi_wait)
		return false;
	cpu->pmi_raised = false;
	return true;
}

/*
 * Records that go into the staging buffer (written or dropped) under @ctl:
 * the branches the hardware records, and the pseudo-records ds.c stages.
 */
static u32 ds_test_count_recorded(u64 ctl, const struct bts_record *t,
				  unsigned int nr)
{
	unsigned int i;
	u32 n = 0;

	for (i = 0; i < nr; i++) {
		bool cpl0 = ds_test_kernel_addr(t[i].from);

		if (BTS_RECORD_IS_PSEUDO(t[i].from) ||
		    (!(cpl0 && (ctl & DS_DEBUGCTL_BTS_OFF_OS)) &&
		     !(!cpl0 && (ctl & DS_DEBUGCTL_BTS_OFF_USR))))
			n++;
	}
	return n;
}

/**
 * enum ds_test_read - how a consumer reads its stream
 * @DS_TEST_LAST: a ring, read with ds_stream_read_last() at the end
 * @DS_TEST_AT_END: continuous, consumed once at the end; loses what does
 *	not fit
 * @DS_TEST_EACH_DRAIN: continuous, consumed after every drain, as a reader
 *	that keeps up
 */
enum ds_test_read {
	DS_TEST_LAST,
	DS_TEST_AT_END,
	DS_TEST_EACH_DRAIN,
};

/**
 * struct ds_test_consumer - one consumer of the CPU's branch trace
 * @priv: enum ds_priv
 * @read: enum ds_test_read, which also gives the stream's mode
 * @size: slots of the stream, at most DS_TEST_WHOLE
 */
struct ds_test_consumer {
	u8	priv;
	u8	read;
	u32	size;
};

/*
 * A stream read at every drain: a batch of n records makes at most n + 1
 * records of a stream (the crossing the previous batch left open), and a
 * marker may be waiting.
 */
#define DS_TEST_KEEP_UP		(DS_TEST_NR_MAX + 2)

/**
 * struct ds_test_rig - ds.c in miniature: a CPU and its consumers
 * @test:	the test case
 * @cpu:	the fake hardware
 * @st:		the CPU's staging buffer, at @staging
 * @filter:	the filter bits the hardware should get for the consumers
 * @con:	the consumers, @nr_con of them
 * @nr_con:	number of consumers
 * @s:		a stream for each consumer
 * @streams:	pointers to @s, as ds_splay() takes them
 * @buf:	each stream's slots
 * @got:	what each consumer read, @n_got records of it
 * @n_got:	records in @got
 * @taken:	records ds_staging_take() returned, in all
 * @staged:	records ds_staging_append() wrote, in all
 * @staged_drains: drains after a staged record reached the threshold
 * @overruns:	takes that found the sub-buffer full
 * @staging:	storage of @st: 2 * DS_TEST_NR_MAX records
 * @trace:	the synthetic trace: DS_TEST_TRACE_MAX records
 * @ref:	the reference stream: DS_TEST_WHOLE records
 * @want:	what a consumer should get: DS_TEST_WHOLE records
 * @scratch:	the slots of the reference stream: DS_TEST_WHOLE records
 *
 * Allocated once per case and reused for every run of it.
 */
struct ds_test_rig {
	struct kunit			*test;
	struct ds_test_cpu		cpu;
	struct ds_staging		st;
	u64				filter;
	const struct ds_test_consumer	*con;
	unsigned int			nr_con;
	struct ds_stream		s[DS_TEST_CONSUMERS];
	struct ds_stream		*streams[DS_TEST_CONSUMERS];
	struct bts_record		*buf[DS_TEST_CONSUMERS];
	struct bts_record		*got[DS_TEST_CONSUMERS];
	u32				n_got[DS_TEST_CONSUMERS];
	u32				taken;
	u32				staged;
	u32				staged_drains;
	u32				overruns;
	struct bts_record		*staging;
	struct bts_record		*trace;
	struct bts_record		*ref;
	struct bts_record		*want;
	struct bts_record		*scratch;
};

static struct ds_test_rig *ds_test_rig_alloc(struct kunit *test)
{
	struct ds_test_rig *rig = kunit_kcalloc(test, 1, sizeof(*rig),
						GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, rig);
	rig->test = test;
	for (i = 0; i < DS_TEST_CONSUMERS; i++) {
		rig->buf[i] = ds_test_records(test, 2 * DS_TEST_WHOLE);
		rig->got[i] = rig->buf[i] + DS_TEST_WHOLE;
	}
	rig->staging = ds_test_records(test, 2 * DS_TEST_NR_MAX);
	rig->trace = ds_test_records(test, DS_TEST_TRACE_MAX);
	rig->ref = ds_test_records(test, DS_TEST_WHOLE);
	rig->want = ds_test_records(test, DS_TEST_WHOLE);
	rig->scratch = ds_test_records(test, DS_TEST_WHOLE);
	return rig;
}

/**
 * ds_test_rig_start() - the consumers arrive; trace as ds.c would
 * @rig:       the rig
 * @con:       the consumers
 * @nr_con:    number of consumers, at most DS_TEST_CONSUMERS
 * @ds_cpl:    the CPU has DS-CPL
 * @nr_sub:    records per sub-buffer, at most DS_TEST_NR_MAX
 * @pmi_delay: see struct ds_test_cpu
 */
static void ds_test_rig_start(struct ds_test_rig *rig,
			      const struct ds_test_consumer *con,
			      unsigned int nr_con, bool ds_cpl, u32 nr_sub,
			      u32 pmi_delay)
{
	unsigned int i, privs = 0;
	u64 ctl;

	rig->cpu = (struct ds_test_cpu) {
		.ds_cpl		= ds_cpl,
		.mem		= rig->staging,
		.mem_nr		= 2 * nr_sub,
		.pmi_delay	= pmi_delay,
	};
	rig->con = con;
	rig->nr_con = nr_con;
	rig->taken = 0;
	rig->staged = 0;
	rig->staged_drains = 0;
	rig->overruns = 0;
	for (i = 0; i < nr_con; i++) {
		ds_stream_init(&rig->s[i], rig->buf[i], con[i].size,
			       con[i].priv, con[i].read == DS_TEST_LAST ?
			       DS_MODE_RING : DS_MODE_CONTINUOUS);
		rig->streams[i] = &rig->s[i];
		rig->n_got[i] = 0;
		privs |= con[i].priv;
	}

	/*
	 * Only a unanimous set of consumers lets the hardware filter, and
	 * only a CPU with DS-CPL can.  Worked out here rather than taken from
	 * ds_debugctl_for(), so that a wrong choice shows in the streams.
	 */
	rig->filter = 0;
	if (ds_cpl && privs == DS_PRIV_USER)
		rig->filter = DS_DEBUGCTL_BTS_OFF_OS;
	if (ds_cpl && privs == DS_PRIV_KERNEL)
		rig->filter = DS_DEBUGCTL_BTS_OFF_USR;
	ctl = ds_debugctl_for(privs, ds_cpl);
	KUNIT_EXPECT_EQ_MSG(rig->test, ctl, DS_TEST_TRACING | rig->filter,
			    "DEBUGCTL for privs %u, DS-CPL %d", privs, ds_cpl);

	ds_staging_init(&rig->st, rig->staging, nr_sub, DS_STAGING_SLACK);
	ds_staging_arm(&rig->st, &rig->cpu.hw);
	ds_test_wrmsr(&rig->cpu, ctl);
}

/* Consumers that read this way take what their stream holds. */
static void ds_test_rig_read(struct ds_test_rig *rig, enum ds_test_read read)
{
	unsigned int i;

	for (i = 0; i < rig->nr_con; i++) {
		if (rig->con[i].read != read)
			continue;
		if (read == DS_TEST_LAST) {
			rig->n_got[i] = ds_stream_read_last(&rig->s[i],
							    rig->got[i],
							    DS_TEST_WHOLE);
			continue;
		}
		rig->n_got[i] += ds_stream_consume(&rig->s[i],
						   rig->got[i] + rig->n_got[i],
						   DS_TEST_WHOLE -
						   rig->n_got[i]);
	}
}

/*
 * What ds.c does at a threshold PMI, a context switch or a marker: stop
 * the hardware, swap sub-buffers, let it run on into the other one while
 * the records taken are splayed.  An empty take is splayed too, as the
 * core asks, to report losses that have room again.
 */
static void ds_test_drain(struct ds_test_rig *rig)
{
	const struct bts_record *recs;
	u64 ctl = rig->cpu.debugctl;
	bool overran;
	u32 n;

	ds_test_wrmsr(&rig->cpu, ctl & ~DS_TEST_ON);
	n = ds_staging_take(&rig->st, &rig->cpu.hw, &recs, &overran);
	ds_test_wrmsr(&rig->cpu, ctl);
	rig->taken += n;
	rig->overruns += overran;
	ds_splay(recs, n, rig->streams, rig->nr_con);
	if (overran)
		ds_splay_overrun(rig->streams, rig->nr_con);
	ds_test_rig_read(rig, DS_TEST_EACH_DRAIN);
}

/*
 * What ds.c does on the way back to user mode: stop the hardware, stage
 * the KERNEL record, restart it, and drain a sub-buffer the record took to
 * its threshold, since no PMI comes for it.
 */
static void ds_test_stage(struct ds_test_rig *rig, const struct bts_record *r,
			  unsigned int nr)
{
	u64 ctl = rig->cpu.debugctl, index = rig->cpu.hw.index;

	ds_test_wrmsr(&rig->cpu, ctl & ~DS_TEST_ON);
	ds_staging_append(&rig->st, &rig->cpu.hw, r, nr);
	ds_test_wrmsr(&rig->cpu, ctl);
	rig->staged += (rig->cpu.hw.index - index) / sizeof(*r);
	if (rig->cpu.hw.index >= rig->cpu.hw.threshold) {
		rig->staged_drains++;
		ds_test_drain(rig);
	}
}

/*
 * The CPU runs @nr branches; the PMI handler drains at each threshold.
 * Pseudo-records in @t are the ones ds.c stages.
 */
static void ds_test_rig_run(struct ds_test_rig *rig,
			    const struct bts_record *t, unsigned int nr)
{
	unsigned int i, n;

	for (i = 0; i < nr; i++) {
		if (BTS_RECORD_IS_PSEUDO(t[i].from)) {
			/* A KERNEL record and its detail, at once. */
			for (n = 1; i + n < nr &&
			     BTS_RECORD_IS_PSEUDO(t[i + n].from); n++)
				;
			ds_test_stage(rig, &t[i], n);
			i += n - 1;
		} else if (ds_test_cpu_branch(&rig->cpu, &t[i])) {
			ds_test_drain(rig);
		}
	}
}

/*
 * The consumers leave: tracing stops and the rest is drained and read.  One
 * more drain, with nothing to take, reports the losses of continuous
 * streams that have room again now that they were read.
 */
static void ds_test_rig_stop(struct ds_test_rig *rig)
{
	ds_test_wrmsr(&rig->cpu, 0);
	rig->cpu.pmi_raised = false;
	ds_test_drain(rig);
	ds_test_rig_read(rig, DS_TEST_AT_END);
	ds_test_drain(rig);
	ds_test_rig_read(rig, DS_TEST_AT_END);
	ds_test_rig_read(rig, DS_TEST_LAST);
}

/* @out: what one lone stream of kind @priv makes of @nr records at once. */
static u32 ds_test_reference(struct ds_test_rig *rig, enum ds_priv priv,
			     const struct bts_record *rec, unsigned int nr,
			     struct bts_record *out)
{
	struct ds_stream s, *streams[] = { &s };

	ds_stream_init(&s, rig->scratch, DS_TEST_WHOLE, priv,
		       DS_MODE_CONTINUOUS);
	ds_splay(rec, nr, streams, 1);
	return ds_stream_consume(&s, out, DS_TEST_WHOLE);
}

/**
 * ds_test_expected() - what a stream should hold once the CPU ran @rec
 * @rig:  the rig; @rig->filter is the hardware filter
 * @priv: the stream's enum ds_priv
 * @rec:  the branches the hardware got to see, filter or not, and the
 *	  records ds.c staged
 * @nr:   number of records
 * @out:  room for DS_TEST_WHOLE records
 *
 * The reference: ds_splay() of all of @rec into a lone stream, at once.
 * A user-only stream holds just that under BTS_OFF_OS too: it takes no
 * crossing record of the hardware's, only the staged ones.
 *
 * With BTS_OFF_USR (all consumers kernel-only) the hardware does not write
 * the branches taken in user mode: neither the user branches nor the
 * entries into the kernel.  The stream learns of an entry from the next
 * kernel branch instead, so each BTS_PSEUDO_USER record comes at the same
 * place with its re-entry address unseen (@to 0), except that
 *  - a stretch in user mode whose exit @rec does not show (@rec starts in
 *    user mode; @flags is 0) leaves no record at all: its entry was the
 *    only branch that showed it;
 *  - an entry that is the last branch of @rec has no kernel branch after
 *    it to tell of it: the stretch is still open, its record yet to come.
 *
 * Return: the number of records at @out.
 */
static u32 ds_test_expected(struct ds_test_rig *rig, enum ds_priv priv,
			    const struct bts_record *rec, unsigned int nr,
			    struct bts_record *out)
{
	u32 n_ref, n = 0, i;

	if (rig->filter != DS_DEBUGCTL_BTS_OFF_USR)
		return ds_test_reference(rig, priv, rec, nr, out);

	n_ref = ds_test_reference(rig, priv, rec, nr, rig->ref);
	/* Staged records come after the branches: skip them. */
	while (nr && BTS_RECORD_IS_PSEUDO(rec[nr - 1].from))
		nr--;
	if (nr && !ds_test_kernel_addr(rec[nr - 1].from) &&
	    ds_test_kernel_addr(rec[nr - 1].to)) {
		KUNIT_EXPECT_TRUE_MSG(rig->test, n_ref &&
				      BTS_PSEUDO_TYPE(rig->ref[n_ref - 1].from)
				      == BTS_PSEUDO_USER,
				      "the last crossing, the last record");
		n_ref--;
	}
	for (i = 0; i < n_ref; i++) {
		struct bts_record r = rig->ref[i];

		if (BTS_RECORD_IS_PSEUDO(r.from) &&
		    BTS_PSEUDO_TYPE(r.from) == BTS_PSEUDO_USER) {
			if (!r.flags)
				continue;
			r.to = 0;
		}
		out[n++] = r;
	}
	return n;
}

/**
 * ds_test_expect_consumer() - check what consumer @i read
 * @rig:    the rig, stopped
 * @i:      the consumer
 * @want:   DS_TEST_WHOLE records: what its stream would hold if it had
 *	    room; changed
 * @n_want: records at @want
 * @what:   the run, for messages
 */
static void ds_test_expect_consumer(struct ds_test_rig *rig, unsigned int i,
				    struct bts_record *want, u32 n_want,
				    const char *what)
{
	const struct ds_test_consumer *c = &rig->con[i];
	u32 size = c->size, n;
	char msg[160];

	snprintf(msg, sizeof(msg),
		 "%s, consumer %u (priv %u, read %u, size %u)", what, i,
		 c->priv, c->read, size);
	if (c->read == DS_TEST_LAST) {
		/* A ring of @size slots holds exactly the newest size - 1. */
		n = min(n_want, size - 1);
		ds_test_expect_records(rig->test, msg, rig->got[i],
				       rig->n_got[i], want + n_want - n, n);
		return;
	}
	if (c->read == DS_TEST_AT_END && n_want > size) {
		/* The first @size fit, then one record counts the rest. */
		want[size] = (struct bts_record)PSEUDO(BTS_PSEUDO_LOST, 0,
						       n_want - size, 0);
		n_want = size + 1;
	}
	ds_test_expect_records(rig->test, msg, rig->got[i], rig->n_got[i],
			       want, n_want);
}

/* Every consumer read what ds_test_expected() says of @rec. */
static void ds_test_rig_check(struct ds_test_rig *rig,
			      const struct bts_record *rec, unsigned int nr,
			      const char *what)
{
	unsigned int i;
	u32 n;

	for (i = 0; i < rig->nr_con; i++) {
		n = ds_test_expected(rig, rig->con[i].priv, rec, nr, rig->want);
		ds_test_expect_consumer(rig, i, rig->want, n, what);
	}
}

/*
 * The hardware was used as the SDM allows, and every record it wrote was
 * taken exactly once.
 */
static void ds_test_rig_check_taken(struct ds_test_rig *rig,
				    const char *what)
{
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.gp, 0,
			    "%s: reserved DEBUGCTL bits set", what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.wild, 0,
			    "%s: DS save area outside staging", what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->taken,
			    rig->cpu.written + rig->staged,
			    "%s: records taken, against written and staged",
			    what);
}

/*
 * Drains of a run with pmi_delay 0: the sub-buffer is drained the moment
 * it reaches its threshold @thr, by the PMI or, after records ds.c staged,
 * by ds.c.  Records staged together may take it past the threshold, never
 * past its end (the slack is at least one record).
 */
static u32 ds_test_drains_at_once(u64 ctl, const struct bts_record *t,
				  unsigned int nr, u32 thr)
{
	u32 fill = 0, drains = 0;
	unsigned int i, n;

	for (i = 0; i < nr; i += n) {
		for (n = 1; BTS_RECORD_IS_PSEUDO(t[i].from) && i + n < nr &&
		     BTS_RECORD_IS_PSEUDO(t[i + n].from); n++)
			;
		fill += ds_test_count_recorded(ctl, &t[i], n);
		if (fill >= thr) {
			drains++;
			fill = 0;
		}
	}
	return drains;
}

/**
 * ds_test_rig_check_pmis() - the hardware did what the sub-buffer size says
 * @rig:  the rig, stopped, drained only at PMIs
 * @t:    the trace it ran
 * @nr:   records in @t
 * @what: the run, for messages
 *
 * Of the w branches the filter lets through, each sub-buffer gets c = T +
 * pmi_delay, T being its records up to the threshold: the PMI comes T
 * records in and is handled pmi_delay records later.  Of those c, the
 * first nr_sub are written and the rest dropped; the last, partial
 * sub-buffer raises a PMI too if it reached T.  Traces with staged records
 * run with pmi_delay 0, where records staged together may each take a
 * sub-buffer one record further: ds_test_drains_at_once() counts.
 */
static void ds_test_rig_check_pmis(struct ds_test_rig *rig,
				   const struct bts_record *t, unsigned int nr,
				   const char *what)
{
	u32 w = ds_test_count_recorded(rig->filter, t, nr);
	u32 nr_sub = rig->st.nr, thr = nr_sub - DS_STAGING_SLACK;
	u32 c = thr + rig->cpu.pmi_delay, rest = w % c;
	u32 dropped = w / c * (c - min(c, nr_sub)) +
		      (rest > nr_sub ? rest - nr_sub : 0);
	u32 drains = rig->cpu.pmi_delay ? w / c + (rest >= thr) :
		     ds_test_drains_at_once(rig->filter, t, nr, thr);

	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.pmis + rig->staged_drains,
			    drains, "%s: threshold PMIs", what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.dropped, dropped,
			    "%s: records dropped by the hardware", what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.written + rig->staged,
			    w - dropped, "%s: records written", what);
	ds_test_rig_check_taken(rig, what);
}

/* Next value of a xorshift64 generator: the same traces every run. */
static u64 ds_test_rand(u64 *state)
{
	u64 x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/**
 * enum ds_test_end - how a synthetic trace ends
 * @DS_TEST_END_ANY: wherever the dice say
 * @DS_TEST_END_TO_USER: with a return to user mode
 * @DS_TEST_END_TO_KERNEL: with an entry into the kernel
 */
enum ds_test_end {
	DS_TEST_END_ANY,
	DS_TEST_END_TO_USER,
	DS_TEST_END_TO_KERNEL,
};

/**
 * ds_test_make_trace() - a plausible branch trace
 * @t:         room for @nr records
 * @nr:        records, at least 2
 * @in_kernel: the trace starts in the kernel
 * @end:       how it ends
 * @seed:      of the generator, not 0
 * @staged:    with the KERNEL records ds.c stages before each return to
 *	       user mode, from what the entry and exit code saw
 *
 * User code branches, makes system calls, faults and is interrupted;
 * kernel code branches, is interrupted and returns to user mode.  Every
 * branch leaves from the side the previous one went to, as on a CPU, and
 * every source address is different, so that a record out of place shows.
 */
static void ds_test_make_trace(struct bts_record *t, unsigned int nr,
			       bool in_kernel, enum ds_test_end end, u64 seed,
			       bool staged)
{
	static const u64 entries[] = {
		K_SYSCALL, K_PAGE_FAULT, K_TIMER_IRQ, K(0x7000),
	};
	static const u32 kinds[] = {
		KIND(BTS_ENTRY_SYSCALL, 0), KIND(BTS_ENTRY_EXCEPTION, 14),
		KIND(BTS_ENTRY_INTERRUPT, 0xec), BTS_ENTRY_UNKNOWN,
	};
	u64 entered = 0;
	u32 kind = BTS_ENTRY_UNKNOWN;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		u64 rnd = ds_test_rand(&seed), at = i * 0x10;
		unsigned int e = (rnd >> 8) % 4;
		bool cross = !(rnd % 4);

		/* Be on the other side for the last branch, then cross. */
		if (end != DS_TEST_END_ANY && i + 2 >= nr)
			cross = i == nr - 1 ||
				in_kernel == (end == DS_TEST_END_TO_KERNEL);
		if (in_kernel && cross && staged && i + 2 <= nr) {
			/* The return follows, if the trace goes on. */
			t[i++] = (struct bts_record)
				DETAIL(rnd >> 40 & 3, rnd, at);
			t[i] = (struct bts_record)
				STAGED(kind & 0xff, kind >> 8, U(at + 8),
				       entered);
			if (++i == nr)
				break;
		}
		if (!in_kernel && cross) {
			t[i] = (struct bts_record)REC(U(at), entries[e]);
			entered = U(at);
			kind = kinds[e];
		} else if (!in_kernel) {
			t[i] = (struct bts_record)REC(U(at), U(at + 8));
		} else if (cross) {
			t[i] = (struct bts_record)REC(K(at), U(at + 8));
		} else if (!(rnd % 7)) {
			t[i] = (struct bts_record)REC(K(at), K_TIMER_IRQ);
		} else {
			t[i] = (struct bts_record)REC(K(at), K(at + 8));
		}
		in_kernel ^= cross;
	}
}

/* Sub-buffer sizes, from the smallest ds_staging_init() takes. */
static const u32 ds_test_subs[] = {
	DS_STAGING_SLACK + 1, DS_STAGING_SLACK + 2, 24, 64, DS_TEST_NR_MAX,
};

/*
 * One run as ds.c would make it: the consumers arrive, the CPU runs the
 * trace with the PMI handler draining, the consumers leave.  The hardware's
 * counts are checked here, the streams by the caller.
 */
static void ds_test_hw_run(struct ds_test_rig *rig,
			   const struct ds_test_consumer *con,
			   unsigned int nr_con, bool ds_cpl, u32 nr_sub,
			   u32 pmi_delay, unsigned int nr, const char *what)
{
	ds_test_rig_start(rig, con, nr_con, ds_cpl, nr_sub, pmi_delay);
	ds_test_rig_run(rig, rig->trace, nr);
	ds_test_rig_stop(rig);
	ds_test_rig_check_pmis(rig, rig->trace, nr, what);
}

/* One run of ds_test_hw_sweep(), on a trace of its own. */
static void ds_test_hw_sweep_one(struct ds_test_rig *rig,
				 const struct ds_test_consumer *con,
				 unsigned int nr_con, bool ds_cpl, u32 nr_sub,
				 bool in_kernel, enum ds_test_end end)
{
	u64 seed = 0x9e3779b97f4a7c15ULL *
		   (nr_sub * 16 + ds_cpl * 8 + in_kernel * 4 + end + 1);
	unsigned int nr = DS_TEST_TRACE_MAX - seed % 97;
	char what[96];

	ds_test_make_trace(rig->trace, nr, in_kernel, end, seed, true);
	snprintf(what, sizeof(what),
		 "DS-CPL %d, sub-buffer %u, %u records from %s, end %d",
		 ds_cpl, nr_sub, nr, in_kernel ? "kernel" : "user", end);
	ds_test_hw_run(rig, con, nr_con, ds_cpl, nr_sub, 0, nr, what);
	ds_test_rig_check(rig, rig->trace, nr, what);
}

/**
 * ds_test_hw_sweep() - run consumers through the hardware, many ways
 * @rig:    the rig
 * @con:    the consumers
 * @nr_con: number of consumers
 *
 * On a CPU with and without DS-CPL, with every sub-buffer size, traces
 * starting on either side and ending anyhow, with a return or with an
 * entry, of lengths that put the end of the trace anywhere in a
 * sub-buffer.  Every run is checked in full.
 */
static void ds_test_hw_sweep(struct ds_test_rig *rig,
			     const struct ds_test_consumer *con,
			     unsigned int nr_con)
{
	unsigned int cpl, sub, shape;

	for (cpl = 0; cpl < 2; cpl++)
		for (sub = 0; sub < ARRAY_SIZE(ds_test_subs); sub++)
			for (shape = 0; shape < 6; shape++)
				ds_test_hw_sweep_one(rig, con, nr_con, cpl,
						     ds_test_subs[sub],
						     shape / 3, shape % 3);
}

/*
 * ds_debugctl_for() lets the hardware filter only when all consumers want
 * the same side, and never uses bits a CPU without DS-CPL does not have:
 * there they are reserved and WRMSR would fault.
 */
static void ds_test_debugctl_for(struct kunit *test)
{
	static const struct {
		unsigned int	privs;
		bool		ds_cpl;
		u64		want;
	} table[] = {
		{ 0, false, 0 },
		{ 0, true, 0 },
		{ DS_PRIV_USER, false, DS_TEST_TRACING },
		{ DS_PRIV_USER, true,
		  DS_TEST_TRACING | DS_DEBUGCTL_BTS_OFF_OS },
		{ DS_PRIV_KERNEL, false, DS_TEST_TRACING },
		{ DS_PRIV_KERNEL, true,
		  DS_TEST_TRACING | DS_DEBUGCTL_BTS_OFF_USR },
		{ DS_PRIV_ALL, false, DS_TEST_TRACING },
		{ DS_PRIV_ALL, true, DS_TEST_TRACING },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(table); i++) {
		u64 ctl = ds_debugctl_for(table[i].privs, table[i].ds_cpl);

		KUNIT_EXPECT_EQ_MSG(test, ctl, table[i].want,
				    "privs %u, DS-CPL %d", table[i].privs,
				    table[i].ds_cpl);
		KUNIT_EXPECT_EQ_MSG(test, ctl & ~DS_DEBUGCTL_OWNED, 0,
				    "bits the DS layer does not own");
		if (!table[i].ds_cpl)
			KUNIT_EXPECT_EQ_MSG(test, ctl & DS_TEST_FILTERS, 0,
					    "filter bits without DS-CPL");
	}
}

/*
 * The staging buffer's halves as the hardware sees them: the threshold
 * DS_STAGING_SLACK records short of the end, and a take that swaps halves
 * whether or not there was anything to take.
 */
static void ds_test_staging_halves(struct kunit *test)
{
	static const u32 subs[] = { DS_STAGING_SLACK + 1, 40 };
	const u64 rec = sizeof(struct bts_record);
	struct bts_record sbuf[2];
	struct ds_stream s, *streams[] = { &s };
	unsigned int i, half;

	ds_stream_init(&s, sbuf, ARRAY_SIZE(sbuf), DS_PRIV_ALL,
		       DS_MODE_CONTINUOUS);
	for (i = 0; i < ARRAY_SIZE(subs); i++) {
		u32 nr = subs[i];
		struct bts_record *buf = ds_test_records(test, 2 * nr);
		const struct bts_record *recs = NULL;
		struct ds_bts_area hw = {};
		struct ds_staging st;
		bool overran;
		u32 n;

		ds_staging_init(&st, buf, nr, DS_STAGING_SLACK);
		ds_staging_arm(&st, &hw);
		for (half = 0; half < 4; half++) {
			u64 base = ds_test_addr(buf + half % 2 * nr);

			KUNIT_EXPECT_EQ_MSG(test, hw.base, base,
					    "sub %u, half %u: base", nr, half);
			KUNIT_EXPECT_EQ_MSG(test, hw.index, base,
					    "sub %u, half %u: index", nr, half);
			KUNIT_EXPECT_EQ_MSG(test, hw.max, base + nr * rec,
					    "sub %u, half %u: max", nr, half);
			KUNIT_EXPECT_EQ_MSG(test, hw.threshold, hw.max -
					    DS_STAGING_SLACK * rec,
					    "sub %u, half %u: threshold", nr,
					    half);
			/* Nothing written: nothing taken, halves swapped. */
			n = ds_staging_take(&st, &hw, &recs, &overran);
			KUNIT_EXPECT_TRUE_MSG(test, !overran,
					      "sub %u, half %u: empty overran",
					      nr, half);
			KUNIT_EXPECT_EQ_MSG(test, n, 0,
					    "sub %u, half %u: empty take", nr,
					    half);
			KUNIT_EXPECT_TRUE_MSG(test, recs == buf + half % 2 * nr,
					      "sub %u, half %u: records", nr,
					      half);
			ds_splay(recs, n, streams, 1);
			KUNIT_EXPECT_EQ_MSG(test, ds_stream_pending(&s), 0,
					    "an empty take splays nothing");
		}

		/* Whatever the hardware wrote, up to the end at most. */
		hw.index += 3 * rec;
		n = ds_staging_take(&st, &hw, &recs, &overran);
		KUNIT_EXPECT_EQ_MSG(test, n, 3, "sub %u: 3 written", nr);
		KUNIT_EXPECT_TRUE_MSG(test, !overran, "sub %u: 3 overran", nr);
		KUNIT_EXPECT_TRUE_MSG(test, recs == buf, "sub %u: half 0", nr);
		hw.index = hw.max + rec;
		n = ds_staging_take(&st, &hw, &recs, &overran);
		KUNIT_EXPECT_EQ_MSG(test, n, nr, "sub %u: index past max", nr);
		KUNIT_EXPECT_TRUE_MSG(test, overran, "sub %u: full, not overran",
				      nr);
		KUNIT_EXPECT_TRUE_MSG(test, recs == buf + nr, "sub %u: half 1",
				      nr);
		KUNIT_EXPECT_EQ_MSG(test, hw.base, ds_test_addr(buf),
				    "sub %u: back to half 0", nr);
	}
}

/*
 * Records staged together (a KERNEL record and its detail) go into the
 * sub-buffer together or, where only some would fit, not at all: a record
 * never reaches a stream without its details.  Not at all is a loss, which
 * the drain reports.
 */
static void ds_test_staging_append_whole(struct kunit *test)
{
	static const struct bts_record pair[] = {
		DETAIL(BTS_ABI_X86_64, 39, 1),
		STAGED(BTS_ENTRY_SYSCALL, 0, U(0x122), U(0x120)),
	};
	const u32 nr = DS_STAGING_SLACK + 1;
	const u64 rec = sizeof(struct bts_record);
	struct bts_record *buf = ds_test_records(test, 2 * nr);
	const struct bts_record *recs;
	struct ds_bts_area hw = {};
	struct ds_staging st;
	unsigned int left;
	bool overran;
	u32 taken;

	ds_staging_init(&st, buf, nr, DS_STAGING_SLACK);
	for (left = 0; left <= 3; left++) {
		u64 at;

		ds_staging_arm(&st, &hw);
		at = hw.max - left * rec;
		hw.index = at;
		ds_staging_append(&st, &hw, pair, ARRAY_SIZE(pair));
		if (left < ARRAY_SIZE(pair)) {
			KUNIT_EXPECT_EQ_MSG(test, hw.index, at,
					    "room for %u: staged anyway", left);
			taken = ds_staging_take(&st, &hw, &recs, &overran);
			KUNIT_EXPECT_TRUE_MSG(test, overran,
					      "room for %u: dropped unreported",
					      left);
			KUNIT_EXPECT_EQ_MSG(test, taken, nr - left,
					    "room for %u: the records before",
					    left);
			continue;
		}
		KUNIT_EXPECT_EQ_MSG(test, hw.index, at + sizeof(pair),
				    "room for %u: not staged", left);
		/* (A sub-buffer filled exactly counts as overrun.) */
		ds_staging_take(&st, &hw, &recs, &overran);
		KUNIT_EXPECT_TRUE_MSG(test, overran == (left == ARRAY_SIZE(pair)),
				      "room for %u: a loss reported", left);
		ds_test_expect_records(test, "staged pair",
				       (struct bts_record *)(unsigned long)at,
				       ARRAY_SIZE(pair), pair,
				       ARRAY_SIZE(pair));
	}
}

/*
 * The fake hardware follows the SDM, as far as the cases below rely on it:
 * they are only as good as the model.
 */
static void ds_test_hw_model(struct kunit *test)
{
	static const u64 off[] = {
		0, DS_DEBUGCTL_TR, DS_DEBUGCTL_BTS,
		DS_DEBUGCTL_TR | DS_DEBUGCTL_BTINT | DS_DEBUGCTL_BTS_OFF_USR,
		DS_DEBUGCTL_BTS | DS_DEBUGCTL_BTINT | DS_DEBUGCTL_BTS_OFF_OS,
	};
	static const struct bts_record mix[] = {
		REC(U(0x10), U(0x20)),		/* user */
		REC(U(0x30), K_SYSCALL),	/* entry: taken at CPL 3 */
		REC(K(0x10), K(0x20)),		/* kernel */
		REC(K(0x30), U(0x40)),		/* return: at CPL 0 */
	};
	const u32 nr = DS_STAGING_SLACK + 4, thr = 4;
	const u64 rec = sizeof(struct bts_record);
	struct bts_record *mem = ds_test_records(test, 2 * nr);
	struct bts_record *t = ds_test_records(test, 3 * nr);
	struct ds_test_cpu cpu;
	struct ds_staging st;
	unsigned int i, pmi_at = 0;

	ds_staging_init(&st, mem, nr, DS_STAGING_SLACK);
	for (i = 0; i < 3 * nr; i++)
		t[i] = (struct bts_record)REC(U(i * 0x10), U(i * 0x10 + 8));

	/* Nothing without both TR and BTS. */
	for (i = 0; i < ARRAY_SIZE(off); i++) {
		cpu = (struct ds_test_cpu){ .ds_cpl = true, .mem = mem,
					    .mem_nr = 2 * nr };
		ds_staging_arm(&st, &cpu.hw);
		ds_test_wrmsr(&cpu, off[i]);
		ds_test_cpu_branch(&cpu, &mix[0]);
		ds_test_cpu_branch(&cpu, &mix[3]);
		KUNIT_EXPECT_EQ_MSG(test, cpu.written, 0, "DEBUGCTL %u",
				    (unsigned int)off[i]);
		KUNIT_EXPECT_EQ(test, cpu.hw.index, cpu.hw.base);
	}

	/* The filters go by the CPL the branch is taken at. */
	for (i = 0; i < 3; i++) {
		static const u64 filter[] = {
			0, DS_DEBUGCTL_BTS_OFF_OS, DS_DEBUGCTL_BTS_OFF_USR
		};
		static const struct bts_record *const want[] = {
			mix, mix, mix + 2
		};
		static const u32 n_want[] = { 4, 2, 2 };
		unsigned int j;

		cpu = (struct ds_test_cpu){ .ds_cpl = true, .mem = mem,
					    .mem_nr = 2 * nr };
		ds_staging_arm(&st, &cpu.hw);
		ds_test_wrmsr(&cpu, DS_TEST_TRACING | filter[i]);
		for (j = 0; j < ARRAY_SIZE(mix); j++)
			ds_test_cpu_branch(&cpu, &mix[j]);
		ds_test_expect_records(test, "filtered by CPL", mem,
				       cpu.written, want[i], n_want[i]);
		KUNIT_EXPECT_EQ(test, cpu.hw.index,
				cpu.hw.base + n_want[i] * rec);
	}

	/* No filter bits on a CPU without DS-CPL: the WRMSR faults. */
	cpu = (struct ds_test_cpu){ .mem = mem, .mem_nr = 2 * nr };
	ds_test_wrmsr(&cpu, DS_TEST_TRACING);
	ds_test_wrmsr(&cpu, DS_TEST_TRACING | DS_DEBUGCTL_BTS_OFF_OS);
	ds_test_wrmsr(&cpu, DS_TEST_TRACING | DS_DEBUGCTL_BTS_OFF_USR);
	KUNIT_EXPECT_EQ(test, cpu.gp, 2);
	KUNIT_EXPECT_EQ(test, cpu.debugctl, DS_TEST_TRACING);

	/*
	 * BTINT: one PMI, when the index reaches the threshold, then the
	 * buffer fills up and the rest is dropped.
	 */
	for (i = 0; i < 2; i++) {
		unsigned int j;

		cpu = (struct ds_test_cpu){ .mem = mem, .mem_nr = 2 * nr,
					    .pmi_delay = i ? 3 * nr : 0 };
		ds_staging_arm(&st, &cpu.hw);
		ds_test_wrmsr(&cpu, DS_TEST_TRACING);
		for (j = 0; j < nr + 5; j++)
			if (ds_test_cpu_branch(&cpu, &t[j]))
				pmi_at = j + 1;
		KUNIT_EXPECT_EQ(test, cpu.pmis, 1);
		KUNIT_EXPECT_EQ(test, pmi_at, thr);
		KUNIT_EXPECT_EQ(test, (u32)cpu.pmi_raised, i);
		KUNIT_EXPECT_EQ(test, cpu.written, nr);
		KUNIT_EXPECT_EQ(test, cpu.dropped, 5);
		KUNIT_EXPECT_EQ(test, cpu.hw.index, cpu.hw.max);
		ds_test_expect_records(test, "BTINT, full", mem, nr, t, nr);
	}

	/* Without BTINT: no PMI, and the buffer wraps around. */
	cpu = (struct ds_test_cpu){ .mem = mem, .mem_nr = 2 * nr };
	ds_staging_arm(&st, &cpu.hw);
	ds_test_wrmsr(&cpu, DS_TEST_ON);
	for (i = 0; i < 2 * nr + 3; i++)
		KUNIT_EXPECT_TRUE_MSG(test, !ds_test_cpu_branch(&cpu, &t[i]),
				      "a PMI without BTINT");
	KUNIT_EXPECT_EQ(test, cpu.pmis + cpu.dropped, 0);
	KUNIT_EXPECT_EQ(test, cpu.written, 2 * nr + 3);
	KUNIT_EXPECT_EQ(test, cpu.hw.index, cpu.hw.base + 3 * rec);
	ds_test_expect_records(test, "wrapped, newest", mem, 3, t + 2 * nr, 3);
	ds_test_expect_records(test, "wrapped, oldest", mem + 3, nr - 3,
			       t + nr + 3, nr - 3);
	KUNIT_EXPECT_EQ(test, cpu.wild, 0);
}

/* One consumer of each kind, alone on the CPU. */
static void ds_test_hw_one_consumer(struct kunit *test)
{
	static const struct ds_test_consumer con[] = {
		{ DS_PRIV_USER, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_KERNEL, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_ALL, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_USER, DS_TEST_LAST, 17 },
		{ DS_PRIV_KERNEL, DS_TEST_LAST, 17 },
		{ DS_PRIV_ALL, DS_TEST_LAST, 17 },
		{ DS_PRIV_USER, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
		{ DS_PRIV_KERNEL, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
	};
	struct ds_test_rig *rig = ds_test_rig_alloc(test);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(con); i++)
		ds_test_hw_sweep(rig, &con[i], 1);
}

/*
 * Two consumers: agreeing ones let the hardware filter (with DS-CPL),
 * others make it write everything.
 */
static void ds_test_hw_two_consumers(struct kunit *test)
{
	static const struct ds_test_consumer con[][2] = {
		{ { DS_PRIV_USER, DS_TEST_LAST, 9 },
		  { DS_PRIV_USER, DS_TEST_AT_END, DS_TEST_WHOLE } },
		{ { DS_PRIV_KERNEL, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
		  { DS_PRIV_KERNEL, DS_TEST_LAST, 33 } },
		{ { DS_PRIV_USER, DS_TEST_AT_END, DS_TEST_WHOLE },
		  { DS_PRIV_KERNEL, DS_TEST_AT_END, DS_TEST_WHOLE } },
		{ { DS_PRIV_ALL, DS_TEST_LAST, 50 },
		  { DS_PRIV_USER, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP } },
	};
	struct ds_test_rig *rig = ds_test_rig_alloc(test);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(con); i++)
		ds_test_hw_sweep(rig, con[i], ARRAY_SIZE(con[i]));
}

/*
 * Five and more consumers of mixed kinds, among them continuous streams
 * too small for the trace, which must report exactly what they lost.
 */
static void ds_test_hw_many_consumers(struct kunit *test)
{
	static const struct ds_test_consumer mixed[] = {
		{ DS_PRIV_USER, DS_TEST_LAST, 9 },
		{ DS_PRIV_KERNEL, DS_TEST_LAST, 33 },
		{ DS_PRIV_ALL, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_USER, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
		{ DS_PRIV_KERNEL, DS_TEST_AT_END, 20 },
		{ DS_PRIV_ALL, DS_TEST_LAST, 2 },
		{ DS_PRIV_USER, DS_TEST_AT_END, 2 },
		{ DS_PRIV_ALL, DS_TEST_AT_END, 100 },
	};
	static const struct ds_test_consumer user[] = {
		{ DS_PRIV_USER, DS_TEST_LAST, 5 },
		{ DS_PRIV_USER, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_USER, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
		{ DS_PRIV_USER, DS_TEST_AT_END, 7 },
		{ DS_PRIV_USER, DS_TEST_LAST, 64 },
	};
	static const struct ds_test_consumer kernel[] = {
		{ DS_PRIV_KERNEL, DS_TEST_AT_END, 30 },
		{ DS_PRIV_KERNEL, DS_TEST_LAST, 3 },
		{ DS_PRIV_KERNEL, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_KERNEL, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
		{ DS_PRIV_KERNEL, DS_TEST_LAST, DS_TEST_WHOLE },
		{ DS_PRIV_KERNEL, DS_TEST_AT_END, 2 },
	};
	struct ds_test_rig *rig = ds_test_rig_alloc(test);

	ds_test_hw_sweep(rig, mixed, ARRAY_SIZE(mixed));
	ds_test_hw_sweep(rig, user, ARRAY_SIZE(user));
	ds_test_hw_sweep(rig, kernel, ARRAY_SIZE(kernel));
}

/*
 * One run of ds_test_hw_pmi_count(): @len 0 ends the trace right after a
 * PMI emptied the sub-buffer, 1 one record short of the next PMI, 2 on it.
 */
static void ds_test_hw_pmi_one(struct ds_test_rig *rig,
			       const struct ds_test_consumer *con,
			       u32 nr_sub, u32 pmi_delay, unsigned int len)
{
	u32 thr = nr_sub - DS_STAGING_SLACK, c = thr + pmi_delay;
	u32 nr = (DS_TEST_TRACE_MAX - 2 * c) / c * c;
	char what[96];

	nr += len ? thr - 2 + len : 0;
	/* Unstaged: the arithmetic of late PMIs counts the hardware's. */
	ds_test_make_trace(rig->trace, nr, false, DS_TEST_END_ANY,
			   0x2545f4914f6cdd1dULL + nr, false);
	snprintf(what, sizeof(what),
		 "priv %u, sub-buffer %u, PMI %u late, %u records",
		 con->priv, nr_sub, pmi_delay, nr);
	ds_test_hw_run(rig, con, 2, true, nr_sub, pmi_delay, nr, what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.dropped, 0,
			    "%s: within the slack", what);
	if (con->priv == DS_PRIV_ALL && thr == 1 && !pmi_delay)
		KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.pmis, nr,
				    "%s: a PMI at every record", what);
	ds_test_rig_check(rig, rig->trace, nr, what);
}

/*
 * Threshold PMIs, many of them: one per T records of the sub-buffer, or
 * per T + d when the handler comes d records late, up to DS_STAGING_SLACK
 * late without a record lost; and traces that end just short of a PMI, on
 * one, and right after the handler emptied the sub-buffer.
 */
static void ds_test_hw_pmi_count(struct kunit *test)
{
	static const struct ds_test_consumer sets[][2] = {
		{ { DS_PRIV_ALL, DS_TEST_AT_END, DS_TEST_WHOLE },
		  { DS_PRIV_USER, DS_TEST_LAST, 20 } },
		{ { DS_PRIV_USER, DS_TEST_AT_END, DS_TEST_WHOLE },
		  { DS_PRIV_USER, DS_TEST_LAST, 20 } },
	};
	/* Later than this, the sub-buffer fills: ds_test_hw_late_pmi(). */
	static const u32 delays[] = {
		0, 1, DS_STAGING_SLACK / 2, DS_STAGING_SLACK - 1
	};
	struct ds_test_rig *rig = ds_test_rig_alloc(test);
	unsigned int set, sub, d, len;

	for (set = 0; set < ARRAY_SIZE(sets); set++)
		for (sub = 0; sub < ARRAY_SIZE(ds_test_subs); sub++)
			for (d = 0; d < ARRAY_SIZE(delays); d++)
				for (len = 0; len < 3; len++)
					ds_test_hw_pmi_one(rig, sets[set],
							   ds_test_subs[sub],
							   delays[d], len);
}

/*
 * A PMI handled DS_STAGING_SLACK records late or later: the sub-buffer
 * fills, and the hardware drops what does not fit.  The streams hold what
 * it kept, exactly, and a BTS_LOST_OVERRUN record where each full
 * sub-buffer ended; the take cannot tell whether a record came after the
 * last that fit (exactly DS_STAGING_SLACK late, none did).
 */
static void ds_test_hw_late_pmi(struct kunit *test)
{
	static const struct ds_test_consumer con[] = {
		{ DS_PRIV_ALL, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_ALL, DS_TEST_LAST, 40 },
		{ DS_PRIV_USER, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
		{ DS_PRIV_KERNEL, DS_TEST_AT_END, 30 },
	};
	static const u32 delays[] = {
		DS_STAGING_SLACK, DS_STAGING_SLACK + 1, DS_STAGING_SLACK + 5,
		3 * DS_STAGING_SLACK
	};
	static const u32 subs[] = { DS_STAGING_SLACK + 1, 40 };
	const struct bts_record overrun = {
		.from = BTS_PSEUDO(BTS_PSEUDO_LOST, BTS_LOST_OVERRUN),
	};
	struct ds_test_rig *rig = ds_test_rig_alloc(test);
	struct bts_record *kept = ds_test_records(test, DS_TEST_TRACE_MAX);
	u32 *cuts = kunit_kcalloc(test, DS_TEST_TRACE_MAX, sizeof(*cuts),
				  GFP_KERNEL);
	u32 *pos = kunit_kcalloc(test, DS_TEST_TRACE_MAX, sizeof(*pos),
				 GFP_KERNEL);
	/* Room in DS_TEST_WHOLE for the records and an overrun each 17. */
	const u32 nr = DS_TEST_TRACE_MAX * 7 / 8;
	unsigned int sub, d, i, j, at, n_kept, n_cuts;
	char what[64];
	u32 n;

	KUNIT_ASSERT_NOT_NULL(test, cuts);
	KUNIT_ASSERT_NOT_NULL(test, pos);
	for (sub = 0; sub < ARRAY_SIZE(subs); sub++) {
		for (d = 0; d < ARRAY_SIZE(delays); d++) {
			u32 c = subs[sub] - DS_STAGING_SLACK + delays[d];

			ds_test_make_trace(rig->trace, nr, true,
					   DS_TEST_END_ANY,
					   0xda942042e4dd58b5ULL * (d + 1) +
					   sub, false);
			snprintf(what, sizeof(what),
				 "sub-buffer %u, PMI %u late", subs[sub],
				 delays[d]);
			ds_test_hw_run(rig, con, ARRAY_SIZE(con), true,
				       subs[sub], delays[d], nr, what);
			KUNIT_EXPECT_EQ_MSG(test, rig->cpu.dropped > 0,
					    delays[d] > DS_STAGING_SLACK,
					    "%s: records dropped", what);

			/*
			 * Of every c records, the first nr_sub fit; the
			 * take after the last of them finds the sub-buffer
			 * full.
			 */
			for (i = 0, n_kept = 0, n_cuts = 0; i < nr; i++) {
				if (i % c < subs[sub])
					kept[n_kept++] = rig->trace[i];
				if (i % c == subs[sub] - 1)
					cuts[n_cuts++] = n_kept;
			}
			KUNIT_EXPECT_EQ_MSG(test, rig->overruns, n_cuts,
					    "%s: overruns found", what);
			for (i = 0; i < rig->nr_con; i++) {
				/* Where each cut falls in the stream. */
				for (j = 0; j < n_cuts; j++)
					pos[j] = ds_test_expected(rig,
								  con[i].priv,
								  kept, cuts[j],
								  rig->want) + j;
				n = ds_test_expected(rig, con[i].priv, kept,
						     n_kept, rig->want);
				for (j = 0; j < n_cuts; j++, n++) {
					for (at = n; at > pos[j]; at--)
						rig->want[at] =
							rig->want[at - 1];
					rig->want[pos[j]] = overrun;
				}
				ds_test_expect_consumer(rig, i, rig->want, n,
							what);
			}
		}
	}
}

/*
 * One run of ds_test_hw_marker_between_batches(): a marker after the first
 * @cut records of a trace of @nr.
 */
static void ds_test_hw_marker_one(struct ds_test_rig *rig,
				  const struct ds_test_consumer *con,
				  unsigned int nr_con, bool ds_cpl,
				  unsigned int cut, unsigned int nr)
{
	const struct bts_record marker = DS_TEST_APPENDED;
	unsigned int i, at;
	u32 n, before;
	char what[80];

	ds_test_make_trace(rig->trace, nr, cut & 1, DS_TEST_END_ANY,
			   0x8badf00dULL + cut, true);
	ds_test_rig_start(rig, con, nr_con, ds_cpl, DS_STAGING_SLACK + 4, 0);
	ds_test_rig_run(rig, rig->trace, cut);
	ds_test_drain(rig);
	for (i = 0; i < nr_con; i++)
		ds_stream_append(&rig->s[i], &marker);
	ds_test_rig_run(rig, rig->trace + cut, nr - cut);
	ds_test_rig_stop(rig);

	snprintf(what, sizeof(what), "%u consumers, DS-CPL %d, marker after %u",
		 nr_con, ds_cpl, cut);
	ds_test_rig_check_taken(rig, what);
	for (i = 0; i < nr_con; i++) {
		before = ds_test_expected(rig, con[i].priv, rig->trace, cut,
					  rig->want);
		n = ds_test_expected(rig, con[i].priv, rig->trace, nr,
				     rig->want);
		for (at = n; at > before; at--)
			rig->want[at] = rig->want[at - 1];
		rig->want[before] = marker;
		ds_test_expect_consumer(rig, i, rig->want, n + 1, what);
	}
}

/*
 * A marker appended between two batches comes exactly between them in
 * every stream: after all the first batch made of it, before anything of
 * the second, including the crossing the first left open.
 */
static void ds_test_hw_marker_between_batches(struct kunit *test)
{
	static const struct ds_test_consumer mixed[] = {
		{ DS_PRIV_USER, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_KERNEL, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_ALL, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_USER, DS_TEST_LAST, 60 },
		{ DS_PRIV_KERNEL, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
		{ DS_PRIV_ALL, DS_TEST_AT_END, 40 },
	};
	static const struct ds_test_consumer user[] = {
		{ DS_PRIV_USER, DS_TEST_AT_END, DS_TEST_WHOLE },
		{ DS_PRIV_USER, DS_TEST_LAST, 60 },
		{ DS_PRIV_USER, DS_TEST_EACH_DRAIN, DS_TEST_KEEP_UP },
	};
	struct ds_test_rig *rig = ds_test_rig_alloc(test);
	const unsigned int nr = 200;
	unsigned int cpl, cut, step;

	/* Every cut near the ends, some in between. */
	for (cpl = 0; cpl < 2; cpl++) {
		for (cut = 0; cut <= nr; cut += step) {
			ds_test_hw_marker_one(rig, mixed, ARRAY_SIZE(mixed),
					      cpl, cut, nr);
			ds_test_hw_marker_one(rig, user, ARRAY_SIZE(user),
					      cpl, cut, nr);
			step = cut < 8 || cut + 23 > nr - 8 ? 1 : 23;
		}
	}
}

/*
 * One run of ds_test_hw_ring(): @nr branches, with a task switch written
 * into the ring after the first @cut, as __ds_switch_to() does.
 */
static void ds_test_hw_ring_one(struct ds_test_rig *rig, u32 nr_sub,
				u32 size, unsigned int nr, unsigned int cut)
{
	const struct ds_test_consumer con = { DS_PRIV_ALL, DS_TEST_LAST, size };
	const struct bts_record sw = {
		.from = BTS_PSEUDO(BTS_PSEUDO_SWITCH, 0), .to = 77, .flags = 70,
	};
	const u64 rec = sizeof(struct bts_record);
	const struct bts_record *segs[2];
	u32 nrs[2], kept, i;
	u64 ctl;
	char what[64];

	/* A hardware ring is a CPU's lone consumer: nothing is staged. */
	ds_test_make_trace(rig->trace, nr, nr & 1, DS_TEST_END_ANY,
			   0x5deece66dULL + nr, false);
	ds_test_rig_start(rig, &con, 1, true, nr_sub, 0);

	/* What ds_unpause() does for a lone flight recorder. */
	ds_test_wrmsr(&rig->cpu, 0);
	ds_staging_arm_ring(&rig->st, &rig->cpu.hw);
	ctl = ds_debugctl_for(DS_PRIV_ALL, true) & ~DS_DEBUGCTL_BTINT;
	ds_test_wrmsr(&rig->cpu, ctl);
	ds_test_rig_run(rig, rig->trace, cut);
	ds_test_wrmsr(&rig->cpu, 0);
	ds_staging_ring_append(&rig->st, &rig->cpu.hw, &sw);
	ds_test_wrmsr(&rig->cpu, ctl);
	ds_test_rig_run(rig, rig->trace + cut, nr - cut);

	/* The consumer looks: ds_ring_leave(). */
	ds_test_wrmsr(&rig->cpu, 0);
	ds_staging_take_ring(&rig->st, &rig->cpu.hw, segs, nrs);
	ds_splay(segs[0], nrs[0], rig->streams, 1);
	ds_splay(segs[1], nrs[1], rig->streams, 1);
	ds_test_rig_read(rig, DS_TEST_LAST);

	snprintf(what, sizeof(what), "ring of %u, stream of %u, %u records",
		 2 * nr_sub, size, nr);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.pmis + rig->cpu.dropped, 0,
			    "%s: a ring never interrupts nor drops", what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.written, nr, "%s", what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.gp + rig->cpu.wild, 0,
			    "%s: DEBUGCTL or DS save area wrong", what);

	/* The hardware kept the newest 2 * nr_sub of branches and switch. */
	for (i = 0; i < nr; i++)
		rig->want[i + (i >= cut)] = rig->trace[i];
	rig->want[cut] = sw;
	kept = min(nr + 1, 2 * nr_sub);
	KUNIT_EXPECT_EQ_MSG(rig->test, nrs[0] + nrs[1], kept,
			    "%s: records in the ring", what);
	ds_test_expect_consumer(rig, 0, rig->want + nr + 1 - kept, kept, what);

	/* Back to sub-buffers, the first one empty. */
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.hw.base,
			    ds_test_addr(rig->staging), "%s: base", what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.hw.index, rig->cpu.hw.base,
			    "%s: index", what);
	KUNIT_EXPECT_EQ_MSG(rig->test, rig->cpu.hw.max,
			    rig->cpu.hw.base + nr_sub * rec, "%s: max", what);
}

/*
 * A lone flight recorder of both sides has the hardware write the whole
 * staging buffer as a ring, without BTINT: no PMI, the oldest records
 * overwritten.  Taking the ring must give the stream the newest records
 * in order, however often the hardware went round, or not at all.
 */
static void ds_test_hw_ring(struct kunit *test)
{
	static const u32 subs[] = { DS_STAGING_SLACK + 1, 40 };
	struct ds_test_rig *rig = ds_test_rig_alloc(test);
	unsigned int sub, s, l;

	for (sub = 0; sub < ARRAY_SIZE(subs); sub++) {
		u32 r = 2 * subs[sub];
		const u32 sizes[] = { 2, subs[sub], r };
		/* Records written: none, about full, 5 times round. */
		const u32 lens[] = { 0, 1, r - 2, r - 1, r, r + 1, 5 * r + 3 };

		for (s = 0; s < ARRAY_SIZE(sizes); s++) {
			for (l = 0; l < ARRAY_SIZE(lens); l++) {
				u32 len = lens[l];

				ds_test_hw_ring_one(rig, subs[sub], sizes[s],
						    len, len / 2);
				/* The switch in the last slot, if it fits. */
				ds_test_hw_ring_one(rig, subs[sub], sizes[s],
						    len, min(len, r - 1));
			}
		}
	}
}

/*
 * Hardware may leave the ring's index at the absolute maximum after writing
 * the last slot, wrapping only at the next record: the ring is then full,
 * oldest record at the base, and the next write goes to the base.
 */
static void ds_test_ring_index_at_max(struct kunit *test)
{
	const u32 nr = DS_STAGING_SLACK + 1, r = 2 * nr;
	struct bts_record *buf = ds_test_records(test, r);
	struct bts_record sw = {
		.from = BTS_PSEUDO(BTS_PSEUDO_SWITCH, 0), .to = 7, .flags = 7,
	};
	const struct bts_record *segs[2];
	struct ds_bts_area hw;
	struct ds_staging st;
	u32 nrs[2], i;

	ds_staging_init(&st, buf, nr, DS_STAGING_SLACK);
	ds_staging_arm_ring(&st, &hw);
	for (i = 0; i < r; i++)
		buf[i] = (struct bts_record)REC(U(0x1000 + i), U(0x2000 + i));
	hw.index = hw.max;

	ds_staging_ring_append(&st, &hw, &sw);
	KUNIT_EXPECT_EQ_MSG(test, buf[0].from, sw.from,
			    "append after a full ring goes to the base");
	KUNIT_EXPECT_EQ(test, hw.index, hw.base + sizeof(sw));

	hw.index = hw.max;
	ds_staging_take_ring(&st, &hw, segs, nrs);
	KUNIT_EXPECT_EQ_MSG(test, nrs[0], r, "a full ring, in one run");
	KUNIT_EXPECT_EQ(test, nrs[1], 0);
	KUNIT_EXPECT_TRUE_MSG(test, segs[0] == buf, "oldest at the base");
}

/*
 * A continuous stream handed new storage keeps its records in the old
 * storage, oldest at @first, and goes on in the new one without losing a
 * record or its state.
 */
static void ds_test_stream_swap(struct kunit *test)
{
	const u32 size = 8;
	struct bts_record *in = ds_test_records(test, 20);
	struct bts_record *a = ds_test_records(test, size);
	struct bts_record *b = ds_test_records(test, size);
	struct bts_record out[8], *old;
	struct ds_stream s, *streams[] = { &s };
	u32 first, count, i, n;

	for (i = 0; i < 20; i++)
		in[i] = (struct bts_record)REC(U(i * 0x10), U(i * 0x10 + 8));
	ds_stream_init(&s, a, size, DS_PRIV_USER, DS_MODE_CONTINUOUS);
	/* Wrap once: 5 in, 3 consumed, 5 more: slots 3..7, 0..1 hold 7. */
	ds_splay(in, 5, streams, 1);
	KUNIT_EXPECT_EQ(test, ds_stream_consume(&s, out, 3), 3);
	ds_splay(in + 5, 5, streams, 1);

	old = ds_stream_swap(&s, b, &first, &count);
	KUNIT_EXPECT_TRUE_MSG(test, old == a, "the old storage comes back");
	KUNIT_EXPECT_EQ(test, first, 3);
	KUNIT_EXPECT_EQ(test, count, 7);
	for (i = 0; i < count; i++)
		out[i] = old[(first + i) % size];
	ds_test_expect_records(test, "records left in the old storage", out,
			       count, in + 3, 7);

	KUNIT_EXPECT_EQ(test, ds_stream_pending(&s), 0);
	ds_splay(in + 10, 8, streams, 1);
	n = ds_stream_consume(&s, out, 8);
	ds_test_expect_records(test, "the new storage, full, nothing lost",
			       out, n, in + 10, 8);
	KUNIT_EXPECT_EQ(test, s.lost_total, 0);
}

/**
 * struct ds_test_model - what a stream should take, record by record
 * @priv:      enum ds_priv
 * @key:       the stream's marker key, 0 for none
 * @maps:      it takes address-space changes
 * @away:      kernel-only: the trace is in user mode, since @away_from
 * @away_from: where it crossed, 0 if unseen
 * @for_us:    the marker being staged names @key
 * @n:         records at @out
 * @out:       what the stream should hold
 *
 * The rules of ds_splay()'s kernel-doc and struct ds_stream, one record at
 * a time: the reference ds_test_splay_model() holds the splay's runs to.
 */
struct ds_test_model {
	enum ds_priv		priv;
	u32			key;
	bool			maps;
	bool			away;
	u64			away_from;
	bool			for_us;
	u32			n;
	struct bts_record	*out;
};

static void ds_test_model_put(struct ds_test_model *m, u64 from, u64 to,
			      u64 flags)
{
	m->out[m->n++] = (struct bts_record){
		.from = from, .to = to, .flags = flags,
	};
}

/* A user address, or 0 for one of the kernel's: "not seen". */
static u64 ds_test_user_addr(u64 addr)
{
	return ds_test_kernel_addr(addr) ? 0 : addr;
}

static void ds_test_model_pseudo(struct ds_test_model *m,
				 const struct bts_record *r)
{
	u32 type = BTS_PSEUDO_TYPE(r->from), what = type;
	bool user = m->priv == DS_PRIV_USER, take;

	if (type == DS_STAGED_RECIPIENT) {
		if (!BTS_PSEUDO_ARG(r->from))
			m->for_us = false;
		if (m->key && r->to == m->key)
			m->for_us = true;
		return;
	}
	if (type == BTS_PSEUDO_DETAIL)
		what = BTS_DETAIL_TYPE(r->from);
	switch (what) {
	case BTS_PSEUDO_KERNEL:
		take = user;
		break;
	case BTS_PSEUDO_MARKER:
		take = m->for_us;
		break;
	case BTS_PSEUDO_MAP:
		take = m->maps;
		break;
	default:
		take = m->priv == DS_PRIV_ALL;
		break;
	}
	if (!take)
		return;
	if (user && (type == BTS_PSEUDO_KERNEL || type == BTS_PSEUDO_MAP))
		ds_test_model_put(m, r->from, ds_test_user_addr(r->to),
				  ds_test_user_addr(r->flags));
	else if (user && type == BTS_PSEUDO_MARKER)
		ds_test_model_put(m, r->from, ds_test_user_addr(r->to),
				  r->flags);
	else
		ds_test_model_put(m, r->from, r->to, r->flags);
}

/* A kernel-only stream's record of a stretch in user mode. */
static void ds_test_model_back(struct ds_test_model *m, u64 reentry_to)
{
	ds_test_model_put(m, BTS_PSEUDO(BTS_PSEUDO_USER, 0), reentry_to,
			  m->away_from);
	m->away = false;
}

static void ds_test_model_record(struct ds_test_model *m,
				 const struct bts_record *r)
{
	bool k_from = ds_test_kernel_addr(r->from);
	bool k_to = ds_test_kernel_addr(r->to);

	if (BTS_RECORD_IS_PSEUDO(r->from)) {
		ds_test_model_pseudo(m, r);
		return;
	}
	if (m->priv == DS_PRIV_ALL || (m->priv == DS_PRIV_USER &&
				       !k_from && !k_to)) {
		ds_test_model_put(m, r->from, r->to, r->flags);
		return;
	}
	if (m->priv == DS_PRIV_USER)
		return;
	if (k_from) {
		if (m->away)
			ds_test_model_back(m, 0);
		if (k_to) {
			ds_test_model_put(m, r->from, r->to, r->flags);
		} else {
			m->away = true;
			m->away_from = r->from;
		}
	} else if (k_to) {
		if (!m->away)
			m->away_from = 0;
		ds_test_model_back(m, r->to);
	} else if (!m->away) {
		m->away = true;
		m->away_from = 0;
	}
}

/* Either side's address, @rnd's pick. */
static u64 ds_test_any_addr(u64 rnd)
{
	return rnd & 1 ? K(rnd >> 4 & 0xff0) : U(rnd >> 4 & 0xff0);
}

/*
 * Append a run of one kind of record at @t, at most @room: the branches of
 * either side in runs long and short, crossings, a non-canonical source,
 * and what ds.c stages (kernel time with either side's addresses, a
 * marker for one to three keys, a map) or a ring's switch record.
 */
static unsigned int ds_test_model_run(struct bts_record *t,
				      unsigned int room, u64 *seed)
{
	u64 rnd = ds_test_rand(seed), a = ds_test_rand(seed);
	unsigned int n = 0, i, len = 1 + (rnd >> 8) % 24, keys;

	switch (rnd % 12) {
	case 0 ... 3:
		for (; n < min(len, room); n++, a += 0x40)
			t[n] = (struct bts_record)REC(U(a & 0xfff0),
						      U(a >> 16 & 0xfff0));
		break;
	case 4 ... 5:
		for (; n < min(len, room); n++, a += 0x40)
			t[n] = (struct bts_record)REC(K(a & 0xfff0),
						      K(a >> 16 & 0xfff0));
		break;
	case 6:
		t[n++] = (struct bts_record)REC(U(a & 0xfff0), K_SYSCALL);
		break;
	case 7:
		t[n++] = (struct bts_record)REC(K(a & 0xfff0), U(a >> 16 &
								  0xfff0));
		break;
	case 8:
		/* Sign bit alone: no kernel address, no user one either. */
		t[n++] = (struct bts_record)REC(0x8000123400000000ULL | a >> 40,
						ds_test_any_addr(a));
		break;
	case 9:
		if (room < 2)
			break;
		t[n++] = (struct bts_record)DETAIL(a & 3, a >> 8, a >> 16);
		t[n++] = (struct bts_record)
			STAGED(BTS_ENTRY_SYSCALL, 0, ds_test_any_addr(a >> 2),
			       ds_test_any_addr(a >> 3));
		break;
	case 10:
		keys = 1 + (a >> 20) % 3;
		if (room < keys + 3)
			break;
		for (i = 0; i < keys; i++)
			t[n++] = (struct bts_record)
				DS_RECIPIENT(i, 1 + (a >> (24 + 2 * i)) % 4);
		t[n++] = (struct bts_record)MARKER_PAYLOAD(0, a, ~a);
		t[n++] = (struct bts_record)MARKER(ds_test_any_addr(a >> 5));
		break;
	default:
		if (room < 2)
			break;
		if (a & 2) {
			t[n++] = (struct bts_record)
				MAP_DETAIL(BTS_DETAIL_MAP_FILE, 0, a, ~a);
			t[n++] = (struct bts_record)
				MAP(BTS_MAP_EXEC, ds_test_any_addr(a >> 3),
				    ds_test_any_addr(a >> 5));
		} else {
			t[n++] = (struct bts_record)
				PSEUDO(BTS_PSEUDO_SWITCH, 0, a >> 48, a >> 40);
		}
		break;
	}
	return n;
}

#define DS_TEST_MODEL_RECORDS	3000
#define DS_TEST_MODEL_RING	64U

/*
 * ds_splay() of random traces, in batches cut anywhere, into eight streams
 * at once (each kind, ring and continuous, with markers for different keys
 * and maps or not) against the model: every record of every stream.
 */
static void ds_test_splay_model(struct kunit *test)
{
	static const struct {
		enum ds_priv	priv;
		enum ds_mode	mode;
		u32		key;
		bool		maps;
	} kinds[] = {
		{ DS_PRIV_USER, DS_MODE_CONTINUOUS, 1, true },
		{ DS_PRIV_USER, DS_MODE_RING, 2, false },
		{ DS_PRIV_KERNEL, DS_MODE_CONTINUOUS, 1, false },
		{ DS_PRIV_KERNEL, DS_MODE_RING, 0, true },
		{ DS_PRIV_ALL, DS_MODE_CONTINUOUS, 3, true },
		{ DS_PRIV_ALL, DS_MODE_RING, 0, false },
		{ DS_PRIV_USER, DS_MODE_CONTINUOUS, 0, false },
		{ DS_PRIV_ALL, DS_MODE_RING, 2, true },
	};
	const u32 whole = 2 * DS_TEST_MODEL_RECORDS + 2;
	struct bts_record *trace = ds_test_records(test, DS_TEST_MODEL_RECORDS);
	struct bts_record *got = ds_test_records(test, whole);
	struct ds_test_model *model;
	struct ds_stream *s, *streams[ARRAY_SIZE(kinds)];
	u32 taken[4] = { 0 }, i, k, n, at, round;
	u64 seed = 0x853c49e6748fea9bULL;
	char what[64];

	/* Off the stack, which a kernel's frame limit keeps small. */
	model = kunit_kcalloc(test, ARRAY_SIZE(kinds), sizeof(*model),
			      GFP_KERNEL);
	s = kunit_kcalloc(test, ARRAY_SIZE(kinds), sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, model);
	KUNIT_ASSERT_NOT_NULL(test, s);
	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		model[i].out = ds_test_records(test, whole);
		s[i].buf = ds_test_records(test, whole);
	}
	for (round = 0; round < 8; round++) {
		for (n = 0; n < DS_TEST_MODEL_RECORDS;)
			n += ds_test_model_run(trace + n,
					       DS_TEST_MODEL_RECORDS - n, &seed);
		for (i = 0; i < ARRAY_SIZE(kinds); i++) {
			ds_stream_init(&s[i], s[i].buf, kinds[i].mode ==
				       DS_MODE_RING ? DS_TEST_MODEL_RING : whole,
				       kinds[i].priv, kinds[i].mode);
			s[i].marker_key = kinds[i].key;
			s[i].maps = kinds[i].maps;
			streams[i] = &s[i];
			model[i] = (struct ds_test_model){
				.priv = kinds[i].priv, .key = kinds[i].key,
				.maps = kinds[i].maps, .out = model[i].out,
			};
			for (k = 0; k < n; k++)
				ds_test_model_record(&model[i], &trace[k]);
		}
		/* Batches of 1 to 300: many runs at a time, or few. */
		for (at = 0; at < n; at += k) {
			k = min_t(u32, n - at, 1 + ds_test_rand(&seed) % 300);
			ds_splay(trace + at, k, streams, ARRAY_SIZE(kinds));
		}
		for (i = 0; i < ARRAY_SIZE(kinds); i++) {
			const struct bts_record *want = model[i].out;
			u32 n_want = model[i].n;

			if (kinds[i].mode == DS_MODE_RING) {
				k = ds_stream_read_last(&s[i], got, whole);
				n_want = min(n_want, DS_TEST_MODEL_RING - 1);
				want += model[i].n - n_want;
			} else {
				k = ds_stream_consume(&s[i], got, whole);
			}
			snprintf(what, sizeof(what), "round %u, stream %u",
				 round, i);
			ds_test_expect_records(test, what, got, k, want,
					       n_want);
			for (k = 0; k < model[i].n; k++) {
				u64 from = model[i].out[k].from;

				if (!BTS_RECORD_IS_PSEUDO(from))
					continue;
				taken[0] += BTS_PSEUDO_TYPE(from) ==
					    BTS_PSEUDO_USER;
				taken[1] += BTS_PSEUDO_TYPE(from) ==
					    BTS_PSEUDO_KERNEL;
				taken[2] += BTS_PSEUDO_TYPE(from) ==
					    BTS_PSEUDO_MARKER;
				taken[3] += BTS_PSEUDO_TYPE(from) ==
					    BTS_PSEUDO_MAP;
			}
		}
	}
	/* The traces gave every rule work to do. */
	for (i = 0; i < ARRAY_SIZE(taken); i++)
		KUNIT_EXPECT_GT_MSG(test, taken[i], 100, "pseudo-record kind %u",
				    i);
}

static struct kunit_case ds_core_test_cases[] = {
	KUNIT_CASE(ds_test_all_keeps_every_branch),
	KUNIT_CASE(ds_test_user_time_in_kernel),
	KUNIT_CASE(ds_test_kernel_time_in_user),
	KUNIT_CASE(ds_test_user_crossings_staged),
	KUNIT_CASE(ds_test_user_staged_kernel_ends),
	KUNIT_CASE(ds_test_kernel_ends_in_user),
	KUNIT_CASE(ds_test_kernel_entry_unseen),
	KUNIT_CASE(ds_test_batches_split_anywhere),
	KUNIT_CASE(ds_test_ring_keeps_last_n),
	KUNIT_CASE(ds_test_ring_read_stopped),
	KUNIT_CASE(ds_test_continuous_reports_loss),
	KUNIT_CASE(ds_test_peek_keeps_records),
	KUNIT_CASE(ds_test_continuous_keeps_everything),
	KUNIT_CASE(ds_test_streams_independent),
	KUNIT_CASE(ds_test_splay_model),
	KUNIT_CASE(ds_test_no_address_leaks),
	KUNIT_CASE(ds_test_staged_markers),
	KUNIT_CASE(ds_test_debugctl_for),
	KUNIT_CASE(ds_test_staging_halves),
	KUNIT_CASE(ds_test_staging_append_whole),
	KUNIT_CASE(ds_test_hw_model),
	KUNIT_CASE(ds_test_hw_one_consumer),
	KUNIT_CASE(ds_test_hw_two_consumers),
	KUNIT_CASE(ds_test_hw_many_consumers),
	KUNIT_CASE(ds_test_hw_pmi_count),
	KUNIT_CASE(ds_test_hw_late_pmi),
	KUNIT_CASE(ds_test_hw_marker_between_batches),
	KUNIT_CASE(ds_test_hw_ring),
	KUNIT_CASE(ds_test_ring_index_at_max),
	KUNIT_CASE(ds_test_stream_swap),
	KUNIT_CASE(ds_test_stream_producing),
	{}
};

static struct kunit_suite ds_core_test_suite = {
	.name = "x86_ds_core",
	.test_cases = ds_core_test_cases,
};

kunit_test_suite(ds_core_test_suite);

MODULE_DESCRIPTION("KUnit tests of the x86 Debug Store core");
MODULE_LICENSE("GPL");
