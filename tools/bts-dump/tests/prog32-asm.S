/* SPDX-License-Identifier: GPL-2.0 */
/* The code of prog32.c whose encodings tests/run relies on. */
	.text

/* write(2): mov (5), int $0x80 (2), ret. */
	.globl	raw_write32
	.type	raw_write32, @function
raw_write32:
	mov	$4, %eax
	int	$0x80
	ret
	.size	raw_write32, .-raw_write32

/*
 * write(2) the vDSO's way: mov (5), sysenter (2), int $0x80 (2), ret; the
 * kernel returns past the int $0x80.
 */
	.globl	raw_sysenter32
	.type	raw_sysenter32, @function
raw_sysenter32:
	mov	$4, %eax
	sysenter
	int	$0x80
	ret
	.size	raw_sysenter32, .-raw_sysenter32

/*
 * For the PT stream (check_pt.py): call raw_write32 (5), call inc32 (5),
 * jmp (2) back to that call.
 */
	.globl	tramp32
	.type	tramp32, @function
tramp32:
	call	raw_write32
1:	call	inc32
	jmp	1b
	.size	tramp32, .-tramp32

/*
 * inc %eax (1), ret (1).  In 64-bit code 0x40 is a REX prefix, and the
 * two would be one instruction, a return from inc32 itself: a PT decoder
 * told the wrong mode finds a return from another address.
 */
	.globl	inc32
	.type	inc32, @function
inc32:
	inc	%eax
	ret
	.size	inc32, .-inc32

	.section .note.GNU-stack, "", @progbits
