/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the BTS test programs.  They are built static and non-PIE, so
 * their control flow does not depend on a dynamic loader or on where
 * they are loaded; the driver also runs them without ASLR and with a fixed
 * environment, because glibc's startup code walks the environment.
 *
 * noipa keeps each function a real, separately called function with its
 * own name (no inlining, cloning or .isra/.constprop renaming), so gdb's
 * call history and symbolized diagnostics show the names in the source.
 */
#ifndef BTS_PROGS_COMMON_H
#define BTS_PROGS_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#define noipa __attribute__((noipa))

/* Report a failed self-check and fail the program. */
#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: check failed: %s\n",		\
			__FILE__, __LINE__, #cond);			\
		exit(1);						\
	}								\
} while (0)

#endif /* BTS_PROGS_COMMON_H */
