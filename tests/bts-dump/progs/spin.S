/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Exactly 4 * N + 1 taken branches, N given at build time, and no system
 * call but the exit: _start calls spin (1), spin calls step N times, each
 * step jumps and returns (3 N), spin's loop branches back N - 1 times and
 * it returns (1).  Branches leaving spin: 2 N; leaving step: 2 N.
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	mov	$N, %ecx
	call	spin
	mov	$60, %eax		/* exit(0) */
	xor	%edi, %edi
	syscall
	hlt
	.size	_start, .-_start

	.globl	spin
	.type	spin, @function
spin:
1:	call	step
	dec	%rcx
	jnz	1b
	ret
	.size	spin, .-spin

	.globl	step
	.type	step, @function
step:
	jmp	2f
2:	ret
	.size	step, .-step

	.section .note.GNU-stack, "", @progbits
