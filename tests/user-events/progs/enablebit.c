// SPDX-License-Identifier: GPL-2.0
/*
 * The enable bit of a user_event, as a well-behaved application sees it,
 * for tests/user-events: enablebit FIFO STAGES registers bts_test_en
 * (u32 stage), then STAGES times waits for a byte on FIFO, prints
 * "stage K enabled=B" (B: its enable bit) and, only if the bit is set,
 * writes the event with the stage's number.
 */
#include <string.h>
#include <unistd.h>
#include "user_events.h"

int main(int argc, char **argv)
{
	struct __attribute__((packed)) { int idx; unsigned int stage; } ev;
	int fd, fifo, stages, k;
	char c;

	CHECK(argc == 3);
	stages = atoi(argv[2]);
	fd = open(USER_EVENTS_DATA, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	ev.idx = ue_register(fd, "bts_test_en u32 stage", 0);
	fifo = open(argv[1], O_RDONLY | O_CLOEXEC);
	CHECK(fifo >= 0);
	for (k = 1; k <= stages; k++) {
		CHECK(read(fifo, &c, 1) == 1);
		printf("stage %d enabled=%d\n", k, !!(enabled[0] & 1));
		fflush(stdout);
		if (enabled[0] & 1) {
			ev.stage = k;
			ue_write(fd, &ev, sizeof(ev));
		}
	}
	return 0;
}
