// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation that cannot fail: bts-dump has nothing useful to do without
 * memory, so it says so and exits.
 */
#include <err.h>
#include <stdlib.h>
#include <string.h>

#include "bts-dump.h"

static void *check(void *p)
{
	if (!p)
		errx(1, "out of memory");
	return p;
}

void *xmalloc(size_t n)
{
	return check(malloc(n ? n : 1));
}

void *xcalloc(size_t n, size_t size)
{
	return check(calloc(n ? n : 1, size ? size : 1));
}

void *xrealloc(void *p, size_t n)
{
	return check(realloc(p, n ? n : 1));
}

char *xstrdup(const char *s)
{
	return check(strdup(s));
}

char *xstrndup(const char *s, size_t n)
{
	return check(strndup(s, n));
}

/* A name of @len bytes, not terminated, into @comm; cut to fit. */
void set_comm(char comm[COMM_MAX], const char *name, size_t len)
{
	if (len >= COMM_MAX)
		len = COMM_MAX - 1;
	memcpy(comm, name, len);
	comm[len] = 0;
}

const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}
