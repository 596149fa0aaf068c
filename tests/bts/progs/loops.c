// SPDX-License-Identifier: GPL-2.0
/*
 * Loops with known trip counts, plus hand-written branch forms gcc does
 * not emit.  asm_edges(n) has exactly n + 8 taken branches:
 *
 *	loop 1b			taken n - 1 times
 *	jrcxz			taken once
 *	jmp .+2			taken once: an unconditional jump to the next
 *				instruction is still a taken branch
 *	call .+5		taken once, to the next instruction
 *	je .+2			taken once (ZF=1), to the next instruction
 *	jne .+2, jne 4f		not taken (ZF=1)
 *	loope			taken 4 times (ZF stays 1, RCX 5 -> 1)
 *	rep stosb, rep movsb	64 iterations each, no branch: a repeated
 *				string instruction restarting itself is not
 *				a branch
 *	cmove			not a branch
 *	ret			taken once
 */
#include "common.h"

long asm_edges(long n);

asm(".text\n"
"	.globl asm_edges\n"
"	.type asm_edges, @function\n"
"asm_edges:\n"
"	mov %rdi, %rcx\n"
"1:	loop 1b\n"
"	xor %ecx, %ecx\n"
"	jrcxz 2f\n"
"	ud2\n"
"2:	.byte 0xeb, 0x00\n"		/* jmp .+2 */
"	call 3f\n"
"3:	pop %rax\n"
"	cmp %eax, %eax\n"
"	.byte 0x74, 0x00\n"		/* je .+2 */
"	.byte 0x75, 0x00\n"		/* jne .+2 */
"	jne 4f\n"
"	mov $5, %ecx\n"
"5:	loope 5b\n"
/* The red zone below %rsp is ours: a leaf function may use it. */
"	lea -64(%rsp), %rdi\n"
"	mov $64, %ecx\n"
"	mov $0x5a, %eax\n"
"	rep stosb\n"
"	lea -64(%rsp), %rsi\n"
"	lea -128(%rsp), %rdi\n"
"	mov $64, %ecx\n"
"	rep movsb\n"
"	movzbl -65(%rsp), %eax\n"	/* 0x5a, copied by rep movsb */
"	mov $1, %edx\n"
"	cmp %eax, %eax\n"
"	cmove %edx, %eax\n"		/* eax = 1 */
"	add %rdx, %rax\n"		/* 2 */
"	ret\n"
"4:	ud2\n"
"	.size asm_edges, .-asm_edges\n");

/* Triangular double loop: sum over 0 <= j <= i < n of (i ^ j). */
noipa int triangle(int n)
{
	int i, j, s = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j <= i; j++)
			s += i ^ j;
	return s;
}

/* Data-dependent branches on a fixed pseudo-random sequence. */
noipa unsigned int collatz_steps(unsigned int x)
{
	unsigned int steps = 0;

	while (x != 1) {
		x = (x & 1) ? 3 * x + 1 : x / 2;
		steps++;
	}
	return steps;
}

/* Where the gdb test stops recording. */
noipa void stop_here(void)
{
	asm volatile("");
}

int main(void)
{
	unsigned int total = 0, x;

	CHECK(asm_edges(1000) == 2);
	CHECK(triangle(100) == 298572);
	for (x = 1; x <= 30; x++)
		total += collatz_steps(x);
	CHECK(total == 441);
	stop_here();
	printf("loops ok\n");
	return 0;
}
