/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Everything ds_core.c needs from the kernel, in one place, so that
 * tools/testing/ds can substitute it: its ds_internal.h uses the same
 * include guard and provides userspace equivalents.
 */
#ifndef __X86_KERNEL_DS_INTERNAL_H
#define __X86_KERNEL_DS_INTERNAL_H

#include <linux/atomic.h>
#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/minmax.h>
#include <linux/bug.h>
#include <linux/bits.h>
#include <linux/string.h>
#include <asm/barrier.h>
#include <uapi/linux/bts.h>
#include <asm/ds_types.h>

#endif /* __X86_KERNEL_DS_INTERNAL_H */
