/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A 64 KiB firmware image (QEMU -bios) that runs a fixed branchy loop in
 * real mode, with interrupts off, and exits QEMU through isa-debug-exit:
 * translation is deterministic, so QEMU's -d op log of it can be compared
 * between two QEMUs (bench/qemu-bts-emu.sh).  With -DBTS_ON it first turns
 * BTS on into a circular buffer at 0x2000 (DS save area at 0x1000).
 */
	.code16
	.text
	.globl	_start
_start:
	cli
	xor	%ax, %ax
	mov	%ax, %ds
	mov	%ax, %ss
	mov	$0x7000, %sp
#ifdef BTS_ON
	/* 64-bit DS save area: base, index, absolute maximum, threshold */
	mov	$0x1000, %di
	movl	$0x2000, 0(%di)
	movl	$0, 4(%di)
	movl	$0x2000, 8(%di)
	movl	$0, 12(%di)
	movl	$0x2000 + 24 * 100, 16(%di)
	movl	$0, 20(%di)
	movl	$0x2000 + 24 * 101, 24(%di)
	movl	$0, 28(%di)
	mov	$0x600, %ecx		/* IA32_DS_AREA */
	mov	$0x1000, %eax
	xor	%edx, %edx
	wrmsr
	mov	$0x1d9, %ecx		/* IA32_DEBUGCTL: TR | BTS */
	mov	$0xc0, %eax
	wrmsr
#endif
	mov	$1, %eax
	mov	$3, %ebx
	mov	$20000, %ecx
1:	add	%ebx, %eax
	xor	$0x55, %ebx
	jmp	2f
2:	imul	$3, %ebx, %ebx
	ror	$5, %eax
	or	$1, %eax
	test	%eax, %eax
	jnz	3f
	hlt
3:	call	4f
	jmp	5f
4:	add	$13, %eax
	ret
5:	dec	%ecx
	jnz	1b
	mov	$0, %al			/* QEMU exits with status 1 */
	out	%al, $0xf4
	hlt

	.org	0xfff0
	ljmp	$0xf000, $_start	/* the reset vector */
	.org	0x10000
