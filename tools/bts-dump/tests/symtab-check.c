// SPDX-License-Identifier: GPL-2.0
/*
 * symtab-check FILE [STEP [PLANT]]: symtab.c's answer against libdwfl's
 * dwfl_module_addrinfo() for every STEP-th address (default 1) of FILE's
 * executable segments, FILE reported at bias 0 with its debuginfo found
 * as bts-dump finds it.  Prints the number of addresses compared and the
 * first disagreements; exits 1 if there is one.
 *
 * PLANT=1 shifts symtab.c's answer by one byte at every 1000th address:
 * the self-test that shows the comparison catches a wrong answer.
 */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bts-dump.h"

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* libdwfl's name, without its symbol version, as bts-dump prints it. */
static size_t name_len(const char *name)
{
	const char *at = name ? strchr(name + 1, '@') : NULL;

	return at ? (size_t)(at - name) : name ? strlen(name) : 0;
}

int main(int argc, char **argv)
{
	u64 step = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	bool plant = argc > 3 && atoi(argv[3]);
	unsigned long compared = 0, wrong = 0;
	const char *want, *got;
	struct symtab *t;
	Dwfl_Module *mod;
	GElf_Addr bias;
	GElf_Off woff;
	GElf_Phdr ph;
	GElf_Sym sym;
	size_t n, i;
	Dwfl *dwfl;
	u64 a, goff;
	Elf *elf;
	int fd;

	if (argc < 2 || !step) {
		fprintf(stderr, "usage: symtab-check FILE [STEP [PLANT]]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	dwfl = dwfl_begin(&callbacks);
	if (fd < 0 || !dwfl) {
		perror(argv[1]);
		return 2;
	}
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, argv[1], argv[1], fd, 0, true);
	dwfl_report_end(dwfl, NULL, NULL);
	elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	if (!elf || elf_getphdrnum(elf, &n)) {
		fprintf(stderr, "%s: not an ELF file libdwfl reads\n", argv[1]);
		return 2;
	}
	t = symtab_read(mod, false);
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		for (a = ph.p_vaddr; a < ph.p_vaddr + ph.p_memsz; a += step) {
			want = dwfl_module_addrinfo(mod, a, &woff, &sym, NULL,
						    NULL, NULL);
			if (want && !want[0])
				want = NULL;
			got = symtab_find(t, a, &goff);
			if (plant && got && compared % 1000 == 0)
				goff++;
			compared++;
			if (name_len(want) == name_len(got) &&
			    (!want || (!strncmp(want, got, name_len(want)) &&
				       woff == goff)))
				continue;
			if (wrong++ < 10)
				printf("0x%llx: libdwfl %s+0x%llx, symtab %s+0x%llx\n",
				       (unsigned long long)a, want ?: "(none)",
				       (unsigned long long)(want ? woff : 0),
				       got ?: "(none)",
				       (unsigned long long)(got ? goff : 0));
		}
	}
	printf("%s: %lu addresses, %lu disagree\n", argv[1], compared, wrong);
	symtab_free(t);
	dwfl_end(dwfl);
	return wrong ? 1 : 0;
}
