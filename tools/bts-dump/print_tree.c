// SPDX-License-Identifier: GPL-2.0
/*
 * The call-tree pictures: --format=folded, folded stacks for flame graphs
 * ("outer;inner;innermost COUNT" per line, as flamegraph.pl and
 * speedscope read them), and --format=chrome, Chrome's trace-event JSON
 * (Perfetto, about:tracing, speedscope), a per-thread timeline of calls.
 *
 * Both see a thread's calls as function names, outermost first: the
 * function of each call site on the decoder's stack (for a signal
 * handler's frame, the interrupted function), then the function the
 * thread is in.  A branch record is the unit of both: a folded line
 * counts the branches that landed in its stack, and the timeline's
 * x-axis is the record's index in the trace, not time, which the
 * picture says.
 */
#define _GNU_SOURCE
#include <err.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

/* A thread's stack of function names, interned: equal names, equal pointers. */
struct tree_thread {
	u64 *sites;		/* the call sites names[0..len - 1) came from */
	const char **names;	/* the calls' functions, then the thread's */
	unsigned int len;	/* names that hold a stack; 0: none yet */
	unsigned int cap;
	/* folded: the node of each name of the stack */
	struct node **nodes;
	/* chrome: the calls begun and not ended, outermost first */
	const char **open;
	unsigned int nopen;
};

/* A stack seen by --format=folded: its last name, under its parent. */
struct node {
	const struct node *parent;
	const char *name;
	u64 count;
};

struct tree {
	void *names;		/* tsearch() tree of interned names */
	void *index;		/* folded: nodes by (parent, name) */
	struct node **nodes;	/* folded: in the order they appeared */
	size_t nnodes;
	size_t nodes_cap;
	bool events;		/* chrome: an event was written */
};

static struct tree *tree_of(struct printer *pr)
{
	if (!pr->out_state)
		pr->out_state = xcalloc(1, sizeof(struct tree));
	return pr->out_state;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static const char *intern(struct tree *tr, const char *name)
{
	char **slot = tfind(name, &tr->names, name_cmp);

	if (slot)
		return *slot;
	slot = tsearch(xstrdup(name), &tr->names, name_cmp);
	if (!slot)
		errx(1, "out of memory");
	return *slot;
}

static struct tree_thread *tree_thread(struct thread *t, unsigned int len)
{
	struct tree_thread *tt = t->out;

	if (!tt) {
		tt = xcalloc(1, sizeof(*tt));
		t->out = tt;
	}
	if (len > tt->cap) {
		tt->cap = len + 64;
		tt->sites = xrealloc(tt->sites, tt->cap * sizeof(*tt->sites));
		tt->names = xrealloc(tt->names, tt->cap * sizeof(*tt->names));
		tt->nodes = xrealloc(tt->nodes, tt->cap * sizeof(*tt->nodes));
		tt->open = xrealloc(tt->open, tt->cap * sizeof(*tt->open));
	}
	return tt;
}

/*
 * Bring @t's stack of names up to date: its @n outermost calls, and @at
 * (0: unknown) in the innermost.  Returns how many names at the bottom
 * stayed what they were; only the call sites that changed are looked up.
 */
static unsigned int tree_update(struct printer *pr, struct thread *t,
				unsigned int n, u64 at)
{
	unsigned int i, keep = 0;
	struct tree_thread *tt = tree_thread(t, n + 1);
	struct tree *tr = tree_of(pr);
	unsigned int old = tt->len;
	bool same = true;
	const char *name;
	char buf[32];

	for (i = 0; i < n; i++) {
		/* The top name of the old stack came from no call site. */
		if (i + 1 >= old || tt->sites[i] != t->frames[i].site) {
			name = intern(tr, func_name(pr, t, t->frames[i].site,
						    buf, sizeof(buf)));
			if (i >= old || tt->names[i] != name)
				same = false;
			tt->sites[i] = t->frames[i].site;
			tt->names[i] = name;
		}
		keep += same;
	}
	name = intern(tr, at ? func_name(pr, t, at, buf, sizeof(buf)) :
				"[unknown]");
	if (n >= old || tt->names[n] != name)
		same = false;
	tt->names[n] = name;
	tt->len = n + 1;
	return keep + same;
}

static void tree_thread_free(struct printer *pr, struct thread *t)
{
	struct tree_thread *tt = t->out;

	(void)pr;
	if (!tt)
		return;
	free(tt->sites);
	free(tt->names);
	free(tt->nodes);
	free(tt->open);
	free(tt);
}

static void tree_free(struct printer *pr)
{
	struct tree *tr = pr->out_state;

	if (!tr)
		return;
	tdestroy(tr->index, free);
	free(tr->nodes);
	tdestroy(tr->names, free);
	free(tr);
}

/* --format=folded */

static int node_cmp(const void *a, const void *b)
{
	const struct node *x = a, *y = b;

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return 0;
}

static struct node *node_get(struct tree *tr, const struct node *parent,
			     const char *name)
{
	struct node key = { .parent = parent, .name = name }, *n, **slot;

	slot = tfind(&key, &tr->index, node_cmp);
	if (slot)
		return *slot;
	n = xcalloc(1, sizeof(*n));
	*n = key;
	if (!tsearch(n, &tr->index, node_cmp))
		abort();
	if (tr->nnodes == tr->nodes_cap) {
		tr->nodes_cap = tr->nodes_cap ? 2 * tr->nodes_cap : 1024;
		tr->nodes = xrealloc(tr->nodes,
				     tr->nodes_cap * sizeof(*tr->nodes));
	}
	tr->nodes[tr->nnodes++] = n;
	return n;
}

/* The thread's root: its own, so that threads' stacks stay apart. */
static struct node *folded_root(struct tree *tr, const struct thread *t)
{
	char label[32 + COMM_MAX], root[34 + COMM_MAX];

	snprintf(root, sizeof(root), "[%s]",
		 thread_label(t, label, sizeof(label)));
	return node_get(tr, NULL, intern(tr, root));
}

/*
 * Count one at @t's stack of @depth calls and @at, with @leaf above it if
 * not NULL.
 */
static void folded_count(struct printer *pr, struct thread *t,
			 unsigned int depth, u64 at, const char *leaf)
{
	unsigned int keep = tree_update(pr, t, depth, at), i;
	struct tree_thread *tt = t->out;
	struct tree *tr = tree_of(pr);
	struct node *n;

	for (i = keep; i < tt->len; i++)
		tt->nodes[i] = node_get(tr, i ? tt->nodes[i - 1] :
					folded_root(tr, t), tt->names[i]);
	n = tt->nodes[tt->len - 1];
	if (leaf)
		n = node_get(tr, n, intern(tr, leaf));
	n->count++;
}

static void folded_branch(struct printer *pr, struct thread *t,
			  const struct branch *b)
{
	folded_count(pr, t, t->nframes, b->to, NULL);
}

/*
 * A stay in the kernel: one count in a "[syscall write]" above the stack
 * it came from (before a signal handler's frame).
 */
static void folded_kernel(struct printer *pr, struct thread *t,
			  const struct kernel *k)
{
	char leaf[100];

	if (!t->at)
		return;
	snprintf(leaf, sizeof(leaf), "[%s]", k->what);
	folded_count(pr, t, k->depth, t->at, leaf);
}

/* The stack's names, outermost first, ';' between them. */
static void folded_path(FILE *f, const struct node *n)
{
	if (n->parent) {
		folded_path(f, n->parent);
		putc(';', f);
	}
	fputs(n->name, f);
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The stacks counted, sorted, as flamegraph.pl's stackcollapse tools do. */
static int folded_finish(struct printer *pr)
{
	struct tree *tr = pr->out_state;
	char **lines, *buf;
	size_t i, n = 0, len;
	FILE *f;

	if (!tr)
		return 0;
	lines = xcalloc(tr->nnodes, sizeof(*lines));
	for (i = 0; i < tr->nnodes; i++) {
		if (!tr->nodes[i]->count)
			continue;
		f = open_memstream(&buf, &len);
		if (!f)
			err(1, "open_memstream");
		folded_path(f, tr->nodes[i]);
		fprintf(f, " %llu\n", (unsigned long long)tr->nodes[i]->count);
		fclose(f);
		lines[n++] = buf;
	}
	qsort(lines, n, sizeof(*lines), line_cmp);
	for (i = 0; i < n; i++) {
		fputs(lines[i], pr->out);
		free(lines[i]);
	}
	free(lines);
	return 0;
}

const struct output output_folded = {
	.branch		= folded_branch,
	.kernel		= folded_kernel,
	.finish		= folded_finish,
	.thread_free	= tree_thread_free,
	.free		= tree_free,
};

/* --format=chrome */

/*
 * One trace event of @t's, its time the index of the record; @arg_name, if
 * not NULL, the "name" of its "args" (a metadata event's).
 */
static void chrome_event(struct printer *pr, const struct thread *t, char ph,
			 const char *name, const char *arg_name)
{
	struct tree *tr = tree_of(pr);
	FILE *f = pr->out;

	fputs(tr->events ? ",\n" : "{\"traceEvents\":[\n", f);
	tr->events = true;
	fprintf(f, "{\"ph\":\"%c\",\"pid\":%u,\"tid\":%u,\"ts\":%llu", ph,
		t->pid, t->tid, (unsigned long long)pr->nrecords);
	if (name) {
		fputs(",\"name\":\"", f);
		json_esc(f, name);
		putc('"', f);
	}
	/* An instant event marks its thread's track only. */
	if (ph == 'i')
		fputs(",\"s\":\"t\"", f);
	if (arg_name) {
		fputs(",\"args\":{\"name\":\"", f);
		json_esc(f, arg_name);
		fputs("\"}", f);
	}
	putc('}', f);
}

/* The thread's track is named, and says what its x-axis is. */
static void chrome_thread_name(struct printer *pr, const struct thread *t)
{
	const char *comm = proc_comm(t->proc);
	char label[80 + COMM_MAX];

	snprintf(label, sizeof(label),
		 "%s%stid %u (x-axis: branch records, not time)",
		 comm ? comm : "", comm ? " " : "", t->tid);
	chrome_event(pr, t, 'M', "thread_name", label);
}

/*
 * End the calls @t has left and begin those it entered, it being at @at.
 * An E event names its call: viewers (speedscope) match them by name.
 */
static void chrome_move(struct printer *pr, struct thread *t, u64 at)
{
	struct tree_thread *tt;
	unsigned int keep = 0, i;

	if (!t->out)
		chrome_thread_name(pr, t);
	tree_update(pr, t, t->nframes, at);
	tt = t->out;
	while (keep < tt->nopen && keep < tt->len &&
	       tt->open[keep] == tt->names[keep])
		keep++;
	for (; tt->nopen > keep; tt->nopen--)
		chrome_event(pr, t, 'E', tt->open[tt->nopen - 1], NULL);
	for (i = keep; i < tt->len; i++) {
		chrome_event(pr, t, 'B', tt->names[i], NULL);
		tt->open[i] = tt->names[i];
	}
	tt->nopen = tt->len;
}

/* End all of @t's calls. */
static void chrome_close(struct printer *pr, struct thread *t)
{
	struct tree_thread *tt = t->out;

	for (; tt && tt->nopen; tt->nopen--)
		chrome_event(pr, t, 'E', tt->open[tt->nopen - 1], NULL);
}

static void chrome_branch(struct printer *pr, struct thread *t,
			  const struct branch *b)
{
	chrome_move(pr, t, b->to);
}

static void chrome_kernel(struct printer *pr, struct thread *t,
			  const struct kernel *k)
{
	chrome_event(pr, t, 'i', k->what, NULL);
	/* A signal handler's entry, its return, an exec: calls change. */
	if (k->resume)
		chrome_move(pr, t, k->resume);
}

static void chrome_lost(struct printer *pr, struct thread *t,
			const struct lost *l)
{
	chrome_event(pr, t, 'i', l->what, NULL);
}

static void chrome_marker(struct printer *pr, struct thread *t,
			  const struct marker *m)
{
	char name[64];

	if (m->event)
		snprintf(name, sizeof(name), "event u:%s",
			 event_name(m->event));
	else
		snprintf(name, sizeof(name), "marker %u",
			 BTS_MARKER_ID(m->r->flags));
	chrome_event(pr, t, 'i', name, NULL);
}

static void chrome_thread(struct printer *pr, struct thread *t,
			  unsigned int event)
{
	if (event == BTS_THREAD_EXIT)
		chrome_close(pr, t);
}

/* The thread starts over (a new thread, or its id reused): end its calls. */
static void chrome_thread_free(struct printer *pr, struct thread *t)
{
	chrome_close(pr, t);
	tree_thread_free(pr, t);
}

static int chrome_finish(struct printer *pr)
{
	struct tree *tr = tree_of(pr);
	struct thread *t;
	size_t b;

	/* The trace ends after its last record. */
	pr->nrecords++;
	hash_for_each(pr->threads, b, t, node)
		chrome_close(pr, t);
	fputs(tr->events ? "\n]," : "{\"traceEvents\":[],", pr->out);
	fputs("\"otherData\":{\"x-axis\":\"the index of the branch record in the trace, not time\"}}\n",
	      pr->out);
	return 0;
}

const struct output output_chrome = {
	.branch		= chrome_branch,
	.kernel		= chrome_kernel,
	.lost		= chrome_lost,
	.marker		= chrome_marker,
	.thread		= chrome_thread,
	.finish		= chrome_finish,
	.thread_free	= chrome_thread_free,
	.free		= tree_free,
};
