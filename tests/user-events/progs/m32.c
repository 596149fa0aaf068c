// SPDX-License-Identifier: GPL-2.0
/*
 * A 32-bit writer of user_events without a C library, for
 * tests/user-events: int $0x80 system calls register bts_test_a (u32 seq;
 * char[8] tag) and write it three times, twice with write() and once with
 * writev() of two iovecs, after calls of leaf().  Exits 0 when every call
 * succeeded.
 */
#define noipa __attribute__((noipa))

/*
 * <linux/user_events.h>'s struct user_reg and DIAG_IOCSREG: the 32-bit
 * build has no kernel headers.  The command encodes the size of a
 * pointer, 4 here: _IOWR('*', 0, struct user_reg *).
 */
struct __attribute__((packed)) user_reg {
	unsigned int size;
	unsigned char enable_bit;
	unsigned char enable_size;
	unsigned short flags;
	unsigned long long enable_addr;
	unsigned long long name_args;
	unsigned int write_index;
};

#define DIAG_IOCSREG	(3U << 30 | sizeof(void *) << 16 | '*' << 8 | 0)

#define NR_exit		1
#define NR_write	4
#define NR_open		5
#define NR_ioctl	54
#define NR_writev	146
#define O_WRONLY	1

asm(".text\n"
"	.globl _start\n"
"	.type _start, @function\n"
"_start:\n"
"	xor %ebp, %ebp\n"
"	and $-16, %esp\n"
"	call main32\n"
"	mov %eax, %ebx\n"
"	mov $1, %eax\n"			/* exit */
"	int $0x80\n"
"	hlt\n"
"	.size _start, .-_start\n");

static long sys3(long nr, long a, long b, long c)
{
	long ret;

	asm volatile("int $0x80"
		     : "=a" (ret) : "a" (nr), "b" (a), "c" (b), "d" (c)
		     : "memory");
	return ret;
}

struct iovec32 {
	const void *base;
	unsigned long len;
};

struct __attribute__((packed)) event_a {
	int idx;
	unsigned int seq;
	char tag[8];
};

static int enabled;
static volatile long sink;

noipa long leaf(long x)
{
	return x * 3 + 1;
}

noipa int main32(void)
{
	struct user_reg reg = {
		.size = sizeof(reg),
		.enable_size = sizeof(enabled),
		.enable_addr = (unsigned long)&enabled,
		.name_args = (unsigned long)"bts_test_a u32 seq; char[8] tag",
	};
	struct event_a ev = { .tag = "m32" };
	struct iovec32 iov[2] = {
		{ &ev.idx, sizeof(ev.idx) },
		{ &ev.seq, sizeof(ev) - sizeof(ev.idx) },
	};
	long fd, bad = 0;

	fd = sys3(NR_open, (long)"/sys/kernel/tracing/user_events_data",
		  O_WRONLY, 0);
	if (fd < 0)
		return 1;
	if (sys3(NR_ioctl, fd, DIAG_IOCSREG, (long)&reg))
		return 2;
	ev.idx = reg.write_index;
	sink += leaf(1);
	ev.seq = 1;
	bad |= sys3(NR_write, fd, (long)&ev, sizeof(ev)) != sizeof(ev);
	sink += leaf(2);
	ev.seq = 2;
	bad |= sys3(NR_writev, fd, (long)iov, 2) != sizeof(ev);
	sink += leaf(3);
	ev.seq = 3;
	bad |= sys3(NR_write, fd, (long)&ev, sizeof(ev)) != sizeof(ev);
	/*
	 * No branch on the results: a run where nobody listens (the
	 * oracle's, whose writes fail) takes the same branches.
	 */
	asm("" : "+r" (bad));
	return bad * 3;
}
