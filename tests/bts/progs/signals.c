// SPDX-License-Identifier: GPL-2.0
/*
 * Signal handlers entered in three ways, all deterministic (no timers):
 * kill(getpid(), SIGUSR1) three times, raise(SIGUSR2) twice (the second
 * handler run leaves with siglongjmp), and a ud2 whose SIGILL handler
 * skips it by moving the saved RIP.
 *
 * In a user-only branch trace the entry into a handler is not a branch
 * (the kernel's iret/sysret to the handler runs at CPL 0); the handler's
 * ret to the signal restorer is, and the restorer's rt_sigreturn is a
 * syscall whose return to the interrupted code again is not.  Then
 * stop_here(), where the gdb test stops recording.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include "common.h"

static volatile sig_atomic_t usr1_hits, usr2_hits, ill_hits;
static sigjmp_buf escape;

noipa void on_usr1(int sig)
{
	(void)sig;
	usr1_hits++;
}

noipa void on_usr2(int sig)
{
	(void)sig;
	if (++usr2_hits == 2)
		siglongjmp(escape, 1);
}

noipa void on_ill(int sig, siginfo_t *si, void *uc_void)
{
	ucontext_t *uc = uc_void;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_RIP] += 2;	/* skip the ud2 */
	ill_hits++;
}

/* Where the gdb test stops recording. */
noipa void stop_here(void)
{
	asm volatile("");
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	CHECK(sigaction(sig, &sa, NULL) == 0);
}

int main(void)
{
	struct sigaction sa;
	int i;

	handle(SIGUSR1, on_usr1);
	handle(SIGUSR2, on_usr2);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_ill;
	sa.sa_flags = SA_SIGINFO;
	CHECK(sigaction(SIGILL, &sa, NULL) == 0);

	for (i = 0; i < 3; i++)
		kill(getpid(), SIGUSR1);
	raise(SIGUSR2);
	if (!sigsetjmp(escape, 1)) {
		raise(SIGUSR2);
		CHECK(!"siglongjmp did not happen");
	}
	asm volatile("ud2");

	CHECK(usr1_hits == 3 && usr2_hits == 2 && ill_hits == 1);
	stop_here();
	printf("signals ok\n");
	return 0;
}
