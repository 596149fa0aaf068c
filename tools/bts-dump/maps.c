// SPDX-License-Identifier: GPL-2.0
/*
 * The mappings of a traced process, from snapshots of /proc/PID/maps and
 * from the trace's own BTS_PSEUDO_MAP records (symbols.c).
 *
 * A snapshot is taken after the branches it is used for ran, so a library
 * may be gone from it while the trace still refers to it.  A mapping set
 * therefore keeps every mapping ever seen and lets a newer snapshot win
 * only where they overlap: the set stays sorted and without overlaps.
 * Snapshots come from raw files too, so the parser takes anything and
 * keeps only well-formed lines.
 */
#include <stdlib.h>
#include <string.h>

#include "bts-dump.h"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool parse_hex(const char **pp, const char *end, u64 *v)
{
	const char *p = *pp;
	u64 x = 0;
	int d, n = 0;

	while (p < end && (d = hex_digit(*p)) >= 0) {
		if (++n > 16)
			return false;
		x = x << 4 | d;
		p++;
	}
	*pp = p;
	*v = x;
	return n > 0;
}

static bool parse_dec(const char **pp, const char *end, u64 *v)
{
	const char *p = *pp;
	u64 x = 0;
	int n = 0;

	while (p < end && *p >= '0' && *p <= '9') {
		if (x > (UINT64_MAX - (*p - '0')) / 10)
			return false;
		x = x * 10 + (*p - '0');
		p++;
		n++;
	}
	*pp = p;
	*v = x;
	return n > 0;
}

static bool skip(const char **pp, const char *end, char c)
{
	if (*pp >= end || **pp != c)
		return false;
	(*pp)++;
	return true;
}

/* "start-end perms offset major:minor inode   path" */
static bool parse_line(const char *p, const char *end, struct mapping *m)
{
	u64 major, minor;
	int i;

	if (!parse_hex(&p, end, &m->start) || !skip(&p, end, '-') ||
	    !parse_hex(&p, end, &m->end) || !skip(&p, end, ' '))
		return false;
	if (end - p < 4)
		return false;
	for (i = 0; i < 4; i++) {
		if (!p[i] || !strchr("rwxsp-", p[i]))
			return false;
		m->perms[i] = p[i];
	}
	m->perms[4] = '\0';
	p += 4;
	if (!skip(&p, end, ' ') || !parse_hex(&p, end, &m->offset) ||
	    !skip(&p, end, ' ') || !parse_hex(&p, end, &major) ||
	    !skip(&p, end, ':') || !parse_hex(&p, end, &minor) ||
	    !skip(&p, end, ' ') || !parse_dec(&p, end, &m->inode))
		return false;
	if (major > UINT32_MAX || minor > UINT32_MAX || m->start >= m->end)
		return false;
	m->dev_major = major;
	m->dev_minor = minor;
	while (p < end && *p == ' ')
		p++;
	m->path = xstrndup(p, end - p);
	/* A snapshot does not say more of the file than device and inode. */
	m->mtime = 0;
	m->build_id_len = 0;
	m->resolved = false;
	m->mod = NULL;
	return true;
}

static int by_start(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static void push(struct mapset *ms, size_t *cap, const struct mapping *m)
{
	if (ms->n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		ms->v = xrealloc(ms->v, *cap * sizeof(*ms->v));
	}
	ms->v[ms->n++] = *m;
}

/* Parse a maps text into a sorted set without overlaps. */
void mapset_parse(const char *text, size_t len, struct mapset *out)
{
	const char *p = text, *end = text + len, *nl;
	struct mapping m;
	size_t cap = 0, i, n;

	out->v = NULL;
	out->n = 0;
	while (p < end) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		if (parse_line(p, nl, &m))
			push(out, &cap, &m);
		p = nl + 1;
	}
	if (!out->n)
		return;
	qsort(out->v, out->n, sizeof(*out->v), by_start);
	for (i = 1, n = 1; i < out->n; i++) {
		if (out->v[i].start < out->v[n - 1].end) {
			free(out->v[i].path);
			continue;
		}
		out->v[n++] = out->v[i];
	}
	out->n = n;
}

static bool same(const struct mapping *a, const struct mapping *b)
{
	return a->start == b->start && a->end == b->end &&
	       a->offset == b->offset && a->inode == b->inode &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       !strcmp(a->perms, b->perms) && !strcmp(a->path, b->path);
}

/* Part [start, end) of @o; the first piece of a mapping takes its path. */
static void push_piece(struct mapset *ms, size_t *cap, struct mapping *o,
		       u64 start, u64 end, bool *path_taken)
{
	struct mapping m = *o;

	m.start = start;
	m.end = end;
	m.offset = o->offset + (start - o->start);
	if (*path_taken)
		m.path = xstrdup(o->path);
	*path_taken = true;
	push(ms, cap, &m);
}

/*
 * Add snapshot @snap (from mapset_parse(), consumed) to @ms.  Returns
 * whether @ms changed: unchanged mappings keep what symbols.c found for
 * them.
 */
bool mapset_merge(struct mapset *ms, struct mapset *snap)
{
	struct mapset kept = { NULL, 0 }, out = { NULL, 0 };
	size_t kept_cap = 0, cap = 0, i, j = 0, k, added = 0;
	bool *dup = xcalloc(snap->n, sizeof(*dup));

	for (i = 0; i < ms->n; i++) {
		struct mapping *o = &ms->v[i];
		bool taken = false;
		u64 at = o->start;

		/* Snapshot mappings are sorted by start and by end. */
		while (j < snap->n && snap->v[j].end <= o->start)
			j++;
		if (j < snap->n && same(o, &snap->v[j])) {
			dup[j] = true;
			push(&kept, &kept_cap, o);
			continue;
		}
		for (k = j; k < snap->n && snap->v[k].start < o->end; k++) {
			if (snap->v[k].start > at)
				push_piece(&kept, &kept_cap, o, at,
					   snap->v[k].start, &taken);
			if (snap->v[k].end > at)
				at = snap->v[k].end;
		}
		if (at < o->end)
			push_piece(&kept, &kept_cap, o, at, o->end, &taken);
		if (!taken)
			free(o->path);
	}

	/* Both are sorted and do not overlap each other: merge them. */
	for (i = 0, j = 0; i < kept.n || j < snap->n;) {
		if (j < snap->n && dup[j]) {
			free(snap->v[j++].path);
			continue;
		}
		if (j == snap->n ||
		    (i < kept.n && kept.v[i].start < snap->v[j].start)) {
			push(&out, &cap, &kept.v[i++]);
		} else {
			push(&out, &cap, &snap->v[j++]);
			added++;
		}
	}
	free(dup);
	free(kept.v);
	free(snap->v);
	snap->v = NULL;
	snap->n = 0;
	free(ms->v);
	*ms = out;
	return added > 0;
}

/* Take [@start, @end) out of @ms.  Returns whether @ms changed. */
bool mapset_remove(struct mapset *ms, u64 start, u64 end)
{
	struct mapset out = { NULL, 0 };
	size_t cap = 0, i;
	bool changed = false;

	for (i = 0; i < ms->n; i++) {
		struct mapping *o = &ms->v[i];
		bool taken = false;

		if (o->end <= start || o->start >= end) {
			push(&out, &cap, o);
			continue;
		}
		changed = true;
		if (o->start < start)
			push_piece(&out, &cap, o, o->start, start, &taken);
		if (o->end > end)
			push_piece(&out, &cap, o, end, o->end, &taken);
		if (!taken)
			free(o->path);
	}
	free(ms->v);
	*ms = out;
	return changed;
}

void mapset_copy(struct mapset *dst, const struct mapset *src)
{
	size_t i;

	dst->n = src->n;
	dst->v = xcalloc(src->n, sizeof(*dst->v));
	for (i = 0; i < src->n; i++) {
		dst->v[i] = src->v[i];
		dst->v[i].path = xstrdup(src->v[i].path);
	}
}

/*
 * Code in no file: anonymous memory, the vDSO, a memfd (a JIT's code
 * mapped twice), none of which a path names.
 */
bool mapping_in_no_file(const struct mapping *map)
{
	return map->path[0] != '/' || !strncmp(map->path, "/memfd:", 7);
}

const struct mapping *mapset_find(const struct mapset *ms, u64 addr)
{
	size_t lo = 0, hi = ms->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < ms->v[mid].start)
			hi = mid;
		else if (addr >= ms->v[mid].end)
			lo = mid + 1;
		else
			return &ms->v[mid];
	}
	return NULL;
}

void mapset_free(struct mapset *ms)
{
	size_t i;

	for (i = 0; i < ms->n; i++)
		free(ms->v[i].path);
	free(ms->v);
	ms->v = NULL;
	ms->n = 0;
}
