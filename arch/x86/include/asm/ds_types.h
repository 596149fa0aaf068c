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

struct bts_record;

/**
 * struct ds_bts_window - memory of a consumer's own that the hardware
 *	writes its records into, without a copy (ds_bts_ops::window)
 * @base: where the first record goes, mapped in the kernel's page tables
 * @nr: how many records fit; the hardware raises its PMI when
 *	DS_BTS_PMI_SLACK of them are left, so there must be more
 */
struct ds_bts_window {
	struct bts_record	*base;
	unsigned int		nr;
};

/*
 * Records the hardware may write between crossing the threshold and the
 * PMI handler stopping it (SDM Vol. 3B 18.4.9.2: the threshold "several
 * records short" of the end): with kernel tracing on, the NMI entry path
 * itself, longer with debug options.  perf keeps a sixteenth of its
 * buffer; the layer's sub-buffers and a consumer's windows keep this.
 */
#define DS_BTS_PMI_SLACK	256

#endif /* _ASM_X86_DS_TYPES_H */
