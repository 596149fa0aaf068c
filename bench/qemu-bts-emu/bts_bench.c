// SPDX-License-Identifier: GPL-2.0
/*
 * What QEMU's BTS emulation alone costs (bench/qemu-bts-emu.sh).
 *
 * At load, on one CPU with interrupts off, time a kernel-mode loop with
 * a known number of taken branches: once with BTS off and once with BTS
 * on into a circular buffer (BTINT clear, the threshold beyond the
 * absolute maximum, nothing draining it), alternately, @rounds times.
 * Print the median times, the records written, the ns per record and the
 * slowdown, then fail the load (nothing stays loaded).
 *
 * The loop body has BENCH_BRANCHES taken branches (jmp rel8, jmp rel32,
 * jcc rel8 taken, the loop's jnz) and a few ALU instructions between
 * them, one taken branch per 4.25 instructions.  Nothing else may use
 * the Debug Store meanwhile (the VM boots with nmi_watchdog=0).
 */

#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include <asm/cpufeature.h>
#include <asm/msr.h>

static unsigned int iters = 200000;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "Loop iterations per timed run");

static unsigned int rounds = 9;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "Timed runs with BTS off and on, each (at most 64)");

#define BENCH_BRANCHES	4	/* taken branches per iteration */
#define BENCH_BUF_SIZE	(64 * 1024)

static u64 bench_ds[8] __aligned(64);

/* @n iterations of the loop; returns a value so the work is not dropped */
static noinline u64 bench_loop(unsigned long n)
{
	u64 a = 1, b = 3;

	asm volatile("1:\n\t"
		     "add %[b], %[a]\n\t"
		     "xor $0x55, %[b]\n\t"
		     "lea 7(%[a],%[b],2), %[a]\n\t"
		     "jmp 2f\n\t"
		     "2:\n\t"
		     "imul $3, %[b], %[b]\n\t"
		     "ror $5, %[a]\n\t"
		     "add %[a], %[b]\n\t"
		     "sub $1, %[b]\n\t"
		     ".byte 0xe9\n\t"		/* jmp rel32 */
		     ".long 3f - (. + 4)\n\t"
		     "3:\n\t"
		     "or $1, %[a]\n\t"
		     "rol $3, %[b]\n\t"
		     "test %[a], %[a]\n\t"	/* never zero: taken */
		     "jnz 4f\n\t"
		     "ud2\n\t"
		     "4:\n\t"
		     "xor %[a], %[b]\n\t"
		     "add $13, %[a]\n\t"
		     "dec %[n]\n\t"
		     "jnz 1b\n\t"
		     : [a] "+r" (a), [b] "+r" (b), [n] "+r" (n)
		     :
		     : "cc");
	return a ^ b;
}

static u64 bench_run(u64 debugctl, u64 *sink)
{
	unsigned long flags;
	u64 old_ctl, t0, t1;

	local_irq_save(flags);
	rdmsrl(MSR_IA32_DEBUGCTLMSR, old_ctl);
	bench_ds[1] = bench_ds[0];		/* index = base */
	if (debugctl)
		wrmsrl(MSR_IA32_DEBUGCTLMSR, old_ctl | debugctl);
	t0 = ktime_get_ns();
	*sink += bench_loop(iters);
	t1 = ktime_get_ns();
	if (debugctl)
		wrmsrl(MSR_IA32_DEBUGCTLMSR, old_ctl);
	local_irq_restore(flags);
	return t1 - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static int __init bts_bench_init(void)
{
	static u64 off[64], on[64];
	u64 old_ds, sink = 0, records, off_med, on_med;
	unsigned int i;
	u8 *buf;

	if (!boot_cpu_has(X86_FEATURE_DS) || !boot_cpu_has(X86_FEATURE_DTES64)) {
		pr_err("bts_bench: the CPU has no DS/DTES64\n");
		return -ENODEV;
	}
	rounds = clamp(rounds, 1U, 64U);
	buf = vmalloc(BENCH_BUF_SIZE);
	if (!buf)
		return -ENOMEM;
	memset(buf, 0, BENCH_BUF_SIZE);
	bench_ds[0] = (unsigned long)buf;
	bench_ds[2] = bench_ds[0] + BENCH_BUF_SIZE / 24 * 24;	/* absolute maximum */
	bench_ds[3] = bench_ds[2] + 24;				/* threshold beyond it */

	rdmsrl(MSR_IA32_DS_AREA, old_ds);
	wrmsrl(MSR_IA32_DS_AREA, (unsigned long)bench_ds);
	bench_run(0, &sink);				/* warm up: translate */
	bench_run(DEBUGCTLMSR_TR | DEBUGCTLMSR_BTS, &sink);
	for (i = 0; i < rounds; i++) {
		off[i] = bench_run(0, &sink);
		on[i] = bench_run(DEBUGCTLMSR_TR | DEBUGCTLMSR_BTS, &sink);
	}
	wrmsrl(MSR_IA32_DS_AREA, old_ds);
	vfree(buf);

	sort(off, rounds, sizeof(off[0]), cmp_u64, NULL);
	sort(on, rounds, sizeof(on[0]), cmp_u64, NULL);
	off_med = off[rounds / 2];
	on_med = on[rounds / 2];
	records = (u64)iters * BENCH_BRANCHES;
	pr_info("bts_bench: iters=%u branches/iter=%d records=%llu rounds=%u sink=%llu\n",
		iters, BENCH_BRANCHES, records, rounds, sink & 1);
	pr_info("bts_bench: off_ns median=%llu min=%llu max=%llu\n",
		off_med, off[0], off[rounds - 1]);
	pr_info("bts_bench: on_ns median=%llu min=%llu max=%llu\n",
		on_med, on[0], on[rounds - 1]);
	pr_info("bts_bench: off ns/iter=%llu.%02llu on ns/iter=%llu.%02llu\n",
		off_med / iters, off_med * 100 / iters % 100,
		on_med / iters, on_med * 100 / iters % 100);
	pr_info("bts_bench: ns/record=%lld.%02lld slowdown=%llu.%02llu\n",
		(s64)(on_med - off_med) / (s64)records,
		abs((s64)(on_med - off_med) * 100 / (s64)records % 100),
		on_med / off_med, on_med * 100 / off_med % 100);
	return -EAGAIN;		/* nothing to keep loaded */
}

module_init(bts_bench_init);
MODULE_DESCRIPTION("Cost of QEMU's BTS emulation: a loop with BTS off and on");
MODULE_LICENSE("GPL");
