// SPDX-License-Identifier: GPL-2.0
/*
 * The length of an x86 instruction, for those capstone 4 cannot decode:
 * AVX-512's EVEX encodings, VEX and legacy ones newer than it (CET's
 * rdsspq, ...).  Without it, walking the code between two branch records
 * stops at the first such instruction, and bts-dump blames the trace.
 *
 * Only the encoding's shape is read, as the Intel SDM lays it out (vol. 2,
 * chapter 2 and appendix A): prefixes, opcode map, ModRM, SIB,
 * displacement, immediate.  What could branch or trap is refused (0), so
 * that what this measures may be run through as straight-line code: every
 * branch is an encoding capstone knows.
 */
#include <string.h>

#include "bts-dump.h"

#define MAX_INSN 15

/*
 * What follows an opcode byte:
 * '.'  nothing
 * 'm'  ModRM (with SIB, displacement)
 * 'b'  imm8                      'B'  ModRM, imm8
 * 'w'  imm16                     'Z'  ModRM, imm16/32 by operand size
 * 'z'  imm16/32 by operand size  'v'  imm16/32/64 (mov $imm, reg)
 * 'a'  an address (moffs)        'e'  imm16, imm8 (enter)
 * 'f'  ModRM, imm8 for test      'F'  ModRM, imm16/32 for test (group 3)
 * 'g'  ModRM; /2 to /5 branch (group 5)
 * 'x'  an escape to another map
 * '-'  refused: a branch, system call, trap, or no instruction
 * The prefixes' entries are never looked at.
 */
static const char map0[256] =
	"mmmmbz..mmmmbz.x"	/* 00: add, or */
	"mmmmbz..mmmmbz.."	/* 10: adc, sbb */
	"mmmmbz..mmmmbz.."	/* 20: and, sub */
	"mmmmbz..mmmmbz.."	/* 30: xor, cmp */
	"................"	/* 40: inc, dec; REX */
	"................"	/* 50: push, pop */
	"..mm....zZbB...."	/* 60: bound, movsxd, push, imul, ins, outs */
	"----------------"	/* 70: jcc */
	"BZBBmmmmmmmmmmmm"	/* 80: group 1, test, xchg, mov, lea, pop */
	"..........-....."	/* 90: xchg, cbw, cwd, lcall, fwait, pushf */
	"aaaa....bz......"	/* a0: mov moffs, string ops, test */
	"bbbbbbbbvvvvvvvv"	/* b0: mov $imm */
	"BB--mmBZe.------"	/* c0: shifts, ret, les, lds, mov, enter, int */
	"mmmmbb-.mmmmmmmm"	/* d0: shifts, aam, aad, xlat, x87 */
	"----bbbb----...."	/* e0: loop, jrcxz, in, out, call, jmp */
	".-....fF......mg";	/* f0: int1, hlt, cmc, group 3, clc.., 4, 5 */

/* 0f xx; VEX's and EVEX's map 1 too, whose opcodes agree where they are */
static const char map1[256] =
	"mmmm--.-..---m.B"	/* 00: groups 6, 7, lar, lsl, syscall, 3DNow! */
	"mmmmmmmmmmmmmmmm"	/* 10: SSE moves, prefetch, hint nops */
	"mmmmmmmmmmmmmmmm"	/* 20: mov cr/dr, SSE */
	"....----x-x-----"	/* 30: wrmsr, rdtsc, sysenter, escapes */
	"mmmmmmmmmmmmmmmm"	/* 40: cmov; VEX: mask ops */
	"mmmmmmmmmmmmmmmm"	/* 50: SSE */
	"mmmmmmmmmmmmmmmm"	/* 60: MMX, SSE */
	"BBBBmmm.mm--mmmm"	/* 70: pshuf, groups 12-14, emms/vzeroupper */
	"----------------"	/* 80: jcc */
	"mmmmmmmmmmmmmmmm"	/* 90: setcc; VEX: kmov */
	"...mBm--..-mBmmm"	/* a0: push/pop fs/gs, cpuid, bt, shld, rsm */
	"mmmmmmmmm-Bmmmmm"	/* b0: cmpxchg, popcnt, ud1, group 8, bsf */
	"mmBmBBBm........"	/* c0: xadd, cmpps, pinsrw, shufps, bswap */
	"mmmmmmmmmmmmmmmm"	/* d0: SSE */
	"mmmmmmmmmmmmmmmm"	/* e0: SSE */
	"mmmmmmmmmmmmmmm-";	/* f0: SSE, ud0 */

/* One-byte opcodes that are no instruction in 64-bit mode. */
static const unsigned char invalid64[] = {
	0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f, 0x37, 0x3f,
	0x60, 0x61, 0x82, 0xd4, 0xd5,
};

/* The ModRM byte and what it says follows: SIB, displacement. */
static unsigned int modrm_len(u8 modrm, const u8 *next, const u8 *end,
			      bool addr16)
{
	unsigned int mod = modrm >> 6, rm = modrm & 7;

	if (mod == 3)
		return 1;
	if (addr16) {
		if (mod == 0)
			return rm == 6 ? 3 : 1;
		return 1 + mod;
	}
	if (rm == 4) {
		if (next >= end)
			return 0;
		/* no base: disp32 */
		if (mod == 0 && (*next & 7) == 5)
			return 6;
		return 2 + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
	}
	/* mod 0, rm 5: disp32, RIP-relative in 64-bit mode */
	if (mod == 0)
		return rm == 5 ? 5 : 1;
	return mod == 1 ? 2 : 5;
}

/*
 * How long the instruction at @code (@len bytes readable) is in 64-bit
 * (@is64) or 32-bit code; 0 if refused (see above) or cut short.
 */
unsigned int insn_len(const u8 *code, size_t len, bool is64)
{
	const u8 *p = code, *end = code + (len < MAX_INSN ? len : MAX_INSN);
	bool opsize16 = false, addr_short = false, rep_lock = false;
	unsigned int rex = 0, n, immz, imm = 0;
	const char *map = map0;
	/* maps 0f38, 0f3a and others all of one kind */
	char all = 0, what;

	for (; p < end; p++) {
		switch (*p) {
		case 0x66:
			opsize16 = true;
			break;
		case 0x67:
			addr_short = true;
			break;
		case 0xf0: case 0xf2: case 0xf3:
			rep_lock = true;
			break;
		/* segments */
		case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
			break;
		default:
			if (!is64 || (*p & 0xf0) != 0x40)
				goto opcode;
			/* REX counts only right before the opcode */
			rex = *p;
			continue;
		}
		rex = 0;
	}
	return 0;
opcode:
	if (end - p < 2)
		return 0;
	/*
	 * C4, C5 and 62 are VEX and EVEX in 64-bit mode; in 32-bit mode
	 * only with ModRM.mod 11, else les, lds, bound.  8F is XOP where
	 * pop's ModRM.reg, 0, would be a map of 8 or more.
	 */
	if (((*p == 0xc4 || *p == 0xc5 || *p == 0x62) &&
	     (is64 || p[1] >> 6 == 3)) || (*p == 0x8f && (p[1] & 0x1f) >= 8)) {
		/* rex, 66, f2, f3, f0 before them: #UD */
		if (rex || opsize16 || rep_lock || end - p < 4)
			return 0;
		if (*p == 0xc5) {
			map = map1;
			p += 2;
		} else if (*p == 0x62) {
			switch (p[1] & 7) {
			case 1:
				map = map1;
				break;
			case 2:
			/* AVX512-FP16's maps 5 and 6 have no immediates */
			case 5:
			case 6:
				all = 'm';
				break;
			case 3:
				all = 'B';
				break;
			default:
				return 0;
			}
			p += 4;
		} else {
			switch (p[1] & 0x1f) {
			case 1:
				map = map1;
				break;
			case 2:
			case 9:
				all = 'm';
				break;
			case 3:
			case 8:
				all = 'B';
				break;
			case 10:
				/* XOP's bextr, lwpins: imm32 (no 66) */
				all = 'Z';
				break;
			default:
				return 0;
			}
			p += 3;
		}
	} else if (*p == 0x0f) {
		p++;
		if (*p == 0x38 || *p == 0x3a)
			all = *p++ == 0x38 ? 'm' : 'B';
		else
			map = map1;
	} else if (is64 && memchr(invalid64, *p, sizeof(invalid64))) {
		return 0;
	}
	if (p >= end)
		return 0;
	what = all ? all : map[*p];
	p++;
	if (what == '-' || what == 'x')
		return 0;

	if (strchr("mBZfFg", what)) {
		if (p >= end)
			return 0;
		/* group 5: call and jmp are /2 to /5 */
		if (what == 'g' && ((*p >> 3) & 7) >= 2 && ((*p >> 3) & 7) <= 5)
			return 0;
		/* group 3: test (/0, /1) takes an immediate */
		if ((what == 'f' || what == 'F') && ((*p >> 3) & 7) >= 2)
			what = 'm';
		n = modrm_len(*p, p + 1, end, !is64 && addr_short);
		if (!n || n > (unsigned int)(end - p))
			return 0;
		p += n;
	}
	/* 66 makes it 16 bits, unless REX.W makes it 64 */
	immz = opsize16 && !(rex & 8) ? 2 : 4;
	switch (what) {
	case 'b':
	case 'B':
	case 'f':
		imm = 1;
		break;
	case 'w':
		imm = 2;
		break;
	case 'e':
		imm = 3;
		break;
	case 'z':
	case 'Z':
	case 'F':
		imm = immz;
		break;
	case 'v':
		imm = rex & 8 ? 8 : immz;
		break;
	case 'a':
		imm = is64 ? (addr_short ? 4 : 8) : (addr_short ? 2 : 4);
		break;
	}
	if (imm > (unsigned int)(end - p))
		return 0;
	return p + imm - code;
}
