// SPDX-License-Identifier: GPL-2.0
/*
 * The enable bit across fork(), for tests/user-events: forkbit registers
 * bts_test_en (u32 stage), forks, and the child prints "child enabled=B",
 * then the parent "parent enabled=B" (B: the bit each sees).  A child the
 * trace does not follow must not see the bit its parent's trace set.
 */
#include <sys/wait.h>
#include <unistd.h>
#include "user_events.h"

int main(void)
{
	int fd, status;
	pid_t pid;

	fd = open(USER_EVENTS_DATA, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	ue_register(fd, "bts_test_en u32 stage", 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		printf("child enabled=%d\n", !!(enabled[0] & 1));
		return 0;
	}
	CHECK(waitpid(pid, &status, 0) == pid && status == 0);
	printf("parent enabled=%d\n", !!(enabled[0] & 1));
	return 0;
}
