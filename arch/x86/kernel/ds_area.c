// SPDX-License-Identifier: GPL-2.0
/*
 * Each CPU's Debug Store save area and IA32_DS_AREA.
 *
 * The save area of a CPU lives in its cpu_entry_area, so that the
 * hardware can write it in user mode with PTI on.  IA32_DS_AREA points at
 * it from the CPU's bring-up and resume on, whoever uses it: perf's PEBS
 * and BTS code fill in its fields, and with CONFIG_X86_DS the DS layer
 * owns the BTS ones.  Nothing writes the MSR but ds_load_area(), and the
 * layer's ds_cpu_shutdown() before kexec.
 */
#include <linux/cpufeature.h>
#include <linux/smp.h>
#include <asm/cpu_entry_area.h>
#include <asm/intel_ds.h>
#include <asm/msr.h>

/**
 * ds_area() - the DS save area of a CPU
 * @cpu: the CPU
 *
 * Context: any.
 * Return: the area, at its cpu_entry_area address.
 */
struct debug_store *ds_area(int cpu)
{
	return &get_cpu_entry_area(cpu)->cpu_debug_store;
}

/**
 * ds_load_area() - point IA32_DS_AREA at this CPU's DS save area
 *
 * At CPU bring-up (perf's intel_pmu_cpu_starting(), and the DS layer's
 * hotplug callback, which runs whether or not perf's PMU is Intel's) and
 * resume.  A CPU without DS has no MSR to write.
 *
 * Context: the CPU itself, preemption off.
 */
void ds_load_area(void)
{
	if (boot_cpu_has(X86_FEATURE_DS))
		wrmsrl(MSR_IA32_DS_AREA,
		       (unsigned long)ds_area(smp_processor_id()));
}
