// SPDX-License-Identifier: GPL-2.0
/*
 * maps: the address-space annotations of /dev/bts (BTS_ATTACH_MAPS), in
 * the test VM.  Prints TAP.
 *
 *	maps [PROGRAM]
 *
 * A traced child maps a file's code and calls it, unmaps it, writes code
 * into an anonymous page, makes it executable and calls it, maps the
 * file's code again and moves it with mremap() before calling it, and then
 * executes PROGRAM (a dynamically linked one, /bin/true by default).  Its
 * stream must announce each executable range, with the file's identity,
 * build ID and name, before the first branch into it and its end after
 * the last; after the EXEC record every branch must lie in a range the
 * stream announced after it.  Without BTS_ATTACH_MAPS nothing changes.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/bts.h>

#include "tap.h"

#define MAX_RECORDS	(1 << 21)
#define MAX_MAPS	64

/* A BTS_PSEUDO_MAP record with what its details said. */
struct map {
	long at;			/* index in the trace */
	unsigned int event, flags;
	uint64_t start, end;
	uint64_t offset, ino, dev, mtime;
	int has_file;
	unsigned char build_id[32];
	unsigned int build_id_len;
	char name[BTS_MAP_NAME_MAX + 16];
};

struct trace {
	struct bts_record *r;
	long n;
	struct map maps[MAX_MAPS];
	int nr_maps, lost_maps;
	long pseudo_maps;		/* MAP records and their details */
};

/* Bytes of a 16-byte detail, in memory order. */
static void detail_bytes(const struct bts_record *r, unsigned char *out)
{
	memcpy(out, &r->to, 8);
	memcpy(out + 8, &r->flags, 8);
}

/* Collect the MAP records of @t with their details. */
static void parse_maps(struct trace *t)
{
	struct map cur = { 0 };
	long i;

	for (i = 0; i < t->n; i++) {
		const struct bts_record *r = &t->r[i];
		unsigned int type, layout, val;

		if (!BTS_RECORD_IS_PSEUDO(r->from))
			continue;
		type = BTS_PSEUDO_TYPE(r->from);
		if (type == BTS_PSEUDO_DETAIL &&
		    BTS_DETAIL_TYPE(r->from) == BTS_PSEUDO_MAP) {
			t->pseudo_maps++;
			layout = BTS_DETAIL_LAYOUT(r->from);
			val = BTS_DETAIL_VAL(r->from);
			if (layout == BTS_DETAIL_MAP_FILE && val == 0) {
				cur.offset = r->to;
				cur.ino = r->flags;
				cur.has_file = 1;
			} else if (layout == BTS_DETAIL_MAP_FILE && val == 1) {
				cur.dev = r->to;
				cur.mtime = r->flags;
			} else if (layout == BTS_DETAIL_MAP_BUILD_ID && val < 2) {
				detail_bytes(r, cur.build_id + 16 * val);
			} else if (layout == BTS_DETAIL_MAP_NAME &&
				   val < BTS_MAP_NAME_MAX / 16) {
				detail_bytes(r, (unsigned char *)cur.name +
					     16 * val);
			}
			continue;
		}
		if (type != BTS_PSEUDO_MAP)
			continue;
		t->pseudo_maps++;
		cur.at = i;
		cur.event = BTS_MAP_EVENT(r->from);
		cur.flags = BTS_MAP_FLAGS(r->from);
		cur.build_id_len = BTS_MAP_BUILD_ID_LEN(r->from);
		cur.start = r->to;
		cur.end = r->flags;
		if (t->nr_maps < MAX_MAPS)
			t->maps[t->nr_maps++] = cur;
		else
			t->lost_maps++;
		memset(&cur, 0, sizeof(cur));
	}
}

/* The child's code: a file mapped and called, a JIT page, an exec. */
static void child(int go, const char *code_path, const char *program)
{
	static const unsigned char ret_insn[] = { 0xc3 };
	void (*fn)(void);
	void *p, *to;
	char c;
	int fd;

	if (read(go, &c, 1) != 1)
		_exit(126);
	fd = open(code_path, O_RDONLY);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (fd < 0 || p == MAP_FAILED)
		_exit(125);
	fn = (void (*)(void))p;
	fn();
	munmap(p, 4096);
	close(fd);

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(125);
	memcpy(p, ret_insn, sizeof(ret_insn));
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
		_exit(125);
	fn = (void (*)(void))p;
	fn();
	munmap(p, 4096);

	/* The file's code again, moved to where a reservation was. */
	fd = open(code_path, O_RDONLY);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	to = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || p == MAP_FAILED || to == MAP_FAILED)
		_exit(125);
	p = mremap(p, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (p != to)
		_exit(125);
	fn = (void (*)(void))p;
	fn();
	munmap(p, 4096);
	close(fd);

	execl(program, program, (char *)NULL);
	_exit(127);
}

/* Trace a child from before its first mapping to its exit. */
static int trace_child(struct trace *t, __u32 flags, const char *code_path,
		       const char *program)
{
	struct bts_attach a = { .size = sizeof(a), .flags = flags };
	int p[2], fd, status;
	pid_t pid;
	long got;

	memset(t, 0, sizeof(*t));
	t->r = calloc(MAX_RECORDS, sizeof(*t->r));
	if (!t->r || pipe(p))
		return -1;
	pid = fork();
	if (!pid) {
		close(p[1]);
		child(p[0], code_path, program);
	}
	close(p[0]);
	fd = open("/dev/bts", O_RDONLY);
	a.pid = pid;
	if (fd < 0 || ioctl(fd, BTS_IOC_ATTACH, &a)) {
		diag("attach: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	if (write(p[1], "x", 1) != 1)
		return -1;
	close(p[1]);
	for (;;) {
		if (t->n == MAX_RECORDS)
			break;
		got = read(fd, t->r + t->n, (MAX_RECORDS - t->n) * sizeof(*t->r));
		if (got <= 0)
			break;
		t->n += got / (long)sizeof(*t->r);
	}
	waitpid(pid, &status, 0);
	close(fd);
	parse_maps(t);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		diag("child status %#x", status);
		return -1;
	}
	return 0;
}

/* The GNU build ID of the ELF file @path, its length; 0 if none. */
static unsigned int elf_build_id(const char *path, unsigned char *id)
{
	unsigned int len = 0;
	Elf64_Ehdr *eh;
	struct stat st;
	char *file;
	int fd, i;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 0;
	file = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (file == MAP_FAILED)
		return 0;
	eh = (Elf64_Ehdr *)file;
	for (i = 0; i < eh->e_phnum && !len; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(file + eh->e_phoff) + i;
		size_t off = 0;

		if (ph->p_type != PT_NOTE)
			continue;
		while (off + sizeof(Elf64_Nhdr) <= ph->p_filesz) {
			Elf64_Nhdr *nh = (Elf64_Nhdr *)(file + ph->p_offset + off);
			char *name = (char *)(nh + 1);
			unsigned char *desc = (unsigned char *)name +
					      ((nh->n_namesz + 3) & ~3U);

			if (nh->n_type == NT_GNU_BUILD_ID &&
			    nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    nh->n_descsz <= 20) {
				len = nh->n_descsz;
				memcpy(id, desc, len);
				break;
			}
			off += sizeof(*nh) + ((nh->n_namesz + 3) & ~3U) +
			       ((nh->n_descsz + 3) & ~3U);
		}
	}
	munmap(file, st.st_size);
	return len;
}

static int is_branch(const struct bts_record *r)
{
	return !BTS_RECORD_IS_PSEUDO(r->from);
}

static int in(uint64_t a, const struct map *m)
{
	return a >= m->start && a < m->end;
}

/* Branches of @t into or out of [@start, @end) between records @a and @b. */
static long branches_in(const struct trace *t, uint64_t start, uint64_t end,
			long a, long b)
{
	long i, n = 0;

	for (i = a + 1; i < b && i < t->n; i++) {
		const struct bts_record *r = &t->r[i];

		n += is_branch(r) &&
		     ((r->from >= start && r->from < end) ||
		      (r->to >= start && r->to < end));
	}
	return n;
}

static const struct map *find_map(const struct trace *t, unsigned int event,
				  int (*match)(const struct map *, const void *),
				  const void *arg, long after)
{
	int i;

	for (i = 0; i < t->nr_maps; i++)
		if (t->maps[i].event == event && t->maps[i].at > after &&
		    match(&t->maps[i], arg))
			return &t->maps[i];
	return NULL;
}

static int named(const struct map *m, const void *name)
{
	return !strcmp(m->name, name);
}

static int anonymous(const struct map *m, const void *unused)
{
	(void)unused;
	return (m->flags & BTS_MAP_ANONYMOUS) && !m->name[0];
}

static int covering(const struct map *m, const void *addr)
{
	return in(*(const uint64_t *)addr, m);
}

static void diag_maps(const struct trace *t)
{
	int i;

	for (i = 0; i < t->nr_maps; i++)
		diag("record %ld: MAP event %u flags %#x %#llx-%#llx %s",
		     t->maps[i].at, t->maps[i].event, t->maps[i].flags,
		     (unsigned long long)t->maps[i].start,
		     (unsigned long long)t->maps[i].end, t->maps[i].name);
}

/*
 * A mapping announced after record @since: none of its branches (a call
 * and a return) before its MMAP, both before its MUNMAP.  Returns the
 * MUNMAP's index, or -1.
 */
static long check_span(const struct trace *t, const struct map *m, long since,
		       const char *what)
{
	const struct map *u = find_map(t, BTS_MAP_MUNMAP, covering, &m->start,
				       m->at);
	long early = branches_in(t, m->start, m->end, since, m->at);
	long inside = u ? branches_in(t, m->start, m->end, m->at, u->at) : 0;

	tap(u && u->start == m->start && u->end == m->end && !early &&
	    inside == 2,
	    "%s: its call and return (%ld) come between its MMAP (%ld) and MUNMAP (%ld), none before (%ld)",
	    what, inside, m->at, u ? u->at : -1L, early);
	return u ? u->at : -1;
}

/*
 * The device /proc/self/maps shows for a mapping of @path: the record's
 * (stat() shows the backing file's on overlayfs, as /tmp is in the VM).
 */
static uint64_t maps_device(const char *path)
{
	unsigned int maj = 0, min = 0;
	char line[PATH_MAX + 128];
	uint64_t dev = ~0ULL;
	void *p = MAP_FAILED;
	FILE *f;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd >= 0)
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	f = fopen("/proc/self/maps", "r");
	while (f && p != MAP_FAILED && fgets(line, sizeof(line), f)) {
		unsigned long start;

		if (sscanf(line, "%lx-%*x %*s %*x %x:%x", &start, &maj,
			   &min) == 3 && start == (unsigned long)p)
			dev = (uint64_t)maj << 32 | min;
	}
	if (f)
		fclose(f);
	if (p != MAP_FAILED)
		munmap(p, 4096);
	if (fd >= 0)
		close(fd);
	return dev;
}

/* The file mapping: announced with its identity, before its calls. */
static long check_file(const struct trace *t, const char *path)
{
	const struct map *m = find_map(t, BTS_MAP_MMAP, named, path, -1);
	uint64_t dev, mtime;
	struct stat st;

	tap(m != NULL, "mmap of a file: a MAP record named %s", path);
	if (!m) {
		diag_maps(t);
		return -1;
	}
	stat(path, &st);
	dev = maps_device(path);
	mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	tap(m->end - m->start == 4096 && m->has_file && m->offset == 0 &&
	    m->ino == st.st_ino && m->dev == dev && m->mtime == mtime &&
	    !(m->flags & BTS_MAP_ANONYMOUS),
	    "its range, offset, inode, device and time are the file's");
	if (m->ino != st.st_ino || m->dev != dev || m->mtime != mtime)
		diag("record: inode %llu device %#llx time %llu; the file: %llu %#llx %llu",
		     (unsigned long long)m->ino, (unsigned long long)m->dev,
		     (unsigned long long)m->mtime,
		     (unsigned long long)st.st_ino, (unsigned long long)dev,
		     (unsigned long long)mtime);
	return check_span(t, m, -1, "the file");
}

/*
 * The file's code mapped again after record @after and moved by mremap():
 * its old range's MUNMAP, then its new range's MMAP, with the file's name
 * and offset, before the call there.
 */
static void check_moved(const struct trace *t, long after, const char *path)
{
	const struct map *old = find_map(t, BTS_MAP_MMAP, named, path, after);
	const struct map *gone = old ? find_map(t, BTS_MAP_MUNMAP, covering,
						&old->start, old->at) : NULL;
	const struct map *m = gone ? find_map(t, BTS_MAP_MMAP, named, path,
					      gone->at) : NULL;

	tap(old && gone && m && m->start != old->start &&
	    m->end - m->start == 4096 && m->offset == 0,
	    "mremap() of the file's code: its old range's MUNMAP, then its new range's MMAP");
	if (!m) {
		diag_maps(t);
		return;
	}
	check_span(t, m, gone->at, "the moved code");
}

/*
 * The page made executable with mprotect(): anonymous code.  Returns the
 * index of its MUNMAP, or -1.
 */
static long check_jit(const struct trace *t, long after)
{
	const struct map *m = NULL;
	int i;

	for (i = 0; i < t->nr_maps; i++)
		if (t->maps[i].at > after && t->maps[i].event == BTS_MAP_MMAP &&
		    anonymous(&t->maps[i], NULL)) {
			m = &t->maps[i];
			break;
		}
	tap(m && m->end - m->start == 4096,
	    "mprotect() to executable: an anonymous MAP record of its page");
	return m ? check_span(t, m, after, "the anonymous code") : -1;
}

/*
 * After the exec: EXEC, then the program, its interpreter and the vDSO
 * announced, and every branch after the EXEC in a range announced after
 * it.
 */
static void check_exec(const struct trace *t, const char *program)
{
	const struct map *x = NULL, *prog;
	unsigned char id[20];
	unsigned int id_len;
	long i, outside = 0, branches = 0, last_old = -1;
	char real[PATH_MAX];
	int j, vdso = 0, interp = 0;

	for (j = 0; j < t->nr_maps; j++)
		if (t->maps[j].event == BTS_MAP_EXEC)
			x = &t->maps[j];
	tap(x != NULL, "exec: an EXEC record");
	if (!x)
		return;
	if (!realpath(program, real))
		snprintf(real, sizeof(real), "%s", program);
	prog = find_map(t, BTS_MAP_MMAP, named, real, x->at);
	tap(prog != NULL, "the new program %s is announced after it", real);
	id_len = elf_build_id(real, id);
	if (prog)
		tap(id_len && prog->build_id_len == id_len &&
		    !memcmp(prog->build_id, id, id_len),
		    "its build ID is the file's (%u bytes, the record says %u)",
		    id_len, prog->build_id_len);
	for (j = 0; j < t->nr_maps; j++) {
		if (t->maps[j].at < x->at || t->maps[j].event != BTS_MAP_MMAP)
			continue;
		vdso += !strcmp(t->maps[j].name, "[vdso]") &&
			(t->maps[j].flags & BTS_MAP_ANONYMOUS);
		interp += strstr(t->maps[j].name, "/ld-linux") != NULL;
	}
	tap(vdso == 1 && interp >= 1,
	    "the vDSO (%d) and the interpreter (%d) are announced", vdso,
	    interp);
	for (i = 0; i < t->n; i++) {
		const struct bts_record *r = &t->r[i];
		int ok_from = !r->from, ok_to = !r->to;

		if (!is_branch(r))
			continue;
		if (i < x->at) {
			last_old = i;
			continue;
		}
		branches++;
		for (j = 0; j < t->nr_maps; j++) {
			const struct map *m = &t->maps[j];

			if (m->at < x->at || m->at > i ||
			    m->event != BTS_MAP_MMAP)
				continue;
			ok_from |= in(r->from, m);
			ok_to |= in(r->to, m);
		}
		if (!(ok_from && ok_to) && outside++ < 3)
			diag("record %ld: %#llx -> %#llx in no range announced before it",
			     i, (unsigned long long)r->from,
			     (unsigned long long)r->to);
	}
	tap(last_old >= 0 && branches > 1000 && !outside,
	    "the old program's branches precede EXEC; all %ld after it lie in ranges announced since (%ld outside)",
	    branches, outside);
}

int main(int argc, char **argv)
{
	const char *program = argc > 1 ? argv[1] : "/bin/true";
	static const unsigned char code[4096] = { 0xc3 };
	char code_path[] = "/tmp/maps-code-XXXXXX";
	static struct trace with, without;
	int fd, ret;

	fd = mkstemp(code_path);
	if (fd < 0 || write(fd, code, sizeof(code)) != sizeof(code)) {
		printf("Bail out! %s: %s\n", code_path, strerror(errno));
		return 1;
	}
	close(fd);

	ret = trace_child(&with, BTS_ATTACH_MAPS, code_path, program);
	tap(!ret,
	    "a child traced with BTS_ATTACH_MAPS: %ld records, %d MAP records",
	    with.n, with.nr_maps);
	tap(with.lost_maps == 0 && with.nr_maps > 0,
	    "the test kept every MAP record (%d past %d)", with.lost_maps,
	    MAX_MAPS);
	check_moved(&with, check_jit(&with, check_file(&with, code_path)),
		    code_path);
	check_exec(&with, program);

	ret = trace_child(&without, 0, code_path, program);
	tap(!ret && without.pseudo_maps == 0 && without.n > 1000,
	    "without BTS_ATTACH_MAPS: no MAP record nor detail (%ld of %ld records)",
	    without.pseudo_maps, without.n);
	unlink(code_path);
	printf("1..%d\n", nr);
	return failed != 0;
}
