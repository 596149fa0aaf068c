// SPDX-License-Identifier: GPL-2.0
/*
 * marker-cost N: a well-behaved user_events application for
 * bench/marker-cost.sh.  It registers bench_ev (u32 n; char[16] s), then
 * N times checks its enable bit and, if set, writes the event, between
 * the marks of region 2 of the TCG plugin insn-marks.c.  Prints how many
 * events it wrote.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/user_events.h>

/* The marker: nopl 0x425453NN(%rax), see insn-marks.c. */
#define MARK(nn) asm volatile(".byte 0x0f, 0x1f, 0x80, " #nn ", 0x53, 0x54, 0x42" \
			      ::: "memory")

static volatile int enabled;

int main(int argc, char **argv)
{
	struct __attribute__((packed)) {
		int idx;
		unsigned int n;
		char s[16];
	} ev = { .s = "a sixteen b str" };
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = 0,
		.enable_size = sizeof(enabled),
		.enable_addr = (uintptr_t)&enabled,
		.name_args = (uintptr_t)"bench_ev u32 n; char[16] s",
	};
	long i, n, written = 0;
	int fd;

	if (argc != 2)
		return 2;
	n = atol(argv[1]);
	fd = open("/sys/kernel/tracing/user_events_data", O_WRONLY);
	if (fd < 0 || ioctl(fd, DIAG_IOCSREG, &reg)) {
		perror("marker-cost: user_events");
		return 1;
	}
	ev.idx = reg.write_index;
	MARK(0x02);
	for (i = 0; i < n; i++) {
		if (enabled & 1) {
			ev.n = i;
			written += write(fd, &ev, sizeof(ev)) == sizeof(ev);
		}
	}
	MARK(0x82);
	printf("written=%ld\n", written);
	return 0;
}
