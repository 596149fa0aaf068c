// SPDX-License-Identifier: GPL-2.0
/*
 * User-mode half of the BTS conformance test (see bts_conformance.c and
 * README.md): pinned to one CPU, run a known asm sequence between two
 * writes to debugfs bts_conformance/user that turn BTS on and off for that
 * CPU, read the records back and check them, once per setting of the
 * BTS_OFF_OS/BTS_OFF_USR bits.  Then the same for the 32-bit sequence of
 * user32 (user32.c), which runs in compat mode.  Needs root, the module
 * loaded and a kernel booted with "nopti".  Prints TAP.
 *
 * Built static (and not PIE), so the labels below are the linear addresses
 * the records hold.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include "user.h"

#define DEBUGCTL_BTS_OFF_OS	0x200u	/* bit 9 */
#define DEBUGCTL_BTS_OFF_USR	0x400u	/* bit 10 */
#define EFLAGS_TF		0x100u
#define IA32_SYSCALL_VECTOR	0x80
#define CTL_FILE		"/sys/kernel/debug/bts_conformance/user"

/* The handlers below change the saved RIP and EFLAGS at these offsets */
static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]) == 168, "ucontext layout");
static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_EFL]) == 176, "ucontext layout");
static_assert(offsetof(struct user32_report, label) == 40, "user32_report layout");
static_assert(sizeof(struct label) == 32, "label layout");

/*
 * run_seq(fd, arm, arm_len, disarm, disarm_len, out): write(fd, arm), the
 * traced sequence, write(fd, disarm); out[0] and out[1] get what the two
 * writes returned, out[2] is 1 if a conditional branch went the wrong way.
 * Between the writes nothing but this code (and the signal handlers and
 * restorer below) runs in user mode.  "label X" defines X and adds it to
 * u_labels.
 */
asm(".macro label name\n"
"	.pushsection .rodata.u_labels, \"a\"\n"
"	.quad \\name\n"
"0:	.ascii \"\\name\"\n"
"	.fill 24 - (. - 0b), 1, 0\n"
"	.popsection\n"
"\\name:\n"
".endm\n"
"	.pushsection .rodata.u_labels, \"a\"\n"
"	.balign 8\n"
"	.globl u_labels\n"
"u_labels:\n"
"	.popsection\n"
"	.text\n"
"	.globl run_seq\n"
"	label u_code_start\n"
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
"	label u_arm\n"
"	syscall\n"
"	label u_arm_ret\n"
"	mov %rax, 0(%r15)\n"
"	label u_b0\n"
"	jmp u_t0\n"			/* jmp rel8 */
"	nop\n"
"	label u_t0\n"
"	xor %eax, %eax\n"
"	jnz u_bad\n"			/* not taken */
"	label u_b1\n"
"	jz u_t1\n"			/* taken */
"	nop\n"
"	label u_t1\n"
"	label u_b2\n"
"	call u_fn\n"
"	label u_r2\n"
"	lea u_fn2(%rip), %rax\n"
"	label u_b3\n"
"	call *%rax\n"
"	label u_r3\n"
"	lea u_t4(%rip), %rax\n"
"	label u_b4\n"
"	jmp *%rax\n"
"	nop\n"
"	label u_t4\n"
"	mov $3, %ecx\n"
"	label u_b5\n"
"	loop u_b5\n"			/* taken twice */
"	mov $39, %eax\n"		/* getpid() */
"	label u_sys\n"
"	syscall\n"
"	label u_sys_ret\n"
"	mov $20, %eax\n"		/* getpid(), the 32-bit system call */
"	label u_int80\n"
"	int $0x80\n"
"	label u_int80_ret\n"
"	label u_int3\n"
"	int3\n"				/* SIGTRAP: h_trap */
"	label u_int3_ret\n"
"	label u_ud2\n"
"	ud2\n"				/* SIGILL: h_ill */
"	label u_ud2_ret\n"
"	pushf\n"
"	orl $0x100, (%rsp)\n"		/* TF */
"	popf\n"
"	label u_tf_b\n"
"	jmp u_tf_t\n"			/* single-stepped: #DB, SIGTRAP */
"	nop\n"
"	label u_tf_t\n"
"	nop\n"
"u_dis_prep:\n"
"	mov $1, %eax\n"			/* write(fd, disarm, disarm_len) */
"	mov %r12d, %edi\n"
"	mov %r13, %rsi\n"
"	mov %r14, %rdx\n"
"	label u_dis\n"
"	syscall\n"
"	mov %rax, 8(%r15)\n"
"	pop %r15\n"
"	pop %r14\n"
"	pop %r13\n"
"	pop %r12\n"
"	pop %rbp\n"
"	pop %rbx\n"
"	ret\n"
"	label u_fn\n"
"	ret\n"
"	label u_fn2\n"
"	ret\n"
"u_bad:\n"
"	movq $1, 16(%r15)\n"
"	jmp u_dis_prep\n"
"	label h_trap\n"			/* (sig, info, uc) */
"	andl $~0x100, 176(%rdx)\n"	/* uc->uc_mcontext.gregs[REG_EFL]: TF off */
"	label h_trap_ret\n"
"	ret\n"
"	label h_ill\n"
"	addq $2, 168(%rdx)\n"		/* uc->uc_mcontext.gregs[REG_RIP] */
"	label h_ill_ret\n"
"	ret\n"
"	label u_restorer\n"
"	mov $15, %eax\n"		/* rt_sigreturn() */
"	label u_restorer_sys\n"
"	syscall\n"
"	hlt\n"
"	label u_code_end\n"
"	.pushsection .rodata.u_labels, \"a\"\n"
"	.quad 0\n"
"	.fill 24, 1, 0\n"
"	.popsection\n");

static const struct bts_user_header *hdr;
static const struct user32_report *rep32;	/* while checking user32's run */

static const struct label *find_label(const struct label *l, const char *name)
{
	for (; l->addr; l++)
		if (!strncmp(l->name, name, sizeof(l->name)))
			return l;
	return NULL;
}

/* The address of label @name of either sequence; exits if there is none */
static u64 A(const char *name)
{
	const struct label *l = find_label(u_labels, name);
	u32 i;

	if (l)
		return l->addr;
	for (i = 0; rep32 && i < rep32->nr_labels; i++)
		if (!strncmp(rep32->label[i].name, name, sizeof(rep32->label[i].name)))
			return rep32->label[i].addr;
	printf("# no label %s\n", name);
	exit(2);
}

static int is_user(u64 a)
{
	return a < 0x0000800000000000ULL;
}

static const char *name(u64 a)
{
	static char buf[4][48];
	static int n;
	char *b = buf[n++ % 4];
	const struct label *l;
	unsigned int v;

	for (l = u_labels; l->addr; l++)
		if (l->addr == a)
			return l->name;
	for (v = 0; rep32 && v < rep32->nr_labels; v++)
		if (rep32->label[v].addr == a)
			return rep32->label[v].name;
	if (rep32 && a == rep32->vsyscall)
		return "__kernel_vsyscall";
	if (rep32 && a == rep32->vsysenter)
		return "vDSO SYSENTER";
	if (rep32 && a == rep32->landing)
		return "int80_landing_pad";
	if (rep32 && a == rep32->vret)
		return "vDSO RET";
	if (hdr && a == hdr->lstar)
		return "LSTAR";
	if (hdr && a == hdr->sysenter_eip)
		return "SYSENTER_EIP";
	for (v = 0; hdr && v < 256; v++) {
		if (a == hdr->idt[v]) {
			snprintf(b, 48, "IDT[%#x]", v);
			return b;
		}
	}
	snprintf(b, 48, "%#llx", a);
	return b;
}

static const char *const ret_name[] = {
	[BTS_RET_NONE] = "none",
	[BTS_RET_IRETQ] = "IRETQ",
	[BTS_RET_SYSRETQ] = "SYSRETQ",
	[BTS_RET_SYSRETL] = "SYSRETL",
	[BTS_RET_SYSEXIT] = "SYSEXIT",
	[BTS_RET_OTHER] = "not a return",
};

static int tests, failed;

static void result(int ok, const char *desc)
{
	tests++;
	failed += !ok;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", tests, desc);
}

/*
 * An expected record: a user-mode branch (exact from and to), or a return
 * from the kernel to user mode (exact to; from a kernel return instruction,
 * @ret if that is not BTS_RET_NONE).
 */
struct exp {
	int kernel;
	u64 from, to;
	u8 ret;
};

static int n_exp;
static struct exp exp_buf[48];

/*
 * Which CPL BTS_OFF_OS/BTS_OFF_USR test on a branch that changes CPL: QEMU's
 * bts-cpl-filter, given on our command line (--cpl-filter=).
 */
enum { CPL_TARGET, CPL_SOURCE, CPL_BOTH };
static int cpl_filter = CPL_TARGET;
static const char *const cpl_filter_name[] = { "target", "source", "both" };
static unsigned int cur_off;	/* the BTS_OFF_* bits of the run being checked */

static int cpl_off(int user, unsigned int off)
{
	return !!(off & (user ? DEBUGCTL_BTS_OFF_USR : DEBUGCTL_BTS_OFF_OS));
}

/* Is a record from user mode (or not) to user mode (or not) stored? */
static int keep(int from_user, int to_user, unsigned int off)
{
	switch (cpl_filter) {
	case CPL_SOURCE:
		return !cpl_off(from_user, off);
	case CPL_BOTH:
		return !cpl_off(from_user, off) || !cpl_off(to_user, off);
	default:
		return !cpl_off(to_user, off);
	}
}

static void u(u64 from, u64 to)
{
	if (keep(1, is_user(to), cur_off))
		exp_buf[n_exp++] = (struct exp){ 0, from, to, BTS_RET_NONE };
}

static void k_ret(u64 to, u8 ret)
{
	if (keep(0, 1, cur_off))
		exp_buf[n_exp++] = (struct exp){ 1, 0, to, ret };
}

static void k(u64 to)
{
	k_ret(to, BTS_RET_NONE);
}

/* The records the 64-bit sequence makes that the filter keeps (u(), k()) */
static void expected64(void)
{
	u64 lstar = hdr->lstar, db = hdr->idt[1], bp = hdr->idt[3], ud = hdr->idt[6];
	u64 int80 = hdr->idt[IA32_SYSCALL_VECTOR];

	n_exp = 0;
	k(A("u_arm_ret"));
	u(A("u_b0"), A("u_t0"));
	u(A("u_b1"), A("u_t1"));
	u(A("u_b2"), A("u_fn"));
	u(A("u_fn"), A("u_r2"));
	u(A("u_b3"), A("u_fn2"));
	u(A("u_fn2"), A("u_r3"));
	u(A("u_b4"), A("u_t4"));
	u(A("u_b5"), A("u_b5"));
	u(A("u_b5"), A("u_b5"));
	u(A("u_sys"), lstar);
	k(A("u_sys_ret"));
	u(A("u_int80"), int80);
	k_ret(A("u_int80_ret"), BTS_RET_IRETQ);
	u(A("u_int3"), bp);
	k(A("h_trap"));
	u(A("h_trap_ret"), A("u_restorer"));
	u(A("u_restorer_sys"), lstar);
	k(A("u_int3_ret"));
	u(A("u_ud2"), ud);
	k(A("h_ill"));
	u(A("h_ill_ret"), A("u_restorer"));
	u(A("u_restorer_sys"), lstar);
	k(A("u_ud2_ret"));
	/* The single-stepped jmp, then #DB from the next instruction */
	u(A("u_tf_b"), A("u_tf_t"));
	u(A("u_tf_t"), db);
	k_ret(A("h_trap"), BTS_RET_IRETQ);
	u(A("h_trap_ret"), A("u_restorer"));
	u(A("u_restorer_sys"), lstar);
	k(A("u_tf_t"));
	u(A("u_dis"), lstar);
}

/* The records of user32's sequence that the filter keeps; all addresses are 32-bit */
static void expected32(void)
{
	u64 int80 = hdr->idt[IA32_SYSCALL_VECTOR], of = hdr->idt[4];
	u64 sysenter = hdr->sysenter_eip;

	n_exp = 0;
	k_ret(A("c32_arm_ret"), BTS_RET_IRETQ);
	u(A("c32_b0"), A("c32_t0"));
	u(A("c32_b1"), A("c32_t1"));
	u(A("c32_b2"), A("c32_fn"));
	u(A("c32_fn"), A("c32_r2"));
	u(A("c32_b3"), A("c32_fn2"));
	u(A("c32_fn2"), A("c32_r3"));
	u(A("c32_b4"), A("c32_t4"));
	u(A("c32_b5"), A("c32_b5"));
	u(A("c32_b5"), A("c32_b5"));
	u(A("c32_b6"), A("c32_t6"));
	u(A("c32_int80"), int80);
	k_ret(A("c32_int80_ret"), BTS_RET_IRETQ);
	/* Our own SYSENTER: Linux returns to the vDSO's landing pad by SYSRETL */
	u(A("c32_bse"), A("c32_se"));
	u(A("c32_sysenter"), sysenter);
	k_ret(rep32->landing, BTS_RET_SYSRETL);
	u(rep32->vret, A("c32_rse"));
	/* The same through __kernel_vsyscall */
	u(A("c32_bvs"), rep32->vsyscall);
	u(rep32->vsysenter, sysenter);
	k_ret(rep32->landing, BTS_RET_SYSRETL);
	u(rep32->vret, A("c32_rvs"));
	u(A("c32_into"), of);
	k_ret(A("c32_segv"), BTS_RET_IRETQ);
	u(A("c32_segv"), A("c32_restorer"));
	u(A("c32_restorer_sys"), int80);
	k_ret(A("c32_into_ret"), BTS_RET_IRETQ);
	u(A("c32_bljmp"), A("c32_ljmp_t"));
	u(A("c32_dis"), int80);
}

/* Interrupts and page faults may come at any time; 0x80 is a system call */
static int is_async_entry(u64 to)
{
	unsigned int v;

	for (v = 0; v < 256; v++)
		if ((v == 2 || v == 14 || (v >= 32 && v != IA32_SYSCALL_VECTOR)) &&
		    to == hdr->idt[v])
			return 1;
	return 0;
}

static int expected_to(u64 to)
{
	int i;

	for (i = 0; i < n_exp; i++)
		if (exp_buf[i].to == to)
			return 1;
	return 0;
}

/* Show the records around #i */
static void context(const struct bts_record *rec, u64 nr, u64 i)
{
	u64 c = i > 3 ? i - 3 : 0;

	for (; c < nr && c <= i + 2; c++)
		printf("#   %s #%llu: %s -> %s\n", c == i ? ">>" : "  ",
		       c, name(rec[c].from), name(rec[c].to));
}

/* The sequence's code, and the vDSO code it runs */
static int in_code(u64 a)
{
	if (rep32)
		return (a >= A("c32_code_start") && a < A("c32_code_end")) ||
		       (a >= rep32->vsyscall && a <= rep32->vret);
	return a >= A("u_code_start") && a < A("u_code_end");
}

/* Does record @r (of kind @ret) match expected record @e? */
static int matches(const struct exp *e, const struct bts_record *r, u8 ret)
{
	if (e->kernel != !is_user(r->from) || e->to != r->to)
		return 0;
	if (!e->kernel)
		return e->from == r->from;
	return e->ret == BTS_RET_NONE || e->ret == ret;
}

/*
 * Check the records of one run against the expected list.  Records from
 * kernel to kernel are ignored; an interrupt or page fault in user mode
 * (user -> IDT entry of vector 2, 14 or >= 32 but 0x80) and its return
 * (kernel -> the interrupted address) are left out.  Returns 1 when all is
 * well, else prints why as TAP diagnostics.
 */
static int check(const struct bts_record *rec, const u8 *ret, u64 nr, unsigned int off)
{
	u64 pending[64];
	unsigned int np = 0, async = 0, j = 0, p;
	u64 i;

	for (i = 0; i < nr; i++) {
		const struct bts_record *r = &rec[i];
		int uf = is_user(r->from), ut = is_user(r->to);

		if (r->flags) {
			printf("#   record #%llu: flags %#llx, expected 0\n", i, r->flags);
			return 0;
		}
		if (!keep(uf, ut, off)) {
			context(rec, nr, i);
			printf("#   record #%llu: %s -> %s, %s -> %s: %#x drops it (%s CPL)\n",
			       i, name(r->from), name(r->to), uf ? "user" : "kernel",
			       ut ? "user" : "kernel", off, cpl_filter_name[cpl_filter]);
			return 0;
		}
		if (!uf && !ut)
			continue;
		if (uf && !ut && is_async_entry(r->to)) {
			if (np < 64)
				pending[np++] = r->from;
			async++;
			printf("#   record #%llu: %s -> %s: interrupt or page fault, left out\n",
			       i, name(r->from), name(r->to));
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
		if (j < (unsigned int)n_exp && matches(&exp_buf[j], r, ret[i])) {
			j++;
			continue;
		}
		/*
		 * When the filter drops user->kernel records (BTS_OFF_USR
		 * with the source CPL, BTS_OFF_OS with the target CPL), an
		 * interrupt's entry from user mode is not recorded, only its
		 * return: to where the last return went (taken on the way
		 * out), or to an address no expected record goes to.
		 */
		if (!uf && !keep(1, 0, off) && in_code(r->to) &&
		    ((j && r->to == exp_buf[j - 1].to) || !expected_to(r->to))) {
			async++;
			printf("#   record #%llu: kernel -> %s: return, entry not seen, left out\n",
			       i, name(r->to));
			continue;
		}
		context(rec, nr, i);
		if (j < (unsigned int)n_exp)
			printf("#   wrong record #%llu: expected %s%s -> %s, got %s -> %s (%s)\n",
			       i, exp_buf[j].kernel ? "kernel " : name(exp_buf[j].from),
			       exp_buf[j].kernel ? ret_name[exp_buf[j].ret] : "",
			       name(exp_buf[j].to), name(r->from), name(r->to),
			       uf ? "user" : ret_name[ret[i]]);
		else
			printf("#   extra record #%llu: %s -> %s\n", i, name(r->from), name(r->to));
		return 0;
	}
	if (j < (unsigned int)n_exp) {
		printf("#   missing: %s -> %s (expected record %u of %d; %llu records)\n",
		       exp_buf[j].kernel ? "kernel" : name(exp_buf[j].from),
		       name(exp_buf[j].to), j, n_exp, nr);
		return 0;
	}
	printf("#   %llu records, %u expected ones matched, %u left out\n", nr, j, async);
	return 1;
}

static int cpuid_dscpl(void)
{
	unsigned int a, b, c, d;

	__cpuid(1, a, b, c, d);
	return !!(c & 0x10);	/* bit 4 */
}

/* rt_sigaction with our own restorer, so no libc code runs while traced */
struct kernel_sigaction {
	u64 handler;
	unsigned long flags;
	u64 restorer;
	u64 mask;
};

static int handle(int sig, const char *handler)
{
	struct kernel_sigaction sa = {
		.handler = A(handler),
		.flags = SA_SIGINFO | 0x04000000 /* SA_RESTORER */,
		.restorer = A("u_restorer"),
	};

	return syscall(SYS_rt_sigaction, sig, &sa, NULL, 8);
}

/* A sequence: how to run it, what it records */
struct seq {
	const char *prefix;
	/* Returns 0, or -1 after printing why it could not run */
	int (*run)(int fd, int devnull, const char *arm, s64 out[3]);
	void (*expected)(void);
};

static int run64(int fd, int devnull, const char *arm, s64 out[3])
{
	static const char dis[] = "disarm\n";

	/* Warm up: same code, writes to /dev/null, so no page fault later */
	run_seq(devnull, arm, strlen(arm), dis, strlen(dis), out);
	run_seq(fd, arm, strlen(arm), dis, strlen(dis), out);
	return 0;
}

static char user32_path[PATH_MAX];
static struct user32_report report32;

/* Run user32 with @fd and @devnull as its fds 3 and 4; read its report */
static int run32(int fd, int devnull, const char *arm, s64 out[3])
{
	int pfd[2], status, hi_fd, hi_null;
	ssize_t n, len = 0;
	pid_t pid;

	if (pipe(pfd)) {
		printf("#   pipe: %s\n", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		printf("#   fork: %s\n", strerror(errno));
		return -1;
	}
	if (!pid) {
		hi_fd = fcntl(fd, F_DUPFD, 10);
		hi_null = fcntl(devnull, F_DUPFD, 10);
		if (hi_fd < 0 || hi_null < 0 || dup2(hi_fd, USER32_FD) < 0 ||
		    dup2(hi_null, USER32_DEVNULL) < 0 || dup2(pfd[1], 1) < 0)
			_exit(126);
		execl(user32_path, "user32", arm, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], (char *)&report32 + len, sizeof(report32) - len)) > 0)
		len += n;
	close(pfd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    len != sizeof(report32) || report32.magic != USER32_MAGIC) {
		printf("#   %s: status %#x, %zd-byte report%s\n", user32_path, status, len,
		       WIFEXITED(status) && WEXITSTATUS(status) == 127 ? " (exec failed)" : "");
		return -1;
	}
	if (report32.setup) {
		printf("#   user32: setup failed: %s\n",
		       report32.setup == -ENOENT ? "no SYSENTER vDSO" : strerror(-report32.setup));
		return -1;
	}
	rep32 = &report32;
	out[0] = report32.arm;
	out[1] = report32.disarm;
	out[2] = report32.bad;
	return 0;
}

static const struct seq seq64 = { "user: ", run64, expected64 };
static const struct seq seq32 = { "user32: ", run32, expected32 };

/* The module's whole answer: header, up to 4 MiB of records, a byte each */
static unsigned char rbuf[8 << 20];

static void run_mode(const struct seq *s, int fd, int devnull, unsigned int off, int dscpl,
		     const char *desc)
{
	static const char dis[] = "disarm\n";
	const struct bts_record *rec;
	char arm[32], d[200];
	s64 out[3];
	ssize_t n, len = 0;

	rep32 = NULL;
	snprintf(arm, sizeof(arm), "arm %x\n", off);
	if (off && !dscpl)
		snprintf(d, sizeof(d), "%sarm with %s rejected without DS-CPL (EINVAL)",
			 s->prefix, desc);
	else
		snprintf(d, sizeof(d), "%s%s", s->prefix, desc);
	if (s->run(fd, devnull, arm, out)) {
		result(0, d);
		return;
	}

	if (off && !dscpl) {
		result(out[0] == -EINVAL, d);
		if (out[0] != -EINVAL)
			printf("#   arm returned %lld (%s)\n", out[0],
			       out[0] < 0 ? strerror(-out[0]) : "ok");
		return;
	}
	if (out[0] != (s64)strlen(arm) || out[1] != (s64)strlen(dis)) {
		result(0, d);
		printf("#   arm returned %lld (%s), disarm %lld\n", out[0],
		       out[0] < 0 ? strerror(-out[0]) : "ok", out[1]);
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
	    len != (ssize_t)(sizeof(*hdr) + hdr->nr * (sizeof(struct bts_record) + 1))) {
		result(0, d);
		printf("#   bad read from %s: %zd bytes\n", CTL_FILE, len);
		return;
	}
	rec = (const struct bts_record *)(hdr + 1);
	if (hdr->full) {
		result(0, d);
		printf("#   the buffer filled up (%llu records)\n", hdr->nr);
		return;
	}
	if ((off & DEBUGCTL_BTS_OFF_OS) && (off & DEBUGCTL_BTS_OFF_USR)) {
		result(hdr->nr == 0, d);
		if (hdr->nr)
			printf("#   %llu records, first %s -> %s\n", hdr->nr,
			       name(rec->from), name(rec->to));
		return;
	}
	if (hdr->bad_return) {
		result(0, d);
		printf("#   record #%llu: %s -> %s: kernel -> user, not from a return\n",
		       hdr->bad_return - 1, name(rec[hdr->bad_return - 1].from),
		       name(rec[hdr->bad_return - 1].to));
		return;
	}
	cur_off = off;
	s->expected();
	result(check(rec, (const u8 *)(rec + hdr->nr), hdr->nr, off), d);
}

static void run_modes(const struct seq *s, int fd, int devnull, int dscpl)
{
	static const char *const os[] = {
		[CPL_TARGET] = "BTS_OFF_OS: user->user and the kernel's returns to user, in order",
		[CPL_SOURCE] =
			"BTS_OFF_OS: exactly the user-mode branches, entries as user->kernel",
		[CPL_BOTH] = "BTS_OFF_OS: all records to or from user mode, in order",
	};
	static const char *const usr[] = {
		[CPL_TARGET] = "BTS_OFF_USR: no record to user mode, the entries to the kernel",
		[CPL_SOURCE] = "BTS_OFF_USR: no user-mode records, the kernel's returns to user",
		[CPL_BOTH] = "BTS_OFF_USR: no user->user record, entries and returns in order",
	};

	run_mode(s, fd, devnull, DEBUGCTL_BTS_OFF_OS, dscpl, os[cpl_filter]);
	run_mode(s, fd, devnull, DEBUGCTL_BTS_OFF_USR, dscpl, usr[cpl_filter]);
	run_mode(s, fd, devnull, DEBUGCTL_BTS_OFF_OS | DEBUGCTL_BTS_OFF_USR, dscpl,
		 "BTS_OFF_OS|BTS_OFF_USR: no records");
	run_mode(s, fd, devnull, 0, dscpl, "no filter: user and kernel records in order");
}

int main(int argc, char **argv)
{
	int fd, devnull, cpu, dscpl, i;
	char self[PATH_MAX];
	cpu_set_t set;
	ssize_t n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		const char *opt = "--cpl-filter=";
		size_t len = strlen(opt);

		cpl_filter = 3;
		if (!strncmp(argv[i], opt, len))
			for (cpl_filter = 0; cpl_filter < 3; cpl_filter++)
				if (!strcmp(argv[i] + len, cpl_filter_name[cpl_filter]))
					break;
		if (cpl_filter == 3) {
			fprintf(stderr, "usage: user [--cpl-filter=target|source|both]\n");
			return 2;
		}
	}
	cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) || mlockall(MCL_CURRENT | MCL_FUTURE) ||
	    handle(SIGTRAP, "h_trap") || handle(SIGILL, "h_ill")) {
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
	printf("# CPU %d, DS-CPL %s, bts-cpl-filter=%s\n", cpu, dscpl ? "present" : "absent",
	       cpl_filter_name[cpl_filter]);
	run_modes(&seq64, fd, devnull, dscpl);

	/* user32 sits next to us */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	snprintf(user32_path, sizeof(user32_path), "%s/user32", dirname(self));
	run_modes(&seq32, fd, devnull, dscpl);
	printf("1..%d\n", tests);
	return failed ? 1 : 0;
}
