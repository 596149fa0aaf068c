// SPDX-License-Identifier: GPL-2.0
/*
 * --calls: a call tree per thread, as gdb's "record function-call-history
 * /c" shows it: a numbered line for each function the thread goes to,
 * indented by the calls it is in ("12<TAB>    rec"), and an unnumbered
 * "-- " line for system calls, signals, losses.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "print.h"

/* Indentation stops growing at this depth. */
#define MAX_INDENT	100

/* A thread's state: the function last printed, the lines printed. */
struct calls_thread {
	char *func;
	unsigned long long lines;
};

static struct calls_thread *calls_thread_of(struct thread *t)
{
	if (!t->out)
		t->out = xcalloc(1, sizeof(struct calls_thread));
	return t->out;
}

static void calls_indent(struct printer *pr, unsigned int depth)
{
	fprintf(pr->out, "%*s",
		2 * (depth < MAX_INDENT ? depth : MAX_INDENT), "");
}

/*
 * A line for the function at @addr, @depth calls deep, numbered as gdb
 * numbers its segments, unless the thread is in it already.
 */
static void calls_line(struct printer *pr, struct thread *t,
		       unsigned int depth, u64 addr, bool force)
{
	struct calls_thread *ct = calls_thread_of(t);
	char buf[32];
	const char *name = func_name(pr, t, addr, buf, sizeof(buf));

	if (!force && ct->func && !strcmp(ct->func, name))
		return;
	text_header(pr, t);
	fprintf(pr->out, "%llu\t", ++ct->lines);
	calls_indent(pr, depth);
	fprintf(pr->out, "%s\n", name);
	free(ct->func);
	ct->func = xstrdup(name);
}

/* An unnumbered line, a level deeper than @depth. */
static void calls_note(struct printer *pr, struct thread *t,
		       unsigned int depth, const char *what)
{
	text_header(pr, t);
	putc('\t', pr->out);
	calls_indent(pr, depth + 1);
	fprintf(pr->out, "-- %s\n", what);
}

static void calls_branch(struct printer *pr, struct thread *t,
			 const struct branch *b)
{
	/* Got here unseen: the start, or after the kernel. */
	calls_line(pr, t, b->depth, b->from, false);
	calls_line(pr, t, t->nframes, b->to,
		   branch_is_call(b) || b->kind == INSN_RET);
}

static void calls_kernel(struct printer *pr, struct thread *t,
			 const struct kernel *k)
{
	if (k->kind == BTS_ENTRY_SYSCALL)
		calls_note(pr, t, k->depth, k->what);
	if (k->how == RESUME_SIGNAL)
		calls_note(pr, t, k->depth, "signal handler entry");
	if (k->how == RESUME_SIGNAL || k->how == RESUME_SIGRETURN ||
	    k->how == RESUME_EXEC)
		calls_line(pr, t, t->nframes, k->resume, true);
}

static void calls_lost(struct printer *pr, struct thread *t,
		       const struct lost *l)
{
	calls_note(pr, t, t->nframes, l->what);
}

static void calls_marker(struct printer *pr, struct thread *t,
			 const struct marker *m)
{
	text_header(pr, t);
	putc('\t', pr->out);
	calls_indent(pr, t->nframes + 1);
	text_marker(pr, t, m);
}

static void calls_pseudo(struct printer *pr, struct thread *t,
			 const struct bts_record *r, const char *what)
{
	(void)r;
	calls_note(pr, t, t->nframes, what);
}

static void calls_unordered(struct printer *pr, const struct thread *t)
{
	if (t)
		fprintf(pr->out, "\t-- " UNSTAMPED_NOTE "\n", t->tid, t->pid);
	else
		fputs("\t-- " UNORDERED_NOTE "\n", pr->out);
}

static void calls_thread(struct printer *pr, struct thread *t,
			 unsigned int event)
{
	if (event == BTS_THREAD_EXIT) {
		calls_note(pr, t, t->nframes, "thread exited");
		return;
	}
	text_header(pr, t);
	fputs("\t-- new thread\n", pr->out);
}

static void calls_thread_free(struct printer *pr, struct thread *t)
{
	struct calls_thread *ct = t->out;

	(void)pr;
	if (ct)
		free(ct->func);
	free(ct);
}

const struct output output_calls = {
	.branch		= calls_branch,
	.kernel		= calls_kernel,
	.lost		= calls_lost,
	.marker		= calls_marker,
	.pseudo		= calls_pseudo,
	.thread		= calls_thread,
	.unordered	= calls_unordered,
	.thread_free	= calls_thread_free,
};
