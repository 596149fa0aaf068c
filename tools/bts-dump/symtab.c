// SPDX-License-Identifier: GPL-2.0
/*
 * A module's symbols, read once, sorted, looked up by binary search.
 *
 * libdwfl's dwfl_module_addrinfo() scans the whole symbol table for every
 * address: on a trace through a library with tens of thousands of
 * symbols, it was 85% of the decoding time.  The table here gives the
 * same answers (tests/symtab-check.c compares the two on every address
 * of a few libraries), with the same rules:
 *
 *  - a symbol with a size names the addresses it covers; a global or weak
 *    one is preferred to a local one, then the one that starts closest
 *    below the address, then the stronger binding (global, weak, local),
 *    then the smaller, then the first in the table;
 *  - where no symbol with a size covers the address, the closest symbol
 *    without one (hand-written assembly) below it names it, if it is in
 *    the same section and no symbol with a size ends between them.  As
 *    for libdwfl, a section's end address is in it (unless the next
 *    starts there), and addresses in no section are in the same one.
 *
 * Names are given without their symbol version ("memcpy@@GLIBC_2.14"),
 * and C++ and Rust names (legacy and v0) demangled, as perf and gdb show
 * them, unless asked not to: a name the first time it is found, so that
 * a table of a million C++ symbols costs only those a trace reaches.
 */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

/* libiberty's, the same but for its spaces. */
#undef ARRAY_SIZE
#include "bts-dump.h"

struct sym {
	u64 start;
	u64 size;
	const char *name;	/* version cut off */
	const char *shown;	/* @name demangled, once found */
	u32 index;		/* in the module's table: the tie-breaker */
	u32 section;		/* without a size: section_of(@start) */
	bool absolute;		/* without a size: SHN_ABS and the like */
	u8 global;		/* global or weak: searched before locals */
	u8 binding;		/* global 3, weak 2, local 1 */
};

struct section {
	u64 start;
	u64 end;
	u32 index;
};

struct symtab {
	/* with a size, by start; @reach[i]: the furthest end of v[0..i] */
	struct sym *sized;
	u64 *reach;
	size_t nsized;
	/* without a size, by start */
	struct sym *sizeless;
	size_t nsizeless;
	/* allocated sections of the table's ELF file, by start */
	struct section *sections;
	size_t nsections;
	/* names this table had to copy: versions cut off, demangled */
	char **owned;
	size_t nowned;
	bool demangle;
	/* functions among the symbols: none in a stripped program */
	size_t nfuncs;
};

static int by_start(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int section_by_start(const void *a, const void *b)
{
	const struct section *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int binding_of(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

static const char *own(struct symtab *t, char *name)
{
	t->owned = xrealloc(t->owned, (t->nowned + 1) * sizeof(*t->owned));
	t->owned[t->nowned++] = name;
	return name;
}

static const char *cut_version(struct symtab *t, const char *name)
{
	const char *at = strchr(name + 1, '@');

	return at ? own(t, xstrndup(name, at - name)) : name;
}

/**
 * symtab_shown_name() - a symbol's name as the table shows it
 * @t: the table, which keeps the name as long as it lives
 * @name: a name from the ELF file or its DWARF
 *
 * Return: "foo::bar(int)" for "_ZN3foo3barEi", "core::fmt::write" for
 * Rust's, demangled if the table demangles; else @name.
 */
const char *symtab_shown_name(struct symtab *t, const char *name)
{
	char *d;

	if (!t->demangle || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return name;
	d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	return d ? own(t, d) : name;
}

static void read_sections(struct symtab *t, Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t n = 0;

	if (elf_getshdrnum(elf, &n) || !n)
		return;
	t->sections = xcalloc(n, sizeof(*t->sections));
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    !sh.sh_size)
			continue;
		t->sections[t->nsections++] = (struct section) {
			sh.sh_addr, sh.sh_addr + sh.sh_size, elf_ndxscn(scn)
		};
	}
	if (t->nsections)
		qsort(t->sections, t->nsections, sizeof(*t->sections),
		      section_by_start);
}

/* The index of the section holding @addr, SHN_UNDEF if none. */
static u32 section_of(const struct symtab *t, u64 addr)
{
	size_t lo = 0, hi = t->nsections, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < t->sections[mid].start)
			hi = mid;
		else if (addr > t->sections[mid].end)
			lo = mid + 1;
		else if (addr == t->sections[mid].end &&
			 mid + 1 < t->nsections &&
			 addr == t->sections[mid + 1].start)
			return t->sections[mid + 1].index;
		else
			return t->sections[mid].index;
	}
	return SHN_UNDEF;
}

/**
 * symtab_read() - the symbol table of a module, sorted
 * @mod: the module, reported at bias 0 (NULL: an empty table)
 * @demangle: give C++ and Rust names demangled
 *
 * Return: the table, to be freed with symtab_free().  Its names live as
 * long as the table and @mod's Dwfl.
 */
struct symtab *symtab_read(Dwfl_Module *mod, bool demangle)
{
	struct symtab *t = xcalloc(1, sizeof(*t));
	size_t cap_sized = 0, cap_sizeless = 0, i;
	GElf_Addr main_bias;
	Elf *main_elf, *elf;
	int n = mod ? dwfl_module_getsymtab(mod) : -1;
	int first_global;
	const char *name;
	GElf_Word shndx;
	GElf_Addr value;
	GElf_Sym sym;
	struct sym *s;
	int k;

	t->demangle = demangle;
	first_global = n > 0 ? dwfl_module_getsymtab_first_global(mod) : 0;
	for (k = 1; k < n; k++) {
		name = dwfl_module_getsym_info(mod, k, &sym, &value, &shndx,
					       &elf, NULL);
		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) == STT_SECTION ||
		    GELF_ST_TYPE(sym.st_info) == STT_FILE ||
		    GELF_ST_TYPE(sym.st_info) == STT_TLS)
			continue;
		if (sym.st_size) {
			if (t->nsized == cap_sized) {
				cap_sized = cap_sized ? 2 * cap_sized : 1024;
				t->sized = xrealloc(t->sized, cap_sized *
						    sizeof(*t->sized));
			}
			s = &t->sized[t->nsized++];
		} else {
			if (t->nsizeless == cap_sizeless) {
				cap_sizeless = cap_sizeless ?
					       2 * cap_sizeless : 256;
				t->sizeless = xrealloc(t->sizeless,
						       cap_sizeless *
						       sizeof(*t->sizeless));
			}
			s = &t->sizeless[t->nsizeless++];
		}
		if (GELF_ST_TYPE(sym.st_info) == STT_FUNC ||
		    GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC)
			t->nfuncs++;
		*s = (struct sym) {
			.start = value,
			.size = sym.st_size,
			.name = cut_version(t, name),
			/* Globals first, as libdwfl searches them. */
			.index = k >= first_global ? k - first_global : n + k,
			.absolute = shndx >= SHN_LORESERVE,
			.global = first_global <= 1 || k >= first_global,
			.binding = binding_of(&sym),
		};
	}
	/* qsort() may not be given NULL, even for nothing. */
	if (t->nsized)
		qsort(t->sized, t->nsized, sizeof(*t->sized), by_start);
	if (t->nsizeless)
		qsort(t->sizeless, t->nsizeless, sizeof(*t->sizeless),
		      by_start);
	t->reach = xcalloc(t->nsized ?: 1, sizeof(*t->reach));
	for (i = 0; i < t->nsized; i++) {
		t->reach[i] = t->sized[i].start + t->sized[i].size;
		if (i && t->reach[i - 1] > t->reach[i])
			t->reach[i] = t->reach[i - 1];
	}
	main_elf = mod ? dwfl_module_getelf(mod, &main_bias) : NULL;
	if (main_elf)
		read_sections(t, main_elf);
	for (i = 0; i < t->nsizeless; i++)
		t->sizeless[i].section = section_of(t, t->sizeless[i].start);
	return t;
}

/* The number of @v's @n entries that start at or below @addr. */
static size_t count_below(const struct sym *v, size_t n, u64 addr)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is @s a better name for an address both cover than @best? */
static bool better(const struct sym *s, const struct sym *best)
{
	if (s->global != best->global)
		return s->global;
	if (s->start != best->start)
		return s->start > best->start;
	if (s->binding != best->binding)
		return s->binding > best->binding;
	if (s->size != best->size)
		return s->size < best->size;
	return s->index < best->index;
}

/**
 * symtab_find() - the symbol that names an address
 * @t: the module's table
 * @addr: the address, as the module was linked (bias 0)
 * @off: set to @addr's offset in the symbol
 *
 * Return: the symbol's name, NULL if none names @addr.
 */
const char *symtab_find(struct symtab *t, u64 addr, u64 *off)
{
	struct sym *best = NULL, *s;
	size_t i = count_below(t->sized, t->nsized, addr);
	u64 label_min = i ? t->reach[i - 1] : 0;

	/* Only symbols below an earlier reach past @addr can cover it. */
	while (i-- && t->reach[i] > addr) {
		s = &t->sized[i];
		if (addr - s->start < s->size && (!best || better(s, best)))
			best = s;
	}
	i = count_below(t->sizeless, t->nsizeless, addr);
	s = i ? &t->sizeless[i - 1] : NULL;
	/*
	 * A global without a size exactly at @addr keeps libdwfl from
	 * looking at the locals.
	 */
	if (s && s->start == addr && s->global && best && !best->global)
		best = s;
	else if (!best && s && s->start >= label_min &&
		 (s->absolute ? s->start == addr :
		  s->section == section_of(t, addr)))
		best = s;
	if (!best)
		return NULL;
	*off = addr - best->start;
	if (!best->shown)
		best->shown = symtab_shown_name(t, best->name);
	return best->shown;
}

/* Whether the table names any function: not if it was stripped. */
bool symtab_has_functions(const struct symtab *t)
{
	return t->nfuncs;
}

void symtab_free(struct symtab *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	free(t->sized);
	free(t->reach);
	free(t->sizeless);
	free(t->sections);
	free(t);
}
