// SPDX-License-Identifier: GPL-2.0
/*
 * The text output: a line per branch, "from -> to" with each end's
 * symbol and source line, and a "-- " line for each other event; each
 * run of one thread's records under a "[tid N pid P]" header.  --insn
 * adds the instructions run between branches.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

/* -F: what starts each line: the process's name, its id, the thread's. */
static void fields_prefix(struct printer *pr, const struct thread *t)
{
	unsigned int f = pr->opts.fields;
	const char *comm = thread_comm(t);

	if (f & FIELD_COMM)
		fprintf(pr->out, "%s ", comm ? comm : "?");
	if ((f & FIELD_PID) && (f & FIELD_TID))
		fprintf(pr->out, "%u/%u ", t->pid, t->tid);
	else if (f & (FIELD_PID | FIELD_TID))
		fprintf(pr->out, "%u ", f & FIELD_PID ? t->pid : t->tid);
}

/*
 * Before each line of @t's: a header when the thread changes, or with -F
 * the fields that say whose the line is.
 */
void text_header(struct printer *pr, const struct thread *t)
{
	char label[32 + COMM_MAX];

	if (pr->opts.fields) {
		fields_prefix(pr, t);
		return;
	}
	/* --trigger prints each window under a header of its own. */
	if (pr->shown == t || pr->opts.window)
		return;
	fprintf(pr->out, "[%s]\n", thread_label(t, label, sizeof(label)));
	pr->shown = t;
}

/*
 * A line on its way out.  A branch's line is some ten pieces (two
 * addresses, their symbols, offsets and source lines), put here and
 * written with one fwrite_unlocked(): a stdio call per piece was half of
 * the instructions bts-dump spent on a trace, fprintf()'s format parsing
 * before that a third.  A piece longer than the room left goes straight
 * to the file, after what the line holds (a C++ name may be that long).
 */
struct text_line {
	FILE *f;
	size_t len;
	char buf[512];
};

static void line_start(struct text_line *l, FILE *f)
{
	l->f = f;
	l->len = 0;
}

static void line_flush(struct text_line *l)
{
	fwrite_unlocked(l->buf, 1, l->len, l->f);
	l->len = 0;
}

static void line_put(struct text_line *l, const char *s, size_t n)
{
	if (n > sizeof(l->buf) - l->len) {
		line_flush(l);
		if (n > sizeof(l->buf)) {
			fwrite_unlocked(s, 1, n, l->f);
			return;
		}
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void line_puts(struct text_line *l, const char *s)
{
	line_put(l, s, strlen(s));
}

static void line_putc(struct text_line *l, char c)
{
	if (l->len == sizeof(l->buf))
		line_flush(l);
	l->buf[l->len++] = c;
}

/*
 * "0x" and @v in hex, written in place, its digits counted first and
 * made a byte at a time.
 */
static void line_hex(struct text_line *l, u64 v)
{
	static const char hex[] = "0123456789abcdef";
	unsigned int digits = v ? (67 - __builtin_clzll(v)) / 4 : 1;
	char *p;

	if (digits + 2 > sizeof(l->buf) - l->len)
		line_flush(l);
	p = l->buf + l->len;
	*p++ = '0';
	*p++ = 'x';
	l->len += digits + 2;
	p += digits;
	for (; digits >= 2; digits -= 2, v >>= 8) {
		*--p = hex[v & 15];
		*--p = hex[(v >> 4) & 15];
	}
	if (digits)
		p[-1] = hex[v & 15];
}

static void line_dec(struct text_line *l, unsigned int v)
{
	char buf[10], *p = buf + sizeof(buf);

	do {
		*--p = '0' + v % 10;
		v /= 10;
	} while (v);
	line_put(l, p, buf + sizeof(buf) - p);
}

/* -F's address, through stdio as the rest of -F's fields go. */
static void put_hex(FILE *f, u64 v)
{
	struct text_line l;

	line_start(&l, f);
	line_hex(&l, v);
	line_flush(&l);
}

static void put_dec(FILE *f, unsigned int v)
{
	struct text_line l;

	line_start(&l, f);
	line_dec(&l, v);
	line_flush(&l);
}

/*
 * --inline: " [inlined: inner (a.c:3) < outer (a.c:9) < func (b.c:20)]",
 * the functions the code at @addr is in, innermost first, each with where
 * in it.
 */
static void text_inline(struct printer *pr, struct thread *t, u64 addr)
{
	const struct inline_frame *fr;
	unsigned int n, i;
	FILE *f = pr->out;

	n = proc_inline(pr->syms, t->proc, addr, &fr);
	if (!n)
		return;
	fputs_unlocked(" [inlined: ", f);
	for (i = 0; i < n; i++) {
		if (i)
			fputs_unlocked(" < ", f);
		fputs_unlocked(fr[i].func ? fr[i].func : "?", f);
		if (fr[i].src) {
			fputs_unlocked(" (", f);
			fputs_unlocked(fr[i].src, f);
			putc_unlocked(':', f);
			put_dec(f, fr[i].line);
			putc_unlocked(')', f);
		}
	}
	putc_unlocked(']', f);
}

/*
 * One end of a branch into @l: the address, the function and offset (or
 * the file and offset), the source line; --inline's frames after it.
 */
static void line_addr(struct printer *pr, struct thread *t,
		      struct text_line *l, u64 addr)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);

	line_hex(l, addr);
	if (ai->sym) {
		line_putc(l, ' ');
		line_puts(l, ai->sym);
		if (ai->sym_off) {
			line_putc(l, '+');
			line_hex(l, ai->sym_off);
		}
	} else if (ai->mod) {
		line_putc(l, ' ');
		line_puts(l, ai->mod);
		line_putc(l, '+');
		line_hex(l, ai->mod_off);
	}
	if (ai->src) {
		line_put(l, " (", 2);
		line_puts(l, ai->src);
		line_putc(l, ':');
		line_dec(l, ai->line);
		line_putc(l, ')');
	}
	if (pr->opts.inline_frames) {
		line_flush(l);
		text_inline(pr, t, addr);
	}
}

void text_addr(struct printer *pr, struct thread *t, u64 addr)
{
	struct text_line l;

	line_start(&l, pr->out);
	line_addr(pr, t, &l, addr);
	line_flush(&l);
}

/*
 * --insn: the instructions of [start, end), or why they are not shown;
 * each numbered as gdb's instruction history numbers them, from 1 in each
 * thread (the count is the thread's output state).
 */
static void print_block(struct printer *pr, struct thread *t, u64 start,
			u64 end)
{
	const struct addr_info *ai;
	const struct insn *in;
	unsigned long long *insns;
	u64 a;

	if (!start || end == start)
		return;
	if (end < start || end - start > MAX_BLOCK) {
		fprintf(pr->out, "\t[no straight-line code from 0x%llx to 0x%llx]\n",
			(unsigned long long)start, (unsigned long long)end);
		return;
	}
	if (!t->out)
		t->out = xcalloc(1, sizeof(*insns));
	insns = t->out;
	for (a = start; a < end; a += in->len) {
		ai = proc_addr(pr->syms, t->proc, a);
		in = proc_insn(pr->syms, t->proc, a);
		if (!in) {
			fprintf(pr->out, "\t[no code at 0x%llx]\n",
				(unsigned long long)a);
			return;
		}
		fprintf(pr->out, "%llu\t0x%llx", ++*insns, (unsigned long long)a);
		if (ai->sym)
			fprintf(pr->out, " %s+0x%llx", ai->sym,
				(unsigned long long)ai->sym_off);
		fprintf(pr->out, ": %s\n", in->text);
	}
	if (a != end)
		fprintf(pr->out, "\t[no straight-line code to 0x%llx]\n",
			(unsigned long long)end);
}

/* A function and its source line, for "in": "main (prog.c:5)". */
static void text_where(struct printer *pr, struct thread *t, u64 addr)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);

	if (ai->sym)
		fputs(ai->sym, pr->out);
	else if (ai->mod)
		fprintf(pr->out, "%s+0x%llx", ai->mod,
			(unsigned long long)ai->mod_off);
	else
		fprintf(pr->out, "0x%llx", (unsigned long long)addr);
	if (ai->src)
		fprintf(pr->out, " (%s:%d)", ai->src, ai->line);
}

/*
 * The text of a marker: the event by name with its fields decoded when its
 * format is known (--markers), by id otherwise with the payload in hex;
 * then where it was written: "in" the function that called the one that
 * made the system call, at the call, or, not knowing that, "at" the system
 * call.
 */
void text_marker(struct printer *pr, struct thread *t,
		 const struct marker *m)
{
	const struct bts_record *r = m->r;
	const struct event_format *e = m->event;
	unsigned int len = BTS_MARKER_LEN(r->from);
	unsigned int flags = BTS_MARKER_FLAGS(r->from);
	bool source = BTS_MARKER_SOURCE(r->from) == BTS_MARKER_USER_EVENT;
	FILE *f = pr->out;
	u64 site = call_site(t);
	unsigned int i;

	if (e)
		fprintf(f, "-- event u:%s", event_name(e));
	else
		fprintf(f, "-- %s %u (generation %u)",
			source ? "event" : "marker", BTS_MARKER_ID(r->flags),
			BTS_MARKER_GEN(r->flags));
	if (flags & BTS_MARKER_NOT_CAPTURED) {
		fputs(": payload not captured", f);
	} else if (len && !m->have_payload) {
		fputs(": payload not in the trace", f);
	} else if (e) {
		event_print_fields(f, e, t->payload, len, false);
	} else if (len) {
		fputs(":", f);
		for (i = 0; i < len; i++)
			fprintf(f, " %02x", t->payload[i]);
	}
	if (flags & BTS_MARKER_TRUNCATED)
		fputs(" (truncated)", f);
	if (site) {
		fputs(" in ", f);
		text_where(pr, t, site);
	} else if (r->to) {
		fputs(" at ", f);
		text_addr(pr, t, r->to);
	}
	putc('\n', f);
}

void put_build_id(FILE *f, const unsigned char *id, unsigned int len)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		fprintf(f, "%02x", id[i]);
}

/* -F: one end of a branch, with the fields asked for; @addr if @show. */
static void fields_end(struct printer *pr, struct thread *t, u64 addr,
		       bool show)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);
	unsigned int f = pr->opts.fields;
	const char *sep = "";
	FILE *out = pr->out;

	if (show) {
		put_hex(out, addr);
		sep = " ";
	}
	if (f & FIELD_SYM) {
		fprintf(out, "%s%s", sep, ai->sym ? ai->sym : "[unknown]");
		if ((f & FIELD_SYMOFF) && ai->sym && ai->sym_off)
			fprintf(out, "+0x%llx", (unsigned long long)ai->sym_off);
		sep = " ";
	}
	if (f & FIELD_DSO) {
		fprintf(out, "%s(%s)", sep, ai->mod ? ai->mod : "[unknown]");
		sep = " ";
	}
	if ((f & FIELD_SRCLINE) && ai->src)
		fprintf(out, "%s%s:%d", sep, ai->src, ai->line);
	/* As perf script's --inline, with the source lines. */
	if ((f & FIELD_SRCLINE) && pr->opts.inline_frames)
		text_inline(pr, t, addr);
}

static void text_branch(struct printer *pr, struct thread *t,
			const struct branch *b)
{
	struct text_line l;

	if (pr->opts.fields) {
		/* As perf script prints a branch: "ip sym => addr sym". */
		text_header(pr, t);
		fields_end(pr, t, b->from, pr->opts.fields & FIELD_IP);
		if (pr->opts.fields & FIELD_ADDR) {
			fputs(" => ", pr->out);
			fields_end(pr, t, b->to, true);
		}
		putc('\n', pr->out);
		return;
	}
	text_header(pr, t);
	if (pr->opts.insn)
		print_block(pr, t, t->at, b->end ? b->end : b->from + 1);
	line_start(&l, pr->out);
	line_addr(pr, t, &l, b->from);
	line_put(&l, " -> ", 4);
	line_addr(pr, t, &l, b->to);
	line_putc(&l, '\n');
	line_flush(&l);
}

static void text_kernel(struct printer *pr, struct thread *t,
			const struct kernel *k)
{
	FILE *f = pr->out;

	text_header(pr, t);
	if (pr->opts.insn)
		print_block(pr, t, t->at, k->end);
	fprintf(f, "-- %s", k->what);
	if (k->entry) {
		fputs(" at ", f);
		text_addr(pr, t, k->entry);
	}
	if (k->resume && k->how != RESUME_NORMAL &&
	    k->how != RESUME_SIGNAL) {
		fputs(" -> ", f);
		text_addr(pr, t, k->resume);
	}
	putc('\n', f);
	if (k->how == RESUME_SIGNAL) {
		text_header(pr, t);
		fputs("-- signal handler entry -> ", f);
		text_addr(pr, t, k->resume);
		putc('\n', f);
	}
}

static void text_lost(struct printer *pr, struct thread *t,
		      const struct lost *l)
{
	text_header(pr, t);
	fprintf(pr->out, "-- %s\n", l->what);
}

static void text_marker_line(struct printer *pr, struct thread *t,
			     const struct marker *m)
{
	text_header(pr, t);
	text_marker(pr, t, m);
}

static void text_map(struct printer *pr, struct thread *t,
		     const struct map_change *c)
{
	FILE *f = pr->out;

	text_header(pr, t);
	if (c->event == BTS_MAP_EXEC) {
		fputs("-- exec\n", f);
		return;
	}
	if (c->event == BTS_MAP_COMM) {
		fprintf(f, "-- comm %s\n", c->name);
		return;
	}
	fprintf(f, "-- %s 0x%llx-0x%llx", c->what, (unsigned long long)c->start,
		(unsigned long long)c->end);
	if (c->event == BTS_MAP_MMAP) {
		if (c->name && *c->name)
			fprintf(f, " %s", c->name);
		else if (c->flags & BTS_MAP_ANONYMOUS)
			fputs(" (anonymous)", f);
		if (c->file && c->offset)
			fprintf(f, " at offset 0x%llx",
				(unsigned long long)c->offset);
		if (c->build_id) {
			fputs(" build-id ", f);
			put_build_id(f, c->build_id, c->build_id_len);
		}
	}
	putc('\n', f);
}

static void text_pseudo(struct printer *pr, struct thread *t,
			const struct bts_record *r, const char *what)
{
	(void)r;
	text_header(pr, t);
	fprintf(pr->out, "-- %s\n", what);
}

static void text_unordered(struct printer *pr, const struct thread *t)
{
	if (t)
		fprintf(pr->out, "-- " UNSTAMPED_NOTE "\n", t->tid, t->pid);
	else
		fputs("-- " UNORDERED_NOTE "\n", pr->out);
}

static void text_thread(struct printer *pr, struct thread *t,
			unsigned int event)
{
	text_header(pr, t);
	fputs(event == BTS_THREAD_NEW ? "-- new thread\n" :
	      "-- thread exited\n", pr->out);
}

static void text_window_header(struct printer *pr, const struct thread *t)
{
	char label[32 + COMM_MAX];

	fprintf(pr->out, "[%s] the last %u lines before:\n",
		thread_label(t, label, sizeof(label)), pr->opts.window);
}

static void text_thread_free(struct printer *pr, struct thread *t)
{
	(void)pr;
	free(t->out);
}

const struct output output_text = {
	.branch		= text_branch,
	.kernel		= text_kernel,
	.lost		= text_lost,
	.marker		= text_marker_line,
	.map		= text_map,
	.pseudo		= text_pseudo,
	.thread		= text_thread,
	.window_header	= text_window_header,
	.unordered	= text_unordered,
	.thread_free	= text_thread_free,
};
