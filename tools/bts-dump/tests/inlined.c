// SPDX-License-Identifier: GPL-2.0
/*
 * For --inline (tests/check_inline.py): outer() is middle() and inner()
 * inlined into it, built with -O2 -g.  Only symbolized, never run.
 */
static inline __attribute__((always_inline)) int inner(int x)
{
	return x * 3 + 1;
}

static inline __attribute__((always_inline)) int middle(int x)
{
	return inner(x) ^ 5;
}

__attribute__((noinline)) int outer(int x)
{
	return middle(x) + 7;
}

int main(int argc, char **argv)
{
	(void)argv;
	return outer(argc);
}
