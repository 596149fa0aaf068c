// SPDX-License-Identifier: GPL-2.0
/*
 * user_events written between known branches, for tests/user-events:
 *
 * - bts_test_a (u32 seq; char[8] tag), with write(), after each of 20
 *   calls of leaf();
 * - bts_test_b (__rel_loc char[] msg; u64 val), with writev() of three
 *   iovecs (the write index, the fixed fields, the string), every third;
 * - bts_test_big (u32 seq; char[100] blob), 104 bytes, more than a marker
 *   carries, every fifth;
 * - bts_other_c (u32 seq), which the tests' glob leaves out, every
 *   fourth.
 *
 * Then it prints what it wrote, one line per event, "NAME SEQ": the
 * events' writes are its only write system calls before that.
 */
#include <string.h>
#include <unistd.h>
#include "user_events.h"

#define ROUNDS	20

static int fd, idx_a, idx_b, idx_big, idx_c;
static char log_buf[4096];
static int log_len;
static volatile long sink;

noipa void emit_b(unsigned int seq)
{
	static char msg[] = "message 00";
	struct __attribute__((packed)) {
		unsigned int msg_loc;
		unsigned long long val;
	} fixed = {
		/* After val: 8 bytes past the end of msg_loc. */
		.msg_loc = sizeof(msg) << 16 | 8,
		.val = 1000ULL * seq,
	};
	struct iovec iov[] = {
		{ &idx_b, sizeof(idx_b) },
		{ &fixed, sizeof(fixed) },
		{ msg, sizeof(msg) },
	};

	msg[8] = '0' + seq / 10;
	msg[9] = '0' + seq % 10;
	ue_writev(fd, iov, 3);
}

noipa void emit_c(unsigned int seq)
{
	struct { int idx; unsigned int seq; } ev = { idx_c, seq };

	ue_write(fd, &ev, sizeof(ev));
}

static void logged(const char *name, unsigned int seq)
{
	log_len += snprintf(log_buf + log_len, sizeof(log_buf) - log_len,
			    "%s %u\n", name, seq);
}

int main(void)
{
	unsigned int i;

	fd = open(USER_EVENTS_DATA, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	idx_a = ue_register(fd, "bts_test_a u32 seq; char[8] tag", 0);
	idx_b = ue_register(fd, "bts_test_b __rel_loc char[] msg; u64 val", 1);
	idx_big = ue_register(fd, "bts_test_big u32 seq; char[100] blob", 2);
	idx_c = ue_register(fd, "bts_other_c u32 seq", 3);

	for (i = 0; i < ROUNDS; i++) {
		char tag[] = "tag0";

		tag[3] += i % 10;
		sink += leaf(i);
		emit_a(fd, idx_a, i, tag);
		logged("bts_test_a", i);
		if (i % 3 == 0) {
			emit_b(i);
			logged("bts_test_b", i);
		}
		if (i % 4 == 0) {
			emit_c(i);
			logged("bts_other_c", i);
		}
		if (i % 5 == 0) {
			emit_big(fd, idx_big, i);
			logged("bts_test_big", i);
		}
	}
	CHECK(write(STDOUT_FILENO, log_buf, log_len) == log_len);
	return 0;
}
