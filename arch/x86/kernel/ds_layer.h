/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What ds.c, which owns the hardware and the consumers, offers the other
 * files of the Debug Store layer.
 */
#ifndef __X86_KERNEL_DS_LAYER_H
#define __X86_KERNEL_DS_LAYER_H

#include <linux/types.h>
#include <uapi/linux/bts.h>

/* Whether a consumer takes address-space changes (DS_BTS_MAPS). */
bool ds_maps_wanted(void);

/*
 * Stage @nr records for the streams of the current task and this CPU that
 * take @flag's annotations, in order with the task's branches.
 * Context: not NMI; preemption may be on.
 */
void ds_append_optional(const struct bts_record *rec, unsigned int nr,
			u32 flag);

#endif /* __X86_KERNEL_DS_LAYER_H */
