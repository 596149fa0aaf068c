/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The DS layer's hooks in the entry code.
 *
 * A task whose branch trace covers user mode only (a /dev/bts trace) has
 * the hardware record nothing at CPL 0 (BTS_OFF_OS): no kernel branch of
 * it ever reaches the staging buffers, which PTI maps into user page
 * tables.  Its streams learn of each stretch in the kernel from here
 * instead: the entry from user mode notes how and where it came
 * (ds_enter_from_user_mode()), the exit to user mode stages the
 * BTS_PSEUDO_KERNEL record with where it resumed
 * (__ds_exit_to_user_mode()).  Only tasks with TIF_BTS_USER pay for it,
 * and nobody while the layer has no consumer (the ds_active key; the
 * layer clears the flag everywhere when it goes idle).
 */
#ifndef _ASM_X86_DS_ENTRY_H
#define _ASM_X86_DS_ENTRY_H

#include <linux/bits.h>
#include <linux/jump_label.h>
#include <linux/sched.h>
#include <linux/thread_info.h>
#include <uapi/linux/bts.h>
#include <asm/ptrace.h>
#include <asm/sections.h>

#ifdef CONFIG_X86_DS

/* On while the layer has consumers; see ds_start(). */
DECLARE_STATIC_KEY_FALSE(ds_active);

void __ds_exit_to_user_mode(struct pt_regs *regs);

/*
 * thread_struct.ds_entry_kind as the entry leaves it: DS_ENTRY_NOTED and
 * where in the entry text the stub that called into C returns to, for
 * the exit to classify (__ds_exit_to_user_mode()); or, from an external
 * interrupt, the BTS_PSEUDO_KERNEL argument itself.
 */
#define DS_ENTRY_NOTED		BIT(31)
/*
 * ...and pt_regs::orig_ax was -1, so ds_entry_ax is pt_regs::ax: the
 * number of a system call made with int $0x80, which int80_emulation()
 * moves to orig_ax only later; otherwise no number.
 */
#define DS_ENTRY_AX		BIT(30)

/*
 * From arch_enter_from_user_mode(): noinstr, RCU not watching yet.  No
 * call: the system call path would save registers for it, traced or not.
 * orig_ax holds the system call number as the thread passed it, before
 * tracing or a sigreturn can change it; int $0x80 leaves it in ax, with
 * orig_ax -1 (DS_ENTRY_AX).  An exception's error code is gone from it by
 * now (idtentry_body sets it to -1): ds_error_code_from_user_mode().
 * The entry stub's call into C left its return address right below
 * pt_regs (entry_64.S, idtentry_body; entry_SYSCALL_64 and the compat
 * entries alike); FRED's entry differs, and is left unknown.
 */
static __always_inline void ds_enter_from_user_mode(struct pt_regs *regs)
{
	if (static_branch_unlikely(&ds_active) &&
	    (read_thread_flags() & _TIF_BTS_USER)) {
		struct thread_struct *t = &current->thread;
		unsigned long off = ((unsigned long *)regs)[-1] -
				    (unsigned long)__entry_text_start;
		unsigned long ax = regs->orig_ax;
		u32 kind = DS_ENTRY_NOTED | off;

		if (ax == -1UL) {
			ax = regs->ax;
			kind |= DS_ENTRY_AX;
		}
		t->ds_entry_kind = !cpu_feature_enabled(X86_FEATURE_FRED) &&
				   off < DS_ENTRY_AX ? kind : BTS_ENTRY_UNKNOWN;
		t->ds_entry_from = regs->ip;
		t->ds_entry_ax = ax;
	}
}

/*
 * From DEFINE_IDTENTRY_ERRORCODE and exc_page_fault(), after the entry:
 * the exception's error code, which the entry stub passed to the handler
 * and no longer left in orig_ax.
 */
static __always_inline void
ds_error_code_from_user_mode(struct pt_regs *regs, unsigned long error_code)
{
	if (static_branch_unlikely(&ds_active) && user_mode(regs) &&
	    (read_thread_flags() & _TIF_BTS_USER)) {
		current->thread.ds_entry_ax = error_code;
		current->thread.ds_entry_kind &= ~DS_ENTRY_AX;
	}
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
static __always_inline void
ds_error_code_from_user_mode(struct pt_regs *regs, unsigned long error_code) { }
static __always_inline void ds_exit_to_user_mode(struct pt_regs *regs,
						 unsigned long ti_work) { }

#endif /* CONFIG_X86_DS */

#endif /* _ASM_X86_DS_ENTRY_H */
