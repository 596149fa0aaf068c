/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by user.c (64-bit) and user32.c (32-bit, no C library): the
 * module's debugfs format, the label tables of the traced code, and what
 * user32 reports back to user.
 */
#ifndef BTS_USER_H
#define BTS_USER_H

/* The same sizes in both ABIs; no C library types in user32 */
typedef unsigned char u8;
typedef int s32;
typedef unsigned int u32;
typedef long long s64;
typedef unsigned long long u64;

#include "debugfs_abi.h"

struct bts_record {
	u64 from, to, flags;
};

/*
 * A label of the traced code and its name.  The asm that defines the
 * labels also lays out the table (its "label" macro), ended by addr 0.
 */
struct label {
	u64 addr;
	char name[24];
};

/* user.c: the 64-bit sequence */
extern const struct label u_labels[];
void run_seq(int fd, const char *arm, u64 arm_len, const char *dis, u64 dis_len, s64 out[3]);

/* user32.c: the 32-bit sequence */
extern const struct label c32_labels[];
void run_seq32(void);
void main32(u32 *sp);

/* user32's file descriptors, set up by user */
#define USER32_FD		3	/* debugfs bts_conformance/user */
#define USER32_DEVNULL		4	/* /dev/null, for the warm-up run */

#define USER32_MAGIC		0x32334255u	/* "UB32" */
#define USER32_LABELS		48

/* What user32 writes to its stdout: the same layout in both ABIs */
struct user32_report {
	u32 magic;
	s32 setup;		/* 0, or the -errno of the setup step that failed */
	s32 arm;		/* what the arm write returned */
	s32 disarm;		/* what the disarm write returned */
	s32 bad;		/* a conditional branch went the wrong way */
	u32 vsyscall;		/* the vDSO's __kernel_vsyscall (AT_SYSINFO) */
	u32 vsysenter;		/* its SYSENTER */
	u32 landing;		/* its int80_landing_pad, where SYSENTER returns */
	u32 vret;		/* its RET */
	u32 nr_labels;
	struct label label[USER32_LABELS];
};

#endif
