// SPDX-License-Identifier: GPL-2.0
/*
 * --format=pt: one thread's branches as an Intel PT packet stream, written
 * with libipt's encoder, for the tools that read PT (libipt's decoders,
 * with the program's images).
 *
 * PT leaves out what the code says: a conditional branch is one taken or
 * not-taken bit (TNT), a direct jump or call nothing, and only an indirect
 * branch or a return carries its target (TIP, never a compressed return).
 * So the encoder runs through every instruction between two branch
 * records with the program's code, as a PT decoder will: each conditional
 * branch it passes was not taken, the one at the record's source was.
 *
 * A stay in the kernel is what the hardware writes when user-mode tracing
 * stops and starts again: at a system call the instruction itself
 * disables tracing (TIP.PGD, no IP), at an interrupt or exception a FUP
 * says where first; the resume is a TIP.PGE with its address (after a
 * MODE.exec).  Lost records are an overflow packet (OVF) followed by a FUP
 * where the trace goes on.  Where the code does not explain a record
 * (code unknown, or a branch the stream lacks), the same: the stream says
 * the trace overflowed and goes on at the record.
 *
 * A synchronization point (PSB+) starts the stream, every exec (so that a
 * decoder with the new program's image only can start there) and, while
 * tracing is off, every few kilobytes.
 *
 * A PT stream has no thread id: the file holds the first thread the
 * output shows (--tid chooses), and bts-dump says how many records of
 * other threads it left out.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>

#include "print.h"

#define PT_BUF_SIZE	(64U << 10)
/* room for any packet (a PSB's 16 bytes is the longest) */
#define PT_PACKET_MAX	32
/* TNT-8 holds up to 6 bits */
#define TNT_BITS	6
/* a synchronization point (PSB) this often at least, in bytes */
#define PSB_PERIOD	(4U << 10)

enum flow {
	FLOW_OFF,		/* not tracing: a TIP.PGE starts it */
	FLOW_ON,		/* at @ip, which the decoder knows too */
	FLOW_OVF,		/* after an OVF: a FUP says where it goes on */
};

struct pt_state {
	struct pt_encoder *enc;
	u8 buf[PT_BUF_SIZE];
	const struct thread *thread;	/* the one written */
	enum flow flow;
	u64 ip;
	u64 tnt;			/* bits waiting, oldest highest */
	unsigned int ntnt;
	u64 flushed;			/* bytes written out of @buf */
	u64 psb_at;			/* where the last PSB is */
	u64 others;			/* records of other threads left out */
	u64 resyncs;			/* records the code did not explain */
	int failed;			/* a write's errno */
};

static void pt_flush_buf(struct printer *pr, struct pt_state *st)
{
	uint64_t off;

	if (pt_enc_get_offset(st->enc, &off) < 0 || !off)
		return;
	if (fwrite_unlocked(st->buf, 1, off, pr->out) != off)
		st->failed = errno ?: EIO;
	st->flushed += off;
	pt_enc_sync_set(st->enc, 0);
}

static u64 stream_pos(const struct pt_state *st)
{
	uint64_t off = 0;

	pt_enc_get_offset(st->enc, &off);
	return st->flushed + off;
}

static void put_packet(struct printer *pr, struct pt_state *st,
		       const struct pt_packet *p)
{
	uint64_t off;
	int ret;

	if (pt_enc_get_offset(st->enc, &off) >= 0 &&
	    off > PT_BUF_SIZE - PT_PACKET_MAX)
		pt_flush_buf(pr, st);
	ret = pt_enc_next(st->enc, p);
	if (ret < 0)
		errx(1, "libipt: cannot encode a packet: %s",
		     pt_errstr(pt_errcode(ret)));
}

static void put_simple(struct printer *pr, struct pt_state *st,
		       enum pt_packet_type type)
{
	struct pt_packet p = { .type = type };

	put_packet(pr, st, &p);
}

static void flush_tnt(struct printer *pr, struct pt_state *st)
{
	struct pt_packet p = { .type = ppt_tnt_8 };

	if (!st->ntnt)
		return;
	p.payload.tnt.bit_size = st->ntnt;
	p.payload.tnt.payload = st->tnt;
	put_packet(pr, st, &p);
	st->tnt = 0;
	st->ntnt = 0;
}

static void put_tnt(struct printer *pr, struct pt_state *st, bool taken)
{
	st->tnt = st->tnt << 1 | taken;
	if (++st->ntnt == TNT_BITS)
		flush_tnt(pr, st);
}

/* A packet with an IP (0: suppressed), after the TNT bits before it. */
static void put_ip(struct printer *pr, struct pt_state *st,
		   enum pt_packet_type type, u64 ip)
{
	struct pt_packet p = { .type = type };

	flush_tnt(pr, st);
	p.payload.ip.ipc = ip ? pt_ipc_sext_48 : pt_ipc_suppressed;
	p.payload.ip.ip = ip;
	put_packet(pr, st, &p);
}

static void put_mode_exec(struct printer *pr, struct pt_state *st, bool is64)
{
	struct pt_packet p = { .type = ppt_mode };

	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = is64;
	p.payload.mode.bits.exec.csd = !is64;
	put_packet(pr, st, &p);
}

static bool is64_at(struct printer *pr, const struct thread *t, u64 ip)
{
	const struct insn *in = proc_insn(pr->syms, t->proc, ip);

	return !in || in->is64;
}

/* A synchronization point, while tracing is off: nothing to say in it. */
static void put_psb(struct printer *pr, struct pt_state *st)
{
	st->psb_at = stream_pos(st);
	put_simple(pr, st, ppt_psb);
	put_simple(pr, st, ppt_psbend);
}

/* Tracing (re)starts at @ip. */
static void start_at(struct printer *pr, struct pt_state *st,
		     const struct thread *t, u64 ip)
{
	if (st->flow == FLOW_OVF) {
		put_ip(pr, st, ppt_fup, ip);
	} else if (st->flow == FLOW_OFF) {
		put_mode_exec(pr, st, is64_at(pr, t, ip));
		put_ip(pr, st, ppt_tip_pge, ip);
	}
	st->flow = FLOW_ON;
	st->ip = ip;
}

/* The trace cannot go on as the code says: it overflowed, in PT's words. */
static void overflow(struct printer *pr, struct pt_state *st)
{
	flush_tnt(pr, st);
	put_simple(pr, st, ppt_ovf);
	st->flow = FLOW_OVF;
}

/*
 * Run from the current IP to @until as a decoder will: every conditional
 * branch on the way not taken.  False if the code does not lead there.
 */
static bool run_to(struct printer *pr, struct pt_state *st,
		   const struct thread *t, u64 until)
{
	const struct insn *in;
	u64 ip = st->ip;

	while (ip != until) {
		in = proc_insn(pr->syms, t->proc, ip);
		if (!in || (in->form != BRANCH_NONE &&
			    in->form != BRANCH_COND) ||
		    ip - st->ip > MAX_BLOCK)
			return false;
		if (in->form == BRANCH_COND)
			put_tnt(pr, st, false);
		ip += in->len;
	}
	st->ip = ip;
	return true;
}

/* Get to @at, where the trace has the thread: by the code, or else not. */
static void reach(struct printer *pr, struct pt_state *st,
		  const struct thread *t, u64 at)
{
	if (st->flow == FLOW_ON && !run_to(pr, st, t, at)) {
		st->resyncs++;
		overflow(pr, st);
	}
	start_at(pr, st, t, at);
}

/* The output's state; made with the stream's first packets. */
static struct pt_state *pt_state(struct printer *pr)
{
	struct pt_state *st = pr->out_state;
	struct pt_config cfg;

	if (!st) {
		st = xcalloc(1, sizeof(*st));
		pt_config_init(&cfg);
		cfg.begin = st->buf;
		cfg.end = st->buf + sizeof(st->buf);
		st->enc = pt_alloc_encoder(&cfg);
		if (!st->enc)
			errx(1, "libipt: cannot make an encoder");
		pr->out_state = st;
		put_psb(pr, st);
	}
	return st;
}

/* The state if @t is the thread written, else NULL. */
static struct pt_state *state_of(struct printer *pr, const struct thread *t)
{
	struct pt_state *st = pt_state(pr);

	if (!st->thread)
		st->thread = t;
	if (st->thread != t) {
		st->others++;
		return NULL;
	}
	return st;
}

static void pt_branch(struct printer *pr, struct thread *t,
		      const struct branch *b)
{
	struct pt_state *st = state_of(pr, t);
	const struct insn *in;

	if (!st)
		return;
	reach(pr, st, t, b->from);
	in = proc_insn(pr->syms, t->proc, b->from);
	if (in && in->form == BRANCH_COND && in->target == b->to) {
		put_tnt(pr, st, true);
	} else if (in && in->form == BRANCH_INDIRECT) {
		put_ip(pr, st, ppt_tip, b->to);
	} else if (!in || in->form != BRANCH_DIRECT || in->target != b->to) {
		/* Not where its code goes: the record is news to PT. */
		st->resyncs++;
		overflow(pr, st);
		start_at(pr, st, t, b->to);
		return;
	}
	st->ip = b->to;
}

static void pt_kernel(struct printer *pr, struct thread *t,
		      const struct kernel *k)
{
	struct pt_state *st = state_of(pr, t);

	if (!st)
		return;
	if (!k->entry) {
		/* Left the user mode somewhere: that stretch is lost. */
		if (st->flow == FLOW_ON)
			overflow(pr, st);
	} else {
		reach(pr, st, t, k->entry);
		/* An interrupt or a fault: where, before the instruction. */
		if (k->end == k->entry)
			put_ip(pr, st, ppt_fup, k->entry);
		put_ip(pr, st, ppt_tip_pgd, 0);
		st->flow = FLOW_OFF;
	}
	if (st->flow == FLOW_OFF &&
	    (k->how == RESUME_EXEC || stream_pos(st) - st->psb_at >= PSB_PERIOD))
		put_psb(pr, st);
	if (k->resume)
		start_at(pr, st, t, k->resume);
}

static void pt_lost(struct printer *pr, struct thread *t,
		    const struct lost *l)
{
	struct pt_state *st = state_of(pr, t);

	(void)l;
	if (st && st->flow != FLOW_OFF)
		overflow(pr, st);
}

static int pt_finish(struct printer *pr)
{
	struct pt_state *st = pt_state(pr);

	/*
	 * Where the trace ends, tracing stops: a decoder would otherwise run
	 * on through the direct branches after it.
	 */
	if (st->flow == FLOW_ON) {
		put_ip(pr, st, ppt_fup, st->ip);
		put_ip(pr, st, ppt_tip_pgd, 0);
	}
	flush_tnt(pr, st);
	pt_flush_buf(pr, st);
	if (st->others)
		warnx("--format=pt: %llu records of other threads than %u left out (a PT stream is one thread's; choose it with --tid)",
		      (unsigned long long)st->others,
		      st->thread ? st->thread->tid : 0);
	if (st->resyncs)
		warnx("--format=pt: %llu records the code does not lead to, each an overflow packet",
		      (unsigned long long)st->resyncs);
	return st->failed ? output_error(pr, st->failed) : 0;
}

static void pt_free(struct printer *pr)
{
	struct pt_state *st = pr->out_state;

	if (st)
		pt_free_encoder(st->enc);
	free(st);
}

const struct output output_pt = {
	.branch		= pt_branch,
	.kernel		= pt_kernel,
	.lost		= pt_lost,
	.finish		= pt_finish,
	.free		= pt_free,
};
