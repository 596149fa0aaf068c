// SPDX-License-Identifier: GPL-2.0
/*
 * An event deleted and registered again with another format while traced,
 * and a multi-format event, for tests/user-events:
 *
 * 1. bts_test_re (u32 x) is written with x = 1, then unregistered and
 *    deleted;
 * 2. bts_test_re (u64 y; u32 z) is registered and written with y = 2,
 *    z = 3: its markers have another generation, and a format of their
 *    own, also when the id is the same;
 * 3. bts_test_multi (u32 v), registered with USER_EVENT_REG_MULTI_FORMAT,
 *    is written with v = 4.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "user_events.h"

static void unregister(int fd, int slot)
{
	struct user_unreg unreg = {
		.size = sizeof(unreg),
		.disable_bit = 0,
		.disable_addr = (uintptr_t)&enabled[slot],
	};

	CHECK(ioctl(fd, DIAG_IOCSUNREG, &unreg) == 0);
}

/* Delete @name once the last reference is gone (that takes a moment). */
static void delete(int fd, const char *name)
{
	struct timespec ms = { 0, 1000000 };
	int tries;

	for (tries = 0; tries < 5000; tries++) {
		if (!ioctl(fd, DIAG_IOCSDEL, name) || errno == ENOENT)
			return;
		CHECK(errno == EBUSY);
		nanosleep(&ms, NULL);
	}
	CHECK(!"the event stayed busy");
}

int main(void)
{
	struct __attribute__((packed)) { int idx; unsigned int x; } one;
	struct __attribute__((packed)) {
		int idx;
		unsigned long long y;
		unsigned int z;
	} two;
	struct user_reg multi = {
		.size = sizeof(multi),
		.enable_size = sizeof(enabled[0]),
		.enable_addr = (uintptr_t)&enabled[2],
		.flags = USER_EVENT_REG_MULTI_FORMAT,
		.name_args = (uintptr_t)"bts_test_multi u32 v",
	};
	struct __attribute__((packed)) { int idx; unsigned int v; } three;
	int fd, fd2;

	fd = open(USER_EVENTS_DATA, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	one.idx = ue_register(fd, "bts_test_re u32 x", 0);
	one.x = 1;
	ue_write(fd, &one, sizeof(one));
	unregister(fd, 0);
	close(fd);

	fd2 = open(USER_EVENTS_DATA, O_WRONLY | O_CLOEXEC);
	CHECK(fd2 >= 0);
	delete(fd2, "bts_test_re");
	two.idx = ue_register(fd2, "bts_test_re u64 y; u32 z", 1);
	two.y = 2;
	two.z = 3;
	ue_write(fd2, &two, sizeof(two));

	CHECK(ioctl(fd2, DIAG_IOCSREG, &multi) == 0);
	three.idx = multi.write_index;
	three.v = 4;
	ue_write(fd2, &three, sizeof(three));
	return 0;
}
