/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The format of the conformance module's debugfs file, shared by the
 * module (bts_conformance.c) and the user-mode half (user.h).  Whoever
 * includes it has defined u64 already: the kernel, or user.h for both
 * ABIs.
 */
#ifndef BTS_DEBUGFS_ABI_H
#define BTS_DEBUGFS_ABI_H

#define BTS_USER_MAGIC		0x32464e4f43535442ULL	/* "BTSCONF2" */

/* What reading the debugfs file returns first */
struct bts_user_header {
	u64 magic;
	u64 nr;			/* records that follow */
	u64 full;		/* the index reached the absolute maximum */
	u64 debugctl;		/* as programmed */
	u64 bad_return;		/* 1 + first kernel -> user record not from a return */
	u64 lstar;		/* SYSCALL entry point */
	u64 sysenter_eip;	/* SYSENTER entry point */
	u64 idt[256];		/* interrupt and exception entry points */
	/* then nr records, then nr bytes: enum bts_user_ret of each record */
};

/* What a kernel -> user record comes from */
enum bts_user_ret {
	BTS_RET_NONE,		/* not a kernel -> user record */
	BTS_RET_IRETQ,
	BTS_RET_SYSRETQ,
	BTS_RET_SYSRETL,
	BTS_RET_SYSEXIT,
	BTS_RET_OTHER,
};

#endif /* BTS_DEBUGFS_ABI_H */
