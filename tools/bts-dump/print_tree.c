// SPDX-License-Identifier: GPL-2.0
/*
 * The call-tree pictures: --format=folded, folded stacks for flame graphs
 * ("outer;inner;innermost COUNT" per line, as flamegraph.pl and
 * speedscope read them), and (print_chrome.c) --format=chrome, a
 * per-thread timeline of calls.
 *
 * Both see a thread's calls as function names, outermost first: the
 * function of each call site on the decoder's stack (for a signal
 * handler's frame, the interrupted function), then the function the
 * thread is in.  A folded line counts the branches that landed in its
 * stack.
 */
#define _GNU_SOURCE
#include <err.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "print_tree.h"

struct tree *tree_of(struct printer *pr)
{
	if (!pr->out_state)
		pr->out_state = xcalloc(1, sizeof(struct tree));
	return pr->out_state;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

const char *intern(struct tree *tr, const char *name)
{
	char **slot = tfind(name, &tr->names, name_cmp);

	if (slot)
		return *slot;
	slot = tsearch(xstrdup(name), &tr->names, name_cmp);
	if (!slot)
		errx(1, "out of memory");
	return *slot;
}

struct tree_thread *tree_thread(struct thread *t, unsigned int len)
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
		tt->begun = xrealloc(tt->begun, tt->cap * sizeof(*tt->begun));
	}
	return tt;
}

/*
 * Bring @t's stack of names up to date: its @n outermost calls, and @at
 * (0: unknown) in the innermost.  Returns how many names at the bottom
 * stayed what they were; only the call sites that changed are looked up.
 */
unsigned int tree_update(struct printer *pr, struct thread *t,
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

void tree_thread_free(struct printer *pr, struct thread *t)
{
	struct tree_thread *tt = t->out;

	(void)pr;
	if (!tt)
		return;
	free(tt->sites);
	free(tt->names);
	free(tt->nodes);
	free(tt->open);
	free(tt->begun);
	free(tt->pending);
	free(tt);
}

static void no_free(void *key __maybe_unused)
{
}

void tree_free(struct printer *pr)
{
	struct tree *tr = pr->out_state;

	if (!tr)
		return;
	tdestroy(tr->index, free);
	free(tr->nodes);
	tdestroy(tr->names, free);
	/* Its keys are pids, not pointers to anything. */
	tdestroy(tr->named_pids, no_free);
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

/*
 * A frame's name as a line of folded stacks can hold it: a ';' in it (a
 * JIT's "Ljava/lang/String;::hashCode", a process's name) would split the
 * frame, a newline the line.  The count after the last space is the
 * line's, so spaces may stay.
 */
static void folded_name(FILE *f, const char *name)
{
	const unsigned char *c;

	for (c = (const unsigned char *)name; *c; c++)
		putc(*c == ';' ? ':' : *c < 0x20 || *c == 0x7f ? '?' : *c, f);
}

/* The stack's names, outermost first, ';' between them. */
static void folded_path(FILE *f, const struct node *n)
{
	if (n->parent) {
		folded_path(f, n->parent);
		putc(';', f);
	}
	folded_name(f, n->name);
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
