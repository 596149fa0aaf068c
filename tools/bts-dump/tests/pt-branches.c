// SPDX-License-Identifier: GPL-2.0
/*
 * pt-branches PT-FILE ELF[@BIAS]...: the branches an Intel PT packet
 * stream says a program took, decoded with libipt's instruction flow
 * decoder and the executable segments of the ELF files (loaded at BIAS,
 * hex, default 0; 64-bit or 32-bit).  An independent reader of bts-dump --format=pt: its
 * output goes to tests/bts/compare.py like perf script's.
 *
 * Prints "FROM => TO" (hex) for each branch taken: a call, return or
 * jump, a conditional jump whose next instruction is not the one after
 * it; "FROM => 0" where tracing stopped (a system call's instruction, or
 * where an interrupt came); "# overflow", "# error ..." where the decoder
 * lost the flow and synchronized again.  Exit 0 unless it cannot start.
 */
#include <elf.h>
#include <err.h>
#include <fcntl.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void *map_file(const char *path, size_t *size)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		err(2, "%s", path);
	*size = st.st_size;
	p = mmap(NULL, st.st_size ? st.st_size : 1, PROT_READ, MAP_PRIVATE,
		 fd, 0);
	if (p == MAP_FAILED)
		err(2, "%s", path);
	close(fd);
	return p;
}

/* Program header @i of @file, 64-bit or 32-bit, as a 64-bit one. */
static Elf64_Phdr phdr(const unsigned char *file, int i)
{
	const Elf64_Ehdr *eh64 = (const void *)file;
	const Elf32_Ehdr *eh32 = (const void *)file;
	const Elf32_Phdr *p;

	if (file[EI_CLASS] == ELFCLASS64)
		return *(const Elf64_Phdr *)(file + eh64->e_phoff +
					     i * eh64->e_phentsize);
	p = (const void *)(file + eh32->e_phoff + i * eh32->e_phentsize);
	return (Elf64_Phdr){ .p_type = p->p_type, .p_flags = p->p_flags,
			     .p_offset = p->p_offset, .p_vaddr = p->p_vaddr,
			     .p_filesz = p->p_filesz };
}

/* The executable PT_LOADs of a 64-bit or 32-bit ELF file at @bias. */
static void add_elf(struct pt_image *image, const char *arg)
{
	char path[4096];
	const char *at = strchr(arg, '@');
	uint64_t bias = at ? strtoull(at + 1, NULL, 16) : 0;
	const unsigned char *file;
	size_t size;
	int i, phnum, n = 0;

	snprintf(path, sizeof(path), "%.*s",
		 at ? (int)(at - arg) : (int)strlen(arg), arg);
	file = map_file(path, &size);
	if (size < sizeof(Elf64_Ehdr) || memcmp(file, ELFMAG, SELFMAG) ||
	    (file[EI_CLASS] != ELFCLASS64 && file[EI_CLASS] != ELFCLASS32))
		errx(2, "%s: not a 64-bit or 32-bit ELF file", path);
	phnum = file[EI_CLASS] == ELFCLASS64 ?
		((const Elf64_Ehdr *)file)->e_phnum :
		((const Elf32_Ehdr *)file)->e_phnum;
	for (i = 0; i < phnum; i++) {
		Elf64_Phdr ph = phdr(file, i);

		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (pt_image_add_file(image, path, ph.p_offset, ph.p_filesz,
				      NULL, bias + ph.p_vaddr) < 0)
			errx(2, "%s: libipt does not take its segment %d",
			     path, i);
		n++;
	}
	if (!n)
		errx(2, "%s: no executable segment", path);
	munmap((void *)file, size);
}

struct flow {
	bool have_last;
	struct pt_insn last;	/* the instruction before the next */
};

static bool always_branches(enum pt_insn_class c)
{
	return c == ptic_call || c == ptic_return || c == ptic_jump;
}

/* The flow got to @ip: from the last instruction, by a branch or not. */
static void reached(struct flow *f, uint64_t ip)
{
	const struct pt_insn *l = &f->last;

	if (f->have_last && (l->ip + l->size != ip ||
			     always_branches(l->iclass)))
		printf("%" PRIx64 " => %" PRIx64 "\n", l->ip, ip);
}

static void on_insn(struct flow *f, const struct pt_insn *in)
{
	reached(f, in->ip);
	f->last = *in;
	f->have_last = true;
}

static void on_event(struct flow *f, const struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_disabled:
		/* At the instruction that left: the last one decoded. */
		if (f->have_last)
			printf("%" PRIx64 " => 0\n", f->last.ip);
		f->have_last = false;
		break;
	case ptev_async_disabled:
		/* before the instruction there: a branch may have led to it */
		reached(f, ev->variant.async_disabled.at);
		printf("%" PRIx64 " => 0\n", ev->variant.async_disabled.at);
		f->have_last = false;
		break;
	case ptev_overflow:
		printf("# overflow\n");
		f->have_last = false;
		break;
	case ptev_enabled:
		f->have_last = false;
		break;
	default:
		break;
	}
}

int main(int argc, char **argv)
{
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	struct flow f = { 0 };
	struct pt_event ev;
	struct pt_insn in;
	size_t size;
	int status, i;

	if (argc < 3)
		errx(2, "usage: pt-branches PT-FILE ELF[@BIAS]...");
	pt_config_init(&cfg);
	cfg.begin = map_file(argv[1], &size);
	cfg.end = cfg.begin + size;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec)
		errx(2, "libipt: cannot make a decoder");
	for (i = 2; i < argc; i++)
		add_elf(pt_insn_get_image(dec), argv[i]);

	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status < 0)
			break;
		f.have_last = false;
		for (;;) {
			while (status & pts_event_pending) {
				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				on_event(&f, &ev);
			}
			if (status < 0 || (status & pts_eos))
				break;
			status = pt_insn_next(dec, &in, sizeof(in));
			if (status < 0)
				break;
			on_insn(&f, &in);
		}
		if (status < 0 && status != -pte_eos) {
			uint64_t off = 0;

			pt_insn_get_offset(dec, &off);
			printf("# error at offset 0x%" PRIx64 ": %s\n", off,
			       pt_errstr(pt_errcode(status)));
			continue;
		}
		if (status < 0 || (status & pts_eos))
			break;
	}
	pt_insn_free_decoder(dec);
	return 0;
}
