// SPDX-License-Identifier: GPL-2.0
/*
 * Symbols of code a JIT compiler made, from perf's convention: the
 * process writes /tmp/perf-PID.map, a line "START SIZE NAME" (START and
 * SIZE in hex) for each function it compiles (node --perf-basic-prof,
 * Java's perf-map-agent, LuaJIT, Mono, ...).  Looked up, as perf does, for
 * addresses in no file's mapping.
 *
 * A trace bts-dump wrote carries the map, as the tracer read it while the
 * process lived (live.c): what a container's process wrote in its own
 * /tmp, and what a process wrote whose pid another has by the time the
 * trace is read.  Then only that is used.  A trace without it (another
 * tracer's) gets the file: read when first needed and again when a lookup
 * finds nothing and the file changed (at most once a second), only what
 * was appended.  As perf does, a file that neither the user nor root owns
 * is not used; nor is anything but a regular file.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bts-dump.h"

struct jit_sym {
	u64 start;
	u64 size;
	size_t line;		/* later lines win: code compiled again */
	char *name;
};

struct jit_map {
	char path[64];
	const char *name;	/* the file's base name, what -> dso says */
	struct jit_sym *v;
	size_t n, cap;
	/*
	 * Every name read, freed with the map: a caller may still hold one
	 * found before the file was read again.
	 */
	char **names;
	size_t nnames, names_cap;
	/* the file as it was read; ino 0: not read (or not there) */
	ino_t ino;
	off_t size;
	off_t parsed;		/* the bytes of its whole lines */
	size_t lines;
	struct timespec mtime;
	time_t checked;		/* when it was last looked at */
	bool warned;
	bool carried;		/* the trace carries the map: no file */
};

static int by_start(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static char *jit_name(struct jit_map *j, const char *name)
{
	if (j->nnames == j->names_cap) {
		j->names_cap = j->names_cap ? 2 * j->names_cap : 64;
		j->names = xrealloc(j->names,
				    j->names_cap * sizeof(*j->names));
	}
	return j->names[j->nnames++] = xstrdup(name);
}

/*
 * Parse the whole lines from where the last read stopped: JITs append, so
 * a read again parses what was added (a line still being written waits).
 */
static void jit_read(struct jit_map *j, FILE *f)
{
	size_t len = 0, i, k;
	unsigned long long start, size;
	char *text = NULL, *name;
	ssize_t got;
	int end;

	while ((got = getline(&text, &len, f)) > 0 && text[got - 1] == '\n') {
		j->parsed += got;
		j->lines++;
		text[got - 1] = 0;
		end = 0;
		if (sscanf(text, "%llx %llx %n", &start, &size, &end) != 2 ||
		    !end || !size || !text[end])
			continue;
		name = text + end;
		if (j->n == j->cap) {
			j->cap = j->cap ? 2 * j->cap : 64;
			j->v = xrealloc(j->v, j->cap * sizeof(*j->v));
		}
		j->v[j->n++] = (struct jit_sym) {
			.start = start, .size = size, .line = j->lines,
			.name = jit_name(j, name),
		};
	}
	free(text);
	if (!j->n)
		return;
	qsort(j->v, j->n, sizeof(*j->v), by_start);
	/* Of the functions that start at one address, the last compiled. */
	for (i = k = 0; i < j->n; i++) {
		if (k && j->v[k - 1].start == j->v[i].start)
			j->v[k - 1] = j->v[i];
		else
			j->v[k++] = j->v[i];
	}
	j->n = k;
}

/* Start afresh: the map was replaced. */
static void jit_reset(struct jit_map *j)
{
	j->n = 0;
	j->parsed = 0;
	j->lines = 0;
}

/**
 * jit_map_add() - lines of the JIT map as the trace carries them
 * @j: the process's JIT symbols
 * @ns_pid: the process's pid in its own pid namespace, which names the
 *	file (/tmp/perf-NS_PID.map, in its own mount namespace)
 * @whole: the whole map, replacing what came before; else lines added
 * @text: whole lines of the map file
 * @len: their length
 *
 * From the first call on, the file is never read.
 */
void jit_map_add(struct jit_map *j, u32 ns_pid, bool whole, const char *text,
		 size_t len)
{
	FILE *f;

	j->carried = true;
	snprintf(j->path, sizeof(j->path), "/tmp/perf-%u.map", ns_pid);
	if (whole)
		jit_reset(j);
	if (!len)
		return;
	f = fmemopen((void *)text, len, "r");
	if (!f)
		err(1, "fmemopen");
	jit_read(j, f);
	fclose(f);
}

/*
 * Read what the file has that was not read, if it is a regular file (not
 * a FIFO, not a link: /tmp is everyone's) of the user's or root's.
 */
static void jit_load(struct jit_map *j)
{
	struct stat sb;
	FILE *f;
	int fd;

	fd = open(j->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP && !j->warned)
			warnx("%s: not used: a symbolic link", j->path);
		j->warned |= errno == ELOOP;
		return;
	}
	if (fstat(fd, &sb) ||
	    (sb.st_ino == j->ino && sb.st_size == j->size &&
	     sb.st_mtim.tv_sec == j->mtime.tv_sec &&
	     sb.st_mtim.tv_nsec == j->mtime.tv_nsec)) {
		close(fd);
		return;
	}
	if (!S_ISREG(sb.st_mode) ||
	    (sb.st_uid != geteuid() && sb.st_uid != 0)) {
		if (!j->warned)
			warnx("%s: not used: %s", j->path,
			      S_ISREG(sb.st_mode) ?
			      "owned by someone else than you or root" :
			      "not a regular file");
		j->warned = true;
		close(fd);
		return;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	/* Another file, or cut short: all of it again. */
	if (sb.st_ino != j->ino || sb.st_size < j->parsed)
		jit_reset(j);
	j->ino = sb.st_ino;
	j->size = sb.st_size;
	j->mtime = sb.st_mtim;
	if (!fseeko(f, j->parsed, SEEK_SET))
		jit_read(j, f);
	fclose(f);
}

static const struct jit_sym *jit_search(const struct jit_map *j, u64 addr)
{
	size_t lo = 0, hi = j->n, mid;

	/* The last function that starts at or below @addr. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (j->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - j->v[lo - 1].start >= j->v[lo - 1].size)
		return NULL;
	return &j->v[lo - 1];
}

/**
 * jit_map_new() - the JIT symbols of process @pid, read when needed
 * @pid: the process
 *
 * Return: the map, to free with jit_map_free().
 */
struct jit_map *jit_map_new(u32 pid)
{
	struct jit_map *j = xcalloc(1, sizeof(*j));

	snprintf(j->path, sizeof(j->path), "/tmp/perf-%u.map", pid);
	j->name = base_name(j->path);
	j->checked = -1;
	return j;
}

/**
 * jit_map_find() - the JIT-compiled function @addr is in
 * @j: the process's JIT symbols
 * @addr: the address
 * @off: set to @addr's offset in the function
 * @file: set to the base name of the file that named it
 *
 * Return: the function's name, valid until jit_map_free(), or NULL.
 */
const char *jit_map_find(struct jit_map *j, u64 addr, u64 *off,
			 const char **file)
{
	const struct jit_sym *s = jit_search(j, addr);
	struct timespec now;

	if (!s) {
		if (j->carried)
			return NULL;
		clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
		if (now.tv_sec == j->checked)
			return NULL;
		j->checked = now.tv_sec;
		jit_load(j);
		s = jit_search(j, addr);
		if (!s)
			return NULL;
	}
	*off = addr - s->start;
	*file = j->name;
	return s->name;
}

void jit_map_free(struct jit_map *j)
{
	size_t i;

	if (!j)
		return;
	for (i = 0; i < j->nnames; i++)
		free(j->names[i]);
	free(j->names);
	free(j->v);
	free(j);
}
