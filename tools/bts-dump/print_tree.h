/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the call-tree pictures share (print_tree.c): a thread's calls as a
 * stack of interned function names, kept up to date at each record.
 */
#ifndef BTS_DUMP_PRINT_TREE_H
#define BTS_DUMP_PRINT_TREE_H

#include "print.h"

struct chrome_pending;

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
	/* chrome: when those written so far began (chrome_write()) */
	u64 *begun;
	unsigned int nbegun;
	/* chrome: the thread's records so far, its x-axis between times */
	u64 nrec;
	/* chrome: events waiting for the time of a later record */
	struct chrome_pending *pending;
	size_t npending;
	size_t pending_cap;
	/* chrome: how many times it has, its last and last but one (record, ns) */
	unsigned int ntimes;
	u64 written_ns;		/* the time of its last event written */
	u64 written_at;		/* and its record */
	u64 prev_at, prev_ns;
	u64 last_at, last_ns;
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
	void *named_pids;	/* chrome: tsearch() tree of named processes */
	/* chrome: enum chrome_axis, and what decides it */
	unsigned int axis;
	u64 untimed;		/* events held before any time came */
	u64 t0;			/* the first time of the trace, ns */
	u64 span_ns, span_rec;	/* all threads' intervals between times */
};

struct tree *tree_of(struct printer *pr);
const char *intern(struct tree *tr, const char *name);
struct tree_thread *tree_thread(struct thread *t, unsigned int len);
unsigned int tree_update(struct printer *pr, struct thread *t,
			 unsigned int n, u64 at);
void tree_thread_free(struct printer *pr, struct thread *t);
void tree_free(struct printer *pr);

#endif /* BTS_DUMP_PRINT_TREE_H */
