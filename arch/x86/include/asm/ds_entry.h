/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The DS layer's hooks in the entry code.
 *
 * A task whose branch trace covers user mode only (a /dev/bts trace) has
 * the hardware record nothing at CPL 0 (BTS_OFF_OS): no kernel branch of
 * it ever reaches the staging buffers, which PTI maps into user page
 * tables.  Its streams learn of each stretch in the kernel from here
 * instead: the entry from user mode notes how and where it came
 * (__ds_enter_from_user_mode()), the exit to user mode stages the
 * BTS_PSEUDO_KERNEL record with where it resumes
 * (__ds_exit_to_user_mode()).  Only tasks with TIF_BTS_USER pay for it,
 * and nobody while the layer has no consumer (the ds_active key; the
 * layer clears the flag everywhere when it goes idle).
 */
#ifndef _ASM_X86_DS_ENTRY_H
#define _ASM_X86_DS_ENTRY_H

#include <linux/jump_label.h>
#include <linux/sched.h>
#include <linux/thread_info.h>
#include <uapi/linux/bts.h>
#include <asm/ptrace.h>

#ifdef CONFIG_X86_DS

/* On while the layer has consumers; see ds_start(). */
DECLARE_STATIC_KEY_FALSE(ds_active);

void __ds_enter_from_user_mode(struct pt_regs *regs);
void __ds_exit_to_user_mode(struct pt_regs *regs);

/* From arch_enter_from_user_mode(): noinstr, RCU not watching yet. */
static __always_inline void ds_enter_from_user_mode(struct pt_regs *regs)
{
	if (static_branch_unlikely(&ds_active) &&
	    (read_thread_flags() & _TIF_BTS_USER))
		__ds_enter_from_user_mode(regs);
}

/*
 * From DEFINE_IDTENTRY_IRQ, after the entry: an external interrupt's
 * vector is in no register the generic entry code sees.
 */
static __always_inline void ds_irq_from_user_mode(struct pt_regs *regs,
						  u32 vector)
{
	if (static_branch_unlikely(&ds_active) && user_mode(regs) &&
	    (read_thread_flags() & _TIF_BTS_USER))
		current->thread.ds_entry_kind = BTS_ENTRY_INTERRUPT |
						vector << 8;
}

/*
 * From arch_exit_work(), interrupts off: only for tasks with work flags,
 * so nothing more on the way out for the others.
 */
static __always_inline void ds_exit_to_user_mode(struct pt_regs *regs,
						 unsigned long ti_work)
{
	if (static_branch_unlikely(&ds_active) &&
	    unlikely(ti_work & _TIF_BTS_USER))
		__ds_exit_to_user_mode(regs);
}

#else /* !CONFIG_X86_DS */

static __always_inline void ds_enter_from_user_mode(struct pt_regs *regs) { }
static __always_inline void ds_irq_from_user_mode(struct pt_regs *regs,
						  u32 vector) { }
static __always_inline void ds_exit_to_user_mode(struct pt_regs *regs,
						 unsigned long ti_work) { }

#endif /* CONFIG_X86_DS */

#endif /* _ASM_X86_DS_ENTRY_H */
