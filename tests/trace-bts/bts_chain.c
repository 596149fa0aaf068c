// SPDX-License-Identifier: GPL-2.0
/*
 * bts_chain: a known chain of kernel functions for tests/trace-bts.  Each
 * write to /sys/kernel/debug/bts_chain runs bts_chain_a(), which calls
 * bts_chain_b() once, which calls bts_chain_c() three times: the calls a
 * flight recorder of the writing CPU must show, in that order.  Each call
 * of bts_chain_c() fires the tracepoint bts_chain:bts_chain_c with its
 * index (0, 1, 2), for event triggers.  A write to
 * /sys/kernel/debug/bts_chain_oops runs the chain, then bts_chain_crash(),
 * which writes through a NULL pointer: an oops.  A write of N to
 * /sys/kernel/debug/bts_chain_spin calls bts_chain_step() N times with
 * interrupts off, where a continuous recorder's callback cannot run.  A
 * write to /sys/kernel/debug/bts_chain_reset runs the chain, then
 * bts_chain_triple_fault(), which loads an empty IDT and raises a
 * breakpoint: no handler, no double-fault handler, the CPU resets the
 * machine at once (a triple fault), with nothing else run.  A write to
 * /sys/kernel/debug/bts_chain_lockup runs the chain, then locks the
 * writing CPU up in bts_chain_lockup_spin(): interrupts off, calling
 * bts_chain_step() for ever, its rounds counted in
 * /sys/kernel/debug/bts_chain_spins (a hard lockup, for something
 * outside the CPU to reset the machine).
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <asm/desc.h>

#define CREATE_TRACE_POINTS
#include "bts_chain_trace.h"

static int bts_chain_sink;

static noinline void bts_chain_c(int i)
{
	trace_bts_chain_c(i);
	WRITE_ONCE(bts_chain_sink, READ_ONCE(bts_chain_sink) + i);
}

static noinline void bts_chain_b(void)
{
	int i;

	for (i = 0; i < 3; i++)
		bts_chain_c(i);
}

static noinline void bts_chain_a(void)
{
	bts_chain_b();
	barrier();
}

/* NULL, but the compiler cannot know. */
static int *bts_chain_nowhere;

static noinline void bts_chain_crash(void)
{
	WRITE_ONCE(*READ_ONCE(bts_chain_nowhere), 1);
}

static ssize_t bts_chain_write(struct file *file, const char __user *buf,
			       size_t len, loff_t *pos)
{
	bts_chain_a();
	return len;
}

static ssize_t bts_chain_oops_write(struct file *file, const char __user *buf,
				    size_t len, loff_t *pos)
{
	bts_chain_a();
	bts_chain_crash();
	return len;
}

static noinline void bts_chain_triple_fault(void)
{
	struct desc_ptr no_idt = {};

	local_irq_disable();
	native_load_idt(&no_idt);
	asm volatile("int3");
}

static ssize_t bts_chain_reset_write(struct file *file, const char __user *buf,
				     size_t len, loff_t *pos)
{
	bts_chain_a();
	bts_chain_triple_fault();
	return len;
}

static noinline void bts_chain_step(void)
{
	barrier();
}

static ssize_t bts_chain_spin_write(struct file *file, const char __user *buf,
				    size_t len, loff_t *pos)
{
	unsigned long flags;
	u32 i, n;
	int ret;

	ret = kstrtou32_from_user(buf, len, 0, &n);
	if (ret)
		return ret;
	local_irq_save(flags);
	for (i = 0; i < n; i++)
		bts_chain_step();
	local_irq_restore(flags);
	return len;
}

static u64 bts_chain_spins;

static noinline void __noreturn bts_chain_lockup_spin(void)
{
	local_irq_disable();
	for (;;) {
		bts_chain_step();
		WRITE_ONCE(bts_chain_spins, bts_chain_spins + 1);
	}
}

static ssize_t bts_chain_lockup_write(struct file *file,
				      const char __user *buf, size_t len,
				      loff_t *pos)
{
	bts_chain_a();
	bts_chain_lockup_spin();
}

static const struct file_operations bts_chain_fops = {
	.write	= bts_chain_write,
};

static const struct file_operations bts_chain_oops_fops = {
	.write	= bts_chain_oops_write,
};

static const struct file_operations bts_chain_spin_fops = {
	.write	= bts_chain_spin_write,
};

static const struct file_operations bts_chain_reset_fops = {
	.write	= bts_chain_reset_write,
};

static const struct file_operations bts_chain_lockup_fops = {
	.write	= bts_chain_lockup_write,
};

static struct dentry *bts_chain_file, *bts_chain_oops_file, *bts_chain_spin_file;
static struct dentry *bts_chain_reset_file, *bts_chain_lockup_file;

static int __init bts_chain_init(void)
{
	bts_chain_file = debugfs_create_file("bts_chain", 0200, NULL, NULL,
					     &bts_chain_fops);
	bts_chain_oops_file = debugfs_create_file("bts_chain_oops", 0200, NULL,
						  NULL, &bts_chain_oops_fops);
	bts_chain_spin_file = debugfs_create_file("bts_chain_spin", 0200, NULL,
						  NULL, &bts_chain_spin_fops);
	bts_chain_reset_file = debugfs_create_file("bts_chain_reset", 0200, NULL,
						   NULL, &bts_chain_reset_fops);
	bts_chain_lockup_file = debugfs_create_file("bts_chain_lockup", 0200,
						    NULL, NULL,
						    &bts_chain_lockup_fops);
	debugfs_create_u64("bts_chain_spins", 0400, NULL,
			   &bts_chain_spins);
	return 0;
}

static void __exit bts_chain_exit(void)
{
	debugfs_lookup_and_remove("bts_chain_spins", NULL);
	debugfs_remove(bts_chain_lockup_file);
	debugfs_remove(bts_chain_reset_file);
	debugfs_remove(bts_chain_spin_file);
	debugfs_remove(bts_chain_oops_file);
	debugfs_remove(bts_chain_file);
}

module_init(bts_chain_init);
module_exit(bts_chain_exit);
MODULE_DESCRIPTION("A known chain of kernel calls for the bts tracer's tests");
MODULE_LICENSE("GPL");
