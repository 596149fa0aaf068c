// SPDX-License-Identifier: GPL-2.0
/*
 * --inline: the functions inlined at an address, from the DWARF scopes
 * that contain it (libdw's dwarf_getscopes(), dwarf_getscopes_die()), as
 * perf script --inline and addr2line -i show them.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>

#include "bts-dump.h"

/*
 * The function's linkage name where it has one (C++'s, Rust's: mangled,
 * for the symbol table's demangler, so that an inlined method reads as
 * its symbol does, "ns::K::twice(int)"), else its name.
 */
static const char *die_name(Dwarf_Die *die)
{
	static const unsigned int names[] = {
		DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name,
	};
	Dwarf_Attribute attr;
	const char *name;
	size_t i;

	/* An inlined subroutine names itself through its abstract origin. */
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		name = dwarf_formstring(dwarf_attr_integrate(die, names[i],
							     &attr));
		if (name)
			return name;
	}
	return NULL;
}

static bool die_udata(Dwarf_Die *die, unsigned int name, Dwarf_Word *val)
{
	Dwarf_Attribute attr;

	return !dwarf_formudata(dwarf_attr(die, name, &attr), val);
}

/*
 * The frames at @addr (an address of @mod as libdwfl has it), innermost
 * first: each function the code is in, with where in it: the address's
 * @src:@line for the innermost, the call site of the one it inlines for
 * the others.  The last is the function the symbol table names.  Returns
 * how many, into a new array at *@out; none (0) where nothing is inlined.
 */
unsigned int inline_frames(Dwfl_Module *mod, u64 addr, const char *src,
			   int line, struct inline_frame **out)
{
	Dwarf_Die *cu, *scopes = NULL, innermost;
	Dwarf_Files *files = NULL;
	struct inline_frame *f = NULL;
	unsigned int n = 0;
	Dwarf_Word file, call_line;
	Dwarf_Addr bias;
	size_t nfiles = 0;
	int i, nscopes;
	int tag;

	*out = NULL;
	cu = dwfl_module_addrdie(mod, addr, &bias);
	if (!cu)
		return 0;
	/*
	 * The innermost scope at @addr, then every scope it is nested in:
	 * dwarf_getscopes() goes from an inlined subroutine to its abstract
	 * origin's scopes, not to the code it was inlined into.
	 */
	nscopes = dwarf_getscopes(cu, addr - bias, &scopes);
	if (nscopes <= 0)
		return 0;
	innermost = scopes[0];
	free(scopes);
	scopes = NULL;
	nscopes = dwarf_getscopes_die(&innermost, &scopes);
	if (nscopes <= 0)
		return 0;
	dwarf_getsrcfiles(cu, &files, &nfiles);
	for (i = 0; i < nscopes; i++) {
		tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_subprogram)
			continue;
		f = xrealloc(f, (n + 1) * sizeof(*f));
		f[n].func = die_name(&scopes[i]);
		f[n].src = src;
		f[n].line = line;
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		/* Where it was inlined: the caller's position. */
		src = NULL;
		line = 0;
		if (die_udata(&scopes[i], DW_AT_call_file, &file) && files &&
		    file < nfiles) {
			src = dwarf_filesrc(files, file, NULL, NULL);
			src = src ? base_name(src) : NULL;
		}
		if (die_udata(&scopes[i], DW_AT_call_line, &call_line))
			line = call_line;
	}
	free(scopes);
	if (n < 2) {
		free(f);
		return 0;
	}
	*out = f;
	return n;
}
