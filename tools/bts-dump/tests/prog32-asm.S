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

/*
 * Only measured (tests/check_insn_len.py): in 32-bit code, 62, c4 and c5
 * are EVEX and VEX only where ModRM.mod would be 11, else bound, les, lds;
 * 16-bit addresses.
 */
	.globl	len_only32
	.type	len_only32, @function
len_only32:
	vptestnmb	%zmm0, %zmm1, %k0
	vpcmpeqb	0x40(%esi,%edi,4), %zmm7, %k1
	vpternlogd	$0xde, 0x12345678, %zmm1, %zmm2
	kmovd	%k0, %eax
	vpcmpeqb	(%bx,%si), %zmm1, %k1
	vpcmpeqb	0x1234(%bp,%di), %zmm1, %k1
	vpcmpeqb	0x12(%bx), %zmm1, %k1
	vpaddd	0x1234, %ymm1, %ymm2
	bound	%eax, (%ecx)
	les	0x10(%ebx), %eax
	lds	(%bx,%di), %ecx
	rdsspd	%eax
	ret
	.size	len_only32, .-len_only32

	.section .note.GNU-stack, "", @progbits
