// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace harness for the x86 Debug Store core: builds
 * arch/x86/kernel/ds_core.c, ds_state.c, ds_persist_core.c and their KUnit
 * tests unchanged against the stand-ins in this directory and runs them,
 * printing TAP.
 */
#include "ds_internal.h"

#include "../../../arch/x86/kernel/ds_core.c"
#include "../../../arch/x86/kernel/ds_core_test.c"
#include "../../../arch/x86/kernel/ds_state.c"
#include "../../../arch/x86/kernel/ds_state_test.c"
#include "../../../arch/x86/kernel/ds_persist_core.c"
#include "../../../arch/x86/kernel/ds_persist_test.c"

static struct kunit_suite *const harness_suites[] = {
	&ds_core_test_suite,
	&ds_state_test_suite,
	&ds_persist_test_suite,
};

int main(void)
{
	const struct kunit_suite *suite;
	struct kunit_case *c;
	int n = 0, failed = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(harness_suites); i++) {
		suite = harness_suites[i];
		for (c = suite->test_cases; c->run_case; c++) {
			struct kunit test = { .failed = false };

			c->run_case(&test);
			kunit_cleanup(&test);
			n++;
			failed += test.failed;
			printf("%sok %d - %s.%s\n", test.failed ? "not " : "",
			       n, suite->name, c->name);
		}
	}
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
