/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of KUnit that the Debug Store core's tests use, for running
 * them in user space.  Failed expectations print a TAP diagnostic and mark
 * the case failed; the case goes on, as with KUnit's EXPECT macros.
 */
#ifndef _DS_HARNESS_KUNIT_TEST_H
#define _DS_HARNESS_KUNIT_TEST_H

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define KUNIT_MAX_ALLOCS	32

/* A case's state: its verdict and what it allocated, freed after it. */
struct kunit {
	bool failed;
	unsigned int nr_allocs;
	void *allocs[KUNIT_MAX_ALLOCS];
};

#define GFP_KERNEL	0

static inline void *kunit_kcalloc(struct kunit *test, size_t n, size_t size,
				  int gfp)
{
	void *p;

	(void)gfp;
	if (test->nr_allocs == KUNIT_MAX_ALLOCS)
		return NULL;
	p = calloc(n, size);
	if (p)
		test->allocs[test->nr_allocs++] = p;
	return p;
}

static inline void kunit_cleanup(struct kunit *test)
{
	while (test->nr_allocs)
		free(test->allocs[--test->nr_allocs]);
}

struct kunit_case {
	void (*run_case)(struct kunit *test);
	const char *name;
};

struct kunit_suite {
	const char *name;
	struct kunit_case *test_cases;
};

#define KUNIT_CASE(fn)	{ .run_case = fn, .name = #fn }

/* The harness's main() lists the suites it runs. */
#define kunit_test_suite(suite)	static_assert(sizeof(suite), "")

#define KUNIT_FAIL(test, fmt, ...) do {					\
	(test)->failed = true;						\
	printf("    # %s:%d: " fmt "\n", __FILE__, __LINE__,		\
	       ##__VA_ARGS__);						\
} while (0)

/* Stops the whole run: the harness has no way to abort just the case. */
#define KUNIT_ASSERT_NOT_NULL(test, ptr) do {				\
	if (!(ptr)) {							\
		KUNIT_FAIL(test, "%s is NULL", #ptr);			\
		abort();						\
	}								\
} while (0)

#define KUNIT_EXPECT_TRUE_MSG(test, cond, fmt, ...) do {		\
	if (!(cond))							\
		KUNIT_FAIL(test, "expected %s; " fmt, #cond,		\
			   ##__VA_ARGS__);				\
} while (0)

#define KUNIT_EXPECT_FALSE_MSG(test, cond, fmt, ...)			\
	KUNIT_EXPECT_TRUE_MSG(test, !(cond), fmt, ##__VA_ARGS__)

#define KUNIT_BINARY(test, op, l, r, fmt, ...) do {			\
	long long __l = (l), __r = (r);					\
	if (!(__l op __r))						\
		KUNIT_FAIL(test, "expected %s %s %s, got %lld and %lld; " fmt, \
			   #l, #op, #r, __l, __r, ##__VA_ARGS__);	\
} while (0)

#define KUNIT_EXPECT_EQ(test, l, r)	KUNIT_BINARY(test, ==, l, r, "")
#define KUNIT_EXPECT_EQ_MSG(test, l, r, fmt, ...) \
	KUNIT_BINARY(test, ==, l, r, fmt, ##__VA_ARGS__)
#define KUNIT_EXPECT_GT_MSG(test, l, r, fmt, ...) \
	KUNIT_BINARY(test, >, l, r, fmt, ##__VA_ARGS__)

#endif /* _DS_HARNESS_KUNIT_TEST_H */
