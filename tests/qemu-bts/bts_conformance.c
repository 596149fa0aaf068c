// SPDX-License-Identifier: GPL-2.0
/*
 * Register-level conformance test of branch trace store (BTS), as QEMU's
 * TCG emulates it.
 *
 * The module programs IA32_DS_AREA and IA32_DEBUGCTL itself (nothing else,
 * perf included, may use the Debug Store meanwhile), runs branch sequences
 * whose addresses it knows and checks the exact records, the DS save area
 * and the memory around the buffer.  Each kernel-mode sequence turns BTS
 * on, branches and turns BTS off inside one asm block, with interrupts
 * off (bts_irq_seq() turns them on inside its block), so that the compiler
 * cannot add branches of its own.  The KUnit suite "bts_conformance" runs
 * when the module is loaded.
 *
 * User-mode half: writing "arm <hex>" to debugfs bts_conformance/user turns
 * BTS on for the writer's CPU (<hex>: the BTS_OFF_OS and BTS_OFF_USR bits of
 * DEBUGCTL), "disarm" turns it off; reading the file then gives a struct
 * bts_user_header followed by the records and the return kind of each.
 * user.c (and user32.c through it) is its client; user.h has a copy of the
 * header.
 *
 * On a real machine (native=1, what `make hw-check` loads) the same cases
 * compare the hardware with the emulation's choices, less the two whose
 * stores would fault or trap where QEMU drops the record (unmapped,
 * watched_buffer) and the emulated CPU's identity (no PEBS).
 */

#include <kunit/test.h>
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/kdebug.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/objtool.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/stringify.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <asm/apic.h>
#include <asm/asm.h>
#include <asm/cpufeature.h>
#include <asm/debugreg.h>
#include <asm/desc.h>
#include <asm/extable_fixup_types.h>
#include <asm/msr.h>
#include <asm/nmi.h>
#include <asm/nospec-branch.h>
#include <asm/processor.h>
#include <asm/trapnr.h>

#include "debugfs_abi.h"

static bool require_ds = true;
module_param(require_ds, bool, 0444);
MODULE_PARM_DESC(require_ds, "Fail (rather than skip) when the CPU has no DS/DTES64");

/*
 * The QEMU CPU's strict modes (bts-strict-threshold, bts-strict-btint and
 * bts-strict-fault, all on or all off); the module cannot ask QEMU, so the
 * runner says.
 */
static bool strict;
module_param(strict, bool, 0444);
MODULE_PARM_DESC(strict, "QEMU runs with bts-strict-{threshold,btint,fault}=on");

static bool native;
module_param(native, bool, 0444);
MODULE_PARM_DESC(native,
		 "On hardware (make hw-check): skip what would take a real machine down");

static bool watch_plant;
module_param(watch_plant, bool, 0444);
MODULE_PARM_DESC(watch_plant,
		 "Self-test: watched_buffer puts its data breakpoint below the buffer");

static bool fault_probe;
module_param(fault_probe, bool, 0444);
MODULE_PARM_DESC(fault_probe,
		 "Run strict_fault: store to an unmapped buffer, which must stop the VM");

/* DS save area, 64-bit layout (DTES64), in u64 words */
enum {
	DS_BTS_BASE,		/* 0x00 */
	DS_BTS_INDEX,		/* 0x08 */
	DS_BTS_MAX,		/* 0x10: absolute maximum */
	DS_BTS_THRESHOLD,	/* 0x18: interrupt threshold */
	DS_PEBS_FIRST,		/* 0x20: PEBS fields, then counter reset values */
};

#define DS_WORDS		(PAGE_SIZE / sizeof(u64))

struct bts_record {
	u64 from;
	u64 to;
	u64 flags;
};

#define BTS_REC_SIZE		sizeof(struct bts_record)

struct bts_branch {
	u64 from;
	u64 to;
};

#define BTS_TR_BTS		(DEBUGCTLMSR_TR | DEBUGCTLMSR_BTS)
#define BTS_OFF_BITS		(DEBUGCTLMSR_BTS_OFF_OS | DEBUGCTLMSR_BTS_OFF_USR)

/* Kernel-mode cases: one 64 KiB buffer, poisoned around the records */
#define BTS_BUF_ORDER		4
#define BTS_BUF_SIZE		(PAGE_SIZE << BTS_BUF_ORDER)
#define BTS_GUARD		64	/* poisoned bytes below the buffer base */
#define BTS_POISON		0xa5
#define BTS_MAX_SLOTS		((BTS_BUF_SIZE - 2 * BTS_GUARD) / BTS_REC_SIZE)
#define BTS_NO_THRESHOLD	(-1)

/* bts_jmps() runs this many "jmp rel8" to the next instruction */
#define BTS_NJMPS		10
#define BTS_JMP_LEN		2

static struct {
	u64 *ds;		/* DS save area (one page) */
	u8 *buf;		/* BTS buffer and its guards */
	u64 base, max, threshold;
} bts;

static u64 ds_pattern(unsigned int word)
{
	return 0x5045425300000000ULL | word;	/* "PEBS" */
}

static bool bts_kernel_addr(u64 addr)
{
	return addr >= 0xffff800000000000ULL;
}

static const struct bts_record *bts_records(void)
{
	return (const struct bts_record *)(unsigned long)bts.base;
}

/*
 * Lay out the BTS buffer: @slots records plus @extra bytes up to the
 * absolute maximum; the interrupt threshold after @thr_slot records, or
 * one record beyond the absolute maximum for BTS_NO_THRESHOLD (what the SDM
 * asks of a circular buffer).  Everything else is poisoned.
 */
static void bts_ds_init(unsigned int slots, unsigned int extra, long thr_slot)
{
	unsigned int i;

	memset(bts.buf, BTS_POISON, BTS_BUF_SIZE);
	for (i = DS_PEBS_FIRST; i < DS_WORDS; i++)
		bts.ds[i] = ds_pattern(i);
	bts.base = (unsigned long)bts.buf + BTS_GUARD;
	bts.max = bts.base + slots * BTS_REC_SIZE + extra;
	if (thr_slot == BTS_NO_THRESHOLD)
		bts.threshold = bts.max + BTS_REC_SIZE;
	else
		bts.threshold = bts.base + thr_slot * BTS_REC_SIZE;
	bts.ds[DS_BTS_BASE] = bts.base;
	bts.ds[DS_BTS_INDEX] = bts.base;
	bts.ds[DS_BTS_MAX] = bts.max;
	bts.ds[DS_BTS_THRESHOLD] = bts.threshold;
}

/*
 * Check what a run left: only the BTS index moved, it is record aligned
 * within [base, absolute maximum], the PEBS part of the DS area is as we
 * wrote it, no byte below the base or above the first @written records was
 * touched (the records below the index if @written < 0), and the flags of
 * the written records are 0.  Returns the number of records below the
 * index, or -1 after reporting a failure.
 */
static int bts_check_area(struct kunit *test, const char *what, int written)
{
	const struct bts_record *rec = bts_records();
	u64 index = bts.ds[DS_BTS_INDEX];
	unsigned long end, p;
	unsigned int i;
	bool ok = true;

	if (bts.ds[DS_BTS_BASE] != bts.base || bts.ds[DS_BTS_MAX] != bts.max ||
	    bts.ds[DS_BTS_THRESHOLD] != bts.threshold) {
		KUNIT_FAIL(test,
			   "%s: DS base/max/threshold changed to %#llx/%#llx/%#llx, were %#llx/%#llx/%#llx",
			   what, bts.ds[DS_BTS_BASE], bts.ds[DS_BTS_MAX],
			   bts.ds[DS_BTS_THRESHOLD], bts.base, bts.max, bts.threshold);
		ok = false;
	}
	for (i = DS_PEBS_FIRST; i < DS_WORDS; i++) {
		if (bts.ds[i] != ds_pattern(i)) {
			KUNIT_FAIL(test, "%s: DS area offset %#x changed to %#llx, was %#llx",
				   what, i * 8, bts.ds[i], ds_pattern(i));
			ok = false;
			break;
		}
	}
	if (index < bts.base || index > bts.max ||
	    (index - bts.base) % BTS_REC_SIZE) {
		KUNIT_FAIL(test,
			   "%s: BTS index %#llx: not a record boundary in [base %#llx, max %#llx]",
			   what, index, bts.base, bts.max);
		return -1;
	}
	if (written < 0)
		written = (index - bts.base) / BTS_REC_SIZE;
	end = bts.base + written * BTS_REC_SIZE;
	for (p = (unsigned long)bts.buf; p < (unsigned long)bts.buf + BTS_BUF_SIZE; p++) {
		if (p >= bts.base && p < end)
			continue;
		if (*(u8 *)p != BTS_POISON) {
			KUNIT_FAIL(test,
				   "%s: byte at base%+ld written (%#x); index %#llx, max %#llx",
				   what, (long)(p - bts.base), *(u8 *)p, index, bts.max);
			ok = false;
			break;
		}
	}
	for (i = 0; i < written; i++) {
		if (rec[i].flags) {
			KUNIT_FAIL(test, "%s: record #%u has flags %#llx, expected 0",
				   what, i, rec[i].flags);
			ok = false;
			break;
		}
	}
	return ok ? (index - bts.base) / BTS_REC_SIZE : -1;
}

/* Compare records with branches; report the first difference */
static bool bts_expect(struct kunit *test, const char *what,
		       const struct bts_record *got, unsigned int n_got,
		       const struct bts_branch *exp, unsigned int n_exp)
{
	unsigned int i;

	for (i = 0; i < n_got && i < n_exp; i++) {
		if (got[i].from == exp[i].from && got[i].to == exp[i].to)
			continue;
		KUNIT_FAIL(test,
			   "%s: first wrong record #%u: expected %#llx -> %#llx (%pS -> %pS), got %#llx -> %#llx (%pS -> %pS)",
			   what, i, exp[i].from, exp[i].to,
			   (void *)(unsigned long)exp[i].from,
			   (void *)(unsigned long)exp[i].to,
			   got[i].from, got[i].to,
			   (void *)(unsigned long)got[i].from,
			   (void *)(unsigned long)got[i].to);
		return false;
	}
	if (n_got > n_exp) {
		KUNIT_FAIL(test,
			   "%s: %u records, expected %u; first extra #%u: %#llx -> %#llx (%pS -> %pS)",
			   what, n_got, n_exp, i, got[i].from, got[i].to,
			   (void *)(unsigned long)got[i].from,
			   (void *)(unsigned long)got[i].to);
		return false;
	}
	if (n_got < n_exp) {
		KUNIT_FAIL(test,
			   "%s: %u records, expected %u; first missing #%u: %#llx -> %#llx (%pS -> %pS)",
			   what, n_got, n_exp, i, exp[i].from, exp[i].to,
			   (void *)(unsigned long)exp[i].from,
			   (void *)(unsigned long)exp[i].to);
		return false;
	}
	return true;
}

static const u8 bts_iretq[] = { 0x48, 0xcf };
static const u8 bts_sysretq[] = { 0x48, 0x0f, 0x07 };
static const u8 bts_sysretl[] = { 0x0f, 0x07 };
static const u8 bts_sysexit[] = { 0x0f, 0x35 };
static const u8 bts_sysexitq[] = { 0x48, 0x0f, 0x35 };

/* Is the kernel instruction at @addr @insn? */
static bool bts_insn_is(u64 addr, const u8 *insn, size_t len)
{
	u8 buf[4];

	if (len > sizeof(buf) ||
	    copy_from_kernel_nofault(buf, (const void *)(unsigned long)addr, len))
		return false;
	return !memcmp(buf, insn, len);
}

/* The handler of an IDT vector, i.e. the "to" of an event record */
static u64 bts_idt_handler(unsigned int vector)
{
	struct desc_ptr dtr;

	store_idt(&dtr);
	return gate_offset((gate_desc *)dtr.address + vector);
}

/* Fail or skip the case unless the CPU has BTS and nobody else uses it */
static void bts_require(struct kunit *test)
{
	u64 ctl;

	if (!boot_cpu_has(X86_FEATURE_DS) || !boot_cpu_has(X86_FEATURE_DTES64)) {
		if (require_ds)
			KUNIT_FAIL_AND_ABORT(test,
					     "the CPU has no DS (CPUID.1:EDX[21]=%d) or DTES64 (CPUID.1:ECX[2]=%d): BTS is not emulated",
					     boot_cpu_has(X86_FEATURE_DS),
					     boot_cpu_has(X86_FEATURE_DTES64));
		kunit_skip(test, "the CPU has no DS/DTES64");
	}
	if (rdmsrl_safe(MSR_IA32_DEBUGCTLMSR, &ctl))
		KUNIT_FAIL_AND_ABORT(test, "RDMSR IA32_DEBUGCTL faults");
	if (ctl & BTS_TR_BTS)
		KUNIT_FAIL_AND_ABORT(test, "IA32_DEBUGCTL is %#llx: someone else uses BTS", ctl);
}

/*
 * An exception table entry that turns a #GP on the enabling WRMSR at @from
 * into -EIO in eax (register 0) and goes on at @to, skipping the branches
 * and the disabling WRMSR: _ASM_EXTABLE_TYPE_REG(from, to,
 * EX_TYPE_WRMSR_SAFE, %eax) spelled out.
 */
#define BTS_ENABLE_GP_FIXUP(from, to)					\
	".pushsection \"__ex_table\", \"a\"\n\t"				\
	".balign 4\n\t"							\
	".long " #from " - .\n\t"						\
	".long " #to " - .\n\t"						\
	".long " __stringify(EX_TYPE_WRMSR_SAFE | EX_DATA_REG(0)) "\n\t"	\
	".popsection\n\t"

/*
 * Write @on to DEBUGCTL, run BTS_NJMPS "jmp rel8" each to the instruction
 * after it (the first at *@start), write @off to DEBUGCTL.  Returns 0, or
 * -EIO if writing @on faulted.
 */
static noinline int bts_jmps(u32 on, u32 off, unsigned long *start)
{
	int err;

	asm volatile("lea 1f(%%rip), %%rax\n\t"
		     "mov %%rax, %[start]\n\t"
		     "mov $" __stringify(MSR_IA32_DEBUGCTLMSR) ", %%ecx\n\t"
		     "mov %[on], %%eax\n\t"
		     "xor %%edx, %%edx\n"
		     "3:\n\t"
		     "wrmsr\n"
		     "1:\n\t"
		     ".rept " __stringify(BTS_NJMPS) "\n\t"
		     "jmp 2f\n"
		     "2:\n\t"
		     ".endr\n\t"
		     "mov %[off], %%eax\n\t"
		     "wrmsr\n\t"
		     "xor %%eax, %%eax\n"
		     "4:\n\t"
		     BTS_ENABLE_GP_FIXUP(3b, 4b)
		     : [start] "=m" (*start), [err] "=&a" (err)
		     : [on] "r" (on), [off] "r" (off)
		     : "rcx", "rdx", "memory");
	return err;
}

/* The records of jmps @first.. of bts_jmps() */
static void bts_jmps_expected(struct bts_branch *exp, unsigned long start,
			      unsigned int first, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		exp[i].from = start + (first + i) * BTS_JMP_LEN;
		exp[i].to = exp[i].from + BTS_JMP_LEN;
	}
}

/* Run bts_jmps() with @debugctl (ORed into the old value) on the DS area at @ds */
static int bts_run_jmps_at(const void *ds, u64 debugctl, unsigned long *start)
{
	unsigned long flags;
	u64 old_ds, old_ctl;
	int err;

	local_irq_save(flags);
	rdmsrl(MSR_IA32_DEBUGCTLMSR, old_ctl);
	rdmsrl(MSR_IA32_DS_AREA, old_ds);
	wrmsrl(MSR_IA32_DS_AREA, (unsigned long)ds);
	err = bts_jmps(old_ctl | debugctl, old_ctl, start);
	wrmsrl(MSR_IA32_DS_AREA, old_ds);
	local_irq_restore(flags);
	return err;
}

/* Run bts_jmps() with @debugctl (ORed into the old value) on our DS area */
static int bts_run_jmps(u64 debugctl, unsigned long *start)
{
	return bts_run_jmps_at(bts.ds, debugctl, start);
}

/*
 * Run bts_jmps() with @debugctl and expect the records of jmps @first to
 * @first + @n - 1, written from the buffer base (no wrap).
 */
static void bts_jmps_case(struct kunit *test, const char *what, u64 debugctl,
			  unsigned int first, unsigned int n)
{
	struct bts_branch exp[BTS_NJMPS];
	unsigned long start = 0;
	int err, nr;

	err = bts_run_jmps(debugctl, &start);
	if (err) {
		KUNIT_FAIL(test, "%s: WRMSR IA32_DEBUGCTL=%#llx faulted", what, debugctl);
		return;
	}
	nr = bts_check_area(test, what, -1);
	if (nr < 0)
		return;
	bts_jmps_expected(exp, start, first, n);
	bts_expect(test, what, bts_records(), nr, exp, n);
}

static void bts_test_features(struct kunit *test)
{
	static const u64 ro_bits[] = {
		MSR_IA32_MISC_ENABLE_BTS_UNAVAIL,
		MSR_IA32_MISC_ENABLE_PEBS_UNAVAIL,
	};
	u64 misc, val;
	unsigned int i;

	bts_require(test);
	KUNIT_EXPECT_TRUE(test, boot_cpu_has(X86_FEATURE_BTS));
	rdmsrl(MSR_IA32_MISC_ENABLE, misc);
	KUNIT_EXPECT_FALSE_MSG(test, misc & MSR_IA32_MISC_ENABLE_BTS_UNAVAIL,
			       "IA32_MISC_ENABLE %#llx: BTS_UNAVAILABLE (bit 11) set", misc);
	/* Real CPUs with BTS mostly have PEBS too; the emulated one has not */
	if (!native) {
		KUNIT_EXPECT_FALSE(test, boot_cpu_has(X86_FEATURE_PEBS));
		KUNIT_EXPECT_TRUE_MSG(test, misc & MSR_IA32_MISC_ENABLE_PEBS_UNAVAIL,
				      "IA32_MISC_ENABLE %#llx: PEBS_UNAVAILABLE (bit 12) clear, but PEBS is not emulated",
				      misc);
	}
	/* Both bits are read-only: writes succeed and change nothing */
	for (i = 0; i < ARRAY_SIZE(ro_bits); i++) {
		KUNIT_EXPECT_EQ_MSG(test, wrmsrl_safe(MSR_IA32_MISC_ENABLE, misc ^ ro_bits[i]), 0,
				    "WRMSR IA32_MISC_ENABLE=%#llx faulted", misc ^ ro_bits[i]);
		rdmsrl(MSR_IA32_MISC_ENABLE, val);
		KUNIT_EXPECT_EQ_MSG(test, val, misc,
				    "IA32_MISC_ENABLE bit %d is not read-only",
				    __ffs64(ro_bits[i]));
		wrmsrl(MSR_IA32_MISC_ENABLE, misc);
	}
	kunit_info(test, "DS-CPL %s, PDCM %s, PEBS %s\n",
		   boot_cpu_has(X86_FEATURE_DSCPL) ? "present" : "absent",
		   boot_cpu_has(X86_FEATURE_PDCM) ? "present" : "absent",
		   boot_cpu_has(X86_FEATURE_PEBS) ? "present" : "absent");
}

/*
 * Offsets in the address array that bts_kseq() fills in: B_ is a branch
 * instruction, T_ its target, R_ a return address.
 */
#define KS_B_JMP8	0
#define KS_T_JMP8	1
#define KS_B_JMP32	2
#define KS_T_JMP32	3
#define KS_B_JCC8	4
#define KS_T_JCC8	5
#define KS_B_JCC32	6
#define KS_T_JCC32	7
#define KS_B_CALL	8
#define KS_FN		9	/* "ret" */
#define KS_R_CALL	10
#define KS_B_CALLR	11
#define KS_FN2		12	/* "ret $0" */
#define KS_R_CALLR	13
#define KS_B_JMPR	14
#define KS_T_JMPR	15
#define KS_B_LOOP	16
#define KS_B_JRCXZ	17
#define KS_T_JRCXZ	18
#define KS_B_IRET	19
#define KS_T_IRET	20
#define KS_B_LRET	21
#define KS_T_LRET	22
#define KS_BAD		23	/* non-zero: a branch went the wrong way */
#define KS_B_LJMP	24
#define KS_T_LJMP	25
#define KS_B_LCALL	26
#define KS_FAR_FN	27	/* "lretq" */
#define KS_R_LCALL	28
#define KS_FARJ		29	/* m16:64 pointers, two words each */
#define KS_FARC		31
#define KS_NR		33

#define KS_STORE(label, idx)					\
	"lea " label "%=(%%rip), %%rax\n\t"			\
	"mov %%rax, " __stringify(idx) "*8(%[a])\n\t"

/* objtool: a call to a label inside the function (include/linux/objtool.h) */
#define BTS_INTRA_FUNCTION_CALL					\
	"998:\n\t"						\
	".pushsection .discard.intra_function_calls\n\t"	\
	".long 998b\n\t"					\
	".popsection\n\t"

#define BTS_REP_LEN	7

/* The size of straight-line code that crosses a page and TCG's TB size */
#define BTS_NOPS	4200

/*
 * One of each kind of branch, with BTS on: jmp rel8 and rel32, jcc rel8
 * and rel32 taken and not taken, call rel32 and ret, indirect call and
 * "ret imm16", indirect jmp, loop (3 iterations: 2 taken), jrcxz taken
 * and not taken, rep movsb with rcx = 7 and 0, BTS_NOPS nops, iretq and
 * lretq to the next instruction, far jmp and far call through m16:64
 * pointers, and the lretq back.
 */
static noinline int bts_kseq(u32 on, u32 off, u64 *a, const void *src, void *dst)
{
	int err;

	asm volatile("xor %%r8d, %%r8d\n\t"
		     "lea .Lt_ljmp%=(%%rip), %%rax\n\t"
		     "mov %%rax, " __stringify(KS_FARJ) "*8(%[a])\n\t"
		     "lea .Lfar_fn%=(%%rip), %%rax\n\t"
		     "mov %%rax, " __stringify(KS_FARC) "*8(%[a])\n\t"
		     "mov %%cs, %%eax\n\t"
		     "mov %%rax, " __stringify(KS_FARJ) "*8+8(%[a])\n\t"
		     "mov %%rax, " __stringify(KS_FARC) "*8+8(%[a])\n\t"
		     "mov $" __stringify(MSR_IA32_DEBUGCTLMSR) ", %%ecx\n\t"
		     "mov %[on], %%eax\n\t"
		     "xor %%edx, %%edx\n"
		     "3:\n\t"
		     "wrmsr\n"
		     ".Lb_jmp8%=:\n\t"
		     "jmp .Lt_jmp8%=\n\t"
		     "nop\n"
		     ".Lt_jmp8%=:\n"
		     ".Lb_jmp32%=:\n\t"
		     ".byte 0xe9\n\t"			/* jmp rel32 */
		     ".long .Lt_jmp32%= - . - 4\n\t"
		     "nop\n"
		     ".Lt_jmp32%=:\n\t"
		     "xor %%eax, %%eax\n\t"		/* ZF = 1 */
		     "jnz .Lbad_near%=\n\t"		/* rel8, not taken */
		     ".byte 0x0f, 0x85\n\t"		/* jnz rel32, not taken */
		     ".long .Lbad%= - . - 4\n"
		     ".Lb_jcc8%=:\n\t"
		     "jz .Lt_jcc8%=\n\t"
		     "nop\n"
		     ".Lt_jcc8%=:\n"
		     ".Lb_jcc32%=:\n\t"
		     ".byte 0x0f, 0x84\n\t"		/* jz rel32 */
		     ".long .Lt_jcc32%= - . - 4\n\t"
		     "nop\n"
		     ".Lt_jcc32%=:\n"
		     ".Lb_call%=:\n\t"
		     BTS_INTRA_FUNCTION_CALL
		     "call .Lfn%=\n"
		     ".Lr_call%=:\n\t"
		     "lea .Lfn2%=(%%rip), %%rax\n"
		     ".Lb_callr%=:\n\t"
		     ANNOTATE_RETPOLINE_SAFE
		     "call *%%rax\n"
		     ".Lr_callr%=:\n\t"
		     "lea .Lt_jmpr%=(%%rip), %%rax\n"
		     ".Lb_jmpr%=:\n\t"
		     ANNOTATE_RETPOLINE_SAFE
		     "jmp *%%rax\n"
		     ".Lbad_near%=:\n\t"			/* in reach of rel8 */
		     "jmp .Lbad%=\n"
		     ".Lt_jmpr%=:\n\t"
		     "mov $3, %%ecx\n"
		     ".Lb_loop%=:\n\t"
		     "loop .Lb_loop%=\n\t"
		     "xor %%ecx, %%ecx\n"
		     ".Lb_jrcxz%=:\n\t"
		     "jrcxz .Lt_jrcxz%=\n\t"
		     "nop\n"
		     ".Lt_jrcxz%=:\n\t"
		     "mov $1, %%ecx\n\t"
		     "jrcxz .Lbad_near%=\n\t"		/* not taken */
		     "mov $" __stringify(BTS_REP_LEN) ", %%ecx\n\t"
		     "mov %[src], %%rsi\n\t"
		     "mov %[dst], %%rdi\n\t"
		     "rep movsb\n\t"
		     "xor %%ecx, %%ecx\n\t"
		     "rep movsb\n\t"
		     ".fill " __stringify(BTS_NOPS) ", 1, 0x90\n\t"
		     /* iretq to the next instruction, as sync_core() once did */
		     "mov %%ss, %%eax\n\t"
		     "push %%rax\n\t"
		     "lea 8(%%rsp), %%rax\n\t"
		     "push %%rax\n\t"
		     "pushfq\n\t"
		     "mov %%cs, %%eax\n\t"
		     "push %%rax\n\t"
		     "lea .Lt_iret%=(%%rip), %%rax\n\t"
		     "push %%rax\n"
		     ".Lb_iret%=:\n\t"
		     "iretq\n"
		     ".Lt_iret%=:\n\t"
		     "mov %%cs, %%eax\n\t"
		     "push %%rax\n\t"
		     "lea .Lt_lret%=(%%rip), %%rax\n\t"
		     "push %%rax\n"
		     ".Lb_lret%=:\n\t"
		     "lretq\n"
		     ".Lt_lret%=:\n\t"
		     "lea " __stringify(KS_FARJ) "*8(%[a]), %%rax\n"
		     ".Lb_ljmp%=:\n\t"
		     ".byte 0x48, 0xff, 0x28\n\t"	/* ljmpq *(%%rax) */
		     "nop\n"
		     ".Lt_ljmp%=:\n\t"
		     "lea " __stringify(KS_FARC) "*8(%[a]), %%rax\n"
		     ".Lb_lcall%=:\n\t"
		     ANNOTATE_RETPOLINE_SAFE
		     ".byte 0x48, 0xff, 0x18\n"	/* lcallq *(%%rax) */
		     ".Lr_lcall%=:\n"
		     ".Loff%=:\n\t"
		     "mov $" __stringify(MSR_IA32_DEBUGCTLMSR) ", %%ecx\n\t"
		     "mov %[off], %%eax\n\t"
		     "xor %%edx, %%edx\n\t"
		     "wrmsr\n\t"
		     "jmp .Lstore%=\n"
		     ".Lfn%=:\n\t"
		     ANNOTATE_RETPOLINE_SAFE
		     "ret\n\t"
		     "int3\n"
		     ".Lfn2%=:\n\t"
		     ANNOTATE_RETPOLINE_SAFE
		     "ret $0\n\t"
		     "int3\n"
		     ".Lfar_fn%=:\n\t"
		     "lretq\n\t"
		     "int3\n"
		     ".Lbad%=:\n\t"
		     "mov $1, %%r8d\n\t"
		     "jmp .Loff%=\n"
		     ".Lstore%=:\n\t"
		     KS_STORE(".Lb_jmp8", KS_B_JMP8)
		     KS_STORE(".Lt_jmp8", KS_T_JMP8)
		     KS_STORE(".Lb_jmp32", KS_B_JMP32)
		     KS_STORE(".Lt_jmp32", KS_T_JMP32)
		     KS_STORE(".Lb_jcc8", KS_B_JCC8)
		     KS_STORE(".Lt_jcc8", KS_T_JCC8)
		     KS_STORE(".Lb_jcc32", KS_B_JCC32)
		     KS_STORE(".Lt_jcc32", KS_T_JCC32)
		     KS_STORE(".Lb_call", KS_B_CALL)
		     KS_STORE(".Lfn", KS_FN)
		     KS_STORE(".Lr_call", KS_R_CALL)
		     KS_STORE(".Lb_callr", KS_B_CALLR)
		     KS_STORE(".Lfn2", KS_FN2)
		     KS_STORE(".Lr_callr", KS_R_CALLR)
		     KS_STORE(".Lb_jmpr", KS_B_JMPR)
		     KS_STORE(".Lt_jmpr", KS_T_JMPR)
		     KS_STORE(".Lb_loop", KS_B_LOOP)
		     KS_STORE(".Lb_jrcxz", KS_B_JRCXZ)
		     KS_STORE(".Lt_jrcxz", KS_T_JRCXZ)
		     KS_STORE(".Lb_iret", KS_B_IRET)
		     KS_STORE(".Lt_iret", KS_T_IRET)
		     KS_STORE(".Lb_lret", KS_B_LRET)
		     KS_STORE(".Lt_lret", KS_T_LRET)
		     KS_STORE(".Lb_ljmp", KS_B_LJMP)
		     KS_STORE(".Lt_ljmp", KS_T_LJMP)
		     KS_STORE(".Lb_lcall", KS_B_LCALL)
		     KS_STORE(".Lfar_fn", KS_FAR_FN)
		     KS_STORE(".Lr_lcall", KS_R_LCALL)
		     "mov %%r8, " __stringify(KS_BAD) "*8(%[a])\n\t"
		     "xor %%eax, %%eax\n"
		     "4:\n\t"
		     BTS_ENABLE_GP_FIXUP(3b, 4b)
		     : [err] "=&a" (err)
		     : [on] "r" (on), [off] "r" (off), [a] "r" (a),
		       [src] "r" (src), [dst] "r" (dst)
		     : "rcx", "rdx", "rsi", "rdi", "r8", "memory", "cc");
	return err;
}

STACK_FRAME_NON_STANDARD(bts_kseq);

static void bts_test_branch_kinds(struct kunit *test)
{
	static const char src[BTS_REP_LEN] = "abcdefg";
	char dst[BTS_REP_LEN] = {};
	struct bts_branch exp[17];
	unsigned long flags;
	u64 a[KS_NR] = {};
	u64 old_ds, old_ctl;
	unsigned int n = 0;
	int err, nr;

	bts_require(test);
	bts_ds_init(64, 0, BTS_NO_THRESHOLD);
	local_irq_save(flags);
	rdmsrl(MSR_IA32_DEBUGCTLMSR, old_ctl);
	rdmsrl(MSR_IA32_DS_AREA, old_ds);
	wrmsrl(MSR_IA32_DS_AREA, (unsigned long)bts.ds);
	err = bts_kseq(old_ctl | BTS_TR_BTS, old_ctl, a, src, dst);
	wrmsrl(MSR_IA32_DS_AREA, old_ds);
	local_irq_restore(flags);

	KUNIT_ASSERT_EQ_MSG(test, err, 0, "WRMSR IA32_DEBUGCTL=TR|BTS faulted");
	KUNIT_EXPECT_EQ_MSG(test, a[KS_BAD], 0, "a conditional branch went the wrong way");
	KUNIT_EXPECT_MEMEQ_MSG(test, dst, src, BTS_REP_LEN, "rep movsb did not copy");

#define KS_EXPECT(f, t) do {				\
		exp[n].from = a[f];			\
		exp[n].to = a[t];			\
		n++;					\
	} while (0)
	KS_EXPECT(KS_B_JMP8, KS_T_JMP8);
	KS_EXPECT(KS_B_JMP32, KS_T_JMP32);
	/* jnz rel8/rel32 and the second jrcxz are not taken: no record */
	KS_EXPECT(KS_B_JCC8, KS_T_JCC8);
	KS_EXPECT(KS_B_JCC32, KS_T_JCC32);
	KS_EXPECT(KS_B_CALL, KS_FN);
	KS_EXPECT(KS_FN, KS_R_CALL);
	KS_EXPECT(KS_B_CALLR, KS_FN2);
	KS_EXPECT(KS_FN2, KS_R_CALLR);
	KS_EXPECT(KS_B_JMPR, KS_T_JMPR);
	/* loop with rcx = 3: taken twice, not taken the third time */
	KS_EXPECT(KS_B_LOOP, KS_B_LOOP);
	KS_EXPECT(KS_B_LOOP, KS_B_LOOP);
	KS_EXPECT(KS_B_JRCXZ, KS_T_JRCXZ);
	/* rep movsb (iterations, rcx = 0) and straight-line code: none */
	KS_EXPECT(KS_B_IRET, KS_T_IRET);
	KS_EXPECT(KS_B_LRET, KS_T_LRET);
	KS_EXPECT(KS_B_LJMP, KS_T_LJMP);
	KS_EXPECT(KS_B_LCALL, KS_FAR_FN);
	KS_EXPECT(KS_FAR_FN, KS_R_LCALL);
#undef KS_EXPECT

	nr = bts_check_area(test, "branch kinds", -1);
	if (nr >= 0)
		bts_expect(test, "branch kinds", bts_records(), nr, exp, n);
}

/* TR and BTS must both be set for records to be stored */
static void bts_test_enable_bits(struct kunit *test)
{
	bts_require(test);

	bts_ds_init(64, 0, BTS_NO_THRESHOLD);
	bts_jmps_case(test, "TR|BTS", BTS_TR_BTS, 0, BTS_NJMPS);
	bts_ds_init(64, 0, BTS_NO_THRESHOLD);
	bts_jmps_case(test, "TR only (BTMs not stored)", DEBUGCTLMSR_TR, 0, 0);
	bts_ds_init(64, 0, BTS_NO_THRESHOLD);
	bts_jmps_case(test, "BTS without TR", DEBUGCTLMSR_BTS, 0, 0);
	bts_ds_init(64, 0, BTS_NO_THRESHOLD);
	bts_jmps_case(test, "TR|BTS|BTINT", BTS_TR_BTS | DEBUGCTLMSR_BTINT, 0, BTS_NJMPS);
}

/*
 * BTS_OFF_OS/BTS_OFF_USR for kernel code (CPL 0): with DS-CPL, OFF_OS drops
 * every record, OFF_USR none; without DS-CPL both bits are reserved.
 */
static void bts_test_cpl_filter_kernel(struct kunit *test)
{
	static const u64 bits[] = {
		DEBUGCTLMSR_BTS_OFF_OS,
		DEBUGCTLMSR_BTS_OFF_USR,
		DEBUGCTLMSR_BTS_OFF_OS | DEBUGCTLMSR_BTS_OFF_USR,
	};
	unsigned long start;
	unsigned int i;
	u64 before, after;

	bts_require(test);
	if (boot_cpu_has(X86_FEATURE_DSCPL)) {
		bts_ds_init(64, 0, BTS_NO_THRESHOLD);
		bts_jmps_case(test, "BTS_OFF_OS, CPL 0", BTS_TR_BTS | DEBUGCTLMSR_BTS_OFF_OS, 0, 0);
		bts_ds_init(64, 0, BTS_NO_THRESHOLD);
		bts_jmps_case(test, "BTS_OFF_USR, CPL 0", BTS_TR_BTS | DEBUGCTLMSR_BTS_OFF_USR,
			      0, BTS_NJMPS);
		bts_ds_init(64, 0, BTS_NO_THRESHOLD);
		bts_jmps_case(test, "BTS_OFF_OS|BTS_OFF_USR, CPL 0",
			      BTS_TR_BTS | BTS_OFF_BITS, 0, 0);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(bits); i++) {
		bts_ds_init(64, 0, BTS_NO_THRESHOLD);
		rdmsrl(MSR_IA32_DEBUGCTLMSR, before);
		KUNIT_EXPECT_EQ_MSG(test, bts_run_jmps(BTS_TR_BTS | bits[i], &start), -EIO,
				    "WRMSR IA32_DEBUGCTL=TR|BTS|%#llx did not #GP without DS-CPL",
				    bits[i]);
		rdmsrl(MSR_IA32_DEBUGCTLMSR, after);
		KUNIT_EXPECT_EQ_MSG(test, after, before,
				    "IA32_DEBUGCTL changed by a faulting WRMSR");
		KUNIT_EXPECT_EQ_MSG(test, bts.ds[DS_BTS_INDEX], bts.base,
				    "records written although the WRMSR faulted");
	}
}

/* BTINT = 0: a circular buffer; records wrap to the base */
static void bts_test_circular_wrap(struct kunit *test)
{
	const struct bts_record *rec;
	struct bts_branch exp[BTS_NJMPS];
	unsigned long start = 0;
	unsigned int extra;
	int nr;

	bts_require(test);
	/* 4 slots, then 4 slots plus 8 bytes: the spare bytes stay untouched */
	for (extra = 0; extra <= 8; extra += 8) {
		bts_ds_init(4, extra, BTS_NO_THRESHOLD);
		KUNIT_ASSERT_EQ(test, bts_run_jmps(BTS_TR_BTS, &start), 0);
		if (bts_check_area(test, "circular", 4) < 0)
			continue;
		/* 10 records in 4 slots: r8 r9 r6 r7, the index after r9 */
		rec = bts_records();
		nr = (bts.ds[DS_BTS_INDEX] - bts.base) / BTS_REC_SIZE;
		KUNIT_EXPECT_EQ_MSG(test, nr, 2,
				    "circular (max = base + 4 records + %u): index at record %d, expected 2 (10 records in 4 slots)",
				    extra, nr);
		bts_jmps_expected(exp, start, 8, 2);
		bts_jmps_expected(exp + 2, start, 6, 2);
		bts_expect(test, "circular: slots 0-3", rec, 4, exp, 4);
	}
}

/* BTINT = 1 and no interrupt: the buffer fills, then records are dropped */
static void bts_test_drop_at_max(struct kunit *test)
{
	struct bts_branch exp[BTS_NJMPS];
	unsigned long start = 0;
	unsigned int extra;
	int nr;

	bts_require(test);
	for (extra = 0; extra <= 8; extra += 8) {
		bts_ds_init(4, extra, BTS_NO_THRESHOLD);
		KUNIT_ASSERT_EQ(test, bts_run_jmps(BTS_TR_BTS | DEBUGCTLMSR_BTINT, &start), 0);
		nr = bts_check_area(test, "full buffer", -1);
		if (nr < 0)
			continue;
		KUNIT_EXPECT_EQ_MSG(test, bts.ds[DS_BTS_INDEX], bts.base + 4 * BTS_REC_SIZE,
				    "full buffer (max = base + 4 records + %u): index", extra);
		bts_jmps_expected(exp, start, 0, 4);
		bts_expect(test, "full buffer", bts_records(), nr, exp, 4);
	}
}

/* The PMI (NMI) handler's view, while a case has armed it on one CPU */
static struct {
	int cpu;		/* CPU + 1, 0 when not armed */
	unsigned int count;
	u32 lvtpc;		/* APIC_LVTPC when the first PMI came in */
	u64 index;		/* the BTS index then */
	unsigned long ip;	/* the instruction it interrupted */
} bts_pmi;

static int bts_nmi_handler(unsigned int type, struct pt_regs *regs)
{
	if (READ_ONCE(bts_pmi.cpu) != smp_processor_id() + 1)
		return NMI_DONE;
	if (!bts_pmi.count++) {
		bts_pmi.lvtpc = apic->read(APIC_LVTPC);
		bts_pmi.index = bts.ds[DS_BTS_INDEX];
		bts_pmi.ip = regs->ip;
	}
	/*
	 * Unmask LVTPC as perf's handler does, but leave BTS on: the records
	 * written from here on are past the threshold and must not raise
	 * another PMI (edge, not level).
	 */
	apic->write(APIC_LVTPC, APIC_DM_NMI);
	return NMI_HANDLED;
}

struct bts_pmi_run {
	u64 debugctl;
	u32 lvtpc;		/* programmed before the run */
	u32 lvtpc_after;
	unsigned long start;
	int err;
};

static void bts_run_pmi(struct bts_pmi_run *r)
{
	unsigned long flags;
	u32 old;

	local_irq_save(flags);
	old = apic->read(APIC_LVTPC);
	apic->write(APIC_LVTPC, r->lvtpc);
	memset(&bts_pmi, 0, sizeof(bts_pmi));
	WRITE_ONCE(bts_pmi.cpu, smp_processor_id() + 1);
	r->err = bts_run_jmps(r->debugctl, &r->start);
	WRITE_ONCE(bts_pmi.cpu, 0);
	r->lvtpc_after = apic->read(APIC_LVTPC);
	apic->write(APIC_LVTPC, old);
	local_irq_restore(flags);
}

#define BTS_PMI_SLOTS	2048
#define BTS_PMI_THR	4	/* records below the threshold */

/*
 * Threshold crossing with BTINT = 1 and LVTPC = NMI: the record that moves
 * the index to the threshold raises one PMI, which is taken before the
 * next instruction.  The stream is then: jmps 0-3, the NMI (from jmp 4 to
 * the NMI entry), the NMI handler's branches, its IRET back to jmp 4,
 * jmps 4-9.
 */
static void bts_check_pmi_stream(struct kunit *test, const char *what, struct bts_pmi_run *r)
{
	const struct bts_record *rec = bts_records();
	const unsigned int tail = BTS_NJMPS - BTS_PMI_THR;
	struct bts_branch exp[BTS_NJMPS];
	u64 resume = r->start + BTS_PMI_THR * BTS_JMP_LEN;
	const struct bts_record *iret;
	int nr;

	KUNIT_EXPECT_EQ_MSG(test, bts_pmi.count, 1, "%s: PMIs for one threshold crossing", what);
	if (!bts_pmi.count)
		return;
	KUNIT_EXPECT_EQ_MSG(test, bts_pmi.lvtpc, APIC_DM_NMI | APIC_LVT_MASKED,
			    "%s: LVTPC in the PMI handler: not masked on delivery", what);
	KUNIT_EXPECT_EQ_MSG(test, bts_pmi.ip, resume,
			    "%s: PMI not taken right after the crossing (jmp %d)",
			    what, BTS_PMI_THR);
	KUNIT_EXPECT_GE_MSG(test, bts_pmi.index, bts.threshold + BTS_REC_SIZE,
			    "%s: BTS index in the PMI handler", what);
	nr = bts_check_area(test, what, -1);
	if (nr < 0)
		return;
	KUNIT_EXPECT_LT_MSG(test, bts.ds[DS_BTS_INDEX], bts.max,
			    "%s: the buffer filled up (NMI path too long?)", what);
	bts_jmps_expected(exp, r->start, 0, BTS_PMI_THR);
	exp[BTS_PMI_THR].from = resume;
	exp[BTS_PMI_THR].to = bts_idt_handler(NMI_VECTOR);
	if (!bts_expect(test, what, rec, min_t(int, nr, BTS_PMI_THR + 1), exp, BTS_PMI_THR + 1))
		return;
	if (nr < BTS_PMI_THR + 1 + 1 + tail) {
		KUNIT_FAIL(test, "%s: only %d records", what, nr);
		return;
	}
	iret = &rec[nr - tail - 1];
	if (iret->to != resume || !bts_insn_is(iret->from, bts_iretq, sizeof(bts_iretq)))
		KUNIT_FAIL(test,
			   "%s: record #%d: expected the NMI's IRETQ -> %#llx, got %#llx -> %#llx (%pS -> %pS)",
			   what, nr - tail - 1, resume, iret->from, iret->to,
			   (void *)(unsigned long)iret->from, (void *)(unsigned long)iret->to);
	bts_jmps_expected(exp, r->start, BTS_PMI_THR, tail);
	bts_expect(test, what, rec + nr - tail, tail, exp, tail);
}

static void bts_test_threshold_pmi(struct kunit *test)
{
	struct bts_pmi_run r = {};
	struct bts_branch exp[BTS_NJMPS];
	int err, nr;

	bts_require(test);
	err = register_nmi_handler(NMI_LOCAL, bts_nmi_handler, 0, "bts_conformance");
	KUNIT_ASSERT_EQ(test, err, 0);

	/* Twice: the handler unmasks LVTPC, so the second crossing interrupts too */
	bts_ds_init(BTS_PMI_SLOTS, 0, BTS_PMI_THR);
	r.debugctl = BTS_TR_BTS | DEBUGCTLMSR_BTINT;
	r.lvtpc = APIC_DM_NMI;
	bts_run_pmi(&r);
	KUNIT_EXPECT_EQ(test, r.err, 0);
	bts_check_pmi_stream(test, "threshold PMI", &r);
	KUNIT_EXPECT_EQ_MSG(test, r.lvtpc_after, APIC_DM_NMI, "LVTPC after the run");

	bts_ds_init(BTS_PMI_SLOTS, 0, BTS_PMI_THR);
	bts_run_pmi(&r);
	bts_check_pmi_stream(test, "threshold PMI, second time", &r);

	/* LVTPC masked: no PMI, all records */
	bts_ds_init(BTS_PMI_SLOTS, 0, BTS_PMI_THR);
	r.lvtpc = APIC_DM_NMI | APIC_LVT_MASKED;
	bts_run_pmi(&r);
	KUNIT_EXPECT_EQ_MSG(test, bts_pmi.count, 0, "PMIs with LVTPC masked");
	KUNIT_EXPECT_EQ_MSG(test, r.lvtpc_after, r.lvtpc, "LVTPC after a run with it masked");
	nr = bts_check_area(test, "LVTPC masked", -1);
	bts_jmps_expected(exp, r.start, 0, BTS_NJMPS);
	if (nr >= 0)
		bts_expect(test, "LVTPC masked", bts_records(), nr, exp, BTS_NJMPS);

	/* BTINT = 1, threshold beyond the absolute maximum: no PMI */
	bts_ds_init(BTS_PMI_SLOTS, 0, BTS_NO_THRESHOLD);
	r.debugctl = BTS_TR_BTS | DEBUGCTLMSR_BTINT;
	r.lvtpc = APIC_DM_NMI;
	bts_run_pmi(&r);
	KUNIT_EXPECT_EQ_MSG(test, bts_pmi.count, 0, "PMIs with the threshold beyond the maximum");
	nr = bts_check_area(test, "no threshold", -1);
	bts_jmps_expected(exp, r.start, 0, BTS_NJMPS);
	if (nr >= 0)
		bts_expect(test, "no threshold", bts_records(), nr, exp, BTS_NJMPS);

	unregister_nmi_handler(NMI_LOCAL, "bts_conformance");
}

/*
 * BTINT = 0 with the threshold inside the buffer.  Leniently, no PMI.  With
 * bts-strict-btint, the PMI comes as with BTINT = 1: the SDM asks for a
 * threshold beyond the absolute maximum as well as BTINT = 0 when no
 * interrupt is wanted, so clearing BTINT alone is not trusted to stop it.
 */
static void bts_test_btint_clear(struct kunit *test)
{
	struct bts_pmi_run r = {};
	struct bts_branch exp[BTS_NJMPS];
	int err, nr;

	bts_require(test);
	err = register_nmi_handler(NMI_LOCAL, bts_nmi_handler, 0, "bts_conformance");
	KUNIT_ASSERT_EQ(test, err, 0);

	bts_ds_init(BTS_PMI_SLOTS, 0, BTS_PMI_THR);
	r.debugctl = BTS_TR_BTS;
	r.lvtpc = APIC_DM_NMI;
	bts_run_pmi(&r);
	KUNIT_EXPECT_EQ(test, r.err, 0);
	if (strict) {
		bts_check_pmi_stream(test, "BTINT = 0, threshold in the buffer (strict)", &r);
	} else {
		KUNIT_EXPECT_EQ_MSG(test, bts_pmi.count, 0,
				    "PMIs with BTINT = 0 and the threshold crossed");
		nr = bts_check_area(test, "BTINT = 0", -1);
		bts_jmps_expected(exp, r.start, 0, BTS_NJMPS);
		if (nr >= 0)
			bts_expect(test, "BTINT = 0", bts_records(), nr, exp, BTS_NJMPS);
	}
	unregister_nmi_handler(NMI_LOCAL, "bts_conformance");
}

/*
 * BTINT = 1 with a threshold 8 bytes past a record boundary, which the
 * index never equals.  Leniently, the PMI comes once the index crosses it
 * (after record 5).  With bts-strict-threshold only equality counts, as
 * Linux commit 2c991e408df6 suggests of hardware: no PMI, all 10 records.
 */
static void bts_test_threshold_misaligned(struct kunit *test)
{
	struct bts_pmi_run r = {};
	struct bts_branch exp[BTS_NJMPS];
	int err, nr;

	bts_require(test);
	err = register_nmi_handler(NMI_LOCAL, bts_nmi_handler, 0, "bts_conformance");
	KUNIT_ASSERT_EQ(test, err, 0);

	bts_ds_init(BTS_PMI_SLOTS, 0, BTS_PMI_THR);
	bts.threshold += 8;
	bts.ds[DS_BTS_THRESHOLD] = bts.threshold;
	r.debugctl = BTS_TR_BTS | DEBUGCTLMSR_BTINT;
	r.lvtpc = APIC_DM_NMI;
	bts_run_pmi(&r);
	KUNIT_EXPECT_EQ(test, r.err, 0);
	if (strict) {
		KUNIT_EXPECT_EQ_MSG(test, bts_pmi.count, 0,
				    "PMIs with a threshold off the record boundaries (strict: equality)");
		nr = bts_check_area(test, "misaligned threshold", -1);
		bts_jmps_expected(exp, r.start, 0, BTS_NJMPS);
		if (nr >= 0)
			bts_expect(test, "misaligned threshold", bts_records(), nr, exp,
				   BTS_NJMPS);
	} else {
		KUNIT_EXPECT_EQ_MSG(test, bts_pmi.count, 1,
				    "PMIs with a threshold off the record boundaries (crossing)");
		KUNIT_EXPECT_EQ_MSG(test, bts_pmi.ip,
				    r.start + (BTS_PMI_THR + 1) * BTS_JMP_LEN,
				    "PMI not taken right after the crossing (jmp %d)",
				    BTS_PMI_THR + 1);
	}
	unregister_nmi_handler(NMI_LOCAL, "bts_conformance");
}

/* The PEBS half of the DS save area (0x20-0x47 and on) is never written */
static void bts_test_pebs_fields(struct kunit *test)
{
	static const u64 modes[] = {
		BTS_TR_BTS,				/* wraps */
		BTS_TR_BTS | DEBUGCTLMSR_BTINT,		/* fills up */
	};
	unsigned long start;
	unsigned int i, w;

	bts_require(test);
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		bts_ds_init(3, 0, BTS_NO_THRESHOLD);
		KUNIT_ASSERT_EQ(test, bts_run_jmps(modes[i], &start), 0);
		for (w = DS_PEBS_FIRST; w < DS_PEBS_FIRST + 5; w++)
			KUNIT_EXPECT_EQ_MSG(test, bts.ds[w], ds_pattern(w),
					    "DEBUGCTL %#llx: DS area offset %#x written",
					    modes[i], w * 8);
		bts_check_area(test, "PEBS fields", 3);
	}
}

/* Reserved DEBUGCTL bits #GP and leave the MSR alone; valid ones read back */
static void bts_test_debugctl_bits(struct kunit *test)
{
	u64 reserved = BIT_ULL(3) | BIT_ULL(4) | BIT_ULL(5) | BIT_ULL(16) |
		       BIT_ULL(31) | BIT_ULL(32) | BIT_ULL(63);
	u64 valid = DEBUGCTLMSR_LBR | DEBUGCTLMSR_BTF | DEBUGCTLMSR_BTINT;
	unsigned long flags;
	u64 old, val, cap;
	unsigned int bit;
	int err;

	bts_require(test);
	if (!boot_cpu_has(X86_FEATURE_BUS_LOCK_DETECT))
		reserved |= DEBUGCTLMSR_BUS_LOCK_DETECT;
	if (!boot_cpu_has(X86_FEATURE_RTM))
		reserved |= DEBUGCTLMSR_RTM_DEBUG;
	if (boot_cpu_has(X86_FEATURE_DSCPL))
		valid |= BTS_OFF_BITS;
	else
		reserved |= BTS_OFF_BITS;
	if (boot_cpu_has(X86_FEATURE_PDCM))
		valid |= DEBUGCTLMSR_FREEZE_LBRS_ON_PMI | DEBUGCTLMSR_FREEZE_PERFMON_ON_PMI;
	else
		reserved |= DEBUGCTLMSR_FREEZE_LBRS_ON_PMI | DEBUGCTLMSR_FREEZE_PERFMON_ON_PMI;
	/* FREEZE_WHILE_SMM needs IA32_PERF_CAPABILITIES[12] */
	if (!boot_cpu_has(X86_FEATURE_PDCM) ||
	    rdmsrl_safe(MSR_IA32_PERF_CAPABILITIES, &cap) || !(cap & BIT_ULL(12)))
		reserved |= DEBUGCTLMSR_FREEZE_IN_SMM;

	for_each_set_bit(bit, (unsigned long *)&reserved, 64) {
		local_irq_save(flags);
		rdmsrl(MSR_IA32_DEBUGCTLMSR, old);
		err = wrmsrl_safe(MSR_IA32_DEBUGCTLMSR, old | BIT_ULL(bit));
		rdmsrl(MSR_IA32_DEBUGCTLMSR, val);
		wrmsrl(MSR_IA32_DEBUGCTLMSR, old);
		local_irq_restore(flags);
		KUNIT_EXPECT_NE_MSG(test, err, 0, "reserved IA32_DEBUGCTL bit %d: no #GP", bit);
		KUNIT_EXPECT_EQ_MSG(test, val, old,
				    "IA32_DEBUGCTL after setting reserved bit %d", bit);
	}
	for_each_set_bit(bit, (unsigned long *)&valid, 64) {
		local_irq_save(flags);
		rdmsrl(MSR_IA32_DEBUGCTLMSR, old);
		err = wrmsrl_safe(MSR_IA32_DEBUGCTLMSR, old | BIT_ULL(bit));
		rdmsrl(MSR_IA32_DEBUGCTLMSR, val);
		wrmsrl(MSR_IA32_DEBUGCTLMSR, old);
		local_irq_restore(flags);
		KUNIT_EXPECT_EQ_MSG(test, err, 0, "IA32_DEBUGCTL bit %d: #GP", bit);
		KUNIT_EXPECT_EQ_MSG(test, val, old | BIT_ULL(bit),
				    "IA32_DEBUGCTL bit %d does not read back", bit);
	}
}

/* IA32_DS_AREA holds a canonical linear address; others #GP */
static void bts_test_ds_area_msr(struct kunit *test)
{
	u64 noncanonical[2] = { 0x8000000000000000ULL };
	u64 canonical[3] = {
		(unsigned long)bts.ds,
		0xffff800000001000ULL,
		0x00007ffffffff000ULL,
	};
	unsigned int eax, ebx, ecx, edx, i;
	unsigned long flags;
	u64 old, val;
	int err;

	bts_require(test);
	/* The linear address width the CPU supports decides, not CR4.LA57 */
	cpuid_count(7, 0, &eax, &ebx, &ecx, &edx);
	noncanonical[1] = ecx & BIT(16) ? 0x0100000000000000ULL : 0x0000800000000000ULL;

	for (i = 0; i < ARRAY_SIZE(canonical); i++) {
		local_irq_save(flags);
		rdmsrl(MSR_IA32_DS_AREA, old);
		err = wrmsrl_safe(MSR_IA32_DS_AREA, canonical[i]);
		rdmsrl(MSR_IA32_DS_AREA, val);
		wrmsrl(MSR_IA32_DS_AREA, old);
		local_irq_restore(flags);
		KUNIT_EXPECT_EQ_MSG(test, err, 0, "WRMSR IA32_DS_AREA=%#llx: #GP", canonical[i]);
		KUNIT_EXPECT_EQ_MSG(test, val, canonical[i], "IA32_DS_AREA does not read back");
	}
	for (i = 0; i < ARRAY_SIZE(noncanonical); i++) {
		local_irq_save(flags);
		rdmsrl(MSR_IA32_DS_AREA, old);
		err = wrmsrl_safe(MSR_IA32_DS_AREA, noncanonical[i]);
		rdmsrl(MSR_IA32_DS_AREA, val);
		wrmsrl(MSR_IA32_DS_AREA, old);
		local_irq_restore(flags);
		KUNIT_EXPECT_NE_MSG(test, err, 0,
				    "WRMSR IA32_DS_AREA=%#llx (non-canonical, %d-bit): no #GP",
				    noncanonical[i], ecx & BIT(16) ? 57 : 48);
		KUNIT_EXPECT_EQ_MSG(test, val, old, "IA32_DS_AREA changed by a faulting WRMSR");
	}
}

/*
 * Cases that let the kernel's own interrupt and exception handlers run
 * with BTS on put their records in an 8 MiB vmalloc'ed buffer (349525
 * records, threshold past the maximum: the debug kernel's handlers, with
 * KASAN and lockdep, take tens of thousands of branches); the kernel-case
 * buffer stays poisoned, which bts_check_area() checks.
 */
#define BTS_BIG_SIZE		SZ_8M

static struct bts_record *bts_big_init(void)
{
	struct bts_record *buf = vzalloc(BTS_BIG_SIZE);
	unsigned int i;

	if (!buf)
		return NULL;
	memset(bts.buf, BTS_POISON, BTS_BUF_SIZE);
	for (i = DS_PEBS_FIRST; i < DS_WORDS; i++)
		bts.ds[i] = ds_pattern(i);
	bts.base = (unsigned long)buf;
	bts.max = bts.base + BTS_BIG_SIZE / BTS_REC_SIZE * BTS_REC_SIZE;
	bts.threshold = bts.max + BTS_REC_SIZE;
	bts.ds[DS_BTS_BASE] = bts.base;
	bts.ds[DS_BTS_INDEX] = bts.base;
	bts.ds[DS_BTS_MAX] = bts.max;
	bts.ds[DS_BTS_THRESHOLD] = bts.threshold;
	return buf;
}

/* The IDT vector whose handler is @to, or -1 */
static int bts_idt_vector(u64 to)
{
	unsigned int v;

	for (v = 0; v < 256; v++)
		if (bts_idt_handler(v) == to)
			return v;
	return -1;
}

/* Offsets in the address array that bts_irq_seq() fills in */
#define IRQ_A		0	/* the first instruction after the STI shadow */
#define IRQ_REP		1	/* the "rep lodsb" that spins */
#define IRQ_LO		2	/* [IRQ_LO, IRQ_HI): runs with interrupts on */
#define IRQ_HI		3
#define IRQ_RCX		4	/* rcx and rsi after the rep */
#define IRQ_RSI		5
#define IRQ_NR		6

#define BTS_IRQ_VECTOR	IRQ_WORK_VECTOR	/* harmless with no irq_work queued */
#define BTS_IRQ_REP	4096

/*
 * With BTS on: STI, one NOP (the STI shadow), 16 NOPs, a self-IPI written
 * to the ICR at @icr, "rep lodsb" over @src (BTS_IRQ_REP bytes), CLI.
 * None of it branches, so every record from this code is an interrupt.
 */
static noinline int bts_irq_seq(u32 on, u32 off, u64 *a, u32 *icr, u32 icr_val,
				const void *src)
{
	int err;

	asm volatile("mov $" __stringify(MSR_IA32_DEBUGCTLMSR) ", %%ecx\n\t"
		     "mov %[on], %%eax\n\t"
		     "xor %%edx, %%edx\n"
		     "3:\n\t"
		     "wrmsr\n"
		     ".Lirq_lo%=:\n\t"
		     "sti\n\t"
		     "nop\n"
		     ".Lirq_a%=:\n\t"
		     ".fill 16, 1, 0x90\n\t"
		     "mov $" __stringify(BTS_IRQ_REP) ", %%ecx\n\t"
		     "mov %[src], %%rsi\n\t"
		     "movl %[icr_val], (%[icr])\n"
		     ".Lirq_rep%=:\n\t"
		     "rep lodsb\n\t"
		     "cli\n"
		     ".Lirq_hi%=:\n\t"
		     "mov %%rcx, " __stringify(IRQ_RCX) "*8(%[a])\n\t"
		     "mov %%rsi, " __stringify(IRQ_RSI) "*8(%[a])\n\t"
		     "mov $" __stringify(MSR_IA32_DEBUGCTLMSR) ", %%ecx\n\t"
		     "mov %[off], %%eax\n\t"
		     "xor %%edx, %%edx\n\t"
		     "wrmsr\n\t"
		     KS_STORE(".Lirq_a", IRQ_A)
		     KS_STORE(".Lirq_rep", IRQ_REP)
		     KS_STORE(".Lirq_lo", IRQ_LO)
		     KS_STORE(".Lirq_hi", IRQ_HI)
		     "xor %%eax, %%eax\n"
		     "4:\n\t"
		     BTS_ENABLE_GP_FIXUP(3b, 4b)
		     : [err] "=&a" (err)
		     : [on] "r" (on), [off] "r" (off), [a] "r" (a), [icr] "r" (icr),
		       [icr_val] "r" (icr_val), [src] "r" (src)
		     : "rcx", "rdx", "rsi", "memory", "cc");
	return err;
}

/*
 * Hardware interrupts: "from" is the next instruction to execute, "to" the
 * IDT entry, and the handler's IRETQ returns to "from".  A self-IPI sent
 * with interrupts off is taken right after the STI shadow; one sent while
 * "rep lodsb" spins interrupts the rep, which then resumes and completes.
 * Other interrupts (the timer) may come in between; they are left out.
 */
static void bts_test_hw_interrupt(struct kunit *test)
{
	static const u8 src[BTS_IRQ_REP];
	u64 want[2];
	const struct bts_record *rec;
	u64 a[IRQ_NR] = {}, pending = 0, entry;
	unsigned int seen = 0, returned = 0, foreign = 0;
	bool ours = false;
	struct bts_record *buf;
	unsigned long flags;
	u64 old_ds, old_ctl;
	int err, nr, i, v;

	bts_require(test);
	if (x2apic_mode)
		kunit_skip(test, "x2APIC mode: the test writes the xAPIC ICR");
	buf = bts_big_init();
	KUNIT_ASSERT_NOT_NULL(test, buf);

	preempt_disable();
	local_irq_save(flags);
	rdmsrl(MSR_IA32_DEBUGCTLMSR, old_ctl);
	rdmsrl(MSR_IA32_DS_AREA, old_ds);
	wrmsrl(MSR_IA32_DS_AREA, (unsigned long)bts.ds);
	/* Pending until the STI */
	apic->send_IPI_self(BTS_IRQ_VECTOR);
	safe_apic_wait_icr_idle();
	err = bts_irq_seq(old_ctl | BTS_TR_BTS | DEBUGCTLMSR_BTINT, old_ctl, a,
			  (u32 *)(APIC_BASE + APIC_ICR),
			  APIC_DEST_SELF | APIC_DM_FIXED | BTS_IRQ_VECTOR, src);
	wrmsrl(MSR_IA32_DS_AREA, old_ds);
	local_irq_restore(flags);
	preempt_enable();

	if (err) {
		KUNIT_FAIL(test, "WRMSR IA32_DEBUGCTL=TR|BTS|BTINT faulted");
		goto out;
	}
	KUNIT_EXPECT_EQ_MSG(test, a[IRQ_RCX], 0, "rep lodsb: rcx after the rep");
	KUNIT_EXPECT_EQ_MSG(test, a[IRQ_RSI], (unsigned long)src + BTS_IRQ_REP,
			    "rep lodsb: rsi after the rep");
	nr = bts_check_area(test, "interrupts", -1);
	if (nr < 0)
		goto out;
	KUNIT_EXPECT_LT_MSG(test, bts.ds[DS_BTS_INDEX], bts.max,
			    "interrupts: the buffer filled up");

	want[0] = a[IRQ_A];
	want[1] = a[IRQ_REP];
	entry = bts_idt_handler(BTS_IRQ_VECTOR);
	rec = bts_records();
	for (i = 0; i < nr; i++) {
		bool from_in = rec[i].from >= a[IRQ_LO] && rec[i].from < a[IRQ_HI];
		bool to_in = rec[i].to >= a[IRQ_LO] && rec[i].to < a[IRQ_HI];

		if (!from_in && !to_in)
			continue;	/* inside the handlers */
		if (from_in) {
			v = bts_idt_vector(rec[i].to);
			if (pending || v < FIRST_EXTERNAL_VECTOR) {
				KUNIT_FAIL(test,
					   "record #%d: %#llx -> %#llx (%pS -> %pS): not an interrupt entry%s",
					   i, rec[i].from, rec[i].to,
					   (void *)(unsigned long)rec[i].from,
					   (void *)(unsigned long)rec[i].to,
					   pending ? ", while one was outstanding" : "");
				goto out;
			}
			ours = v == BTS_IRQ_VECTOR;
			if (!ours) {
				kunit_info(test, "record #%d: vector %#x at %pS, left out\n",
					   i, v, (void *)(unsigned long)rec[i].from);
				foreign++;
			} else if (seen == 2 || rec[i].from != want[seen]) {
				KUNIT_FAIL(test,
					   "record #%d: self-IPI #%u taken at %#llx (%pS), expected %#llx (%pS)",
					   i, seen, rec[i].from, (void *)(unsigned long)rec[i].from,
					   seen < 2 ? want[seen] : 0,
					   (void *)(unsigned long)(seen < 2 ? want[seen] : 0));
				goto out;
			} else {
				KUNIT_EXPECT_EQ_MSG(test, rec[i].to, entry,
						    "record #%d: IDT[%#x]", i, BTS_IRQ_VECTOR);
				seen++;
			}
			pending = rec[i].from;
			continue;
		}
		if (!pending || rec[i].to != pending ||
		    !bts_insn_is(rec[i].from, bts_iretq, sizeof(bts_iretq))) {
			KUNIT_FAIL(test,
				   "record #%d: %#llx -> %#llx (%pS -> %pS), expected IRETQ -> %#llx (%pS)",
				   i, rec[i].from, rec[i].to, (void *)(unsigned long)rec[i].from,
				   (void *)(unsigned long)rec[i].to, pending,
				   (void *)(unsigned long)pending);
			goto out;
		}
		returned += ours;
		pending = 0;
	}
	KUNIT_EXPECT_EQ_MSG(test, seen, 2, "self-IPIs recorded (after STI, in the rep)");
	KUNIT_EXPECT_EQ_MSG(test, returned, 2, "IRETQs back from the self-IPIs");
	KUNIT_EXPECT_EQ_MSG(test, pending, 0, "an interrupt did not return");
	kunit_info(test, "%d records, %u other interrupts\n", nr, foreign);
out:
	vfree(buf);
}

/* The #DB notifier's view, while bts_test_single_step() has armed it */
static struct {
	int cpu;		/* CPU + 1, 0 when not armed */
	unsigned int count;
	unsigned long ip;	/* where the first single-step trap was taken */
} bts_db;

/* Claim the single-step trap and clear TF, so the kernel does not WARN */
static int bts_db_notify(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	unsigned long *dr6 = (unsigned long *)args->err;

	if (val != DIE_DEBUG || READ_ONCE(bts_db.cpu) != smp_processor_id() + 1 ||
	    !(*dr6 & DR_STEP))
		return NOTIFY_DONE;
	if (!bts_db.count++)
		bts_db.ip = args->regs->ip;
	args->regs->flags &= ~X86_EFLAGS_TF;
	*dr6 &= ~DR_STEP;
	return NOTIFY_STOP;
}

static struct notifier_block bts_db_nb = {
	.notifier_call = bts_db_notify,
};

/* Offsets in the address array that bts_db_seq() fills in */
#define DB_B		0	/* the single-stepped jmp */
#define DB_T		1	/* its target */
#define DB_HI		2	/* the end of the code that runs with TF */
#define DB_NR		3

/* With BTS on: set TF with POPFQ, then "jmp" to the next instruction */
static noinline int bts_db_seq(u32 on, u32 off, u64 *a)
{
	int err;

	asm volatile("mov $" __stringify(MSR_IA32_DEBUGCTLMSR) ", %%ecx\n\t"
		     "mov %[on], %%eax\n\t"
		     "xor %%edx, %%edx\n"
		     "3:\n\t"
		     "wrmsr\n\t"
		     "pushfq\n\t"
		     "orq %[tf], (%%rsp)\n\t"
		     "popfq\n"
		     ".Ldb_b%=:\n\t"
		     "jmp .Ldb_t%=\n\t"
		     "nop\n"
		     ".Ldb_t%=:\n\t"
		     "nop\n"
		     ".Ldb_hi%=:\n\t"
		     "mov %[off], %%eax\n\t"
		     "xor %%edx, %%edx\n\t"
		     "wrmsr\n\t"
		     KS_STORE(".Ldb_b", DB_B)
		     KS_STORE(".Ldb_t", DB_T)
		     KS_STORE(".Ldb_hi", DB_HI)
		     "xor %%eax, %%eax\n"
		     "4:\n\t"
		     BTS_ENABLE_GP_FIXUP(3b, 4b)
		     : [err] "=&a" (err)
		     : [on] "r" (on), [off] "r" (off), [a] "r" (a), [tf] "i" (X86_EFLAGS_TF)
		     : "rcx", "rdx", "memory", "cc");
	return err;
}

/*
 * Single-step trap after a branch (SDM "additional BTMs"): the jmp's own
 * record, then #DB from the next instruction (the jmp's target) to IDT[1],
 * then the handler's records and its IRETQ back to that instruction.
 */
static void bts_test_single_step(struct kunit *test)
{
	struct bts_branch exp[2];
	const struct bts_record *rec;
	struct bts_record *buf;
	u64 a[DB_NR] = {};
	unsigned long flags;
	u64 old_ds, old_ctl;
	int err, nr, i, back = 0;

	bts_require(test);
	buf = bts_big_init();
	KUNIT_ASSERT_NOT_NULL(test, buf);
	err = register_die_notifier(&bts_db_nb);
	if (err) {
		vfree(buf);
		KUNIT_FAIL_AND_ABORT(test, "register_die_notifier: %d", err);
	}

	local_irq_save(flags);
	memset(&bts_db, 0, sizeof(bts_db));
	WRITE_ONCE(bts_db.cpu, smp_processor_id() + 1);
	rdmsrl(MSR_IA32_DEBUGCTLMSR, old_ctl);
	rdmsrl(MSR_IA32_DS_AREA, old_ds);
	wrmsrl(MSR_IA32_DS_AREA, (unsigned long)bts.ds);
	err = bts_db_seq(old_ctl | BTS_TR_BTS | DEBUGCTLMSR_BTINT, old_ctl, a);
	wrmsrl(MSR_IA32_DS_AREA, old_ds);
	WRITE_ONCE(bts_db.cpu, 0);
	local_irq_restore(flags);
	unregister_die_notifier(&bts_db_nb);

	if (err) {
		KUNIT_FAIL(test, "WRMSR IA32_DEBUGCTL=TR|BTS|BTINT faulted");
		goto out;
	}
	KUNIT_EXPECT_EQ_MSG(test, bts_db.count, 1, "single-step traps");
	KUNIT_EXPECT_EQ_MSG(test, bts_db.ip, a[DB_T], "single-step trap: RIP");
	nr = bts_check_area(test, "single step", -1);
	if (nr < 0)
		goto out;
	KUNIT_EXPECT_LT_MSG(test, bts.ds[DS_BTS_INDEX], bts.max,
			    "single step: the buffer filled up");
	exp[0].from = a[DB_B];
	exp[0].to = a[DB_T];
	exp[1].from = a[DB_T];
	exp[1].to = bts_idt_handler(X86_TRAP_DB);
	rec = bts_records();
	if (!bts_expect(test, "single step", rec, min(nr, 2), exp, 2))
		goto out;
	for (i = 2; i < nr; i++) {
		if (rec[i].from >= a[DB_B] && rec[i].from < a[DB_HI]) {
			KUNIT_FAIL(test, "record #%d: %#llx -> %#llx (%pS -> %pS): a second trap?",
				   i, rec[i].from, rec[i].to, (void *)(unsigned long)rec[i].from,
				   (void *)(unsigned long)rec[i].to);
			goto out;
		}
		if (rec[i].to < a[DB_B] || rec[i].to >= a[DB_HI])
			continue;
		if (back++ || rec[i].to != a[DB_T] ||
		    !bts_insn_is(rec[i].from, bts_iretq, sizeof(bts_iretq)))
			KUNIT_FAIL(test,
				   "record #%d: %#llx -> %#llx (%pS -> %pS), expected one IRETQ -> %pS",
				   i, rec[i].from, rec[i].to, (void *)(unsigned long)rec[i].from,
				   (void *)(unsigned long)rec[i].to,
				   (void *)(unsigned long)a[DB_T]);
	}
	KUNIT_EXPECT_EQ_MSG(test, back, 1, "returns from #DB");
out:
	vfree(buf);
}

/* Records at unmapped or read-only addresses */
#define BTS_UNMAPPED_SLOTS	10

/*
 * Our DS area with the buffer at @base and room for BTS_UNMAPPED_SLOTS
 * records; run the jmps with @debugctl; expect the first @n records at
 * @base and nothing else changed (the kernel-case buffer stays poisoned).
 */
static void bts_buffer_at(struct kunit *test, const char *what, u64 debugctl,
			  u64 base, unsigned int n)
{
	struct bts_branch exp[BTS_NJMPS];
	unsigned long start = 0;
	int nr;

	bts_ds_init(4, 0, BTS_NO_THRESHOLD);
	bts.base = base;
	bts.max = base + BTS_UNMAPPED_SLOTS * BTS_REC_SIZE;
	bts.threshold = bts.max + BTS_REC_SIZE;
	bts.ds[DS_BTS_BASE] = bts.base;
	bts.ds[DS_BTS_INDEX] = bts.base;
	bts.ds[DS_BTS_MAX] = bts.max;
	bts.ds[DS_BTS_THRESHOLD] = bts.threshold;
	if (bts_run_jmps(debugctl, &start)) {
		KUNIT_FAIL(test, "%s: WRMSR IA32_DEBUGCTL faulted", what);
		return;
	}
	nr = bts_check_area(test, what, -1);
	if (nr < 0)
		return;
	bts_jmps_expected(exp, start, 0, n);
	bts_expect(test, what, bts_records(), nr, exp, n);
}

/*
 * An unmapped or read-only DS save area or buffer: the record is dropped
 * (QEMU logs a guest error), nothing is written, the index stays, and the
 * guest carries on.  The unmapped page is the guard page after a vmalloc
 * area, which is never mapped while the area exists.
 */
static void bts_test_unmapped(struct kunit *test)
{
	static const u64 modes[] = {
		BTS_TR_BTS,
		BTS_TR_BTS | DEBUGCTLMSR_BTINT,
	};
	unsigned long start;
	struct page *page;
	u8 *vm, *guard, *ro = NULL;
	u64 *ds, base;
	unsigned int m;
	char what[64];

	bts_require(test);
	if (native)
		kunit_skip(test, "on hardware the store faults mid-branch");
	if (strict)
		kunit_skip(test, "bts-strict-fault stops the VM here: see strict_fault");
	vm = vmalloc(PAGE_SIZE);
	page = alloc_page(GFP_KERNEL);
	if (page)
		ro = vmap(&page, 1, VM_MAP, PAGE_KERNEL_RO);
	if (!vm || !ro) {
		KUNIT_FAIL(test, "out of memory");
		goto out;
	}
	guard = vm + PAGE_SIZE;

	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		/* The DS save area in the guard page */
		snprintf(what, sizeof(what), "DEBUGCTL %#llx, DS area unmapped", modes[m]);
		bts_ds_init(4, 0, BTS_NO_THRESHOLD);
		KUNIT_EXPECT_EQ_MSG(test, bts_run_jmps_at(guard, modes[m], &start), 0,
				    "%s: WRMSR faulted", what);
		bts_check_area(test, what, 0);

		/* The DS save area's first 16 bytes mapped, the rest not */
		snprintf(what, sizeof(what), "DEBUGCTL %#llx, DS area half mapped", modes[m]);
		bts_ds_init(4, 0, BTS_NO_THRESHOLD);
		ds = (u64 *)(guard - 2 * sizeof(u64));
		ds[DS_BTS_BASE] = bts.base;
		ds[DS_BTS_INDEX] = bts.base;
		KUNIT_EXPECT_EQ_MSG(test, bts_run_jmps_at(ds, modes[m], &start), 0,
				    "%s: WRMSR faulted", what);
		KUNIT_EXPECT_EQ_MSG(test, ds[DS_BTS_BASE], bts.base, "%s: base", what);
		KUNIT_EXPECT_EQ_MSG(test, ds[DS_BTS_INDEX], bts.base, "%s: index", what);
		bts_check_area(test, what, 0);

		/* The buffer in the guard page */
		snprintf(what, sizeof(what), "DEBUGCTL %#llx, buffer unmapped", modes[m]);
		bts_buffer_at(test, what, modes[m], (unsigned long)guard, 0);

		/* Two records fit before the guard page; the third would straddle it */
		snprintf(what, sizeof(what), "DEBUGCTL %#llx, buffer runs into unmapped", modes[m]);
		memset(vm, BTS_POISON, PAGE_SIZE);
		base = (unsigned long)guard - 2 * BTS_REC_SIZE - 16;
		bts_buffer_at(test, what, modes[m], base, 2);
		KUNIT_EXPECT_TRUE_MSG(test, !memchr_inv(vm, BTS_POISON, base - (unsigned long)vm),
				      "%s: written below the base", what);
		KUNIT_EXPECT_TRUE_MSG(test, !memchr_inv(guard - 16, BTS_POISON, 16),
				      "%s: part of the straddling record written", what);

		/* A read-only buffer */
		snprintf(what, sizeof(what), "DEBUGCTL %#llx, buffer read-only", modes[m]);
		memset(page_address(page), BTS_POISON, PAGE_SIZE);
		bts_buffer_at(test, what, modes[m], (unsigned long)ro, 0);
		KUNIT_EXPECT_TRUE_MSG(test, !memchr_inv(page_address(page), BTS_POISON, PAGE_SIZE),
				      "%s: written", what);
	}
out:
	if (ro)
		vunmap(ro);
	if (page)
		__free_page(page);
	vfree(vm);
}

/* Data breakpoint hits (DR6 B0) while watched_buffer runs */
static unsigned int bts_watch_hits;

static int bts_watch_notify(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	unsigned long *dr6 = (unsigned long *)args->err;

	if (val != DIE_DEBUG || !(*dr6 & DR_TRAP0))
		return NOTIFY_DONE;
	bts_watch_hits++;
	*dr6 &= ~DR_TRAP0;
	return NOTIFY_STOP;
}

static struct notifier_block bts_watch_nb = {
	.notifier_call = bts_watch_notify,
};

/*
 * A data breakpoint (DR0, write, 8 bytes) on the buffer's first record.
 * QEMU does not write records where a watchpoint would fire in the middle
 * of the branch or event: it drops them (logged under -d unimp).  So no
 * #DB comes, nothing is written and the index stays.  (Whether hardware
 * breaks on BTS stores is not checked here.)
 */
static void bts_test_watched_buffer(struct kunit *test)
{
	unsigned long start, dr7;
	int err;

	bts_require(test);
	if (native)
		kunit_skip(test, "on hardware the store may raise an unclaimed #DB");
	err = register_die_notifier(&bts_watch_nb);
	KUNIT_ASSERT_EQ(test, err, 0);
	bts_ds_init(4, 0, BTS_NO_THRESHOLD);
	bts_watch_hits = 0;
	get_debugreg(dr7, 7);
	/* watch_plant: watch the guard below the base, so records are written */
	set_debugreg(watch_plant ? bts.base - BTS_GUARD : bts.base, 0);
	/* L0, R/W0 = 01 (writes), LEN0 = 10 (8 bytes) */
	set_debugreg(dr7 | DR_LOCAL_ENABLE | (0x9UL << DR_CONTROL_SHIFT), 7);
	KUNIT_EXPECT_EQ(test, bts_run_jmps(BTS_TR_BTS, &start), 0);
	set_debugreg(dr7, 7);
	set_debugreg(0UL, 0);
	unregister_die_notifier(&bts_watch_nb);
	KUNIT_EXPECT_EQ_MSG(test, bts_watch_hits, 0, "#DB from BTS stores to a watched buffer");
	bts_check_area(test, "watched buffer", 0);
}

/*
 * With bts-strict-fault, a store to an unmapped buffer is reported by QEMU
 * and stops the VM: "storing" is the last thing the guest says.  Run only
 * when asked (fault_probe=1), in a VM of its own; tests/qemu-bts/run checks
 * QEMU's error.  If the guest carries on, strict mode is not on.
 */
static void bts_test_strict_fault(struct kunit *test)
{
	unsigned long start;
	u8 *vm;

	bts_require(test);
	if (!fault_probe)
		kunit_skip(test, "only with fault_probe=1");
	vm = vmalloc(PAGE_SIZE);
	KUNIT_ASSERT_NOT_NULL(test, vm);
	bts_ds_init(4, 0, BTS_NO_THRESHOLD);
	bts.ds[DS_BTS_BASE] = (unsigned long)vm + PAGE_SIZE;	/* the guard page */
	bts.ds[DS_BTS_INDEX] = bts.ds[DS_BTS_BASE];
	bts.ds[DS_BTS_MAX] = bts.ds[DS_BTS_BASE] + 4 * BTS_REC_SIZE;
	pr_info("bts_conformance: strict_fault: storing to an unmapped buffer\n");
	bts_run_jmps(BTS_TR_BTS, &start);
	pr_info("bts_conformance: strict_fault: the guest carried on\n");
	KUNIT_FAIL(test,
		   "the guest carried on after BTS stores to an unmapped buffer: bts-strict-fault is off");
	vfree(vm);
}

static struct kunit_case bts_cases[] = {
	KUNIT_CASE(bts_test_features),
	KUNIT_CASE(bts_test_branch_kinds),
	KUNIT_CASE(bts_test_enable_bits),
	KUNIT_CASE(bts_test_cpl_filter_kernel),
	KUNIT_CASE(bts_test_circular_wrap),
	KUNIT_CASE(bts_test_drop_at_max),
	KUNIT_CASE(bts_test_threshold_pmi),
	KUNIT_CASE(bts_test_btint_clear),
	KUNIT_CASE(bts_test_threshold_misaligned),
	KUNIT_CASE(bts_test_pebs_fields),
	KUNIT_CASE(bts_test_debugctl_bits),
	KUNIT_CASE(bts_test_ds_area_msr),
	KUNIT_CASE(bts_test_hw_interrupt),
	KUNIT_CASE(bts_test_single_step),
	KUNIT_CASE(bts_test_unmapped),
	KUNIT_CASE(bts_test_watched_buffer),
	KUNIT_CASE(bts_test_strict_fault),
	{}
};

static struct kunit_suite bts_suite = {
	.name = "bts_conformance",
	.test_cases = bts_cases,
};

kunit_test_suite(bts_suite);

/* ---- user-mode half, through debugfs ---- */

#define BTS_USER_ORDER		10	/* 4 MiB, 174762 records: room for the debug kernel */
#define BTS_USER_SLOTS		((PAGE_SIZE << BTS_USER_ORDER) / BTS_REC_SIZE)
static struct {
	struct mutex lock;	/* everything below */
	struct dentry *dir;
	u64 *ds;
	u8 *buf;
	int cpu;		/* armed on this CPU, or -1 */
	u64 old_ds_area, old_debugctl, debugctl;
	void *out;
	size_t out_len;
} bts_user = {
	.lock = __MUTEX_INITIALIZER(bts_user.lock),
	.cpu = -1,
};

static int bts_user_arm(u64 off)
{
	u64 base = (unsigned long)bts_user.buf;
	int cpu;

	if (off & ~BTS_OFF_BITS)
		return -EINVAL;
	if (!boot_cpu_has(X86_FEATURE_DS) || !boot_cpu_has(X86_FEATURE_DTES64))
		return -ENODEV;
	/* With PTI the buffer is not mapped while user code runs */
	if (boot_cpu_has(X86_FEATURE_PTI))
		return -EOPNOTSUPP;
	if (bts_user.cpu >= 0)
		return -EBUSY;

	kvfree(bts_user.out);
	bts_user.out = NULL;
	bts_user.out_len = 0;
	memset(bts_user.ds, 0, PAGE_SIZE);
	bts_user.ds[DS_BTS_BASE] = base;
	bts_user.ds[DS_BTS_INDEX] = base;
	bts_user.ds[DS_BTS_MAX] = base + BTS_USER_SLOTS * BTS_REC_SIZE;
	/* BTINT with the threshold beyond the maximum: no PMI, stop when full */
	bts_user.ds[DS_BTS_THRESHOLD] = bts_user.ds[DS_BTS_MAX] + BTS_REC_SIZE;

	cpu = get_cpu();
	rdmsrl(MSR_IA32_DEBUGCTLMSR, bts_user.old_debugctl);
	if (bts_user.old_debugctl & BTS_TR_BTS) {
		put_cpu();
		return -EBUSY;
	}
	rdmsrl(MSR_IA32_DS_AREA, bts_user.old_ds_area);
	wrmsrl(MSR_IA32_DS_AREA, (unsigned long)bts_user.ds);
	bts_user.debugctl = bts_user.old_debugctl | BTS_TR_BTS | DEBUGCTLMSR_BTINT | off;
	if (wrmsrl_safe(MSR_IA32_DEBUGCTLMSR, bts_user.debugctl)) {
		wrmsrl(MSR_IA32_DS_AREA, bts_user.old_ds_area);
		put_cpu();
		return -EINVAL;
	}
	bts_user.cpu = cpu;
	put_cpu();
	return 0;
}

static void bts_user_off(void *unused)
{
	wrmsrl(MSR_IA32_DEBUGCTLMSR, bts_user.old_debugctl);
	wrmsrl(MSR_IA32_DS_AREA, bts_user.old_ds_area);
}

/* Which return instruction a kernel -> user record comes from */
static u8 bts_user_ret(const struct bts_record *rec)
{
	static const struct {
		const u8 *insn;
		size_t len;
		u8 kind;
	} rets[] = {
		{ bts_iretq, sizeof(bts_iretq), BTS_RET_IRETQ },
		{ bts_sysretq, sizeof(bts_sysretq), BTS_RET_SYSRETQ },
		{ bts_sysretl, sizeof(bts_sysretl), BTS_RET_SYSRETL },
		{ bts_sysexit, sizeof(bts_sysexit), BTS_RET_SYSEXIT },
		{ bts_sysexitq, sizeof(bts_sysexitq), BTS_RET_SYSEXIT },
	};
	unsigned int i;

	if (!bts_kernel_addr(rec->from) || bts_kernel_addr(rec->to))
		return BTS_RET_NONE;
	for (i = 0; i < ARRAY_SIZE(rets); i++)
		if (bts_insn_is(rec->from, rets[i].insn, rets[i].len))
			return rets[i].kind;
	return BTS_RET_OTHER;
}

static int bts_user_disarm(void)
{
	const struct bts_record *rec;
	struct bts_user_header *h;
	u64 base, index, max, i;
	unsigned int v;
	size_t size;
	u8 *kind;

	if (bts_user.cpu < 0)
		return -EINVAL;
	smp_call_function_single(bts_user.cpu, bts_user_off, NULL, 1);
	bts_user.cpu = -1;

	base = bts_user.ds[DS_BTS_BASE];
	index = bts_user.ds[DS_BTS_INDEX];
	max = bts_user.ds[DS_BTS_MAX];
	if (base != (unsigned long)bts_user.buf || index < base || index > max ||
	    (index - base) % BTS_REC_SIZE)
		return -EIO;
	size = index - base;
	bts_user.out = kvmalloc(sizeof(*h) + size + size / BTS_REC_SIZE, GFP_KERNEL);
	if (!bts_user.out)
		return -ENOMEM;
	h = bts_user.out;
	h->magic = BTS_USER_MAGIC;
	h->nr = size / BTS_REC_SIZE;
	h->full = index + BTS_REC_SIZE > max;
	h->debugctl = bts_user.debugctl;
	rdmsrl(MSR_LSTAR, h->lstar);
	rdmsrl(MSR_IA32_SYSENTER_EIP, h->sysenter_eip);
	for (v = 0; v < ARRAY_SIZE(h->idt); v++)
		h->idt[v] = bts_idt_handler(v);
	memcpy(h + 1, bts_user.buf, size);
	kind = (u8 *)(h + 1) + size;
	h->bad_return = 0;
	rec = (const struct bts_record *)bts_user.buf;
	for (i = 0; i < h->nr; i++) {
		kind[i] = bts_user_ret(&rec[i]);
		if (kind[i] == BTS_RET_OTHER && !h->bad_return)
			h->bad_return = i + 1;
	}
	bts_user.out_len = sizeof(*h) + size + h->nr;
	return 0;
}

static ssize_t bts_user_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	char cmd[32];
	u64 off;
	int ret;

	if (count >= sizeof(cmd))
		return -EINVAL;
	if (copy_from_user(cmd, ubuf, count))
		return -EFAULT;
	cmd[count] = '\0';

	mutex_lock(&bts_user.lock);
	if (str_has_prefix(cmd, "arm ")) {
		ret = kstrtou64(strim(cmd + 4), 16, &off);
		if (!ret)
			ret = bts_user_arm(off);
	} else if (sysfs_streq(cmd, "disarm")) {
		ret = bts_user_disarm();
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&bts_user.lock);
	return ret ? ret : count;
}

static ssize_t bts_user_read(struct file *file, char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&bts_user.lock);
	ret = simple_read_from_buffer(ubuf, count, ppos, bts_user.out, bts_user.out_len);
	mutex_unlock(&bts_user.lock);
	return ret;
}

static const struct file_operations bts_user_fops = {
	.owner = THIS_MODULE,
	.read = bts_user_read,
	.write = bts_user_write,
	.llseek = default_llseek,
};

static void bts_free(void)
{
	free_page((unsigned long)bts.ds);
	free_pages((unsigned long)bts.buf, BTS_BUF_ORDER);
	free_page((unsigned long)bts_user.ds);
	free_pages((unsigned long)bts_user.buf, BTS_USER_ORDER);
}

static int __init bts_conformance_init(void)
{
	bts.ds = (u64 *)get_zeroed_page(GFP_KERNEL);
	bts.buf = (u8 *)__get_free_pages(GFP_KERNEL, BTS_BUF_ORDER);
	bts_user.ds = (u64 *)get_zeroed_page(GFP_KERNEL);
	bts_user.buf = (u8 *)__get_free_pages(GFP_KERNEL, BTS_USER_ORDER);
	if (!bts.ds || !bts.buf || !bts_user.ds || !bts_user.buf) {
		bts_free();
		return -ENOMEM;
	}
	bts_user.dir = debugfs_create_dir("bts_conformance", NULL);
	debugfs_create_file("user", 0600, bts_user.dir, NULL, &bts_user_fops);
	return 0;
}

static void __exit bts_conformance_exit(void)
{
	debugfs_remove_recursive(bts_user.dir);
	mutex_lock(&bts_user.lock);
	if (bts_user.cpu >= 0)
		smp_call_function_single(bts_user.cpu, bts_user_off, NULL, 1);
	kvfree(bts_user.out);
	mutex_unlock(&bts_user.lock);
	bts_free();
}

module_init(bts_conformance_init);
module_exit(bts_conformance_exit);

MODULE_DESCRIPTION("Conformance test of the branch trace store (BTS) emulation");
MODULE_LICENSE("GPL");
