// SPDX-License-Identifier: GPL-2.0
/*
 * 32-bit (compat mode) half of the user-mode BTS test.  user runs it with
 * the debugfs file on fd 3, /dev/null on fd 4 and "arm <hex>\n" as its
 * argument.  It runs the traced sequence below once on /dev/null (so that
 * nothing faults later) and once between the arm and the disarm write,
 * then writes a struct user32_report to stdout; user reads the records
 * and checks them.
 *
 * There is no far call or far return in user mode: QEMU 7.2 makes their
 * stack accesses as supervisor ones, whatever the CPL (seg_helper.c
 * PUSHL_RA/POPL_RA use cpu_*_kernel_ra; fixed in QEMU 9.1), so with SMAP
 * the guest takes a supervisor-mode #PF on the user stack and Linux oopses.
 *
 * It uses no C library, so it needs no 32-bit one (gcc-multilib): it is
 * built with gcc -m32 -nostdlib -ffreestanding, static and not PIE, so
 * the labels are the linear addresses the records hold.
 */
#include "user.h"

#define NR_WRITE		4
#define NR_MLOCKALL		152
#define NR_RT_SIGACTION		174
#define NR_EXIT_GROUP		252
#define SIGSEGV			11
#define SA_SIGINFO		0x00000004u
#define SA_RESTORER		0x04000000u
#define MCL_CURRENT		1
#define MCL_FUTURE		2
#define AT_NULL			0
#define AT_SYSINFO		32
#define EINVAL			22
#define ENOENT			2

/* run_seq32()'s arguments and results */
u32 s_fd, s_arm, s_arm_len, s_dis, s_dis_len, s_vsys;
s32 s_out[3];

/*
 * The traced sequence, between the arm and the disarm write.  It also
 * holds the SIGSEGV handler (for #OF) and its restorer, so that nothing
 * else runs in user mode while BTS is on.  "label X" defines X and adds
 * it to c32_labels.
 */
asm(".macro label name\n"
"	.pushsection .rodata.c32_labels, \"a\"\n"
"	.long \\name, 0\n"
"0:	.ascii \"\\name\"\n"
"	.fill 24 - (. - 0b), 1, 0\n"
"	.popsection\n"
"\\name:\n"
".endm\n"
"	.pushsection .rodata.c32_labels, \"a\"\n"
"	.balign 8\n"
"	.globl c32_labels\n"
"c32_labels:\n"
"	.popsection\n"
"	.text\n"
"	.globl _start\n"
"_start:\n"
"	xor %ebp, %ebp\n"
"	mov %esp, %eax\n"
"	and $-16, %esp\n"
"	sub $12, %esp\n"
"	push %eax\n"
"	call main32\n"
"	hlt\n"
"	.globl run_seq32\n"
"	label c32_code_start\n"
"run_seq32:\n"
"	push %ebx\n"
"	push %esi\n"
"	push %edi\n"
"	push %ebp\n"
"	movl $0, s_out+8\n"
"	mov $4, %eax\n"			/* write(fd, arm, arm_len) */
"	mov s_fd, %ebx\n"
"	mov s_arm, %ecx\n"
"	mov s_arm_len, %edx\n"
"	label c32_arm\n"
"	int $0x80\n"
"	label c32_arm_ret\n"
"	mov %eax, s_out\n"
"	label c32_b0\n"
"	jmp c32_t0\n"			/* jmp rel8 */
"	nop\n"
"	label c32_t0\n"
"	xor %eax, %eax\n"
"	jnz c32_bad\n"			/* not taken */
"	label c32_b1\n"
"	jz c32_t1\n"			/* taken */
"	nop\n"
"	label c32_t1\n"
"	label c32_b2\n"
"	call c32_fn\n"
"	label c32_r2\n"
"	mov $c32_fn2, %eax\n"
"	label c32_b3\n"
"	call *%eax\n"
"	label c32_r3\n"
"	mov $c32_t4, %eax\n"
"	label c32_b4\n"
"	jmp *%eax\n"
"	nop\n"
"	label c32_t4\n"
"	mov $3, %ecx\n"
"	label c32_b5\n"
"	loop c32_b5\n"			/* taken twice */
"	label c32_b6\n"
"	jecxz c32_t6\n"			/* taken */
"	nop\n"
"	label c32_t6\n"
"	mov $20, %eax\n"		/* getpid() */
"	label c32_int80\n"
"	int $0x80\n"
"	label c32_int80_ret\n"
"	mov $20, %eax\n"		/* getpid() by SYSENTER, as the vDSO does it */
"	label c32_bse\n"
"	call c32_se\n"
"	label c32_rse\n"
"	mov $20, %eax\n"		/* getpid() through the vDSO */
"	label c32_bvs\n"
"	call *s_vsys\n"
"	label c32_rvs\n"
"	mov $0x7f, %al\n"
"	add $1, %al\n"			/* OF = 1 */
"	label c32_into\n"
"	into\n"				/* #OF: SIGSEGV, c32_segv */
"	label c32_into_ret\n"
"	mov %cs, c32_farptr+4\n"
"	label c32_bljmp\n"
"	ljmp *c32_farptr\n"		/* far jmp; see below for call and ret */
"	hlt\n"
"	label c32_ljmp_t\n"
"c32_dis_prep:\n"
"	mov $4, %eax\n"			/* write(fd, dis, dis_len) */
"	mov s_fd, %ebx\n"
"	mov s_dis, %ecx\n"
"	mov s_dis_len, %edx\n"
"	label c32_dis\n"
"	int $0x80\n"
"	mov %eax, s_out+4\n"
"	pop %ebp\n"
"	pop %edi\n"
"	pop %esi\n"
"	pop %ebx\n"
"	ret\n"
"	label c32_fn\n"
"	ret\n"
"	label c32_fn2\n"
"	ret\n"
"	label c32_se\n"			/* __kernel_vsyscall's SYSENTER sequence */
"	push %ecx\n"
"	push %edx\n"
"	push %ebp\n"
"	mov %esp, %ebp\n"
"	label c32_sysenter\n"
"	sysenter\n"			/* returns to the vDSO's landing pad */
"	hlt\n"
"c32_bad:\n"
"	movl $1, s_out+8\n"
"	jmp c32_dis_prep\n"
"	label c32_segv\n"		/* (sig, info, uc): #OF is a trap */
"	ret\n"
"	label c32_restorer\n"
"	mov $173, %eax\n"		/* rt_sigreturn() */
"	label c32_restorer_sys\n"
"	int $0x80\n"
"	hlt\n"
"	label c32_code_end\n"
"	.pushsection .rodata.c32_labels, \"a\"\n"
"	.long 0, 0\n"
"	.fill 24, 1, 0\n"
"	.popsection\n"
"	.data\n"
"c32_farptr:\n"
"	.long c32_ljmp_t\n"
"	.word 0\n"
"	.text\n");

static s32 sys(u32 nr, u32 a, u32 b, u32 c, u32 d)
{
	s32 ret;

	asm volatile("int $0x80"
		     : "=a" (ret)
		     : "a" (nr), "b" (a), "c" (b), "d" (c), "S" (d)
		     : "memory");
	return ret;
}

static u32 len(const char *s)
{
	u32 n = 0;

	while (s[n])
		n++;
	return n;
}

static u32 lbl(const char *name)
{
	const struct label *l;
	u32 i;

	for (l = c32_labels; l->addr; l++) {
		for (i = 0; name[i] && name[i] == l->name[i]; i++)
			;
		if (!name[i] && !l->name[i])
			return l->addr;
	}
	return 0;
}

/*
 * Find __kernel_vsyscall's SYSENTER and, after it, "int $0x80" followed by
 * the landing pad's "pop %ebp; pop %edx; pop %ecx; ret".
 */
static int find_vdso(struct user32_report *r, u32 vsys)
{
	static const u8 pad[] = { 0x5d, 0x5a, 0x59, 0xc3 };
	const u8 *p = (const u8 *)vsys;
	unsigned int i, j;

	if (!vsys)
		return -1;
	for (i = 0; i < 32 && !(p[i] == 0x0f && p[i + 1] == 0x34); i++)
		;
	if (i == 32 || p[i + 2] != 0xcd || p[i + 3] != 0x80)
		return -1;
	for (j = 0; j < sizeof(pad); j++)
		if (p[i + 4 + j] != pad[j])
			return -1;
	r->vsyscall = vsys;
	r->vsysenter = vsys + i;
	r->landing = vsys + i + 4;
	r->vret = r->landing + 3;
	return 0;
}

struct k_sigaction32 {
	u32 handler;
	u32 flags;
	u32 restorer;
	u32 mask[2];
};

static struct user32_report rep;

void main32(u32 *sp)
{
	static const char dis[] = "disarm\n";
	struct k_sigaction32 sa = {
		.handler = lbl("c32_segv"),
		.flags = SA_SIGINFO | SA_RESTORER,
		.restorer = lbl("c32_restorer"),
	};
	u32 argc = sp[0], *auxv, vsys = 0;
	char **argv = (char **)(sp + 1);
	const struct label *l;

	/* The auxiliary vector follows argv and envp */
	for (auxv = sp + 1 + argc + 1; *auxv; auxv++)
		;
	for (auxv++; auxv[0] != AT_NULL; auxv += 2)
		if (auxv[0] == AT_SYSINFO)
			vsys = auxv[1];

	rep.magic = USER32_MAGIC;
	for (l = c32_labels; l->addr && rep.nr_labels < USER32_LABELS; l++)
		rep.label[rep.nr_labels++] = *l;
	if (argc != 2 || l->addr)
		rep.setup = -EINVAL;
	else if (find_vdso(&rep, vsys))
		rep.setup = -ENOENT;
	if (!rep.setup)
		rep.setup = sys(NR_MLOCKALL, MCL_CURRENT | MCL_FUTURE, 0, 0, 0);
	if (!rep.setup)
		rep.setup = sys(NR_RT_SIGACTION, SIGSEGV, (u32)&sa, 0, 8);
	if (!rep.setup) {
		s_arm = (u32)argv[1];
		s_arm_len = len(argv[1]);
		s_dis = (u32)dis;
		s_dis_len = len(dis);
		s_vsys = vsys;
		s_fd = USER32_DEVNULL;
		run_seq32();
		s_fd = USER32_FD;
		run_seq32();
		rep.arm = s_out[0];
		rep.disarm = s_out[1];
		rep.bad = s_out[2];
	}
	sys(NR_WRITE, 1, (u32)&rep, sizeof(rep), 0);
	sys(NR_EXIT_GROUP, 0, 0, 0, 0);
}
