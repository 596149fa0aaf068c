// SPDX-License-Identifier: GPL-2.0
/*
 * The sink that decodes records and prints them.
 *
 * Records come as /dev/bts gives them: runs of one thread's records, each
 * after a THREAD record, threads interleaved.  Text output follows that
 * order and starts each run with a "[tid N pid P]" header, so nothing is
 * buffered however long the trace.  Each thread keeps what decoding needs
 * across its runs: where its current straight-line block began, the last
 * few blocks (system call numbers are found by decoding back from the
 * system call instruction to the "mov $nr, %eax"), the calls it is in
 * and, for --calls, its function.
 *
 * The calls a thread is in are a stack of the return addresses its calls
 * pushed, as perf's thread stacks and gdb's btrace keep: a return pops to
 * the call whose return address it goes to, however deep, so that after
 * a longjmp() or an exception, which jump out of calls, or a "call 1f;
 * 1: pop", which never returns, the next return puts the depth right.  A
 * return to no address on the stack (the trace began in the callee, or
 * the return address was changed) pops one call.
 */
#define _GNU_SOURCE
#include <err.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "bts-dump.h"

#define THREAD_HASH	1024
/* Blocks of each thread kept for finding system call numbers. */
#define HIST		8
/* The longest block decoded, in bytes: longer ones are not straight. */
#define MAX_BLOCK	(64U * 1024)
/* --calls: indentation stops growing at this depth. */
#define MAX_INDENT	100
/* Calls a thread's stack keeps; past it, the outermost are forgotten. */
#define MAX_FRAMES	(64U * 1024)
/* Not a return address: a signal handler's frame, left by sigreturn. */
#define SIGNAL_FRAME	1

/* A call the thread is in. */
struct frame {
	u64 site;		/* the call instruction, or where a signal came */
	u64 ret;		/* its return address, or SIGNAL_FRAME */
};

/* Straight-line code [start, end) that ran; end == 0: unknown code. */
struct block {
	u64 start;
	u64 end;
};

/* What the details before a BTS_PSEUDO_MAP record said. */
struct map_details {
	unsigned int file_have;		/* BTS_DETAIL_MAP_FILE parts */
	unsigned int id_have;		/* BTS_DETAIL_MAP_BUILD_ID details */
	unsigned int name_have;		/* BTS_DETAIL_MAP_NAME details */
	u64 offset, inode, dev, mtime;
	unsigned char build_id[32];
	char name[BTS_MAP_NAME_MAX];
};

/*
 * Forget the details: the masks say what is there, so clearing them is
 * enough, and cheap on the path of every branch.
 */
static inline void map_details_clear(struct map_details *d)
{
	d->file_have = 0;
	d->id_have = 0;
	d->name_have = 0;
}

struct thread {
	u32 tid;
	u32 pid;
	struct proc *proc;
	/* where the current block started; 0 if unknown */
	u64 at;
	/*
	 * With @at 0 after a stay in the kernel whose resume was not seen
	 * (the kernel's records kept out of the hardware's buffer): where
	 * the thread most likely resumed, past the system call or at the
	 * faulting instruction.  Only a guess, for the one use that checks
	 * it: the straight-line code to the next system call must lead
	 * there (syscall_nr()).
	 */
	u64 likely_at;
	struct block hist[HIST];
	unsigned int nhist;
	unsigned int head;
	/* the calls the thread is in, innermost last */
	struct frame *frames;
	unsigned int nframes;
	unsigned int frames_cap;
	/* --calls: the function last printed */
	char *func;
	/* --trigger: the last lines printed, window_top the next slot */
	char **window;
	unsigned int window_top;
	/* the BTS_PSEUDO_DETAIL record of the next KERNEL record, if any */
	bool have_detail;
	struct bts_record detail;
	/* the payload details of the next MARKER record: which, and theirs */
	unsigned int payload_have;
	unsigned char payload[BTS_MARKER_PAYLOAD_MAX];
	/* the details of the next MAP record: which, and theirs */
	struct map_details map;
	struct thread *next;
};

struct stream {
	u32 id;
	struct thread *t;
};

struct printer {
	struct sink sink;
	FILE *out;
	struct print_opts opts;
	struct syms *syms;
	struct thread *threads[THREAD_HASH];
	struct stream *streams;
	size_t nstreams;
	/* the thread whose header was printed last */
	const struct thread *shown;
	struct events *events;
	/* --trigger: where a record prints, to go to its thread's window */
	FILE *scratch;
	char *scratch_buf;
	size_t scratch_size;
	bool have_exit;
	int exit_status;
	char *exit_cmd;
};

/* How execution went on after a stretch in the kernel. */
enum resume {
	RESUME_NORMAL,		/* where it would have without a signal */
	RESUME_UNKNOWN,		/* cannot tell */
	RESUME_SIGNAL,		/* a signal handler */
	RESUME_SIGRETURN,	/* a signal handler returned */
	RESUME_EXEC,		/* a new program */
};

struct kernel {
	unsigned int kind;
	unsigned int vector;
	u64 entry;
	u64 resume;
	/* the block before it ends here (exclusive) */
	u64 end;
	bool have_nr;
	u64 nr;
	const char *name;
	enum resume how;
	/* from the kernel's detail (BTS_DETAIL_KERNEL_ENTRY), if it came */
	bool have_detail;
	unsigned int abi;
	u64 orig_ax;
	u64 time;
};

static const struct {
	const char *abbr;
	const char *name;
} exceptions[32] = {
	[0] = { "#DE", "divide error" },
	[1] = { "#DB", "debug" },
	[2] = { "NMI", "non-maskable interrupt" },
	[3] = { "#BP", "breakpoint" },
	[4] = { "#OF", "overflow" },
	[5] = { "#BR", "bound range exceeded" },
	[6] = { "#UD", "invalid opcode" },
	[7] = { "#NM", "device not available" },
	[8] = { "#DF", "double fault" },
	[10] = { "#TS", "invalid TSS" },
	[11] = { "#NP", "segment not present" },
	[12] = { "#SS", "stack-segment fault" },
	[13] = { "#GP", "general protection" },
	[14] = { "#PF", "page fault" },
	[16] = { "#MF", "x87 floating-point error" },
	[17] = { "#AC", "alignment check" },
	[18] = { "#MC", "machine check" },
	[19] = { "#XM", "SIMD floating-point" },
	[20] = { "#VE", "virtualization exception" },
	[21] = { "#CP", "control protection" },
};

/* x32's flag in a system call number (asm/unistd.h) */
#define X32_SYSCALL_BIT	0x40000000ULL

static const char *const syscall_abis[] = {
	[BTS_ABI_NONE] = "none",
	[BTS_ABI_X86_64] = "x86_64",
	[BTS_ABI_X32] = "x32",
	[BTS_ABI_I386] = "i386",
};

static const char *const entry_kinds[] = {
	[BTS_ENTRY_UNKNOWN] = "unknown",
	[BTS_ENTRY_SYSCALL] = "syscall",
	[BTS_ENTRY_EXCEPTION] = "exception",
	[BTS_ENTRY_INTERRUPT] = "interrupt",
};

static void thread_reset(struct thread *t)
{
	t->at = 0;
	t->likely_at = 0;
	t->nhist = 0;
	t->head = 0;
	t->nframes = 0;
	free(t->func);
	t->func = NULL;
	t->have_detail = false;
	t->payload_have = 0;
	map_details_clear(&t->map);
}

static void window_free(struct printer *pr, struct thread *t);

static struct thread *thread_get(struct printer *pr, u32 tid,
				 u32 pid)
{
	struct thread **head = &pr->threads[tid % THREAD_HASH], *t;

	for (t = *head; t; t = t->next) {
		if (t->tid != tid)
			continue;
		if (t->pid != pid) {
			/* The id was reused by another process. */
			t->pid = pid;
			t->proc = proc_get(pr->syms, pid);
			thread_reset(t);
			window_free(pr, t);
			if (pr->shown == t)
				pr->shown = NULL;
		}
		return t;
	}
	t = xcalloc(1, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
	t->proc = proc_get(pr->syms, pid);
	t->next = *head;
	*head = t;
	return t;
}

/* The thread whose records a stream is carrying. */
static struct thread **stream_thread(struct printer *pr, u32 id)
{
	size_t i;

	for (i = 0; i < pr->nstreams; i++)
		if (pr->streams[i].id == id)
			return &pr->streams[i].t;
	pr->streams = xrealloc(pr->streams,
			       (pr->nstreams + 1) * sizeof(*pr->streams));
	pr->streams[i].id = id;
	/* Records before any THREAD record: a thread nobody named. */
	pr->streams[i].t = thread_get(pr, 0, 0);
	pr->nstreams++;
	return &pr->streams[i].t;
}

static void push_block(struct thread *t, u64 start, u64 end)
{
	t->hist[t->head].start = start;
	t->hist[t->head].end = start ? end : 0;
	t->head = (t->head + 1) % HIST;
	if (t->nhist < HIST)
		t->nhist++;
}

/* A valid UTF-8 sequence's length at @p, or 0. */
static int utf8_len(const unsigned char *p)
{
	u32 cp;
	int n, i;

	if (*p < 0xc2)
		return 0;
	if (*p < 0xe0) {
		n = 2;
		cp = *p & 0x1f;
	} else if (*p < 0xf0) {
		n = 3;
		cp = *p & 0x0f;
	} else if (*p < 0xf5) {
		n = 4;
		cp = *p & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* The body of a JSON string: symbol and file names are whatever ELF says. */
static void json_esc(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	while (*p) {
		if (*p == '"' || *p == '\\') {
			putc('\\', f);
			putc(*p++, f);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			putc(*p++, f);
		} else {
			n = utf8_len(p);
			if (n) {
				fwrite(p, 1, n, f);
				p += n;
			} else {
				fputs("\\ufffd", f);
				p++;
			}
		}
	}
}

static void header(struct printer *pr, const struct thread *t)
{
	/* --trigger prints each window under a header of its own. */
	if (pr->shown == t || pr->opts.window)
		return;
	fprintf(pr->out, "[tid %u pid %u]\n", t->tid, t->pid);
	pr->shown = t;
}

/*
 * Every branch prints two addresses: without fprintf()'s format parsing
 * and locking, which were a third of the time it took to print them.
 */
static void put_hex(FILE *f, u64 v)
{
	char buf[18], *p = buf + sizeof(buf);

	do {
		*--p = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	fwrite_unlocked(p, 1, buf + sizeof(buf) - p, f);
}

static void put_dec(FILE *f, unsigned int v)
{
	char buf[10], *p = buf + sizeof(buf);

	do {
		*--p = '0' + v % 10;
		v /= 10;
	} while (v);
	fwrite_unlocked(p, 1, buf + sizeof(buf) - p, f);
}

static void text_addr(struct printer *pr, struct thread *t, u64 addr)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);
	FILE *f = pr->out;

	put_hex(f, addr);
	if (ai->sym) {
		putc_unlocked(' ', f);
		fputs_unlocked(ai->sym, f);
		if (ai->sym_off) {
			putc_unlocked('+', f);
			put_hex(f, ai->sym_off);
		}
	} else if (ai->mod) {
		putc_unlocked(' ', f);
		fputs_unlocked(ai->mod, f);
		putc_unlocked('+', f);
		put_hex(f, ai->mod_off);
	}
	if (ai->src) {
		fputs_unlocked(" (", f);
		fputs_unlocked(ai->src, f);
		putc_unlocked(':', f);
		put_dec(f, ai->line);
		putc_unlocked(')', f);
	}
}

static void json_begin(struct printer *pr, const struct thread *t,
		       const char *kind)
{
	fprintf(pr->out, "{\"tid\":%u,\"pid\":%u,\"kind\":\"%s\"", t->tid,
		t->pid, kind);
}

static void json_addr(struct printer *pr, struct thread *t, const char *key,
		      u64 addr)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);
	FILE *f = pr->out;

	fprintf(f, ",\"%s\":\"0x%llx\"", key, (unsigned long long)addr);
	if (ai->sym) {
		fprintf(f, ",\"%s_sym\":\"", key);
		json_esc(f, ai->sym);
		if (ai->sym_off)
			fprintf(f, "+0x%llx", (unsigned long long)ai->sym_off);
		putc('"', f);
	}
	if (ai->src) {
		fprintf(f, ",\"%s_src\":\"", key);
		json_esc(f, ai->src);
		fprintf(f, ":%d\"", ai->line);
	}
	if (ai->mod) {
		fprintf(f, ",\"%s_dso\":\"", key);
		json_esc(f, ai->mod);
		putc('"', f);
	}
}

/* --insn: the instructions of [start, end), or why they are not shown. */
static void print_block(struct printer *pr, struct thread *t, u64 start,
			u64 end)
{
	const struct addr_info *ai;
	const struct insn *in;
	u64 a;

	if (!start || end == start)
		return;
	if (end < start || end - start > MAX_BLOCK) {
		fprintf(pr->out, "    [no straight-line code from 0x%llx to 0x%llx]\n",
			(unsigned long long)start, (unsigned long long)end);
		return;
	}
	for (a = start; a < end; a += in->len) {
		ai = proc_addr(pr->syms, t->proc, a);
		in = proc_insn(pr->syms, t->proc, a);
		if (!in) {
			fprintf(pr->out, "    [no code at 0x%llx]\n",
				(unsigned long long)a);
			return;
		}
		fprintf(pr->out, "    0x%llx", (unsigned long long)a);
		if (ai->sym)
			fprintf(pr->out, " %s+0x%llx", ai->sym,
				(unsigned long long)ai->sym_off);
		fprintf(pr->out, ": %s\n", in->text);
	}
	if (a != end)
		fprintf(pr->out, "    [no straight-line code to 0x%llx]\n",
			(unsigned long long)end);
}

/*
 * What [start, end) leaves in eax: 1 a known value (*@val), 0 what it had
 * before, -1 something unknowable (or the block cannot be decoded).
 */
static int scan_eax(struct printer *pr, struct thread *t, u64 start,
		    u64 end, u64 *val)
{
	const struct insn *in;
	u64 a;
	int state = 0;

	if (!start || end < start || end - start > MAX_BLOCK)
		return -1;
	for (a = start; a < end; a += in->len) {
		in = proc_insn(pr->syms, t->proc, a);
		if (!in)
			return -1;
		if (in->eax == EAX_SET) {
			state = 1;
			*val = in->eax_val;
		} else if (in->eax == EAX_CLOBBER) {
			state = -1;
		}
	}
	return a == end ? state : -1;
}

/* The system call number: the last value put into eax before @entry. */
static bool syscall_nr(struct printer *pr, struct thread *t, u64 entry,
		       u64 *nr)
{
	const struct block *b;
	unsigned int i;
	int state;

	state = scan_eax(pr, t, t->at ? t->at : t->likely_at, entry, nr);
	for (i = 0; !state && i < t->nhist; i++) {
		b = &t->hist[(t->head + HIST - 1 - i) % HIST];
		if (!b->end)
			return false;
		state = scan_eax(pr, t, b->start, b->end, nr);
	}
	return state == 1;
}

/* The name of system call @nr of @abi (enum bts_syscall_abi), or NULL. */
static const char *syscall_name(u64 nr, unsigned int abi)
{
	switch (abi) {
	case BTS_ABI_X86_64:
		return nr < nr_syscalls_64 ? syscalls_64[nr] : NULL;
	case BTS_ABI_X32:
		return nr < nr_syscalls_x32 ? syscalls_x32[nr] : NULL;
	case BTS_ABI_I386:
		return nr < nr_syscalls_32 ? syscalls_32[nr] : NULL;
	default:
		return NULL;
	}
}

static bool is(const char *name, const char *a, const char *b)
{
	return name && (!strcmp(name, a) || !strcmp(name, b));
}

/* Work out what a BTS_PSEUDO_KERNEL record says. */
static void kernel_decode(struct printer *pr, struct thread *t,
			  const struct bts_record *r, struct kernel *k)
{
	u32 arg = BTS_PSEUDO_ARG(r->from);
	const struct insn *p;
	struct insn in = { 0 };
	bool have_in = false, done, normal;

	memset(k, 0, sizeof(*k));
	k->kind = arg & 0xff;
	k->vector = arg >> 8 & 0xff;
	k->entry = r->flags;
	k->resume = r->to;
	p = k->entry ? proc_insn(pr->syms, t->proc, k->entry) : NULL;
	if (p) {
		in = *p;
		have_in = true;
	}

	/* Traps and system calls ran their instruction; faults did not. */
	done = have_in && (k->kind == BTS_ENTRY_SYSCALL ||
			   k->kind == BTS_ENTRY_EXCEPTION) &&
	       (in.kind == INSN_SYSCALL || in.kind == INSN_SYSENTER ||
		in.kind == INSN_INT);
	k->end = done ? k->entry + in.len : k->entry;

	if (t->have_detail) {
		k->have_detail = true;
		k->abi = BTS_DETAIL_VAL(t->detail.from);
		k->orig_ax = t->detail.to;
		k->time = t->detail.flags;
	}
	if (k->kind == BTS_ENTRY_SYSCALL && k->abi != BTS_ABI_NONE) {
		/* The kernel says which number, in which table. */
		k->have_nr = true;
		k->nr = k->abi == BTS_ABI_X32 ?
			k->orig_ax & ~(u64)X32_SYSCALL_BIT : k->orig_ax;
		k->name = syscall_name(k->nr, k->abi);
	} else if (k->kind == BTS_ENTRY_SYSCALL && have_in &&
		   (in.kind == INSN_SYSCALL || in.kind == INSN_SYSENTER ||
		    (in.kind == INSN_INT && in.vector == 0x80))) {
		/* An older kernel: the last value put into eax. */
		k->have_nr = syscall_nr(pr, t, k->entry, &k->nr);
		/* int $0x80 and sysenter are the i386 ABI, from any code. */
		if (k->have_nr)
			k->name = syscall_name(k->nr,
					       in.kind == INSN_SYSCALL && in.is64 ?
					       BTS_ABI_X86_64 : BTS_ABI_I386);
	}

	if (!k->entry || !k->resume) {
		k->how = RESUME_UNKNOWN;
		return;
	}
	if (have_in) {
		normal = k->resume == k->entry ||
			 k->resume == k->entry + in.len;
		/*
		 * The 32-bit vDSO's sysenter (or compat syscall) returns
		 * past the "int $0x80" that follows it.
		 */
		if (!normal && (in.kind == INSN_SYSENTER ||
				(in.kind == INSN_SYSCALL && !in.is64))) {
			p = proc_insn(pr->syms, t->proc, k->entry + in.len);
			normal = p && p->kind == INSN_INT && p->vector == 0x80 &&
				 k->resume == k->entry + in.len + p->len;
		}
	} else {
		/* No code: an instruction is at most 15 bytes long. */
		normal = k->resume >= k->entry && k->resume - k->entry <= 15;
	}
	if (normal)
		k->how = have_in ? RESUME_NORMAL : RESUME_UNKNOWN;
	else if (is(k->name, "rt_sigreturn", "sigreturn"))
		k->how = RESUME_SIGRETURN;
	else if (is(k->name, "execve", "execveat"))
		k->how = RESUME_EXEC;
	else
		k->how = RESUME_SIGNAL;
}

static void kernel_what(const struct kernel *k, char *buf, size_t n)
{
	switch (k->kind) {
	case BTS_ENTRY_SYSCALL:
		if (k->name)
			snprintf(buf, n, "syscall %s", k->name);
		else if (k->have_nr)
			snprintf(buf, n, "syscall %llu",
				 (unsigned long long)k->nr);
		else
			snprintf(buf, n, "syscall ?");
		break;
	case BTS_ENTRY_EXCEPTION:
		if (k->vector < 32 && exceptions[k->vector].abbr)
			snprintf(buf, n, "exception %s %s",
				 exceptions[k->vector].abbr,
				 exceptions[k->vector].name);
		else
			snprintf(buf, n, "exception vector %u", k->vector);
		break;
	case BTS_ENTRY_INTERRUPT:
		snprintf(buf, n, "interrupt vector %u%s", k->vector,
			 k->vector == 2 ? " (NMI)" : "");
		break;
	default:
		snprintf(buf, n, "kernel entry");
		break;
	}
}

static void calls_indent(struct printer *pr, const struct thread *t, int extra)
{
	unsigned int d = t->nframes + extra;

	fprintf(pr->out, "%*s", 2 * (d < MAX_INDENT ? d : MAX_INDENT), "");
}

/* --calls: a line for the function at @addr, unless it is the current one. */
static void calls_line(struct printer *pr, struct thread *t, u64 addr,
		       bool force)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);
	const char *name;
	char buf[32];

	if (ai->sym) {
		name = ai->sym;
	} else if (ai->mod) {
		name = ai->mod;
	} else {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
		name = buf;
	}
	if (!force && t->func && !strcmp(t->func, name))
		return;
	header(pr, t);
	calls_indent(pr, t, 0);
	fprintf(pr->out, "%s\n", name);
	free(t->func);
	t->func = xstrdup(name);
}

static void calls_note(struct printer *pr, struct thread *t, const char *what)
{
	header(pr, t);
	calls_indent(pr, t, 1);
	fprintf(pr->out, "-- %s\n", what);
}

static void push_frame(struct thread *t, u64 site, u64 ret)
{
	if (t->nframes == MAX_FRAMES) {
		/* A runaway recursion: forget its outer half. */
		memmove(t->frames, t->frames + MAX_FRAMES / 2,
			MAX_FRAMES / 2 * sizeof(*t->frames));
		t->nframes = MAX_FRAMES / 2;
	}
	if (t->nframes == t->frames_cap) {
		t->frames_cap = t->frames_cap ? 2 * t->frames_cap : 64;
		t->frames = xrealloc(t->frames,
				     t->frames_cap * sizeof(*t->frames));
	}
	t->frames[t->nframes++] = (struct frame) { site, ret };
}

/* Back out of the calls down to the newest frame that returns to @ret. */
static bool pop_frames(struct thread *t, u64 ret)
{
	unsigned int i = t->nframes;

	while (i--) {
		if (t->frames[i].ret == ret) {
			t->nframes = i;
			return true;
		}
	}
	return false;
}

/* Keep the calls the thread is in: see the comment at the top. */
static void track_calls(struct thread *t, enum insn_kind kind,
			const struct bts_record *r, u64 end)
{
	if (kind == INSN_CALL)
		push_frame(t, r->from, end);
	else if (kind == INSN_RET && !pop_frames(t, r->to) && t->nframes)
		t->nframes--;
}

/* Where the function the thread runs in was called, or 0 if unknown. */
static u64 call_site(const struct thread *t)
{
	return t->nframes ? t->frames[t->nframes - 1].site : 0;
}

static void on_branch(struct printer *pr, struct thread *t,
		      const struct bts_record *r)
{
	enum insn_kind kind = INSN_JUMP;
	unsigned int len;
	u64 end = 0;

	if (proc_insn_kind(pr->syms, t->proc, r->from, &kind, &len))
		end = r->from + len;
	else
		kind = INSN_JUMP;

	if (pr->opts.calls) {
		/* Got here unseen: the start, or after the kernel. */
		calls_line(pr, t, r->from, false);
		track_calls(t, kind, r, end);
		calls_line(pr, t, r->to, kind == INSN_CALL || kind == INSN_RET);
	} else if (pr->opts.format == FORMAT_JSONL) {
		json_begin(pr, t, "branch");
		json_addr(pr, t, "from", r->from);
		json_addr(pr, t, "to", r->to);
		fputs("}\n", pr->out);
	} else {
		header(pr, t);
		if (pr->opts.insn)
			print_block(pr, t, t->at, end ? end : r->from + 1);
		text_addr(pr, t, r->from);
		fputs_unlocked(" -> ", pr->out);
		text_addr(pr, t, r->to);
		putc_unlocked('\n', pr->out);
	}
	if (!pr->opts.calls)
		track_calls(t, kind, r, end);
	push_block(t, t->at, end);
	t->at = r->to;
	t->likely_at = 0;
}

static void on_kernel(struct printer *pr, struct thread *t,
		      const struct bts_record *r)
{
	FILE *f = pr->out;
	struct kernel k;
	char what[96];

	kernel_decode(pr, t, r, &k);
	kernel_what(&k, what, sizeof(what));
	if (pr->opts.calls) {
		if (k.kind == BTS_ENTRY_SYSCALL)
			calls_note(pr, t, what);
		/* A handler runs a level deeper, which its return leaves. */
		if (k.how == RESUME_SIGNAL) {
			calls_note(pr, t, "signal handler entry");
			push_frame(t, k.entry, SIGNAL_FRAME);
			calls_line(pr, t, k.resume, true);
		} else if (k.how == RESUME_SIGRETURN) {
			pop_frames(t, SIGNAL_FRAME);
			calls_line(pr, t, k.resume, true);
		} else if (k.how == RESUME_EXEC) {
			t->nframes = 0;
			calls_line(pr, t, k.resume, true);
		}
	} else if (pr->opts.format == FORMAT_JSONL) {
		json_begin(pr, t, "kernel");
		fprintf(f, ",\"entry\":\"%s\"",
			entry_kinds[k.kind < ARRAY_SIZE(entry_kinds) ?
				    k.kind : BTS_ENTRY_UNKNOWN]);
		if (k.kind == BTS_ENTRY_EXCEPTION ||
		    k.kind == BTS_ENTRY_INTERRUPT)
			fprintf(f, ",\"vector\":%u", k.vector);
		if (k.entry)
			json_addr(pr, t, "from", k.entry);
		if (k.resume)
			json_addr(pr, t, "to", k.resume);
		if (k.name)
			fprintf(f, ",\"syscall\":\"%s\"", k.name);
		if (k.have_nr)
			fprintf(f, ",\"syscall_nr\":%llu",
				(unsigned long long)k.nr);
		if (k.abi != BTS_ABI_NONE && k.abi < ARRAY_SIZE(syscall_abis))
			fprintf(f, ",\"abi\":\"%s\"", syscall_abis[k.abi]);
		if (k.kind == BTS_ENTRY_EXCEPTION && k.have_detail &&
		    k.orig_ax != ~0ULL)
			fprintf(f, ",\"error_code\":%llu",
				(unsigned long long)k.orig_ax);
		if (k.have_detail)
			fprintf(f, ",\"time\":%llu", (unsigned long long)k.time);
		if (k.how == RESUME_SIGNAL)
			fputs(",\"signal\":true", f);
		fputs("}\n", f);
	} else {
		header(pr, t);
		if (pr->opts.insn)
			print_block(pr, t, t->at, k.end);
		fprintf(f, "-- %s", what);
		if (k.entry) {
			fputs(" at ", f);
			text_addr(pr, t, k.entry);
		}
		if (k.resume && k.how != RESUME_NORMAL &&
		    k.how != RESUME_SIGNAL) {
			fputs(" -> ", f);
			text_addr(pr, t, k.resume);
		}
		putc('\n', f);
		if (k.how == RESUME_SIGNAL) {
			fputs("-- signal handler entry -> ", f);
			text_addr(pr, t, k.resume);
			putc('\n', f);
		}
	}
	push_block(t, t->at, k.end);
	/* The kernel returns a system call's result, or a signal's, in eax. */
	if (k.kind == BTS_ENTRY_SYSCALL || k.how != RESUME_NORMAL)
		push_block(t, 0, 0);
	t->at = k.resume;
	t->likely_at = k.resume ? 0 : k.end;
}

static void on_lost(struct printer *pr, struct thread *t,
		    const struct bts_record *r)
{
	unsigned int arg = BTS_PSEUDO_ARG(r->from);
	const char *why = arg == BTS_LOST_OVERRUN ? "overrun" :
			  arg == BTS_LOST_UNTRACED ? "untraced" : NULL;
	char what[96];

	/* Mapping changes may be among what was lost. */
	proc_trace_gap(pr->syms, t->proc);
	if (arg == BTS_LOST_OVERRUN)
		snprintf(what, sizeof(what),
			 "lost records: the hardware's buffer overran");
	else if (arg == BTS_LOST_UNTRACED)
		snprintf(what, sizeof(what),
			 "lost records: ran on a CPU that could not trace");
	else
		snprintf(what, sizeof(what), "lost %llu records",
			 (unsigned long long)r->to);
	if (pr->opts.calls) {
		calls_note(pr, t, what);
	} else if (pr->opts.format == FORMAT_JSONL) {
		json_begin(pr, t, "lost");
		if (why)
			fprintf(pr->out, ",\"reason\":\"%s\"}\n", why);
		else
			fprintf(pr->out, ",\"count\":%llu}\n",
				(unsigned long long)r->to);
	} else {
		header(pr, t);
		fprintf(pr->out, "-- %s\n", what);
	}
	t->at = 0;
	t->likely_at = 0;
	t->nhist = 0;
}

/* The 16 bytes of a detail that holds bytes, in memory order. */
static void detail_bytes(unsigned char *dst, const struct bts_record *r)
{
	unsigned int k;

	for (k = 0; k < 8; k++) {
		dst[k] = r->to >> (8 * k);
		dst[8 + k] = r->flags >> (8 * k);
	}
}

/* A payload detail of the MARKER record to come: keep its 16 bytes. */
static void on_marker_payload(struct thread *t, const struct bts_record *r)
{
	unsigned int i = BTS_DETAIL_VAL(r->from);

	if (i >= BTS_MARKER_PAYLOAD_MAX / 16)
		return;
	detail_bytes(t->payload + i * 16, r);
	t->payload_have |= 1U << i;
}

/* A function and its source line, for "in": "main (prog.c:5)". */
static void text_where(struct printer *pr, struct thread *t, u64 addr)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);

	if (ai->sym)
		fputs(ai->sym, pr->out);
	else if (ai->mod)
		fprintf(pr->out, "%s+0x%llx", ai->mod,
			(unsigned long long)ai->mod_off);
	else
		fprintf(pr->out, "0x%llx", (unsigned long long)addr);
	if (ai->src)
		fprintf(pr->out, " (%s:%d)", ai->src, ai->line);
}

/*
 * The text of a marker: the event by name with its fields decoded when its
 * format is known (--markers), by id otherwise with the payload in hex;
 * then where it was written: "in" the function that called the one that
 * made the system call, at the call, or, not knowing that, "at" the system
 * call.
 */
static void marker_text(struct printer *pr, struct thread *t,
			const struct bts_record *r, bool have)
{
	const struct event_format *e = events_find(pr->events,
						   BTS_MARKER_ID(r->flags),
						   BTS_MARKER_GEN(r->flags));
	unsigned int len = BTS_MARKER_LEN(r->from);
	unsigned int flags = BTS_MARKER_FLAGS(r->from);
	bool source = BTS_MARKER_SOURCE(r->from) == BTS_MARKER_USER_EVENT;
	FILE *f = pr->out;
	u64 site = call_site(t);
	unsigned int i;

	if (e)
		fprintf(f, "-- event u:%s", event_name(e));
	else
		fprintf(f, "-- %s %u (generation %u)",
			source ? "event" : "marker", BTS_MARKER_ID(r->flags),
			BTS_MARKER_GEN(r->flags));
	if (flags & BTS_MARKER_NOT_CAPTURED) {
		fputs(": payload not captured", f);
	} else if (len && !have) {
		fputs(": payload not in the trace", f);
	} else if (e) {
		event_print_fields(f, e, t->payload, len, false);
	} else if (len) {
		fputs(":", f);
		for (i = 0; i < len; i++)
			fprintf(f, " %02x", t->payload[i]);
	}
	if (flags & BTS_MARKER_TRUNCATED)
		fputs(" (truncated)", f);
	if (site) {
		fputs(" in ", f);
		text_where(pr, t, site);
	} else if (r->to) {
		fputs(" at ", f);
		text_addr(pr, t, r->to);
	}
	putc('\n', f);
}

/*
 * An event the thread wrote (a user_event): which, where, and its payload
 * if all of it is in the trace (the front of a ring may have cut the
 * details off).
 */
static void on_marker(struct printer *pr, struct thread *t,
		      const struct bts_record *r)
{
	unsigned int len = BTS_MARKER_LEN(r->from);
	unsigned int flags = BTS_MARKER_FLAGS(r->from);
	unsigned int need = (1U << (len + 15) / 16) - 1, i;
	bool source = BTS_MARKER_SOURCE(r->from) == BTS_MARKER_USER_EVENT;
	bool have = len <= BTS_MARKER_PAYLOAD_MAX &&
		    (t->payload_have & need) == need;
	const struct event_format *e;
	FILE *f = pr->out;

	if (pr->opts.format != FORMAT_JSONL) {
		header(pr, t);
		if (pr->opts.calls)
			calls_indent(pr, t, 1);
		marker_text(pr, t, r, have);
		return;
	}
	e = events_find(pr->events, BTS_MARKER_ID(r->flags),
			BTS_MARKER_GEN(r->flags));
	json_begin(pr, t, "marker");
	if (source)
		fputs(",\"source\":\"user_event\"", f);
	else
		fprintf(f, ",\"source\":%u", BTS_MARKER_SOURCE(r->from));
	fprintf(f, ",\"id\":%u,\"gen\":%u", BTS_MARKER_ID(r->flags),
		BTS_MARKER_GEN(r->flags));
	if (e) {
		fputs(",\"event\":\"", f);
		json_esc(f, event_name(e));
		putc('"', f);
	}
	if (r->to)
		json_addr(pr, t, "at", r->to);
	if (call_site(t))
		json_addr(pr, t, "caller", call_site(t));
	if (flags & BTS_MARKER_NOT_CAPTURED) {
		fputs(",\"captured\":false", f);
	} else if (have) {
		fputs(",\"payload\":\"", f);
		for (i = 0; i < len; i++)
			fprintf(f, "%02x", t->payload[i]);
		putc('"', f);
		if (e)
			event_print_fields(f, e, t->payload, len, true);
	}
	if (flags & BTS_MARKER_TRUNCATED)
		fputs(",\"truncated\":true", f);
	fputs("}\n", f);
}

/* A detail of the MAP record to come: keep what it says. */
static void on_map_detail(struct thread *t, const struct bts_record *r)
{
	unsigned int i = BTS_DETAIL_VAL(r->from);
	struct map_details *d = &t->map;

	switch (BTS_DETAIL_LAYOUT(r->from)) {
	case BTS_DETAIL_MAP_FILE:
		if (i == 0) {
			d->offset = r->to;
			d->inode = r->flags;
		} else if (i == 1) {
			d->dev = r->to;
			d->mtime = r->flags;
		} else {
			return;
		}
		d->file_have |= 1U << i;
		break;
	case BTS_DETAIL_MAP_BUILD_ID:
		if (i >= sizeof(d->build_id) / 16)
			return;
		detail_bytes(d->build_id + i * 16, r);
		d->id_have |= 1U << i;
		break;
	case BTS_DETAIL_MAP_NAME:
		if (i >= BTS_MAP_NAME_MAX / 16)
			return;
		detail_bytes((unsigned char *)d->name + i * 16, r);
		d->name_have |= 1U << i;
		break;
	}
}

/*
 * The path the details spelled, if all of it is in the trace (the front of
 * a ring may have cut details off): details 0..n, the last with a zero.
 */
static const char *map_name(struct map_details *d)
{
	unsigned int i;

	for (i = 0; i < BTS_MAP_NAME_MAX / 16 && (d->name_have >> i & 1); i++)
		if (memchr(d->name + i * 16, 0, 16))
			return d->name;
	if (i == BTS_MAP_NAME_MAX / 16) {
		d->name[BTS_MAP_NAME_MAX - 1] = 0;
		return d->name;
	}
	return NULL;
}

static void put_build_id(FILE *f, const struct map_details *d,
			 unsigned int len)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		fprintf(f, "%02x", d->build_id[i]);
}

/*
 * The process's address space changed here: update its mappings, which
 * symbolize every later branch, and show the change if asked to.
 */
static void on_map(struct printer *pr, struct thread *t,
		   const struct bts_record *r)
{
	unsigned int event = BTS_MAP_EVENT(r->from);
	unsigned int flags = BTS_MAP_FLAGS(r->from);
	unsigned int id_len = BTS_MAP_BUILD_ID_LEN(r->from);
	struct map_details *d = &t->map;
	bool file = d->file_have == 3;
	bool have_id = id_len && id_len <= sizeof(d->build_id) &&
		       (d->id_have & ((1U << (id_len + 15) / 16) - 1)) ==
		       (1U << (id_len + 15) / 16) - 1;
	const char *name = map_name(d);
	struct mapping m = { 0 };
	FILE *f = pr->out;
	const char *what;

	switch (event) {
	case BTS_MAP_EXEC:
		proc_exec(pr->syms, t->proc);
		what = "exec";
		break;
	case BTS_MAP_MMAP:
		m.start = r->to;
		m.end = r->flags;
		m.offset = file ? d->offset : 0;
		m.inode = file ? d->inode : 0;
		m.dev_major = file ? d->dev >> 32 : 0;
		m.dev_minor = file ? (u32)d->dev : 0;
		memcpy(m.perms, "r-xp", sizeof(m.perms));
		m.path = (char *)(name ? name : "");
		if (m.start < m.end)
			proc_map(pr->syms, t->proc, &m);
		what = "mmap";
		break;
	case BTS_MAP_MUNMAP:
		if (r->to < r->flags)
			proc_unmap(pr->syms, t->proc, r->to, r->flags);
		what = "munmap";
		break;
	default:
		/* A kind of change this bts-dump does not know: skipped. */
		return;
	}
	if (!pr->opts.show_maps || pr->opts.calls)
		return;
	if (pr->opts.format == FORMAT_JSONL) {
		json_begin(pr, t, what);
		if (event != BTS_MAP_EXEC)
			fprintf(f, ",\"start\":\"0x%llx\",\"end\":\"0x%llx\"",
				(unsigned long long)r->to,
				(unsigned long long)r->flags);
		if (event == BTS_MAP_MMAP) {
			if (name) {
				fputs(",\"path\":\"", f);
				json_esc(f, name);
				putc('"', f);
			}
			if (file)
				fprintf(f, ",\"offset\":\"0x%llx\",\"inode\":%llu,"
					"\"dev\":\"%u:%u\"",
					(unsigned long long)d->offset,
					(unsigned long long)d->inode,
					m.dev_major, m.dev_minor);
			if (have_id) {
				fputs(",\"build_id\":\"", f);
				put_build_id(f, d, id_len);
				putc('"', f);
			}
			if (flags & BTS_MAP_ANONYMOUS)
				fputs(",\"anonymous\":true", f);
		}
		fputs("}\n", f);
		return;
	}
	header(pr, t);
	if (event == BTS_MAP_EXEC) {
		fputs("-- exec\n", f);
		return;
	}
	fprintf(f, "-- %s 0x%llx-0x%llx", what, (unsigned long long)r->to,
		(unsigned long long)r->flags);
	if (event == BTS_MAP_MMAP) {
		if (name && *name)
			fprintf(f, " %s", name);
		else if (flags & BTS_MAP_ANONYMOUS)
			fputs(" (anonymous)", f);
		if (file && d->offset)
			fprintf(f, " at offset 0x%llx",
				(unsigned long long)d->offset);
		if (have_id) {
			fputs(" build-id ", f);
			put_build_id(f, d, id_len);
		}
	}
	putc('\n', f);
}

static void on_other(struct printer *pr, struct thread *t,
		     const struct bts_record *r)
{
	unsigned int type = BTS_PSEUDO_TYPE(r->from);
	unsigned int arg = BTS_PSEUDO_ARG(r->from);
	char what[96];

	snprintf(what, sizeof(what),
		 "pseudo-record type %u arg %u: 0x%llx 0x%llx", type, arg,
		 (unsigned long long)r->to, (unsigned long long)r->flags);
	if (pr->opts.calls) {
		calls_note(pr, t, what);
	} else if (pr->opts.format == FORMAT_JSONL) {
		json_begin(pr, t, "pseudo");
		fprintf(pr->out, ",\"type\":%u,\"arg\":%u,\"to\":\"0x%llx\",\"flags\":\"0x%llx\"}\n",
			type, arg, (unsigned long long)r->to,
			(unsigned long long)r->flags);
	} else {
		header(pr, t);
		fprintf(pr->out, "-- %s\n", what);
	}
}

static void on_thread(struct printer *pr, struct thread **cur,
		      const struct bts_record *r)
{
	unsigned int event = BTS_PSEUDO_ARG(r->from);
	struct thread *t;

	t = thread_get(pr, (u32)r->to, (u32)r->flags);
	*cur = t;
	if (event == BTS_THREAD_NEW) {
		thread_reset(t);
		if (pr->opts.format == FORMAT_JSONL && !pr->opts.calls) {
			json_begin(pr, t, "thread_new");
			fputs("}\n", pr->out);
		} else {
			header(pr, t);
			fputs("-- new thread\n", pr->out);
		}
	} else if (event == BTS_THREAD_EXIT) {
		if (pr->opts.format == FORMAT_JSONL && !pr->opts.calls) {
			json_begin(pr, t, "thread_exit");
			fputs("}\n", pr->out);
		} else if (pr->opts.calls) {
			calls_note(pr, t, "thread exited");
		} else {
			header(pr, t);
			fputs("-- thread exited\n", pr->out);
		}
	}
}

/* Decode and print one record of the stream @cur carries. */
static void p_record(struct printer *pr, struct thread **cur,
		     const struct bts_record *r)
{
	if (!BTS_RECORD_IS_PSEUDO(r->from)) {
		(*cur)->have_detail = false;
		(*cur)->payload_have = 0;
		map_details_clear(&(*cur)->map);
		on_branch(pr, *cur, r);
		return;
	}
	switch (BTS_PSEUDO_TYPE(r->from)) {
	case BTS_PSEUDO_THREAD:
		/* Framing: a detail may wait across it. */
		on_thread(pr, cur, r);
		return;
	case BTS_PSEUDO_DETAIL:
		/* Kept for the record it details; others skipped. */
		if (BTS_DETAIL_TYPE(r->from) == BTS_PSEUDO_MARKER &&
		    BTS_DETAIL_LAYOUT(r->from) == BTS_DETAIL_MARKER_PAYLOAD) {
			on_marker_payload(*cur, r);
			return;
		}
		if (BTS_DETAIL_TYPE(r->from) == BTS_PSEUDO_MAP) {
			on_map_detail(*cur, r);
			return;
		}
		(*cur)->have_detail =
			BTS_DETAIL_TYPE(r->from) == BTS_PSEUDO_KERNEL &&
			BTS_DETAIL_LAYOUT(r->from) == BTS_DETAIL_KERNEL_ENTRY;
		(*cur)->detail = *r;
		return;
	case BTS_PSEUDO_KERNEL:
		on_kernel(pr, *cur, r);
		break;
	case BTS_PSEUDO_LOST:
		on_lost(pr, *cur, r);
		break;
	case BTS_PSEUDO_MARKER:
		on_marker(pr, *cur, r);
		break;
	case BTS_PSEUDO_MAP:
		on_map(pr, *cur, r);
		break;
	default:
		on_other(pr, *cur, r);
		break;
	}
	(*cur)->have_detail = false;
	(*cur)->payload_have = 0;
	map_details_clear(&(*cur)->map);
}

/* Add @len bytes of whole lines to @t's window, the oldest going. */
static void window_push(struct printer *pr, struct thread *t,
			const char *text, size_t len)
{
	const char *end = text + len, *nl;

	if (!t->window)
		t->window = xcalloc(pr->opts.window, sizeof(*t->window));
	for (; text < end; text = nl + 1) {
		nl = memchr(text, '\n', end - text);
		if (!nl)
			nl = end;
		free(t->window[t->window_top]);
		t->window[t->window_top] = xstrndup(text, nl - text);
		t->window_top = (t->window_top + 1) % pr->opts.window;
	}
}

static void window_free(struct printer *pr, struct thread *t)
{
	unsigned int i;

	for (i = 0; t->window && i < pr->opts.window; i++)
		free(t->window[i]);
	free(t->window);
	t->window = NULL;
}

/* Print @t's window, oldest line first. */
static void window_print(struct printer *pr, const struct thread *t)
{
	unsigned int i, k;

	for (i = 0; t->window && i < pr->opts.window; i++) {
		k = (t->window_top + i) % pr->opts.window;
		if (t->window[k])
			fprintf(pr->out, "%s\n", t->window[k]);
	}
}

/*
 * --trigger: what a record prints goes to its thread's window, the last
 * lines; a marker prints the window under a header, then itself, as the
 * full trace would show them.
 */
static bool triggers(const struct printer *pr, const struct bts_record *r)
{
	const struct event_format *e;

	if (!BTS_RECORD_IS_PSEUDO(r->from) ||
	    BTS_PSEUDO_TYPE(r->from) != BTS_PSEUDO_MARKER)
		return false;
	e = events_find(pr->events, BTS_MARKER_ID(r->flags),
			BTS_MARKER_GEN(r->flags));
	return e && !fnmatch(pr->opts.trigger, event_name(e), 0);
}

static void p_record_windowed(struct printer *pr, struct thread **cur,
			      const struct bts_record *r)
{
	bool marker = triggers(pr, r);
	FILE *out = pr->out;
	off_t len;

	if (!pr->scratch)
		pr->scratch = open_memstream(&pr->scratch_buf,
					     &pr->scratch_size);
	if (!pr->scratch)
		err(1, "open_memstream");
	rewind(pr->scratch);
	pr->out = pr->scratch;
	p_record(pr, cur, r);
	pr->out = out;
	fflush(pr->scratch);
	len = ftello(pr->scratch);
	if (marker) {
		if (pr->opts.format == FORMAT_TEXT)
			fprintf(out, "[tid %u pid %u] the last %u lines before:\n",
				(*cur)->tid, (*cur)->pid, pr->opts.window);
		window_print(pr, *cur);
		fwrite(pr->scratch_buf, 1, len, out);
	}
	window_push(pr, *cur, pr->scratch_buf, len);
}

static int p_records(struct sink *s, u32 stream,
		     const struct bts_record *r, size_t n)
{
	struct printer *pr = (struct printer *)s;
	struct thread **cur = stream_thread(pr, stream);
	size_t i;

	for (i = 0; i < n; i++, r++) {
		if (pr->opts.window)
			p_record_windowed(pr, cur, r);
		else
			p_record(pr, cur, r);
	}
	return 0;
}

static int p_maps(struct sink *s, u32 pid, u32 ppid,
		  const char *text, size_t len)
{
	struct printer *pr = (struct printer *)s;

	proc_add_maps(pr->syms, proc_get(pr->syms, pid), ppid, text, len);
	return 0;
}

static int p_memory(struct sink *s, u32 pid, u64 addr,
		    const void *data, size_t len)
{
	struct printer *pr = (struct printer *)s;

	proc_add_memory(pr->syms, proc_get(pr->syms, pid), addr, data, len);
	return 0;
}

static int p_event_format(struct sink *s, u32 id, u32 gen, const char *text,
			  size_t len)
{
	struct printer *pr = (struct printer *)s;

	events_add(pr->events, id, gen, text, len);
	return 0;
}

static int p_exit(struct sink *s, u32 pid, int status, const char *cmd,
		  size_t len)
{
	struct printer *pr = (struct printer *)s;

	(void)pid;
	free(pr->exit_cmd);
	pr->exit_cmd = xstrndup(cmd, len);
	pr->exit_status = status;
	pr->have_exit = true;
	return 0;
}

struct printer *printer_new(FILE *out, const struct print_opts *opts)
{
	struct printer *pr = xcalloc(1, sizeof(*pr));

	pr->sink.records = p_records;
	pr->sink.maps = p_maps;
	pr->sink.memory = p_memory;
	pr->sink.exit = p_exit;
	pr->sink.event_format = p_event_format;
	pr->out = out;
	pr->opts = *opts;
	pr->syms = syms_new(!pr->opts.mangled);
	pr->events = events_new();
	return pr;
}

struct sink *printer_sink(struct printer *pr)
{
	return &pr->sink;
}

int printer_finish(struct printer *pr)
{
	if (fflush(pr->out) || ferror(pr->out)) {
		warnx("write error on the output");
		return -1;
	}
	return 0;
}

bool printer_exit(struct printer *pr, int *status, const char **cmd)
{
	*status = pr->exit_status;
	*cmd = pr->exit_cmd;
	return pr->have_exit;
}

void printer_free(struct printer *pr)
{
	struct thread *t, *tn;
	size_t b;

	for (b = 0; b < THREAD_HASH; b++) {
		for (t = pr->threads[b]; t; t = tn) {
			tn = t->next;
			free(t->func);
			free(t->frames);
			window_free(pr, t);
			free(t);
		}
	}
	free(pr->streams);
	free(pr->exit_cmd);
	if (pr->scratch)
		fclose(pr->scratch);
	free(pr->scratch_buf);
	events_free(pr->events);
	syms_free(pr->syms);
	free(pr);
}
