/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types of the x86 Debug Store layer that its kernel API (asm/ds.h) and
 * its hardware-free core (arch/x86/kernel/ds_core.h) share.  Kept free of
 * includes so that the core's userspace harness (tools/testing/ds) can use
 * this very file.
 */
#ifndef _ASM_X86_DS_TYPES_H
#define _ASM_X86_DS_TYPES_H

/**
 * enum ds_priv - which side of the privilege boundary a stream records
 * @DS_PRIV_KERNEL: kernel mode only; user time becomes BTS_PSEUDO_USER
 * @DS_PRIV_USER: user mode only; kernel time becomes BTS_PSEUDO_KERNEL,
 *	and no kernel address ever reaches the stream
 * @DS_PRIV_ALL: both, every record as the hardware wrote it
 */
enum ds_priv {
	DS_PRIV_KERNEL	= 1,
	DS_PRIV_USER	= 2,
	DS_PRIV_ALL	= DS_PRIV_KERNEL | DS_PRIV_USER,
};

/**
 * enum ds_mode - what a full stream does
 * @DS_MODE_RING: overwrite the oldest record: the stream holds the last
 *	records ("last N", a flight recorder)
 * @DS_MODE_CONTINUOUS: keep every record until the consumer takes it; when
 *	the stream is full, count what does not fit and put one
 *	BTS_PSEUDO_LOST record in its place once there is room again
 */
enum ds_mode {
	DS_MODE_RING,
	DS_MODE_CONTINUOUS,
};

#endif /* _ASM_X86_DS_TYPES_H */
