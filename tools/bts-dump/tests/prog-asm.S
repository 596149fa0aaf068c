/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The code of prog.c whose encodings tests/run relies on; instruction
 * lengths in the comments.
 */
	.text

/* Three direct calls, 5 bytes each, then ret. */
	.globl	tramp
	.type	tramp, @function
tramp:
	call	leaf
	call	raw_write
	call	raw_int80
	ret
	.size	tramp, .-tramp

/* write(2): mov (5), syscall (2), ret. */
	.globl	raw_write
	.type	raw_write, @function
raw_write:
	mov	$1, %eax
	syscall
	ret
	.size	raw_write, .-raw_write

/* The i386 ABI's write(2) from 64-bit code: mov (5), int $0x80 (2), ret. */
	.globl	raw_int80
	.type	raw_int80, @function
raw_int80:
	mov	$4, %eax
	int	$0x80
	ret
	.size	raw_int80, .-raw_int80

/* A counted loop: mov (5), dec (2), jnz (2) taken twice, ret. */
	.globl	countdown
	.type	countdown, @function
countdown:
	mov	$3, %ecx
1:	dec	%ecx
	jnz	1b
	ret
	.size	countdown, .-countdown

/* getpid(2), its number set a block earlier: mov (5), jmp (2), syscall (2). */
	.globl	raw_split
	.type	raw_split, @function
raw_split:
	mov	$39, %eax
	jmp	1f
1:	syscall
	ret
	.size	raw_split, .-raw_split

/* A number that cannot be known: mov %rdi, %rax (3), syscall (2). */
	.globl	raw_indirect
	.type	raw_indirect, @function
raw_indirect:
	mov	%rdi, %rax
	syscall
	ret
	.size	raw_indirect, .-raw_indirect

/*
 * Two system calls with no branch between: getpid(2), write(2).
 * mov (5), syscall (2), mov (5), syscall (2), ret.
 */
	.globl	raw_twice
	.type	raw_twice, @function
raw_twice:
	mov	$39, %eax
	syscall
	mov	$1, %eax
	syscall
	ret
	.size	raw_twice, .-raw_twice

/*
 * Calls left without their return, as longjmp() leaves them:
 * jump_caller calls jump_outer, which calls jump_middle, which calls
 * jump_inner, which jumps back into jump_outer (jump_back), which returns
 * to jump_caller.  Calls are 5 bytes.
 */
	.globl	jump_caller
	.type	jump_caller, @function
jump_caller:
	call	jump_outer
	ret
	.size	jump_caller, .-jump_caller

	.globl	jump_outer
	.type	jump_outer, @function
jump_outer:
	call	jump_middle
	.globl	jump_back
jump_back:
	ret
	.size	jump_outer, .-jump_outer

	.globl	jump_middle
	.type	jump_middle, @function
jump_middle:
	call	jump_inner
	ret
	.size	jump_middle, .-jump_middle

	.globl	jump_inner
	.type	jump_inner, @function
jump_inner:
	jmp	jump_back
	.size	jump_inner, .-jump_inner

/*
 * Instructions capstone 4 cannot decode between branches, as glibc's
 * __strlen_evex and libgcc's unwinder run them: AVX-512 (EVEX, maps 2, 3
 * and AVX512-FP16's 5; RIP-relative, disp8*N), VEX mask moves, CET's
 * shadow stack reads.  vec_caller calls vec_scan; its jz is not taken,
 * its jnz is, over the nop.
 */
	.globl	vec_caller
	.type	vec_caller, @function
vec_caller:
	call	vec_scan
	ret
	.size	vec_caller, .-vec_caller

	.globl	vec_scan
	.type	vec_scan, @function
vec_scan:
	vptestnmb	%zmm0, %zmm0, %k0
	kmovq	%k0, %rax
	test	%rax, %rax
	jz	1f
	vpcmpeqb	(%rdi), %ymm16, %k1
	vpcmpltub	0x40(%rdi,%rcx,2), %zmm17, %k2
	vpternlogd	$0xde, 0x100(%rip), %zmm1, %zmm2
	rdsspq	%rax
	incsspq	%rax
	vaddph	%zmm1, %zmm2, %zmm3
	kortestd	%k1, %k2
	jnz	1f
	nop
1:	ret
	.size	vec_scan, .-vec_scan

/*
 * Only measured (tests/check_insn_len.py): XOP, with its immediates;
 * VEX and EVEX with SIB, disp32, prefixes.
 */
	.globl	len_only
	.type	len_only, @function
len_only:
	vpcmov	%xmm1, %xmm2, %xmm3, %xmm4
	vprotd	$3, %xmm1, %xmm2
	vfrczps	%xmm1, %xmm2
	bextr	$0x1234, %eax, %ebx
	vpcmpub	$2, 0x12345678(,%r9,8), %zmm5, %k3{%k4}
	vpshufb	-0x80(%rsp), %zmm30, %zmm29
	vpbroadcastb	%eax, %zmm20
	vmovdqu8	%fs:(%eax), %zmm9
	vextracti32x4	$1, %zmm2, 0x10(%rsp)
	vcmpph	$1, %zmm1, %zmm2, %k1
	vpsllw	$3, %zmm1, %zmm2
	vpinsrw	$1, %eax, %xmm1, %xmm2
	endbr64
	rdsspd	%eax
	wrpkru
	ret
	.size	len_only, .-len_only

/*
 * A call to the next instruction, whose return address is popped (how
 * position-independent code finds where it is), then a call of leaf:
 * call (5), pop (1), call (5), ret.
 */
	.globl	call_next
	.type	call_next, @function
call_next:
	call	1f
1:	pop	%rax
	call	leaf
	ret
	.size	call_next, .-call_next

/*
 * Where a signal handler returns to, as the C library's __restore_rt:
 * rt_sigreturn(2), mov (5), syscall (2).
 */
	.globl	sig_restore
	.type	sig_restore, @function
sig_restore:
	mov	$15, %eax
	syscall
	.size	sig_restore, .-sig_restore

/*
 * An exception: throw_catch calls throw_mid, which calls throw_raise,
 * which returns to throw_catch's landing pad (past a nop), as a C++
 * unwinder does, with the pad's address it was given; the pad calls leaf.
 * throw_catch: call (5), nop (1), call (5), ret.  throw_mid: call (5),
 * ret.  throw_raise: add (4), push (1), ret.
 */
	.globl	throw_catch
	.type	throw_catch, @function
throw_catch:
	call	throw_mid
	nop
	call	leaf
	ret
	.size	throw_catch, .-throw_catch

	.globl	throw_mid
	.type	throw_mid, @function
throw_mid:
	call	throw_raise
	ret
	.size	throw_mid, .-throw_mid

	.globl	throw_raise
	.type	throw_raise, @function
throw_raise:
	add	$16, %rsp
	push	%rdi
	ret
	.size	throw_raise, .-throw_raise

	.section .note.GNU-stack, "", @progbits
