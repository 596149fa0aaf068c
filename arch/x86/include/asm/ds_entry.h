/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The DS layer's hooks in the entry code.
 *
 * A task whose branch trace covers user mode only (a /dev/bts trace) has
 * the hardware record nothing at CPL 0 (BTS_OFF_OS): no kernel branch of
 * it ever reaches the staging buffers, which PTI maps into user page
 * tables.  Its streams learn of each stretch in the kernel from here
 * instead: the entry from user mode notes how and where it came (the
 * ds_*_from_user_mode() hooks), the exit to user mode stages the
 * BTS_PSEUDO_KERNEL record with where it resumed
 * (__ds_exit_to_user_mode()).  Only tasks with TIF_BTS_USER pay for it
 * (and, on the way out, a call for any task with exit work while the
 * layer is active), and nobody while the layer has no consumer (the
 * ds_active key; the layer clears the flag everywhere when it goes idle).
 */
#ifndef _ASM_X86_DS_ENTRY_H
#define _ASM_X86_DS_ENTRY_H

#include <linux/bits.h>
#include <linux/jump_label.h>
#include <linux/sched.h>
#include <linux/thread_info.h>
#include <uapi/linux/bts.h>
#include <asm/ptrace.h>

#ifdef CONFIG_X86_DS

/* On while the layer has consumers; see ds_start(). */
DECLARE_STATIC_KEY_FALSE(ds_active);

void __ds_exit_to_user_mode(void);

/*
 * thread_struct.ds_entry_kind: the BTS_PSEUDO_KERNEL argument (enum
 * bts_entry_kind and the vector), the system call ABI in bits 23..16,
 * and DS_ENTRY_PRESET while a system call's C entry has noted it ahead
 * of arch_enter_from_user_mode().  ds_entry_from is the user address
 * that entered (the system call instruction, int3, the faulting or the
 * interrupted one), ds_entry_ax the system call number as the thread
 * passed it or the exception's error code, ~0 for neither.
 *
 * Each C entry point notes what it is, where it knows it: the system
 * call paths (arch/x86/entry/common.c), the DEFINE_IDTENTRY*() macros
 * (their vector, from the DECLARE_IDTENTRY*() that names it) and the raw
 * handlers.  FRED dispatches to the same C functions, so it needs no
 * more; an entry that notes nothing stays BTS_ENTRY_UNKNOWN.
 */
#define DS_ENTRY_ABI_SHIFT	16
#define DS_ENTRY_PRESET		BIT(31)

static __always_inline bool ds_noting_entry(struct pt_regs *regs)
{
	return static_branch_unlikely(&ds_active) && user_mode(regs) &&
	       (read_thread_flags() & _TIF_BTS_USER);
}

/*
 * From a system call's C entry, before it calls enter_from_user_mode():
 * @nr as the thread passed it, before tracing or a sigreturn can change
 * it; the instruction that entered is @back bytes before regs->ip.
 */
static __always_inline void ds_syscall_from_user_mode(struct pt_regs *regs,
						      unsigned long nr,
						      u32 abi, u32 back)
{
	if (ds_noting_entry(regs)) {
		struct thread_struct *t = &current->thread;

		t->ds_entry_kind = DS_ENTRY_PRESET | BTS_ENTRY_SYSCALL |
				   abi << DS_ENTRY_ABI_SHIFT;
		t->ds_entry_from = regs->ip - back;
		t->ds_entry_ax = nr;
	}
}

/*
 * From arch_enter_from_user_mode(), noinstr, RCU not watching yet: every
 * entry from user mode but an NMI's.  A system call noted itself already;
 * anything else is unknown until its handler says what it is.
 */
static __always_inline void ds_enter_from_user_mode(struct pt_regs *regs)
{
	if (static_branch_unlikely(&ds_active) &&
	    (read_thread_flags() & _TIF_BTS_USER)) {
		struct thread_struct *t = &current->thread;

		if (t->ds_entry_kind & DS_ENTRY_PRESET) {
			t->ds_entry_kind &= ~DS_ENTRY_PRESET;
			return;
		}
		t->ds_entry_kind = BTS_ENTRY_UNKNOWN;
		t->ds_entry_from = regs->ip;
		t->ds_entry_ax = ~0UL;
	}
}

/*
 * From an exception's handler, after its entry: the vector, the error
 * code (~0 for none) and how far before regs->ip the instruction that
 * entered lies (int3's 1; a fault's regs->ip is the faulting one).
 */
static __always_inline void ds_trap_from_user_mode(struct pt_regs *regs,
						   u32 vector, u32 back,
						   unsigned long error_code)
{
	if (ds_noting_entry(regs)) {
		struct thread_struct *t = &current->thread;

		t->ds_entry_kind = BTS_ENTRY_EXCEPTION | vector << 8;
		t->ds_entry_from = regs->ip - back;
		t->ds_entry_ax = error_code;
	}
}

/* From an interrupt's handler, after its entry: external or system vector. */
static __always_inline void ds_irq_from_user_mode(struct pt_regs *regs,
						  u32 vector)
{
	if (ds_noting_entry(regs))
		current->thread.ds_entry_kind = BTS_ENTRY_INTERRUPT |
						vector << 8;
}

/*
 * From arch_exit_work(), interrupts off: only for tasks with work flags,
 * so nothing more on the way out for the others.  The flag test and the
 * user registers are out of line, so that nothing (not even current) is
 * kept for it across arch_exit_work()'s calls: the way out compiles as it
 * does without the layer, but for the static branch.
 */
static __always_inline void ds_exit_to_user_mode(void)
{
	if (static_branch_unlikely(&ds_active))
		__ds_exit_to_user_mode();
}

#else /* !CONFIG_X86_DS */

static __always_inline void ds_syscall_from_user_mode(struct pt_regs *regs,
						      unsigned long nr,
						      u32 abi, u32 back) { }
static __always_inline void ds_enter_from_user_mode(struct pt_regs *regs) { }
static __always_inline void ds_trap_from_user_mode(struct pt_regs *regs,
						   u32 vector, u32 back,
						   unsigned long error_code) { }
static __always_inline void ds_irq_from_user_mode(struct pt_regs *regs,
						  u32 vector) { }
static __always_inline void ds_exit_to_user_mode(void) { }

#endif /* CONFIG_X86_DS */

#endif /* _ASM_X86_DS_ENTRY_H */
