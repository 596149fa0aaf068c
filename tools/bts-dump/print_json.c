// SPDX-License-Identifier: GPL-2.0
/*
 * --format=jsonl: one JSON object per record, with the thread, the kind
 * of record and what it says; the man page lists the keys.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "print.h"

/* A valid UTF-8 sequence's length at @p, or 0. */
static int utf8_len(const unsigned char *p)
{
	u32 cp;
	int n, i;

	if (*p < 0xc2)
		return 0;
	if (*p < 0xe0) {
		n = 2;
		cp = *p & 0x1f;
	} else if (*p < 0xf0) {
		n = 3;
		cp = *p & 0x0f;
	} else if (*p < 0xf5) {
		n = 4;
		cp = *p & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* The body of a JSON string: symbol and file names are whatever ELF says. */
void json_esc(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	while (*p) {
		if (*p == '"' || *p == '\\') {
			putc('\\', f);
			putc(*p++, f);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			putc(*p++, f);
		} else {
			n = utf8_len(p);
			if (n) {
				fwrite(p, 1, n, f);
				p += n;
			} else {
				fputs("\\ufffd", f);
				p++;
			}
		}
	}
}

static void json_begin(struct printer *pr, const struct thread *t,
		       const char *kind)
{
	const char *comm = thread_comm(t);

	fprintf(pr->out, "{\"tid\":%u,\"pid\":%u,", t->tid, t->pid);
	if (comm) {
		fputs("\"comm\":\"", pr->out);
		json_esc(pr->out, comm);
		fputs("\",", pr->out);
	}
	fprintf(pr->out, "\"kind\":\"%s\"", kind);
}

/*
 * --inline: "KEY_inline": the functions the code at @addr is in, innermost
 * first, each {"func", "src"} with where in it.
 */
static void json_inline(struct printer *pr, struct thread *t, const char *key,
			u64 addr)
{
	const struct inline_frame *fr;
	unsigned int n, i;
	FILE *f = pr->out;

	n = proc_inline(pr->syms, t->proc, addr, &fr);
	if (!n)
		return;
	fprintf(f, ",\"%s_inline\":[", key);
	for (i = 0; i < n; i++) {
		fputs(i ? ",{" : "{", f);
		if (fr[i].func) {
			fputs("\"func\":\"", f);
			json_esc(f, fr[i].func);
			putc('"', f);
		}
		if (fr[i].src) {
			fputs(fr[i].func ? ",\"src\":\"" : "\"src\":\"", f);
			json_esc(f, fr[i].src);
			fprintf(f, ":%d\"", fr[i].line);
		}
		putc('}', f);
	}
	putc(']', f);
}

static void json_addr(struct printer *pr, struct thread *t, const char *key,
		      u64 addr)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);
	FILE *f = pr->out;

	fprintf(f, ",\"%s\":\"0x%llx\"", key, (unsigned long long)addr);
	if (ai->sym) {
		fprintf(f, ",\"%s_sym\":\"", key);
		json_esc(f, ai->sym);
		if (ai->sym_off)
			fprintf(f, "+0x%llx", (unsigned long long)ai->sym_off);
		putc('"', f);
	}
	if (ai->src) {
		fprintf(f, ",\"%s_src\":\"", key);
		json_esc(f, ai->src);
		fprintf(f, ":%d\"", ai->line);
	}
	if (ai->mod) {
		fprintf(f, ",\"%s_dso\":\"", key);
		json_esc(f, ai->mod);
		putc('"', f);
	}
	if (pr->opts.inline_frames)
		json_inline(pr, t, key, addr);
}

static void json_branch(struct printer *pr, struct thread *t,
			const struct branch *b)
{
	json_begin(pr, t, "branch");
	json_addr(pr, t, "from", b->from);
	json_addr(pr, t, "to", b->to);
	fputs("}\n", pr->out);
}

static void json_kernel(struct printer *pr, struct thread *t,
			const struct kernel *k)
{
	const char *abi = syscall_abi_name(k->abi);
	FILE *f = pr->out;

	json_begin(pr, t, "kernel");
	fprintf(f, ",\"entry\":\"%s\"", entry_kind_name(k->kind));
	if (k->kind == BTS_ENTRY_EXCEPTION || k->kind == BTS_ENTRY_INTERRUPT)
		fprintf(f, ",\"vector\":%u", k->vector);
	if (k->entry)
		json_addr(pr, t, "from", k->entry);
	if (k->resume)
		json_addr(pr, t, "to", k->resume);
	if (k->name)
		fprintf(f, ",\"syscall\":\"%s\"", k->name);
	if (k->have_nr)
		fprintf(f, ",\"syscall_nr\":%llu", (unsigned long long)k->nr);
	if (abi)
		fprintf(f, ",\"abi\":\"%s\"", abi);
	if (k->kind == BTS_ENTRY_EXCEPTION && k->have_detail &&
	    k->orig_ax != ~0ULL)
		fprintf(f, ",\"error_code\":%llu",
			(unsigned long long)k->orig_ax);
	if (k->have_detail)
		fprintf(f, ",\"time\":%llu", (unsigned long long)k->time);
	if (k->how == RESUME_SIGNAL)
		fputs(",\"signal\":true", f);
	fputs("}\n", f);
}

static void json_lost(struct printer *pr, struct thread *t,
		      const struct lost *l)
{
	json_begin(pr, t, "lost");
	if (l->reason)
		fprintf(pr->out, ",\"reason\":\"%s\"}\n", l->reason);
	else
		fprintf(pr->out, ",\"count\":%llu}\n",
			(unsigned long long)l->count);
}

static void json_marker(struct printer *pr, struct thread *t,
			const struct marker *m)
{
	const struct bts_record *r = m->r;
	unsigned int len = BTS_MARKER_LEN(r->from);
	unsigned int flags = BTS_MARKER_FLAGS(r->from);
	FILE *f = pr->out;
	unsigned int i;

	json_begin(pr, t, "marker");
	if (BTS_MARKER_SOURCE(r->from) == BTS_MARKER_USER_EVENT)
		fputs(",\"source\":\"user_event\"", f);
	else
		fprintf(f, ",\"source\":%u", BTS_MARKER_SOURCE(r->from));
	fprintf(f, ",\"id\":%u,\"gen\":%u", BTS_MARKER_ID(r->flags),
		BTS_MARKER_GEN(r->flags));
	if (m->event) {
		fputs(",\"event\":\"", f);
		json_esc(f, event_name(m->event));
		putc('"', f);
	}
	if (r->to)
		json_addr(pr, t, "at", r->to);
	if (call_site(t))
		json_addr(pr, t, "caller", call_site(t));
	if (flags & BTS_MARKER_NOT_CAPTURED) {
		fputs(",\"captured\":false", f);
	} else if (m->have_payload) {
		fputs(",\"payload\":\"", f);
		for (i = 0; i < len; i++)
			fprintf(f, "%02x", t->payload[i]);
		putc('"', f);
		if (m->event)
			event_print_fields(f, m->event, t->payload, len, true);
	}
	if (flags & BTS_MARKER_TRUNCATED)
		fputs(",\"truncated\":true", f);
	fputs("}\n", f);
}

static void json_map(struct printer *pr, struct thread *t,
		     const struct map_change *c)
{
	FILE *f = pr->out;

	json_begin(pr, t, c->what);
	if (c->event == BTS_MAP_MMAP || c->event == BTS_MAP_MUNMAP)
		fprintf(f, ",\"start\":\"0x%llx\",\"end\":\"0x%llx\"",
			(unsigned long long)c->start,
			(unsigned long long)c->end);
	if (c->event == BTS_MAP_MMAP) {
		if (c->name) {
			fputs(",\"path\":\"", f);
			json_esc(f, c->name);
			putc('"', f);
		}
		if (c->file)
			fprintf(f, ",\"offset\":\"0x%llx\",\"inode\":%llu,\"dev\":\"%u:%u\"",
				(unsigned long long)c->offset,
				(unsigned long long)c->inode,
				c->dev_major, c->dev_minor);
		if (c->build_id) {
			fputs(",\"build_id\":\"", f);
			put_build_id(f, c->build_id, c->build_id_len);
			putc('"', f);
		}
		if (c->flags & BTS_MAP_ANONYMOUS)
			fputs(",\"anonymous\":true", f);
	}
	fputs("}\n", f);
}

static void json_pseudo(struct printer *pr, struct thread *t,
			const struct bts_record *r, const char *what)
{
	(void)what;
	json_begin(pr, t, "pseudo");
	fprintf(pr->out, ",\"type\":%u,\"arg\":%u,\"to\":\"0x%llx\",\"flags\":\"0x%llx\"}\n",
		BTS_PSEUDO_TYPE(r->from), BTS_PSEUDO_ARG(r->from),
		(unsigned long long)r->to, (unsigned long long)r->flags);
}

static void json_unordered(struct printer *pr, const struct thread *t)
{
	if (t)
		fprintf(pr->out, "{\"tid\":%u,\"pid\":%u,\"kind\":\"unordered\"}\n",
			t->tid, t->pid);
	else
		fputs("{\"kind\":\"unordered\"}\n", pr->out);
}

static void json_thread(struct printer *pr, struct thread *t,
			unsigned int event)
{
	json_begin(pr, t, event == BTS_THREAD_NEW ? "thread_new" :
			  "thread_exit");
	fputs("}\n", pr->out);
}

const struct output output_jsonl = {
	.branch		= json_branch,
	.kernel		= json_kernel,
	.lost		= json_lost,
	.marker		= json_marker,
	.map		= json_map,
	.pseudo		= json_pseudo,
	.thread		= json_thread,
	.unordered	= json_unordered,
};
