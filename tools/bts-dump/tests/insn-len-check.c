// SPDX-License-Identifier: GPL-2.0
/*
 * insn-len-check 64|32 [N]: insn_len.c against another decoder's lengths
 * (objdump's, which check_insn_len.py reads).  Each line of stdin is
 * "LEN HEX NAME": an instruction of LEN bytes and the code after it, in
 * hex, and its mnemonic.  Where capstone cannot decode one, insn_len()
 * must give LEN.  Where capstone can, and makes it LEN bytes long too (not
 * so for fwait, which objdump joins to the x87 instruction after it),
 * insn_len() may refuse it (0), else it too must give LEN.  With N,
 * every Nth answer of insn_len() is made a byte too long, to show the
 * comparison catches it.  Prints the counts, and each disagreement;
 * exits 1 if there is one.
 */
#include <capstone/capstone.h>
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bts-dump.h"

int main(int argc, char **argv)
{
	unsigned long total = 0, unknown = 0, unknown_bad = 0, known_len = 0;
	unsigned long known_bad = 0, asked = 0, plant;
	bool is64 = argc > 1 && !strcmp(argv[1], "64");
	char line[512], hex[256], name[64];
	u8 code[64];
	unsigned int want, got, n, i;
	cs_insn *ci;
	csh h;

	if (argc < 2)
		errx(2, "usage: insn-len-check 64|32 [N]");
	plant = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;
	if (cs_open(CS_ARCH_X86, is64 ? CS_MODE_64 : CS_MODE_32, &h) !=
	    CS_ERR_OK)
		errx(2, "capstone: cannot open an x86 disassembler");
	ci = cs_malloc(h);
	while (fgets(line, sizeof(line), stdin)) {
		const u8 *p = code;
		size_t left;
		uint64_t a = 0;

		if (sscanf(line, "%u %255s %63s", &want, hex, name) != 3)
			errx(2, "bad line: %s", line);
		for (n = 0; n < sizeof(code); n++)
			if (sscanf(hex + 2 * n, "%2hhx", &code[n]) != 1)
				break;
		total++;
		left = n;
		got = insn_len(code, n, is64);
		if (got && plant && ++asked % plant == 0)
			got++;
		if (cs_disasm_iter(h, &p, &left, &a, ci)) {
			if (!got || ci->size != want)
				continue;
			known_len++;
			if (got == want)
				continue;
			known_bad++;
		} else {
			unknown++;
			if (got == want)
				continue;
			unknown_bad++;
		}
		printf("%s: %u bytes, not %u:", name, got, want);
		for (i = 0; i < want; i++)
			printf(" %02x", code[i]);
		printf("\n");
	}
	printf("%lu instructions, %lu unknown to capstone, %lu of them measured wrong; "
	       "%lu of the others measured, %lu wrong\n", total, unknown,
	       unknown_bad, known_len, known_bad);
	cs_free(ci, 1);
	cs_close(&h);
	return unknown_bad || known_bad;
}
