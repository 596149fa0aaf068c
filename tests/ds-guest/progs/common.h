/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The runtime of the tests/ds-guest workloads: no C library, so that the
 * ptrace oracle (which single-steps at about a thousand instructions a
 * second under TCG) has little to step besides the workload itself.
 * Everything they do takes the same branches in every run (the oracle's
 * and the traced one): nothing depends on the pid, the time or the
 * consumers.
 */
#ifndef DS_GUEST_COMMON_H
#define DS_GUEST_COMMON_H

#define SYS_write	1
#define SYS_open	2
#define SYS_close	3
#define SYS_nanosleep	35
#define SYS_getpid	39
#define SYS_exit_group	231
#define O_WRONLY	1

#define DSC_DIR		"/sys/kernel/debug/ds_consumers/"

int main(void);

/* The entry point: main()'s value is the exit status. */
asm(".text\n"
    ".globl _start\n"
    "_start:\n"
    "	xor %ebp, %ebp\n"
    "	and $-16, %rsp\n"
    "	call main\n"
    "	mov %eax, %edi\n"
    "	mov $231, %eax\n"
    "	syscall\n"
    "	hlt\n");

static inline long sys3(long nr, long a, long b, long c)
{
	long ret;

	asm volatile("syscall"
		     : "=a" (ret)
		     : "a" (nr), "D" (a), "S" (b), "d" (c)
		     : "rcx", "r11", "memory");
	return ret;
}

static void __attribute__((noreturn, unused)) die(int status)
{
	sys3(SYS_exit_group, status, 0, 0);
	__builtin_unreachable();
}

static long __attribute__((noinline, unused)) dsc_open(const char *file)
{
	long fd = sys3(SYS_open, (long)file, O_WRONLY, 0);

	if (fd < 0)
		die(3);
	return fd;
}

/* Write @s to an open ds_consumers file; any failure ends the program. */
static void __attribute__((noinline, unused)) dsc_put(long fd, const char *s)
{
	long len = 0;

	while (s[len])
		len++;
	if (sys3(SYS_write, fd, (long)s, len) != len)
		die(4);
}

static void __attribute__((noinline, unused))
dsc_write(const char *file, const char *s)
{
	long fd = dsc_open(file);

	dsc_put(fd, s);
	sys3(SYS_close, fd, 0, 0);
}

/* "ID ADDR GEN", as the marker file takes it. */
#define marker(s)	dsc_write(DSC_DIR "marker", s)
#define control(s)	dsc_write(DSC_DIR "control", s)

static void __attribute__((noinline, unused)) nap(long ns)
{
	long ts[2] = { 0, ns };

	sys3(SYS_nanosleep, (long)ts, 0, 0);
}

#endif /* DS_GUEST_COMMON_H */
