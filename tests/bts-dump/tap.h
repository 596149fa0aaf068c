/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TAP for the /dev/bts test programs (abi.c, maps.c, comm.c): numbered
 * results, diagnostics under them; main() prints the plan ("1..nr") last
 * and exits non-zero if any failed.
 */
#ifndef BTS_TESTS_TAP_H
#define BTS_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int nr, failed;

static void __attribute__((format(printf, 2, 3), unused))
tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++nr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failed += !ok;
}

static void __attribute__((format(printf, 1, 2), unused))
diag(const char *fmt, ...)
{
	va_list ap;

	printf("#   ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

#endif
