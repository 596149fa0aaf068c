// SPDX-License-Identifier: GPL-2.0
/*
 * Addresses of traced processes: their symbol and source line (elfutils'
 * libdwfl), and the code at them (for capstone).
 *
 * Each process has a mapping set (maps.c).  An executable mapping of an
 * ELF file, or of a memory image the trace carries (the vDSO), is a load
 * of the file's module at some bias.  A file has one module, reported to
 * a Dwfl of its own at bias 0 and looked up at the address less the
 * mapping's bias, whatever process maps it where: a libc loaded by 3,000
 * processes at 3,000 addresses is read once.  A module remembers what it
 * said about each address (its symbol, sorted by symtab.c, and its source
 * line).  Memory images with the same bytes are one file.  Modules and
 * files live as long as the symbol table, so the strings and code they
 * hand out stay valid.  Files named by a raw file may be anything: only
 * regular files that can be mapped are read.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <err.h>
#include <errno.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <limits.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/hashtable.h>

#include "bts-dump.h"

/* buckets of the process and file hash tables: 2^SYMS_HASH_BITS */
#define SYMS_HASH_BITS	10
#define INSN_CACHE	4096
/* PLT entries are 16 bytes, in the order of their .rel(a).plt relocations. */
#define PLT_ENTRY	16

/* Code or a memory image, and what its ELF program headers say. */
struct elf_file {
	char *path;
	const char *name;	/* base name, for display */
	/* a copy's (by_build_id()): the base name of the path it was at */
	char *copy_of;
	unsigned char *data;
	size_t size;
	bool mapped;		/* @data is an mmap() of the file */
	bool usable;		/* an x86 ELF executable or shared object */
	bool is64;
	bool exec;		/* ET_EXEC: loaded where it was linked */
	u64 hash;		/* of the path, or of a memory image's bytes */
	/* which file it is: stat()'s, and its build ID (0 bytes: none) */
	dev_t dev;
	ino_t ino;
	u64 mtime;		/* ns since the epoch */
	unsigned int build_id_len;
	unsigned char build_id[BUILD_ID_MAX];
	/* why it could not be read: an errno; 0 if it was, or not tried */
	int error;
	/* bts-dump said it cannot use the file for a mapping of the trace */
	bool said;
	GElf_Phdr *loads;
	size_t nloads;
	/* "puts@plt" for each entry of [plt_start, plt_end), if named */
	u64 plt_start;
	u64 plt_end;
	char **plt_names;
	size_t nplt;
	struct module *mod;	/* NULL until an address in it is looked up */
	struct elf_file *next;	/* all files */
	struct hlist_node node;	/* in syms::files_by_hash */
};

enum memo_insn {
	MEMO_INSN_UNASKED,
	MEMO_INSN_DECODED,
	MEMO_INSN_NONE,		/* no instruction there that decodes */
};

/* What a module says about an address of it (bias 0). */
struct addr_memo {
	u64 addr;
	const char *sym;
	u64 sym_off;
	const char *src;
	int line;
	/* the instruction there, once proc_insn_kind() asked */
	u8 insn;		/* enum memo_insn */
	u8 insn_len;
	u8 insn_kind;		/* enum insn_kind */
	/* the functions inlined here, once proc_inline() asked */
	bool inline_asked;
	u8 ninline;
	struct inline_frame *inline_frames;
};

struct module {
	struct elf_file *file;
	Dwfl *dwfl;
	Dwfl_Module *dwmod;
	bool demangle;
	/* an address was looked up that has no line: no DWARF at all */
	bool dwarf_checked;
	bool no_dwarf;
	struct symtab *symtab;
	/* open addressing; an unused slot's @sym is MEMO_FREE */
	struct addr_memo *memo;
	size_t memo_size;
	size_t memo_used;
};

/*
 * A memory image at @addr, or (@whole) a copy of the whole file the
 * mapping at @addr maps, the file @inode on @dev.
 */
struct image {
	u64 addr;
	bool whole;
	u64 inode;
	dev_t dev;
	struct elf_file *file;
	struct image *next;
};

struct proc {
	u32 pid;
	/*
	 * The trace announces the process's mapping changes in order
	 * (BTS_PSEUDO_MAP): a later /proc snapshot, taken after branches
	 * still unprinted ran, would only blur them.
	 */
	bool announced;
	/* its parent, as the first /proc snapshot naming one says; or 0 */
	u32 ppid;
	struct mapset maps;
	/*
	 * The mappings before the last exec, for its system call's
	 * @exec_entry and the straight-line code from @exec_from to it,
	 * which the trace gives after the new program's mappings; 0: none
	 * to look up there.
	 */
	struct mapset before_exec;
	u64 exec_from;
	u64 exec_entry;
	/* bumped whenever @maps changes: cached lookups are per generation */
	unsigned int gen;
	/* memory images of this process, newest first */
	struct image *images;
	/* its name, "" until the trace says */
	char comm[COMM_MAX];
	/* symbols of its JIT code; NULL until code in no file was seen */
	struct jit_map *jit;
	/* its threads the trace has not seen exit */
	unsigned int threads;
	/*
	 * In syms::procs, by pid, while it runs; then, its last thread
	 * gone, in syms::ended (its pid may name another process next).
	 */
	struct hlist_node node;
};

struct insn_slot {
	const struct elf_file *file;
	u64 addr;
	size_t off;
	bool ok;
	struct insn insn;
};

struct syms {
	DECLARE_HASHTABLE(procs, SYMS_HASH_BITS);
	struct hlist_head ended;
	struct elf_file *files;
	DECLARE_HASHTABLE(files_by_hash, SYMS_HASH_BITS);
	struct addr_info ai;	/* what proc_addr() returned last */
	bool demangle;		/* C++ and Rust names */
	struct insn_slot *insn_cache;
	struct debuginfod *debuginfod;	/* NULL until asked for a file */
};

/*
 * libdebuginfod, opened the first time a file is asked for, as libdw
 * opens it: linked, it would bring libcurl and some thirty libraries
 * more into every run, for the few that need it.
 */
struct debuginfod {
	void *lib;
	debuginfod_client *client;
	int (*find_executable)(debuginfod_client *client,
			       const unsigned char *build_id, int len,
			       char **path);
	void (*end)(debuginfod_client *client);
};

static struct debuginfod *debuginfod_open(void)
{
	struct debuginfod *d = xcalloc(1, sizeof(*d));
	debuginfod_client *(*begin)(void);

	d->lib = dlopen("libdebuginfod.so.1", RTLD_LAZY);
	if (!d->lib)
		return d;
	begin = dlsym(d->lib, "debuginfod_begin");
	d->find_executable = dlsym(d->lib, "debuginfod_find_executable");
	d->end = dlsym(d->lib, "debuginfod_end");
	if (begin && d->find_executable && d->end)
		d->client = begin();
	return d;
}

/* Not a name: a memo slot in no use. */
static const char MEMO_FREE[] = "";

static char *debuginfo_path;

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct syms *syms_new(bool demangle)
{
	struct syms *st = xcalloc(1, sizeof(*st));

	hash_init(st->procs);
	INIT_HLIST_HEAD(&st->ended);
	hash_init(st->files_by_hash);
	st->demangle = demangle;
	elf_version(EV_CURRENT);
	return st;
}

/* What @p's branches are looked up in: its mappings, images, JIT map. */
static void proc_release(struct proc *p)
{
	struct image *i, *in;

	for (i = p->images; i; i = in) {
		in = i->next;
		free(i);
	}
	p->images = NULL;
	mapset_free(&p->maps);
	mapset_free(&p->before_exec);
	jit_map_free(p->jit);
	p->jit = NULL;
	p->gen++;
}

void syms_free(struct syms *st)
{
	struct elf_file *f, *fn;
	struct hlist_node *pn;
	struct proc *p;
	size_t b;

	hash_for_each_safe(st->procs, b, pn, p, node) {
		proc_release(p);
		free(p);
	}
	hlist_for_each_entry_safe(p, pn, &st->ended, node) {
		proc_release(p);
		free(p);
	}
	for (f = st->files; f; f = fn) {
		fn = f->next;
		if (f->mod) {
			symtab_free(f->mod->symtab);
			if (f->mod->dwfl)
				dwfl_end(f->mod->dwfl);
			for (b = 0; b < f->mod->memo_size; b++)
				if (f->mod->memo[b].sym != MEMO_FREE)
					free(f->mod->memo[b].inline_frames);
			free(f->mod->memo);
			free(f->mod);
		}
		if (f->mapped)
			munmap(f->data, f->size);
		else
			free(f->data);
		for (b = 0; b < f->nplt; b++)
			free(f->plt_names[b]);
		free(f->plt_names);
		free(f->loads);
		free(f->path);
		free(f->copy_of);
		free(f);
	}
	free(st->insn_cache);
	if (st->debuginfod) {
		if (st->debuginfod->client)
			st->debuginfod->end(st->debuginfod->client);
		if (st->debuginfod->lib)
			dlclose(st->debuginfod->lib);
		free(st->debuginfod);
	}
	free(st);
}

static struct proc *proc_find(struct syms *st, u32 pid)
{
	struct proc *p;

	hash_for_each_possible(st->procs, p, node, pid)
		if (p->pid == pid)
			return p;
	return NULL;
}

/* The process @pid names now: a new one if it has none running. */
struct proc *proc_get(struct syms *st, u32 pid)
{
	struct proc *p = proc_find(st, pid);

	if (p)
		return p;
	p = xcalloc(1, sizeof(*p));
	p->pid = pid;
	hash_add(st->procs, &p->node, pid);
	return p;
}

/**
 * proc_thread_new() - a thread of @p appeared in the trace
 * @p: the process
 */
void proc_thread_new(struct proc *p)
{
	p->threads++;
}

/**
 * proc_thread_exit() - a thread of @p exited
 * @st: the symbol tables
 * @p: the process
 *
 * After its last, the process is over: what its branches were looked up
 * in is freed (a trace of many processes holds the mappings of those
 * running), and its pid names a new process from then on (the kernel may
 * give it to another).  @p itself stays, for its name and parent.
 */
void proc_thread_exit(struct syms *st, struct proc *p)
{
	if (!p->threads || --p->threads)
		return;
	proc_release(p);
	hash_del(&p->node);
	hlist_add_head(&p->node, &st->ended);
}

/*
 * A process seen for the first time starts with its parent's mappings and
 * images (a fork copies them) when its parent is known: its snapshot may
 * have been taken after it exec()ed, too late for its first branches.
 */
void proc_add_maps(struct syms *st, struct proc *p, u32 ppid,
		   const char *text, size_t len)
{
	struct proc *parent;
	struct mapset snap;
	struct image *i, **tail;

	/* The first: a process whose parent died gets another one. */
	if (!p->ppid && ppid != p->pid)
		p->ppid = ppid;
	if (p->announced)
		return;
	parent = ppid && ppid != p->pid ? proc_find(st, ppid) : NULL;
	if (!p->maps.n && parent && parent->maps.n) {
		mapset_copy(&p->maps, &parent->maps);
		tail = &p->images;
		while (*tail)
			tail = &(*tail)->next;
		for (i = parent->images; i; i = i->next) {
			*tail = xcalloc(1, sizeof(**tail));
			(*tail)->addr = i->addr;
			(*tail)->file = i->file;
			(*tail)->next = NULL;
			tail = &(*tail)->next;
		}
		p->gen++;
	}
	mapset_parse(text, len, &snap);
	if (mapset_merge(&p->maps, &snap))
		p->gen++;
}

static Elf_Scn *section(Elf *e, size_t shstrndx, const char *name,
			GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	const char *n;

	while ((scn = elf_nextscn(e, scn))) {
		n = gelf_getshdr(scn, sh) ? elf_strptr(e, shstrndx, sh->sh_name) :
					    NULL;
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

struct slot_name {
	u64 slot;
	const char *name;
};

static int by_slot(const void *a, const void *b)
{
	const struct slot_name *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/*
 * The GOT slot a PLT entry jumps through: "jmp *disp(%rip)" (x86-64), or
 * "jmp *abs" or "jmp *disp(%ebx)" off the GOT (i386), after an endbr and
 * a bnd prefix or not.
 */
static bool plt_slot(const struct elf_file *f, const u8 *p, u64 vaddr,
		     u64 got, u64 *slot)
{
	int32_t disp;
	int k;

	for (k = 0; k + 6 <= PLT_ENTRY; k++) {
		if (p[k] != 0xff || (p[k + 1] != 0x25 && p[k + 1] != 0xa3))
			continue;
		memcpy(&disp, p + k + 2, 4);
		if (f->is64 && p[k + 1] == 0x25)
			*slot = vaddr + k + 6 + disp;
		else if (!f->is64 && p[k + 1] == 0x25)
			*slot = (u32)disp;
		else if (!f->is64)
			*slot = (u32)(got + disp);
		else
			continue;
		return true;
	}
	return false;
}

/*
 * PLT entries have no symbols: name them after the function whose GOT
 * slot they jump through (its .rel(a).plt relocation's symbol), as gdb
 * and perf do.  The entries are those of .plt.sec, or of .plt after its
 * first.
 */
static void plt_parse(struct elf_file *f, Elf *e)
{
	GElf_Shdr plt, rel, dynsym, got = { 0 };
	struct slot_name *slots, key, *hit;
	size_t shstrndx, i, n, ns = 0, first = 0;
	Elf_Scn *rscn, *dscn;
	Elf_Data *rd, *sd;
	const char *name;
	GElf_Rela rela;
	GElf_Rel r;
	GElf_Sym sym;
	u64 info, off, slot;

	if (elf_getshdrstrndx(e, &shstrndx))
		return;
	rscn = section(e, shstrndx, ".rela.plt", &rel);
	if (!rscn)
		rscn = section(e, shstrndx, ".rel.plt", &rel);
	if (!rscn || (rel.sh_type != SHT_RELA && rel.sh_type != SHT_REL))
		return;
	if (!section(e, shstrndx, ".plt.sec", &plt)) {
		if (!section(e, shstrndx, ".plt", &plt))
			return;
		first = 1;
	}
	section(e, shstrndx, ".got.plt", &got);
	if (plt.sh_type != SHT_PROGBITS || plt.sh_offset > f->size ||
	    plt.sh_size > f->size - plt.sh_offset ||
	    plt.sh_size / PLT_ENTRY <= first)
		return;
	dscn = elf_getscn(e, rel.sh_link);
	rd = elf_getdata(rscn, NULL);
	sd = dscn ? elf_getdata(dscn, NULL) : NULL;
	if (!rd || !sd || !gelf_getshdr(dscn, &dynsym))
		return;

	n = rd->d_size / gelf_fsize(e, rel.sh_type == SHT_RELA ? ELF_T_RELA :
				    ELF_T_REL, 1, EV_CURRENT);
	slots = xcalloc(n, sizeof(*slots));
	for (i = 0; i < n; i++) {
		if (rel.sh_type == SHT_RELA && gelf_getrela(rd, i, &rela)) {
			info = rela.r_info;
			slot = rela.r_offset;
		} else if (rel.sh_type == SHT_REL && gelf_getrel(rd, i, &r)) {
			info = r.r_info;
			slot = r.r_offset;
		} else {
			continue;
		}
		/* No symbol: an ifunc's IRELATIVE slot. */
		if (!GELF_R_SYM(info) || !gelf_getsym(sd, GELF_R_SYM(info), &sym))
			continue;
		name = elf_strptr(e, dynsym.sh_link, sym.st_name);
		if (name && *name) {
			slots[ns].slot = slot;
			slots[ns++].name = name;
		}
	}
	qsort(slots, ns, sizeof(*slots), by_slot);

	n = plt.sh_size / PLT_ENTRY - first;
	f->plt_start = plt.sh_addr + first * PLT_ENTRY;
	f->plt_end = f->plt_start + n * PLT_ENTRY;
	f->plt_names = xcalloc(n, sizeof(*f->plt_names));
	f->nplt = n;
	for (i = 0; i < n && ns; i++) {
		off = (first + i) * PLT_ENTRY;
		if (!plt_slot(f, f->data + plt.sh_offset + off,
			      plt.sh_addr + off, got.sh_addr, &key.slot))
			continue;
		hit = bsearch(&key, slots, ns, sizeof(*slots), by_slot);
		if (!hit)
			continue;
		f->plt_names[i] = xmalloc(strlen(hit->name) + 5);
		sprintf(f->plt_names[i], "%s@plt", hit->name);
	}
	free(slots);
}

/*
 * Read the ELF headers of @f's data.  A file that is not usable is kept
 * all the same, so that it is not opened again.
 */
static void file_parse(struct elf_file *f)
{
	const void *id;
	ssize_t id_len;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t n, i;
	Elf *e;

	e = elf_memory((char *)f->data, f->size);
	if (!e)
		return;
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) ||
	    (eh.e_machine != EM_X86_64 && eh.e_machine != EM_386) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    elf_getphdrnum(e, &n))
		goto out;
	f->loads = xcalloc(n, sizeof(*f->loads));
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_offset <= f->size && ph.p_filesz <= f->size - ph.p_offset)
			f->loads[f->nloads++] = ph;
	}
	f->is64 = eh.e_machine == EM_X86_64;
	f->exec = eh.e_type == ET_EXEC;
	f->usable = f->nloads > 0;
	id_len = dwelf_elf_gnu_build_id(e, &id);
	if (id_len > 0 && id_len <= BUILD_ID_MAX) {
		memcpy(f->build_id, id, id_len);
		f->build_id_len = id_len;
	}
	plt_parse(f, e);
out:
	elf_end(e);
}

/* FNV-1a */
static u64 hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	u64 h = 0xcbf29ce484222325ULL;

	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

static struct elf_file *file_new(struct syms *st, const char *path, u64 hash)
{
	struct elf_file *f = xcalloc(1, sizeof(*f));

	f->path = xstrdup(path);
	f->name = base_name(f->path);
	f->hash = hash;
	f->next = st->files;
	st->files = f;
	hash_add(st->files_by_hash, &f->node, hash);
	return f;
}

static u64 mtime_ns(const struct stat *sb)
{
	return (u64)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
}

/* What is at @path now, as a new version of it in the cache. */
static struct elf_file *file_open(struct syms *st, const char *path,
				  u64 hash)
{
	struct elf_file *f = file_new(st, path, hash);
	struct stat sb;
	void *data;
	int fd;

	f->mapped = true;
	/* Not a FIFO or a device: a raw file may name anything. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		f->error = errno;
		return f;
	}
	if (fstat(fd, &sb)) {
		f->error = errno;
		close(fd);
		return f;
	}
	f->dev = sb.st_dev;
	f->ino = sb.st_ino;
	f->mtime = mtime_ns(&sb);
	if (!S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
	    (u64)sb.st_size > SIZE_MAX) {
		close(fd);
		return f;
	}
	/* Writable private pages: libelf may fix up what it reads in place. */
	data = mmap(NULL, sb.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	f->error = data == MAP_FAILED ? errno : 0;
	close(fd);
	if (data == MAP_FAILED)
		return f;
	f->data = data;
	f->size = sb.st_size;
	file_parse(f);
	return f;
}

/* Whether @path is another file now than @f, the newest read of it. */
static bool file_changed(const struct elf_file *f)
{
	struct stat sb;

	if (stat(f->path, &sb))
		return errno != f->error;
	return f->error || sb.st_dev != f->dev || sb.st_ino != f->ino ||
	       mtime_ns(&sb) != f->mtime || (u64)sb.st_size != f->size;
}

/* The file of a memory image: one for all images with the same bytes. */
static struct elf_file *image_file(struct syms *st, const void *data,
				   size_t len)
{
	u64 hash = hash_bytes(data, len);
	struct elf_file *f;

	hash_for_each_possible(st->files_by_hash, f, node, hash)
		if (!f->mapped && f->hash == hash && f->size == len &&
		    !memcmp(f->data, data, len))
			return f;
	f = file_new(st, "[memory]", hash);
	f->data = xmalloc(len);
	memcpy(f->data, data, len);
	f->size = len;
	file_parse(f);
	return f;
}

static struct image *image_add(struct syms *st, struct proc *p, u64 addr,
			       const void *data, size_t len)
{
	struct image *i = xcalloc(1, sizeof(*i));
	size_t k;

	i->addr = addr;
	i->file = image_file(st, data, len);
	i->next = p->images;
	p->images = i;
	/* A mapping looked at before its image came is looked at again. */
	for (k = 0; k < p->maps.n; k++)
		if (p->maps.v[k].start == addr)
			p->maps.v[k].resolved = false;
	p->gen++;
	return i;
}

void proc_add_memory(struct syms *st, struct proc *p, u64 addr,
		     const void *data, size_t len)
{
	image_add(st, p, addr, data, len);
}

/*
 * A copy of the file a mapping maps, which the trace carries because the
 * file's path named another file, or none, when the tracer looked: the
 * mapping's names come from it.
 */
void proc_add_file(struct syms *st, struct proc *p, const struct file_id *id,
		   const void *data, size_t len)
{
	struct image *i = image_add(st, p, id->start, data, len);

	i->whole = true;
	i->inode = id->inode;
	i->dev = makedev(id->dev_major, id->dev_minor);
}

/*
 * What the trace carries for @map: the memory image at its start (the
 * vDSO's), or (@whole) a copy of the file it maps, that very inode.
 */
static struct elf_file *carried(const struct proc *p,
				const struct mapping *map, bool whole)
{
	const struct image *i;

	for (i = p->images; i; i = i->next)
		if (i->whole == whole && i->addr == map->start &&
		    (!whole || (i->inode == map->inode &&
				i->dev == makedev(map->dev_major,
						  map->dev_minor))))
			return i->file;
	return NULL;
}

/*
 * The process executed a new program: nothing of the old one is mapped,
 * but for the exec's own system call (proc_exec_entry()).  The memory
 * images stay: one of the new program's (its vDSO) may have come before
 * the trace's exec record did.
 */
void proc_exec(struct syms *st, struct proc *p)
{
	(void)st;
	mapset_free(&p->before_exec);
	p->before_exec = p->maps;
	p->maps = (struct mapset){ 0 };
	p->exec_entry = 0;
	p->announced = true;
	p->gen++;
}

/**
 * proc_exec_entry() - where the exec's system call was made
 * @p: the process
 * @from: where the straight-line code that led to it started; 0 if not known
 * @addr: the system call's address, or 0 when it is named
 *
 * The trace gives the stay in the kernel that executed a new program
 * after the new program's mappings: until it is named, @addr and the code
 * from @from to it are looked up in the old program's; then they are gone.
 */
void proc_exec_entry(struct proc *p, u64 from, u64 addr)
{
	p->exec_from = from && from <= addr ? from : addr;
	p->exec_entry = addr;
	if (!addr)
		mapset_free(&p->before_exec);
	p->gen++;
}

void proc_set_comm(struct proc *p, const char *name, size_t len)
{
	set_comm(p->comm, name, len);
}

/* Lines of the process's JIT map as the trace carries them; see jit.c. */
void proc_add_jit(struct proc *p, u32 ns_pid, bool whole, const char *text,
		  size_t len)
{
	if (!p->jit)
		p->jit = jit_map_new(p->pid);
	jit_map_add(p->jit, ns_pid, whole, text, len);
}

/* The process's name, NULL if the trace has not said. */
const char *proc_comm(const struct proc *p)
{
	return p->comm[0] ? p->comm : NULL;
}

/* The pid of @p's parent, or 0 if the trace did not say. */
u32 proc_ppid(const struct proc *p)
{
	return p->ppid;
}

/*
 * The mappings of @p, and in *@gen their generation, which changes
 * whenever they do.
 */
const struct mapset *proc_maps(const struct proc *p, unsigned int *gen)
{
	*gen = p->gen;
	return &p->maps;
}

/* A mapping the trace announced: it replaces what its range showed. */
void proc_map(struct syms *st, struct proc *p, const struct mapping *m)
{
	struct mapset one = { xmalloc(sizeof(*m)), 1 };

	(void)st;
	one.v[0] = *m;
	one.v[0].path = xstrdup(m->path);
	one.v[0].resolved = false;
	one.v[0].mod = NULL;
	mapset_merge(&p->maps, &one);
	p->announced = true;
	p->gen++;
}

/* A range the trace announced as unmapped. */
void proc_unmap(struct syms *st, struct proc *p, u64 start, u64 end)
{
	(void)st;
	if (mapset_remove(&p->maps, start, end))
		p->gen++;
	p->announced = true;
}

/*
 * Records of the process were lost, announced mapping changes maybe among
 * them: its /proc snapshots are the best guess again, until the trace
 * announces a change.
 */
void proc_trace_gap(struct syms *st, struct proc *p)
{
	(void)st;
	p->announced = false;
}

/* Give libdwfl an image through a memfd, as it wants a file. */
static int image_fd(const struct elf_file *f)
{
	size_t done = 0;
	ssize_t n;
	int fd;

	fd = memfd_create("bts-dump-image", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	while (done < f->size) {
		n = write(fd, f->data + done, f->size - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += n;
	}
	return fd;
}

/* @f's module, made on first use: @name is how a mapping names @f. */
static struct module *module_get(struct elf_file *f, const char *name,
				 bool demangle)
{
	struct module *m = f->mod;
	int fd = -1;

	if (m)
		return m;
	m = xcalloc(1, sizeof(*m));
	m->file = f;
	m->demangle = demangle;
	f->mod = m;

	if (!f->mapped) {
		fd = image_fd(f);
		if (fd < 0)
			return m;
	}
	m->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!m->dwfl) {
		if (fd >= 0)
			close(fd);
		return m;
	}
	dwfl_report_begin(m->dwfl);
	/* libdwfl takes @fd, and closes it when it cannot use it. */
	m->dwmod = dwfl_report_elf(m->dwfl, name, f->mapped ? f->path : name,
				   fd, 0, true);
	dwfl_report_end(m->dwfl, NULL, NULL);
	return m;
}

/*
 * The bias of the load that @map is part of: where the PT_LOAD segment
 * holding its file offset was put, less where it was linked.  Segments
 * may share a page, so an executable one is looked for first.
 */
static bool load_bias(const struct elf_file *f, const struct mapping *map,
		      u64 *bias)
{
	const GElf_Phdr *ph;
	int pass;
	size_t i;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < f->nloads; i++) {
			ph = &f->loads[i];
			if (!pass && !(ph->p_flags & PF_X))
				continue;
			if (map->offset < (ph->p_offset & ~(u64)0xfff) ||
			    map->offset >= ph->p_offset + ph->p_filesz)
				continue;
			/* Modulo 2^64, as a bias may be "negative". */
			*bias = map->start - map->offset -
				(ph->p_vaddr - ph->p_offset);
			return !f->exec || *bias == 0;
		}
	}
	return false;
}

/*
 * What tells that @f is not the file @map mapped, if anything: the file
 * at the path may have been rebuilt or replaced since.  The build ID is
 * the file's identity where both have one; else the modification time a
 * MAP record gave; else the inode, where the device is the same (on
 * overlayfs, /proc/PID/maps shows another device than stat()).
 */
static const char *file_differs(const struct elf_file *f,
				const struct mapping *map)
{
	if (map->build_id_len && f->build_id_len)
		return map->build_id_len != f->build_id_len ||
		       memcmp(map->build_id, f->build_id, f->build_id_len) ?
		       "build ID" : NULL;
	if (map->mtime)
		return map->mtime != f->mtime ? "modification time" : NULL;
	if (map->inode && f->dev == makedev(map->dev_major, map->dev_minor))
		return map->inode != f->ino ? "inode" : NULL;
	return NULL;
}

/*
 * The file @map mapped: a version of its path read before that is it (a
 * trace may map a file, then a rebuilt one at the same path), else what
 * is at the path now.  Returns the newest version when none is the one
 * mapped (file_differs() or its error says why).
 */
static struct elf_file *mapped_file(struct syms *st,
				    const struct mapping *map)
{
	u64 hash = hash_bytes(map->path, strlen(map->path));
	struct elf_file *f, *newest = NULL;

	/* Newest first: hash_add() puts each at the head of its bucket. */
	hash_for_each_possible(st->files_by_hash, f, node, hash) {
		if (!f->mapped || f->hash != hash || strcmp(f->path, map->path))
			continue;
		if (!newest)
			newest = f;
		if (f->usable && !file_differs(f, map))
			return f;
	}
	if (!newest || file_changed(newest))
		newest = file_open(st, map->path, hash);
	return newest;
}

/**
 * syms_prefetch() - read the file a mapping names, now
 * @st: the symbols
 * @m: the mapping, as the trace announced it
 *
 * For records held before they print (order.c): the file is read while
 * it is still the one mapped, and that version stays for its lookups
 * however the path changes meanwhile.
 */
void syms_prefetch(struct syms *st, const struct mapping *m)
{
	if (!mapping_in_no_file(m))
		mapped_file(st, m);
}

/* The copy at @path, of the file @map mapped, if it is one. */
static struct elf_file *copy_at(struct syms *st, const char *path,
				const struct mapping *map)
{
	u64 hash = hash_bytes(path, strlen(path));
	struct elf_file *f;

	/* Copies by build ID do not change: one read each. */
	hash_for_each_possible(st->files_by_hash, f, node, hash)
		if (f->mapped && f->hash == hash && !strcmp(f->path, path))
			goto found;
	f = file_open(st, path, hash);
	if (!f->usable)
		return NULL;
	f->copy_of = xstrdup(base_name(map->path));
	f->name = f->copy_of;
found:
	return f->usable && !file_differs(f, map) ? f : NULL;
}

/*
 * The file of @map's build ID where debuggers find one that was rebuilt
 * or replaced since it ran: perf's build-ID cache (perf record and perf
 * buildid-cache -a copy files there: $PERF_BUILDID_DIR, else ~/.debug,
 * the file .build-id/ab/cdef.../elf), then the debuginfod servers
 * $DEBUGINFOD_URLS names, as gdb and perf ask them.
 */
static struct elf_file *by_build_id(struct syms *st, const struct mapping *map)
{
	char hex[2 * BUILD_ID_MAX + 1], path[PATH_MAX];
	const char *dir = getenv("PERF_BUILDID_DIR");
	const char *home = getenv("HOME");
	struct elf_file *f = NULL;
	char *fetched = NULL;
	unsigned int i;
	int fd;

	for (i = 0; i < map->build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", map->build_id[i]);
	if (dir || home) {
		snprintf(path, sizeof(path), "%s%s/.build-id/%.2s/%s/elf",
			 dir ?: home, dir ? "" : "/.debug", hex, hex + 2);
		if (!access(path, R_OK))
			f = copy_at(st, path, map);
	}
	if (f || !getenv("DEBUGINFOD_URLS"))
		return f;
	if (!st->debuginfod)
		st->debuginfod = debuginfod_open();
	if (!st->debuginfod->client)
		return NULL;
	/* A path in the client's cache, which the next lookup finds. */
	fd = st->debuginfod->find_executable(st->debuginfod->client,
					     map->build_id, map->build_id_len,
					     &fetched);
	if (fd >= 0) {
		close(fd);
		f = copy_at(st, fetched, map);
	}
	free(fetched);
	return f;
}

/*
 * The file a mapping's path names now, if it is the one mapped; else one
 * of the same build ID from a build-ID cache or debuginfod.
 */
static struct elf_file *path_file(struct syms *st, struct mapping *map)
{
	struct elf_file *f = mapped_file(st, map), *copy;
	const char *differs = f->usable ? file_differs(f, map) : NULL;

	if (differs && map->build_id_len) {
		copy = by_build_id(st, map);
		if (copy)
			return copy;
	}
	if (differs) {
		/* Its names would be another program's: none. */
		if (!f->said)
			warnx("%s: not the file the trace mapped (its %s differs: rebuilt or replaced since): its addresses are not symbolized%s",
			      map->path, differs, map->build_id_len ?
			      "; none of its build ID in perf's build-ID cache or from debuginfod (perf buildid-cache -a FILE keeps a copy)" :
			      "");
		f->said = true;
		return NULL;
	}
	if (f->error || !f->usable) {
		if (!f->said)
			warnx("%s: %s: its addresses are not symbolized",
			      map->path, f->error ? strerror(f->error) :
			      "not an x86 ELF program or library");
		f->said = true;
		return NULL;
	}
	return f;
}

static struct module *resolve(struct syms *st, struct proc *p,
			      struct mapping *map)
{
	struct elf_file *f;
	u64 bias;

	if (map->resolved)
		return map->mod;
	map->resolved = true;
	if (!strchr(map->perms, 'x'))
		return NULL;
	if (mapping_in_no_file(map))
		f = carried(p, map, false);
	else
		f = carried(p, map, true) ?: path_file(st, map);
	if (!f || !f->usable || !load_bias(f, map, &bias))
		return NULL;
	map->bias = bias;
	map->mod = module_get(f, map->path, st->demangle);
	return map->mod;
}

static struct mapping *find(struct proc *p, u64 addr)
{
	if (p->exec_entry && addr >= p->exec_from && addr <= p->exec_entry)
		return (struct mapping *)mapset_find(&p->before_exec, addr);
	return (struct mapping *)mapset_find(&p->maps, addr);
}

static size_t hash(const void *ptr, u64 addr, size_t size)
{
	u64 h = (addr ^ (uintptr_t)ptr) * 0x9e3779b97f4a7c15ULL;

	return (h >> 32) & (size - 1);
}

static struct addr_memo *memo_slot(struct addr_memo *memo, size_t size,
				   u64 addr)
{
	size_t i = hash(NULL, addr, size);

	while (memo[i].sym != MEMO_FREE && memo[i].addr != addr)
		i = (i + 1) & (size - 1);
	return &memo[i];
}

/* Half full at most: twice the size when it would be more. */
static void memo_grow(struct module *m)
{
	struct addr_memo *old = m->memo;
	size_t i, old_size = m->memo_size;

	m->memo_size = old_size ? 2 * old_size : 1024;
	m->memo = xmalloc(m->memo_size * sizeof(*m->memo));
	for (i = 0; i < m->memo_size; i++)
		m->memo[i].sym = MEMO_FREE;
	for (i = 0; i < old_size; i++)
		if (old[i].sym != MEMO_FREE)
			*memo_slot(m->memo, m->memo_size, old[i].addr) = old[i];
	free(old);
}

/*
 * PLT entry @i's name, "std::terminate()@plt" as the module shows the
 * function's own: demangled (once, in place) if the module demangles.
 */
static const char *plt_name(struct module *m, size_t i)
{
	char *name = m->file->plt_names[i], *at;
	const char *shown;

	if (!name || !m->demangle)
		return name;
	at = strrchr(name, '@');
	*at = '\0';
	shown = symtab_shown_name(m->symtab, name);
	*at = '@';
	if (shown == name)
		return name;
	m->file->plt_names[i] = xmalloc(strlen(shown) + 5);
	sprintf(m->file->plt_names[i], "%s@plt", shown);
	free(name);
	return m->file->plt_names[i];
}

/* What @m says about its address @addr (bias 0), asked once. */
static struct addr_memo *module_addr(struct module *m, u64 addr)
{
	struct addr_memo *am;
	Dwfl_Line *line;
	const char *src;
	int lineno;

	if (2 * (m->memo_used + 1) > m->memo_size)
		memo_grow(m);
	am = memo_slot(m->memo, m->memo_size, addr);
	if (am->sym != MEMO_FREE)
		return am;
	m->memo_used++;
	*am = (struct addr_memo) { .addr = addr };
	if (!m->symtab)
		m->symtab = symtab_read(m->dwmod, m->demangle);
	am->sym = symtab_find(m->symtab, addr, &am->sym_off);
	if (!am->sym && addr >= m->file->plt_start && addr < m->file->plt_end) {
		am->sym_off = addr - m->file->plt_start;
		am->sym = plt_name(m, am->sym_off / PLT_ENTRY);
		am->sym_off %= PLT_ENTRY;
	}
	line = m->dwmod ? dwfl_module_getsrc(m->dwmod, addr) : NULL;
	src = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) :
		     NULL;
	if (src && lineno > 0) {
		am->src = base_name(src);
		am->line = lineno;
	} else if (!m->dwarf_checked) {
		Dwarf_Addr bias;

		m->dwarf_checked = true;
		m->no_dwarf = !dwfl_module_getdwarf(m->dwmod, &bias);
	}
	return am;
}

/* The pointer is valid until the next call. */
const struct addr_info *proc_addr(struct syms *st, struct proc *p,
				  u64 addr)
{
	struct addr_info *ai = &st->ai;
	const struct addr_memo *am;
	struct mapping *map;
	struct module *m;

	memset(ai, 0, sizeof(*ai));
	map = find(p, addr);
	m = map ? resolve(st, p, map) : NULL;
	/* Code in no file: a JIT's, if the process said so as perf asks. */
	if (!m && (!map || mapping_in_no_file(map))) {
		if (!p->jit)
			p->jit = jit_map_new(p->pid);
		ai->sym = jit_map_find(p->jit, addr, &ai->sym_off, &ai->mod);
		if (ai->sym) {
			ai->mod_off = addr;
			return ai;
		}
	}
	if (!map)
		return ai;
	if (map->path[0] == '/')
		ai->path = map->path;
	if (!m) {
		if (map->path[0]) {
			ai->mod = base_name(map->path);
			ai->mod_off = addr - map->start +
				      (map->path[0] == '/' ? map->offset : 0);
		}
		return ai;
	}
	ai->mod = m->file->mapped ? m->file->name : base_name(map->path);
	ai->mod_off = addr - map->bias;
	if (!m->dwmod)
		return ai;
	am = module_addr(m, addr - map->bias);
	ai->sym = am->sym;
	ai->sym_off = am->sym_off;
	ai->src = am->src;
	ai->line = am->line;
	return ai;
}

/*
 * The files (base names, up to @max into @names) that addresses were
 * looked up in and that lack what @lack says; returns how many.  A file
 * without functions is not also counted without lines.  Memory images
 * (the vDSO) are not counted: no package has their debug information.
 */
size_t syms_lacking(struct syms *st, enum syms_lack lack,
		    const char **names, size_t max)
{
	struct elf_file *f;
	bool stripped;
	size_t n = 0;

	for (f = st->files; f; f = f->next) {
		if (!f->mapped || !f->mod)
			continue;
		stripped = f->mod->symtab &&
			   !symtab_has_functions(f->mod->symtab);
		if (lack == SYMS_NO_FUNCTIONS ? !stripped :
		    stripped || !f->mod->no_dwarf)
			continue;
		if (n < max)
			names[n] = f->name;
		n++;
	}
	return n;
}

/*
 * The functions inlined at @addr, innermost first and the one the symbol
 * table names last (inline_frames()); 0 where nothing is.
 */
unsigned int proc_inline(struct syms *st, struct proc *p, u64 addr,
			 const struct inline_frame **frames)
{
	struct mapping *map = find(p, addr);
	struct module *m = map ? resolve(st, p, map) : NULL;
	struct addr_memo *am;
	struct inline_frame *f;
	unsigned int n, k;

	*frames = NULL;
	if (!m || !m->dwmod)
		return 0;
	am = module_addr(m, addr - map->bias);
	if (!am->inline_asked) {
		n = inline_frames(m->dwmod, addr - map->bias, am->src,
				  am->line, &f);
		for (k = 0; k < n; k++)
			if (f[k].func)
				f[k].func = symtab_shown_name(m->symtab,
							      f[k].func);
		/* Deeper than anyone reads: the innermost and outermost. */
		if (n > UINT8_MAX) {
			f[UINT8_MAX - 1] = f[n - 1];
			n = UINT8_MAX;
		}
		am->inline_asked = true;
		am->ninline = n;
		am->inline_frames = f;
	}
	*frames = am->inline_frames;
	return am->ninline;
}

/*
 * The loaded segment of @p's code at @addr, as proc_code_segment() tells
 * it; NULL if no file's segment holds it.
 */
static const GElf_Phdr *segment_at(struct syms *st, struct proc *p, u64 addr,
				   struct mapping **mapp, struct module **modp)
{
	struct mapping *map = find(p, addr);
	struct module *m = map ? resolve(st, p, map) : NULL;
	const GElf_Phdr *ph;
	u64 vaddr;
	size_t i;

	if (!m)
		return NULL;
	vaddr = addr - map->bias;
	for (i = 0; i < m->file->nloads; i++) {
		ph = &m->file->loads[i];
		if (vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr < ph->p_filesz) {
			*mapp = map;
			*modp = m;
			return ph;
		}
	}
	return NULL;
}

static const unsigned char *code_at(struct syms *st, struct proc *p,
				    u64 addr, size_t *len,
				    struct elf_file **file)
{
	const GElf_Phdr *ph;
	struct mapping *map;
	struct module *m;
	u64 vaddr;

	ph = segment_at(st, p, addr, &map, &m);
	if (!ph)
		return NULL;
	vaddr = addr - map->bias;
	*len = ph->p_filesz - (vaddr - ph->p_vaddr);
	*file = m->file;
	/* file_parse() checked the segment lies within the file. */
	return m->file->data + ph->p_offset + (vaddr - ph->p_vaddr);
}

/**
 * proc_code_segment() - where the code at an address of a process came from
 * @st: the symbol table
 * @p: the process
 * @addr: the address
 * @seg: set to the segment of the file that holds it, and where it is
 *
 * For outputs that hand the code on to other tools (--format=pt): the
 * file as bts-dump read it, which may be a copy the trace carries (the
 * vDSO's image) rather than one on disk.
 *
 * Return: whether a file's loaded segment holds @addr.
 */
bool proc_code_segment(struct syms *st, struct proc *p, u64 addr,
		       struct code_segment *seg)
{
	const GElf_Phdr *ph;
	struct mapping *map;
	struct module *m;

	ph = segment_at(st, p, addr, &map, &m);
	if (!ph)
		return false;
	seg->file = m->file;
	seg->path = m->file->mapped ? m->file->path : NULL;
	seg->data = m->file->data;
	seg->size = m->file->size;
	seg->mapped_as = map->path;
	seg->offset = ph->p_offset;
	seg->filesz = ph->p_filesz;
	seg->addr = map->bias + ph->p_vaddr;
	return true;
}

/**
 * proc_insn_kind() - what the instruction at an address of a process is
 * @st: the symbol table
 * @p: the process
 * @addr: the address
 * @kind: set to the instruction's kind
 * @len: set to its length
 *
 * What a branch's source needs, remembered by the module: a trace decodes
 * the same branches over and over.
 *
 * Return: whether there is an instruction at @addr that decodes.
 */
bool proc_insn_kind(struct syms *st, struct proc *p, u64 addr,
		    enum insn_kind *kind, unsigned int *len)
{
	struct mapping *map = find(p, addr);
	struct module *m = map ? resolve(st, p, map) : NULL;
	const struct insn *in;
	struct addr_memo *am;

	if (!m || !m->dwmod)
		goto uncached;
	am = module_addr(m, addr - map->bias);
	if (am->insn == MEMO_INSN_UNASKED) {
		in = proc_insn(st, p, addr);
		am->insn = in ? MEMO_INSN_DECODED : MEMO_INSN_NONE;
		am->insn_len = in ? in->len : 0;
		am->insn_kind = in ? in->kind : 0;
	}
	*kind = am->insn_kind;
	*len = am->insn_len;
	return am->insn == MEMO_INSN_DECODED;
uncached:
	in = proc_insn(st, p, addr);
	if (!in)
		return false;
	*kind = in->kind;
	*len = in->len;
	return true;
}

/* The pointer is valid until the next call. */
const struct insn *proc_insn(struct syms *st, struct proc *p, u64 addr)
{
	struct elf_file *f;
	struct insn_slot *s;
	const unsigned char *code;
	size_t len;

	code = code_at(st, p, addr, &len, &f);
	if (!code)
		return NULL;
	if (!st->insn_cache)
		st->insn_cache = xcalloc(INSN_CACHE, sizeof(*st->insn_cache));
	s = &st->insn_cache[hash(f, addr, INSN_CACHE)];
	if (s->file != f || s->addr != addr || s->off != (size_t)(code - f->data)) {
		s->file = f;
		s->addr = addr;
		s->off = code - f->data;
		s->ok = decode(code, len, addr, f->is64, &s->insn);
	}
	return s->ok ? &s->insn : NULL;
}
