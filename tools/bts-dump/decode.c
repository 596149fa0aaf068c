// SPDX-License-Identifier: GPL-2.0
/*
 * One x86 instruction, decoded with capstone: what kind of branch it is
 * (for --calls, --insn's block ends and system calls) and how it names its
 * target (for --format=pt), what it does to
 * eax (for system call numbers), and its text (for --insn).  What capstone
 * does not know is measured by insn_len.c.
 */
#include <capstone/capstone.h>
#include <err.h>
#include <stdio.h>
#include <string.h>

#include "bts-dump.h"

static csh cs64, cs32;
static cs_insn *ci64, *ci32;

static int open_one(cs_mode mode, csh *h)
{
	if (cs_open(CS_ARCH_X86, mode, h) != CS_ERR_OK)
		return -1;
	cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	cs_option(*h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	return 0;
}

int decode_init(void)
{
	if (open_one(CS_MODE_64, &cs64) || open_one(CS_MODE_32, &cs32)) {
		warnx("capstone: cannot open an x86 disassembler");
		return -1;
	}
	ci64 = cs_malloc(cs64);
	ci32 = cs_malloc(cs32);
	if (!ci64 || !ci32)
		errx(1, "out of memory");
	return 0;
}

void decode_exit(void)
{
	cs_free(ci64, 1);
	cs_free(ci32, 1);
	cs_close(&cs64);
	cs_close(&cs32);
}

static bool is_eax(x86_reg r)
{
	return r == X86_REG_RAX || r == X86_REG_EAX || r == X86_REG_AX ||
	       r == X86_REG_AH || r == X86_REG_AL;
}

static enum insn_kind kind_of(csh h, const cs_insn *i)
{
	switch (i->id) {
	case X86_INS_SYSCALL:
		return INSN_SYSCALL;
	case X86_INS_SYSENTER:
		return INSN_SYSENTER;
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
		return INSN_INT;
	/* capstone puts these in no group */
	case X86_INS_LOOP:
	case X86_INS_LOOPE:
	case X86_INS_LOOPNE:
	case X86_INS_JCXZ:
	case X86_INS_JECXZ:
	case X86_INS_JRCXZ:
		return INSN_JUMP;
	}
	if (cs_insn_group(h, i, CS_GRP_CALL))
		return INSN_CALL;
	if (cs_insn_group(h, i, CS_GRP_RET) || cs_insn_group(h, i, CS_GRP_IRET))
		return INSN_RET;
	if (cs_insn_group(h, i, CS_GRP_JUMP))
		return INSN_JUMP;
	return INSN_OTHER;
}

static enum branch_form form_of(const cs_insn *i, enum insn_kind kind,
				u64 *target)
{
	const cs_x86 *x = &i->detail->x86;

	switch (kind) {
	case INSN_OTHER:
		return BRANCH_NONE;
	case INSN_RET:
		return i->id == X86_INS_RET ? BRANCH_INDIRECT : BRANCH_FAR;
	case INSN_SYSCALL:
	case INSN_SYSENTER:
	case INSN_INT:
		return BRANCH_FAR;
	case INSN_JUMP:
	case INSN_CALL:
		break;
	}
	if (i->id == X86_INS_LJMP || i->id == X86_INS_LCALL)
		return BRANCH_FAR;
	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return BRANCH_INDIRECT;
	*target = x->operands[0].imm;
	return i->id == X86_INS_JMP || i->id == X86_INS_CALL ?
	       BRANCH_DIRECT : BRANCH_COND;
}

static int vector_of(const cs_insn *i)
{
	const cs_x86 *x = &i->detail->x86;

	switch (i->id) {
	case X86_INS_INT1:
		return 1;
	case X86_INS_INT3:
		return 3;
	case X86_INS_INTO:
		return 4;
	}
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
		return x->operands[0].imm & 0xff;
	return -1;
}

/*
 * What the instruction does to eax: system call numbers are loaded with
 * "mov $nr, %eax" (or "xor %eax, %eax" for 0); any other write to it
 * makes the number unknowable.
 */
static void eax_of(csh h, const cs_insn *i, struct insn *out)
{
	const cs_x86 *x = &i->detail->x86;
	/* AT&T: the destination is the last operand. */
	const cs_x86_op *src = &x->operands[0], *dst = &x->operands[1];
	cs_regs rd, wr;
	u8 nrd, nwr, k;

	out->eax = EAX_NONE;
	if (x->op_count == 2 && dst->type == X86_OP_REG &&
	    (dst->reg == X86_REG_EAX || dst->reg == X86_REG_RAX)) {
		if (i->id == X86_INS_MOV && src->type == X86_OP_IMM) {
			out->eax = EAX_SET;
			out->eax_val = dst->reg == X86_REG_EAX ?
				(u32)src->imm : (u64)src->imm;
			return;
		}
		if ((i->id == X86_INS_XOR || i->id == X86_INS_SUB) &&
		    src->type == X86_OP_REG && src->reg == dst->reg) {
			out->eax = EAX_SET;
			out->eax_val = 0;
			return;
		}
	}
	if (cs_regs_access(h, i, rd, &nrd, wr, &nwr) != CS_ERR_OK) {
		out->eax = EAX_CLOBBER;
		return;
	}
	for (k = 0; k < nwr; k++) {
		if (is_eax(wr[k])) {
			out->eax = EAX_CLOBBER;
			return;
		}
	}
}

/*
 * An instruction capstone does not know (capstone 4: AVX-512, CET),
 * measured by insn_len(), which refuses branches: straight-line code to
 * walk through.  Whether it writes eax cannot be told (kmovd %k0, %eax
 * does), so it is taken to.
 */
static bool decode_len(const unsigned char *code, size_t len, u64 addr,
		       bool is64, struct insn *out)
{
	unsigned int n = insn_len(code, len, is64), k;
	int at;

	if (!n)
		return false;
	out->addr = addr;
	out->len = n;
	out->is64 = is64;
	out->kind = INSN_OTHER;
	out->form = BRANCH_NONE;
	out->target = 0;
	out->vector = -1;
	out->eax = EAX_CLOBBER;
	at = snprintf(out->text, sizeof(out->text), "(unknown to capstone)");
	for (k = 0; k < n; k++)
		at += snprintf(out->text + at, sizeof(out->text) - at, " %02x",
			       code[k]);
	return true;
}

bool decode(const unsigned char *code, size_t len, u64 addr, bool is64,
	    struct insn *out)
{
	csh h = is64 ? cs64 : cs32;
	cs_insn *ci = is64 ? ci64 : ci32;
	const u8 *p = code;
	size_t left = len;
	/* capstone's type, which is not quite u64's */
	uint64_t a = addr;

	if (!cs_disasm_iter(h, &p, &left, &a, ci))
		return decode_len(code, len, addr, is64, out);
	out->addr = addr;
	out->len = ci->size;
	out->is64 = is64;
	out->kind = kind_of(h, ci);
	out->vector = out->kind == INSN_INT ? vector_of(ci) : -1;
	out->target = 0;
	out->form = form_of(ci, out->kind, &out->target);
	eax_of(h, ci, out);
	if (ci->op_str[0])
		snprintf(out->text, sizeof(out->text), "%s %s", ci->mnemonic,
			 ci->op_str);
	else
		snprintf(out->text, sizeof(out->text), "%s", ci->mnemonic);
	return true;
}
