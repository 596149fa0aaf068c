/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The test programs' side of user_events: register events on
 * user_events_data and write them with a bare system call instruction,
 * whose result no branch looks at, so that a run where nobody listens
 * (the oracle's: -EBADF) takes the same branches as one where a branch
 * trace does.  Included by one program each: it defines functions.
 */
#ifndef TESTS_USER_EVENTS_H
#define TESTS_USER_EVENTS_H

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/user_events.h>
#include "common.h"

#define USER_EVENTS_DATA	"/sys/kernel/tracing/user_events_data"

/* The enable words user_events sets; the programs write regardless. */
static int enabled[8];

/*
 * Register @cmd ("NAME FIELDS") with its enable bit at bit 0 of @word;
 * returns its write index.
 */
static inline int ue_register_at(int fd, const char *cmd, volatile int *word)
{
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_bit = 0,
		.enable_size = sizeof(*word),
		.enable_addr = (uintptr_t)word,
		.name_args = (uintptr_t)cmd,
	};

	CHECK(ioctl(fd, DIAG_IOCSREG, &reg) == 0);
	return reg.write_index;
}

/* Register @cmd with its enable bit in enabled[@slot]. */
static inline int ue_register(int fd, const char *cmd, int slot)
{
	return ue_register_at(fd, cmd, &enabled[slot]);
}

/* writev(@fd, @iov, @n) with the syscall instruction itself. */
static inline void ue_writev(int fd, const struct iovec *iov, int n)
{
	long ret;

	asm volatile("syscall"
		     : "=a" (ret)
		     : "0" ((long)SYS_writev), "D" ((long)fd), "S" (iov),
		       "d" ((long)n)
		     : "rcx", "r11", "memory");
}

/* write(@fd, @buf, @len) likewise. */
static inline void ue_write(int fd, const void *buf, unsigned long len)
{
	long ret;

	asm volatile("syscall"
		     : "=a" (ret)
		     : "0" ((long)SYS_write), "D" ((long)fd), "S" (buf),
		       "d" (len)
		     : "rcx", "r11", "memory");
}

/* Straight-line work between the events. */
noipa long leaf(long x)
{
	return x * 3 + 1;
}

/* bts_test_a (u32 seq; char[8] tag), registered at write index @idx. */
noipa void emit_a(int fd, int idx, unsigned int seq, const char *tag)
{
	struct __attribute__((packed)) {
		int idx;
		unsigned int seq;
		char tag[8];
	} ev = { idx, seq, "" };

	strncpy(ev.tag, tag, sizeof(ev.tag));
	ue_write(fd, &ev, sizeof(ev));
}

/*
 * bts_test_big (u32 seq; char[100] blob), 104 bytes, more than a marker
 * carries, registered at write index @idx.
 */
noipa void emit_big(int fd, int idx, unsigned int seq)
{
	struct __attribute__((packed)) {
		int idx;
		unsigned int seq;
		char blob[100];
	} ev = { idx, seq, "" };

	memset(ev.blob, 'x', sizeof(ev.blob) - 1);
	ue_write(fd, &ev, sizeof(ev));
}

#endif /* TESTS_USER_EVENTS_H */
