// SPDX-License-Identifier: GPL-2.0
/*
 * System calls between branches: getpid() through glibc and through
 * "int $0x80" (the 32-bit entry), write(), a failing close(), short
 * sleeps (real context switches, the trace must survive them), and
 * moves between the two CPUs (per-thread tracing must follow the task).
 * In a user-only trace none of this adds a user->user branch: each
 * syscall/int is a user->kernel record at most, and the return to user
 * space runs at CPL 0.  Then stop_here(), where the gdb test stops
 * recording.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

noipa long getpid_int80(void)
{
	long ret;

	/* 20 is getpid in the i386 system call table. */
	asm volatile("int $0x80" : "=a" (ret) : "a" (20L) : "memory");
	return ret;
}

/* Where the gdb test stops recording. */
noipa void stop_here(void)
{
	asm volatile("");
}

static void move_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* Ignore failure (one CPU): the control flow is the same. */
	sched_setaffinity(0, sizeof(set), &set);
}

int main(void)
{
	const struct timespec ms = { 0, 1000000 };
	static const char msg[] = "syscalls: write\n";
	pid_t pid = getpid();
	int i;

	for (i = 0; i < 10; i++)
		CHECK(getpid() == pid);
	CHECK(getpid_int80() == pid);
	CHECK(write(1, msg, strlen(msg)) == (ssize_t)strlen(msg));
	CHECK(close(-1) == -1);
	for (i = 0; i < 3; i++) {
		move_to(i & 1);
		nanosleep(&ms, NULL);
	}
	stop_here();
	printf("syscalls ok\n");
	return 0;
}
