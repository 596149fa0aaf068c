// SPDX-License-Identifier: GPL-2.0
/*
 * User-mode half of the BTS conformance test (see bts_conformance.c and
 * README.md): pinned to one CPU, run a known asm sequence between two
 * writes to debugfs bts_conformance/user that turn BTS on and off for that
 * CPU, read the records back and check them, once per setting of the
 * BTS_OFF_OS/BTS_OFF_USR bits.  Needs root, the module loaded and a kernel
 * booted with "nopti".  Prints TAP.
 *
 * Built static (and not PIE), so the labels below are the linear addresses
 * the records hold.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define DEBUGCTL_BTS_OFF_OS	(1u << 9)
#define DEBUGCTL_BTS_OFF_USR	(1u << 10)
#define BTS_USER_MAGIC		0x31464e4f43535442ULL	/* "BTSCONF1" */
#define CTL_FILE		"/sys/kernel/debug/bts_conformance/user"

/* As in bts_conformance.c */
struct bts_user_header {
	uint64_t magic;
	uint64_t nr;
	uint64_t full;
	uint64_t debugctl;
	uint64_t bad_return;
	uint64_t lstar;
	uint64_t idt[256];
};

struct bts_record {
	uint64_t from, to, flags;
};

/* h_ill below steps over ud2 by adding 2 to the saved RIP at this offset */
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]) == 168,
	       "ucontext layout");

/*
 * run_seq(fd, arm, arm_len, disarm, disarm_len, out): write(fd, arm), the
 * traced sequence, write(fd, disarm); out[0] and out[1] get what the two
 * writes returned, out[2] is 1 if a conditional branch went the wrong way.
 * Between the writes nothing but this code (and the signal handlers and
 * restorer below) runs in user mode.
 */
asm(".text\n"
"	.globl run_seq\n"
"u_code_start:\n"
"run_seq:\n"
"	push %rbx\n"
"	push %rbp\n"
"	push %r12\n"
"	push %r13\n"
"	push %r14\n"
"	push %r15\n"
"	mov %rdi, %r12\n"
"	mov %rcx, %r13\n"
"	mov %r8, %r14\n"
"	mov %r9, %r15\n"
"	movq $0, 16(%r15)\n"
"	mov $1, %eax\n"			/* write(fd, arm, arm_len) */
"	mov %r12d, %edi\n"
"u_arm:	syscall\n"
"u_arm_ret:\n"
"	mov %rax, 0(%r15)\n"
"u_b0:	jmp u_t0\n"			/* jmp rel8 */
"	nop\n"
"u_t0:	xor %eax, %eax\n"
"	jnz u_bad\n"			/* not taken */
"u_b1:	jz u_t1\n"			/* taken */
"	nop\n"
"u_t1:\n"
"u_b2:	call u_fn\n"
"u_r2:	lea u_fn2(%rip), %rax\n"
"u_b3:	call *%rax\n"
"u_r3:	lea u_t4(%rip), %rax\n"
"u_b4:	jmp *%rax\n"
"	nop\n"
"u_t4:	mov $3, %ecx\n"
"u_b5:	loop u_b5\n"			/* taken twice */
"	mov $39, %eax\n"		/* getpid() */
"u_sys:	syscall\n"
"u_sys_ret:\n"
"u_int3:	int3\n"			/* SIGTRAP: h_trap */
"u_int3_ret:\n"
"u_ud2:	ud2\n"				/* SIGILL: h_ill */
"u_ud2_ret:\n"
"u_dis_prep:\n"
"	mov $1, %eax\n"			/* write(fd, disarm, disarm_len) */
"	mov %r12d, %edi\n"
"	mov %r13, %rsi\n"
"	mov %r14, %rdx\n"
"u_dis:	syscall\n"
"	mov %rax, 8(%r15)\n"
"	pop %r15\n"
"	pop %r14\n"
"	pop %r13\n"
"	pop %r12\n"
"	pop %rbp\n"
"	pop %rbx\n"
"	ret\n"
"u_fn:	ret\n"
"u_fn2:	ret\n"
"u_bad:	movq $1, 16(%r15)\n"
"	jmp u_dis_prep\n"
"h_trap:	ret\n"			/* (sig, info, uc) */
"h_ill:	addq $2, 168(%rdx)\n"		/* uc->uc_mcontext.gregs[REG_RIP] */
"h_ill_ret:\n"
"	ret\n"
"u_restorer:\n"
"	mov $15, %eax\n"		/* rt_sigreturn() */
"u_restorer_sys:\n"
"	syscall\n"
"	hlt\n"
"u_code_end:\n");

#define LABELS(X) X(u_code_start) X(u_arm) X(u_arm_ret) X(u_b0) X(u_t0) X(u_b1) \
	X(u_t1) X(u_b2) X(u_r2) X(u_b3) X(u_r3) X(u_b4) X(u_t4) X(u_b5) X(u_sys) \
	X(u_sys_ret) X(u_int3) X(u_int3_ret) X(u_ud2) X(u_ud2_ret) X(u_dis) \
	X(u_fn) X(u_fn2) X(h_trap) X(h_ill) X(h_ill_ret) X(u_restorer) \
	X(u_restorer_sys) X(u_code_end)

/* Labels are local to the asm; make them visible to C */
#define GLOBL(l) ".globl " #l "\n"
asm(LABELS(GLOBL));
#define DECLARE(l) extern const char l[];
LABELS(DECLARE)

void run_seq(int fd, const char *arm, size_t arm_len, const char *dis,
	     size_t dis_len, int64_t out[3]);

#define A(l) ((uint64_t)(uintptr_t)(l))

static int is_user(uint64_t a)
{
	return a < 0x0000800000000000ULL;
}

static const struct bts_user_header *hdr;

static const char *name(uint64_t a)
{
	static char buf[4][48];
	static int n;
	char *b = buf[n++ % 4];
	unsigned int v;

#define NAME(l) if (a == A(l)) return #l;
	LABELS(NAME)
	if (hdr && a == hdr->lstar)
		return "LSTAR";
	for (v = 0; hdr && v < 256; v++) {
		if (a == hdr->idt[v]) {
			snprintf(b, 48, "IDT[%u]", v);
			return b;
		}
	}
	snprintf(b, 48, "%#llx", (unsigned long long)a);
	return b;
}

static int tests, failed;

static void result(int ok, const char *desc)
{
	tests++;
	failed += !ok;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", tests, desc);
}

/*
 * An expected record: a user-mode branch (U: exact from and to), or a
 * return from the kernel to user mode (K: exact to, from any kernel
 * address).
 */
struct exp {
	int kernel;
	uint64_t from, to;
};

static int n_exp;
static struct exp exp_buf[32];

static void u(uint64_t from, uint64_t to)
{
	exp_buf[n_exp++] = (struct exp){ 0, from, to };
}

static void k(uint64_t to)
{
	exp_buf[n_exp++] = (struct exp){ 1, 0, to };
}

/* The records the sequence makes; with_user/with_kernel pick the sources */
static void expected(int with_user, int with_kernel)
{
	uint64_t lstar = hdr->lstar, bp = hdr->idt[3], ud = hdr->idt[6];

	n_exp = 0;
	if (with_kernel)
		k(A(u_arm_ret));
	if (with_user) {
		u(A(u_b0), A(u_t0));
		u(A(u_b1), A(u_t1));
		u(A(u_b2), A(u_fn));
		u(A(u_fn), A(u_r2));
		u(A(u_b3), A(u_fn2));
		u(A(u_fn2), A(u_r3));
		u(A(u_b4), A(u_t4));
		u(A(u_b5), A(u_b5));
		u(A(u_b5), A(u_b5));
		u(A(u_sys), lstar);
	}
	if (with_kernel)
		k(A(u_sys_ret));
	if (with_user)
		u(A(u_int3), bp);
	if (with_kernel)
		k(A(h_trap));
	if (with_user) {
		u(A(h_trap), A(u_restorer));
		u(A(u_restorer_sys), lstar);
	}
	if (with_kernel)
		k(A(u_int3_ret));
	if (with_user)
		u(A(u_ud2), ud);
	if (with_kernel)
		k(A(h_ill));
	if (with_user) {
		u(A(h_ill_ret), A(u_restorer));
		u(A(u_restorer_sys), lstar);
	}
	if (with_kernel)
		k(A(u_ud2_ret));
	if (with_user)
		u(A(u_dis), lstar);
}

/* Interrupts and page faults may come at any time */
static int is_async_entry(uint64_t to)
{
	unsigned int v;

	for (v = 0; v < 256; v++)
		if ((v == 2 || v == 14 || v >= 32) && to == hdr->idt[v])
			return 1;
	return 0;
}

static int expected_to(uint64_t to)
{
	int i;

	for (i = 0; i < n_exp; i++)
		if (exp_buf[i].to == to)
			return 1;
	return 0;
}

/* Show the records around #i */
static void context(const struct bts_record *rec, uint64_t nr, uint64_t i)
{
	uint64_t c = i > 3 ? i - 3 : 0;

	for (; c < nr && c <= i + 2; c++)
		printf("#   %s #%llu: %s -> %s\n", c == i ? ">>" : "  ",
		       (unsigned long long)c, name(rec[c].from), name(rec[c].to));
}

static int in_user_code(uint64_t a)
{
	return a >= A(u_code_start) && a < A(u_code_end);
}

/*
 * Check the records of one run against the expected list.  Records from
 * kernel to kernel are ignored; an interrupt or page fault in user mode
 * (user -> IDT entry of vector 2, 14 or >= 32) and its return (kernel ->
 * the interrupted address) are left out.  Returns 1 when all is well,
 * else prints why as TAP diagnostics.
 */
static int check(const struct bts_record *rec, uint64_t nr, unsigned int off)
{
	uint64_t pending[64];
	unsigned int np = 0, async = 0, j = 0, p;
	uint64_t i;

	for (i = 0; i < nr; i++) {
		const struct bts_record *r = &rec[i];
		int uf = is_user(r->from), ut = is_user(r->to);

		if (r->flags) {
			printf("#   record #%llu: flags %#llx, expected 0\n",
			       (unsigned long long)i, (unsigned long long)r->flags);
			return 0;
		}
		if (uf && (off & DEBUGCTL_BTS_OFF_USR)) {
			printf("#   record #%llu: %s -> %s from user mode, with BTS_OFF_USR\n",
			       (unsigned long long)i, name(r->from), name(r->to));
			return 0;
		}
		if (!uf && (off & DEBUGCTL_BTS_OFF_OS)) {
			printf("#   record #%llu: %s -> %s from kernel mode, with BTS_OFF_OS\n",
			       (unsigned long long)i, name(r->from), name(r->to));
			return 0;
		}
		if (!uf && !ut)
			continue;
		if (uf && !ut && is_async_entry(r->to)) {
			if (np < 64)
				pending[np++] = r->from;
			async++;
			printf("#   record #%llu: %s -> %s: interrupt or page fault, left out\n",
			       (unsigned long long)i, name(r->from), name(r->to));
			continue;
		}
		if (!uf && ut) {
			for (p = 0; p < np && pending[p] != r->to; p++)
				;
			if (p < np) {
				pending[p] = pending[--np];
				continue;
			}
		}
		if (j < (unsigned int)n_exp &&
		    exp_buf[j].kernel == !uf && r->to == exp_buf[j].to &&
		    (exp_buf[j].kernel || r->from == exp_buf[j].from)) {
			j++;
			continue;
		}
		/*
		 * With BTS_OFF_USR an interrupt's entry from user mode is not
		 * recorded, only its return: to where the last return went
		 * (taken on the way out), or to an address no expected
		 * record goes to.
		 */
		if (!uf && (off & DEBUGCTL_BTS_OFF_USR) && in_user_code(r->to) &&
		    ((j && r->to == exp_buf[j - 1].to) || !expected_to(r->to))) {
			async++;
			printf("#   record #%llu: kernel -> %s: return from an unrecorded interrupt, left out\n",
			       (unsigned long long)i, name(r->to));
			continue;
		}
		context(rec, nr, i);
		if (j < (unsigned int)n_exp)
			printf("#   first wrong record #%llu: expected %s -> %s, got %s -> %s\n",
			       (unsigned long long)i,
			       exp_buf[j].kernel ? "kernel" : name(exp_buf[j].from),
			       name(exp_buf[j].to), name(r->from), name(r->to));
		else
			printf("#   extra record #%llu: %s -> %s\n", (unsigned long long)i,
			       name(r->from), name(r->to));
		return 0;
	}
	if (j < (unsigned int)n_exp) {
		printf("#   missing: %s -> %s (expected record %u of %d; %llu records)\n",
		       exp_buf[j].kernel ? "kernel" : name(exp_buf[j].from),
		       name(exp_buf[j].to), j, n_exp, (unsigned long long)nr);
		return 0;
	}
	printf("#   %llu records, %u expected ones matched, %u left out\n",
	       (unsigned long long)nr, j, async);
	return 1;
}

static int cpuid_dscpl(void)
{
	unsigned int a, b, c, d;

	__cpuid(1, a, b, c, d);
	return !!(c & (1u << 4));
}

/* rt_sigaction with our own restorer, so no libc code runs while traced */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static int handle(int sig, const char *handler)
{
	struct kernel_sigaction sa = {
		.handler = (void *)handler,
		.flags = SA_SIGINFO | 0x04000000 /* SA_RESTORER */,
		.restorer = (void *)u_restorer,
	};

	return syscall(SYS_rt_sigaction, sig, &sa, NULL, 8);
}

static unsigned char rbuf[4 << 20];

static void run_mode(int fd, int devnull, unsigned int off, int dscpl, const char *desc)
{
	static const char dis[] = "disarm\n";
	char arm[32], d[160];
	int64_t out[3];
	ssize_t n, len = 0;

	snprintf(arm, sizeof(arm), "arm %x\n", off);
	/* Warm up: same code, writes to /dev/null, so no page fault later */
	run_seq(devnull, arm, strlen(arm), dis, strlen(dis), out);
	run_seq(fd, arm, strlen(arm), dis, strlen(dis), out);

	if (off && !dscpl) {
		snprintf(d, sizeof(d), "user: arm with %s rejected without DS-CPL (EINVAL)", desc);
		result(out[0] == -EINVAL, d);
		if (out[0] != -EINVAL)
			printf("#   arm returned %lld (%s)\n", (long long)out[0],
			       out[0] < 0 ? strerror(-out[0]) : "ok");
		return;
	}
	snprintf(d, sizeof(d), "user: %s", desc);
	if (out[0] != (int64_t)strlen(arm) || out[1] != (int64_t)strlen(dis)) {
		result(0, d);
		printf("#   arm returned %lld (%s), disarm %lld\n", (long long)out[0],
		       out[0] < 0 ? strerror(-out[0]) : "ok", (long long)out[1]);
		if (out[0] == -ENODEV)
			printf("#   the CPU has no DS/DTES64: BTS is not emulated\n");
		if (out[0] == -EOPNOTSUPP)
			printf("#   boot with nopti\n");
		return;
	}
	if (out[2]) {
		result(0, d);
		printf("#   a conditional branch went the wrong way\n");
		return;
	}
	while ((n = pread(fd, rbuf + len, sizeof(rbuf) - len, len)) > 0)
		len += n;
	hdr = (const struct bts_user_header *)rbuf;
	if (len < (ssize_t)sizeof(*hdr) || hdr->magic != BTS_USER_MAGIC ||
	    len != (ssize_t)(sizeof(*hdr) + hdr->nr * sizeof(struct bts_record))) {
		result(0, d);
		printf("#   bad read from %s: %zd bytes\n", CTL_FILE, len);
		return;
	}
	if (hdr->full) {
		result(0, d);
		printf("#   the buffer filled up (%llu records)\n", (unsigned long long)hdr->nr);
		return;
	}
	if ((off & DEBUGCTL_BTS_OFF_OS) && (off & DEBUGCTL_BTS_OFF_USR)) {
		result(hdr->nr == 0, d);
		if (hdr->nr) {
			const struct bts_record *r = (const void *)(hdr + 1);

			printf("#   %llu records, first %s -> %s\n", (unsigned long long)hdr->nr,
			       name(r->from), name(r->to));
		}
		return;
	}
	if (hdr->bad_return) {
		const struct bts_record *r = (const struct bts_record *)(hdr + 1) +
					     hdr->bad_return - 1;

		result(0, d);
		printf("#   record #%llu: %s -> %s: kernel -> user, but not from SYSRETQ or IRETQ\n",
		       (unsigned long long)hdr->bad_return - 1, name(r->from), name(r->to));
		return;
	}
	expected(!(off & DEBUGCTL_BTS_OFF_USR), !(off & DEBUGCTL_BTS_OFF_OS));
	result(check((const void *)(hdr + 1), hdr->nr, off), d);
}

int main(void)
{
	int fd, devnull, cpu, dscpl;
	cpu_set_t set;

	setvbuf(stdout, NULL, _IOLBF, 0);
	cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) || mlockall(MCL_CURRENT | MCL_FUTURE) ||
	    handle(SIGTRAP, h_trap) || handle(SIGILL, h_ill)) {
		perror("setup");
		printf("not ok 1 - user: setup\n1..1\n");
		return 1;
	}
	fd = open(CTL_FILE, O_RDWR);
	devnull = open("/dev/null", O_WRONLY);
	result(fd >= 0 && devnull >= 0, "user: open " CTL_FILE);
	if (fd < 0 || devnull < 0) {
		printf("#   %s\n1..%d\n", strerror(errno), tests);
		return 1;
	}
	dscpl = cpuid_dscpl();
	printf("# CPU %d, DS-CPL %s\n", cpu, dscpl ? "present" : "absent");

	run_mode(fd, devnull, DEBUGCTL_BTS_OFF_OS, dscpl,
		 "BTS_OFF_OS: exactly the user-mode branches, entries as user->kernel");
	run_mode(fd, devnull, DEBUGCTL_BTS_OFF_USR, dscpl,
		 "BTS_OFF_USR: no user-mode records, the kernel's returns to user");
	run_mode(fd, devnull, DEBUGCTL_BTS_OFF_OS | DEBUGCTL_BTS_OFF_USR, dscpl,
		 "BTS_OFF_OS|BTS_OFF_USR: no records");
	run_mode(fd, devnull, 0, dscpl, "no filter: user and kernel records in order");
	printf("1..%d\n", tests);
	return failed ? 1 : 0;
}
