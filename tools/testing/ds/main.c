// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace harness for the x86 Debug Store core: builds
 * arch/x86/kernel/ds_core.c and its KUnit tests unchanged against the
 * stand-ins in this directory and runs them, printing TAP.
 */
#include "ds_internal.h"

#include "../../../arch/x86/kernel/ds_core.c"
#include "../../../arch/x86/kernel/ds_core_test.c"

int main(void)
{
	struct kunit_case *c;
	int n = 0, failed = 0;

	for (c = harness_suite->test_cases; c->run_case; c++) {
		struct kunit test = { .failed = false };

		c->run_case(&test);
		kunit_cleanup(&test);
		n++;
		failed += test.failed;
		printf("%sok %d - %s.%s\n", test.failed ? "not " : "", n,
		       harness_suite->name, c->name);
	}
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
