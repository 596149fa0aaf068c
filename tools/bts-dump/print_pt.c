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
 * A synchronization point (PSB+) starts the stream and, while tracing is
 * off, comes every few kilobytes.
 *
 * A decoder needs the code, and PT's own sideband (perf's MMAP events
 * with time stamps) is more than a file of one thread's branches has: the
 * images are instead given per stretch of the stream.  A stretch starts
 * with a PSB and holds code that one set of images explains: a new one
 * starts at each exec, and where code comes from another file's segment
 * than the stretch already took at those addresses (a library mapped
 * where a closed one was); there tracing stops and starts again at the
 * same instruction, so that each stretch decodes alone.  With -o FILE,
 * FILE.ptxed has a libipt ptxed command line per stretch: its bytes of
 * FILE and the segments it ran, as ptxed's --raw FILE:FROM-TO:ADDRESS;
 * code only the trace carries (the vDSO) goes to files FILE.memN.
 *
 * A marker is a PTWRITE of its event's id at the system call that wrote
 * it (pt_marker()); FILE.ptxed names the events.
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
#include <string.h>
#include <sys/stat.h>

#include "print.h"

#define PT_BUF_SIZE	(64U << 10)
/* room for any packet (a PSB's 16 bytes is the longest) */
#define PT_PACKET_MAX	32
/* TNT-8 holds up to 6 bits */
#define TNT_BITS	6
/* a synchronization point (PSB) this often at least, in bytes */
#define PSB_PERIOD	(4U << 10)

/* A file's loaded segment whose code a stretch ran. */
struct pt_segment {
	const void *file;
	const char *path;		/* on disk, or FILE.memN */
	u64 offset;
	u64 filesz;
	u64 addr;
};

/* A file in memory only, written for the decoder to FILE.memN. */
struct pt_memfile {
	const void *file;
	char *name;
};

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
	u64 markers;			/* PTWRITEs written */
	u64 markers_left_out;		/* markers where tracing was off */
	int failed;			/* a write's errno */
	/* the stretch the stream is in: where its PSB is, what code it ran */
	u64 stretch_at;
	struct pt_segment *segs;
	size_t nsegs;
	size_t segs_cap;
	/* FILE.ptxed, NULL without -o; then its write's errno */
	FILE *images;
	char *images_name;
	int images_failed;
	struct pt_memfile *memfiles;
	unsigned int nmemfiles;
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

/* @s in single quotes, for a shell and for the reader. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static void images_error(struct pt_state *st, int error)
{
	if (!st->images_failed)
		st->images_failed = error ?: EIO;
}

/*
 * FILE.ptxed, with -o FILE of a regular file (not beside /dev/stdout);
 * what it is, for the one who opens it.
 */
static void images_open(struct printer *pr, struct pt_state *st)
{
	const char *out = pr->opts.out_path;
	struct stat sb;

	if (!out || fstat(fileno(pr->out), &sb) || !S_ISREG(sb.st_mode))
		return;
	if (asprintf(&st->images_name, "%s.ptxed", out) < 0)
		errx(1, "out of memory");
	st->images = fopen(st->images_name, "w");
	if (!st->images) {
		images_error(st, errno);
		return;
	}
	fputs("# The images to decode ", st->images);
	put_quoted(st->images, out);
	fputs(" with, from bts-dump --format=pt:\n"
	      "# a libipt ptxed command line per stretch of the stream, with its\n"
	      "# bytes of the stream and the file segments its code ran from\n"
	      "# (FILE:FROM-TO:ADDRESS).  Run them in order.\n",
	      st->images);
}

/*
 * The FILE.memN with the bytes of the file in memory only that @seg is
 * of, written now if there is none yet; NULL without -o.
 */
static const char *memfile_of(struct printer *pr, struct pt_state *st,
			      const struct code_segment *seg)
{
	struct pt_memfile *m;
	unsigned int i;
	FILE *f;

	if (!st->images)
		return NULL;
	for (i = 0; i < st->nmemfiles; i++)
		if (st->memfiles[i].file == seg->file)
			return st->memfiles[i].name;
	st->memfiles = xrealloc(st->memfiles, (st->nmemfiles + 1) *
					      sizeof(*st->memfiles));
	m = &st->memfiles[st->nmemfiles++];
	m->file = seg->file;
	if (asprintf(&m->name, "%s.mem%u", pr->opts.out_path,
		     st->nmemfiles) < 0)
		errx(1, "out of memory");
	f = fopen(m->name, "w");
	if (!f || fwrite(seg->data, 1, seg->size, f) != seg->size) {
		images_error(st, errno);
		warn("%s", m->name);
	}
	if (f && fclose(f)) {
		images_error(st, errno);
		warn("%s", m->name);
	}
	fputs("# ", st->images);
	put_quoted(st->images, m->name);
	fprintf(st->images, ": the bytes of %s as the trace has them\n",
		seg->mapped_as ?: "code in no file");
	return m->name;
}

/* The stretch ends here: the line that decodes it. */
static void stretch_end(struct printer *pr, struct pt_state *st)
{
	u64 end = stream_pos(st);
	const struct pt_segment *g;
	size_t i;

	if (st->images && end > st->stretch_at) {
		if (!st->nsegs)
			fputs("# no code known for ", st->images);
		else
			fputs("ptxed --pt ", st->images);
		put_quoted(st->images, pr->opts.out_path);
		fprintf(st->images, ":0x%llx-0x%llx",
			(unsigned long long)st->stretch_at,
			(unsigned long long)end);
		for (i = 0; i < st->nsegs; i++) {
			g = &st->segs[i];
			fputs(" --raw ", st->images);
			put_quoted(st->images, g->path);
			fprintf(st->images, ":0x%llx-0x%llx:0x%llx",
				(unsigned long long)g->offset,
				(unsigned long long)(g->offset + g->filesz),
				(unsigned long long)g->addr);
		}
		fputc('\n', st->images);
	}
	st->nsegs = 0;
}

/* A new stretch, with a synchronization point; tracing is off. */
static void new_stretch(struct printer *pr, struct pt_state *st)
{
	stretch_end(pr, st);
	put_psb(pr, st);
	st->stretch_at = st->psb_at;
	st->flow = FLOW_OFF;
}

static bool segments_overlap(const struct pt_segment *a,
			     const struct code_segment *b)
{
	return a->addr < b->addr + b->filesz && b->addr < a->addr + a->filesz;
}

/*
 * The code at @ip runs in this stretch: its file's segment is one of the
 * stretch's, or it starts a new stretch if other code was at those
 * addresses.  Tracing stops there and starts again at @ip, so the decoder
 * of the old stretch does not run into the new code.
 */
static void take_code(struct printer *pr, struct pt_state *st,
		      const struct thread *t, u64 ip)
{
	struct code_segment seg;
	struct pt_segment *g;
	bool on = st->flow == FLOW_ON;
	size_t i;

	if (!proc_code_segment(pr->syms, t->proc, ip, &seg))
		return;
	for (i = st->nsegs; i-- > 0;) {
		g = &st->segs[i];
		if (g->file == seg.file && g->addr == seg.addr &&
		    g->offset == seg.offset)
			return;
	}
	for (i = 0; i < st->nsegs; i++)
		if (segments_overlap(&st->segs[i], &seg))
			break;
	if (i < st->nsegs) {
		if (on) {
			put_ip(pr, st, ppt_fup, ip);
			put_ip(pr, st, ppt_tip_pgd, 0);
		}
		new_stretch(pr, st);
		if (on) {
			put_mode_exec(pr, st, is64_at(pr, t, ip));
			put_ip(pr, st, ppt_tip_pge, ip);
			st->flow = FLOW_ON;
			st->ip = ip;
		}
	}
	if (st->nsegs == st->segs_cap) {
		st->segs_cap = st->segs_cap ? 2 * st->segs_cap : 8;
		st->segs = xrealloc(st->segs,
				    st->segs_cap * sizeof(*st->segs));
	}
	st->segs[st->nsegs++] = (struct pt_segment){
		.file = seg.file,
		.path = seg.path ?: memfile_of(pr, st, &seg),
		.offset = seg.offset,
		.filesz = seg.filesz,
		.addr = seg.addr,
	};
}

/* Tracing (re)starts at @ip. */
static void start_at(struct printer *pr, struct pt_state *st,
		     const struct thread *t, u64 ip)
{
	take_code(pr, st, t, ip);
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
		take_code(pr, st, t, ip);
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
		images_open(pr, st);
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
	take_code(pr, st, t, b->from);
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
		take_code(pr, st, t, k->entry);
		/* An interrupt or a fault: where, before the instruction. */
		if (k->end == k->entry)
			put_ip(pr, st, ppt_fup, k->entry);
		put_ip(pr, st, ppt_tip_pgd, 0);
		st->flow = FLOW_OFF;
	}
	if (k->how == RESUME_EXEC)
		new_stretch(pr, st);
	else if (st->flow == FLOW_OFF &&
		 stream_pos(st) - st->psb_at >= PSB_PERIOD)
		put_psb(pr, st);
	if (k->resume)
		start_at(pr, st, t, k->resume);
}

/*
 * A marker is a PTWRITE at the instruction that wrote it (its system call),
 * as PT would have it: a PTW packet of 8 bytes, the marker's @flags (the
 * event's id in bits 31..0, its generation in 63..32), with the IP bit,
 * then the FUP with that instruction's address.  FILE.ptxed names each
 * PTWRITE's event, with its fields, in the order of the stream.
 */
static void pt_marker(struct printer *pr, struct thread *t,
		      const struct marker *m)
{
	struct pt_state *st = state_of(pr, t);
	struct pt_packet p = { .type = ppt_ptw };
	u64 site = m->r->to;

	if (!st)
		return;
	if (st->flow != FLOW_ON || !site) {
		/* No instruction to bind it to: the trace is off there. */
		st->markers_left_out++;
		return;
	}
	reach(pr, st, t, site);
	flush_tnt(pr, st);
	p.payload.ptw.plc = 1;		/* 8 bytes */
	p.payload.ptw.ip = 1;
	p.payload.ptw.payload = m->r->flags;
	put_packet(pr, st, &p);
	put_ip(pr, st, ppt_fup, site);
	st->markers++;
	if (!st->images)
		return;
	fprintf(st->images, "# ptwrite %llu 0x%llx at 0x%llx: ",
		(unsigned long long)st->markers,
		(unsigned long long)m->r->flags, (unsigned long long)site);
	if (m->event) {
		fprintf(st->images, "u:%s", event_name(m->event));
		if (m->have_payload)
			event_print_fields(st->images, m->event, t->payload,
					   BTS_MARKER_LEN(m->r->from), false);
	} else {
		fprintf(st->images, "event %u (generation %u)",
			BTS_MARKER_ID(m->r->flags), BTS_MARKER_GEN(m->r->flags));
	}
	fputc('\n', st->images);
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
	stretch_end(pr, st);
	pt_flush_buf(pr, st);
	if (st->images && (ferror(st->images) | fclose(st->images)))
		images_error(st, errno);
	st->images = NULL;
	if (st->images_failed)
		warnx("%s: the images are not all written: %s",
		      st->images_name, strerror(st->images_failed));
	else if (!st->images_name)
		warnx("--format=pt: not to a file, so no file tells the images to decode it with (-o FILE writes FILE.ptxed)");
	if (st->others)
		warnx("--format=pt: %llu records of other threads than %u left out (a PT stream is one thread's; choose it with --tid)",
		      (unsigned long long)st->others,
		      st->thread ? st->thread->tid : 0);
	if (st->resyncs)
		warnx("--format=pt: %llu records the code does not lead to, each an overflow packet",
		      (unsigned long long)st->resyncs);
	if (st->markers_left_out)
		warnx("--format=pt: %llu markers left out: the trace was off where they were written",
		      (unsigned long long)st->markers_left_out);
	if (st->failed)
		return output_error(pr, st->failed);
	return st->images_failed ? 1 : 0;
}

static void pt_free(struct printer *pr)
{
	struct pt_state *st = pr->out_state;

	unsigned int i;

	if (!st)
		return;
	pt_free_encoder(st->enc);
	if (st->images)
		fclose(st->images);
	free(st->images_name);
	for (i = 0; i < st->nmemfiles; i++)
		free(st->memfiles[i].name);
	free(st->memfiles);
	free(st->segs);
	free(st);
}

const struct output output_pt = {
	.branch		= pt_branch,
	.kernel		= pt_kernel,
	.lost		= pt_lost,
	.marker		= pt_marker,
	.finish		= pt_finish,
	.free		= pt_free,
};
