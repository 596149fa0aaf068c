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

	.section .note.GNU-stack, "", @progbits
