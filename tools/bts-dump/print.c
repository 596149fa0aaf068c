// SPDX-License-Identifier: GPL-2.0
/*
 * The sink that decodes records, and hands what they say to an output
 * (print.h).
 *
 * Records come as /dev/bts gives them, runs of one thread's records, each
 * after a THREAD record, threads interleaved; for the text outputs, in
 * time order, put so by order.c first.  Each thread
 * keeps what decoding needs across its runs: where its current
 * straight-line block began, the last few blocks (system call numbers are
 * found by decoding back from the system call instruction to the
 * "mov $nr, %eax") and the calls it is in.
 *
 * The calls a thread is in are a stack of the return addresses its calls
 * pushed, as perf's thread stacks and gdb's btrace keep: a return pops to
 * the call whose return address it goes to, however deep, so that after
 * a longjmp() or an exception, which jump out of calls, the next return
 * puts the depth right.  A return to no address on the stack (a C++
 * unwinder's to a landing pad) pops to the newest call made from the
 * function it goes to, as gdb's btrace matches returns by function; if
 * that function is not known or made no call on the stack (the trace
 * began in the callee, or the return address was changed), one call.
 * A branch out of code that cannot be read (a JIT's) to a return address
 * on the stack is a return.  A call to the next instruction ("call 1f;
 * 1: pop") is no call.  A signal handler runs a call deeper than the code
 * it interrupted, until its sigreturn; the handler's own return, to the
 * restorer that makes the sigreturn, goes to no address on the stack, and
 * pops nothing.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

/* Calls a thread's stack keeps; past it, the outermost are forgotten. */
#define MAX_FRAMES	(64U * 1024)

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

/* A stream of the trace, and which thread's records it is carrying. */
struct stream {
	u32 id;
	struct thread *t;
	struct hlist_node node;	/* in printer::streams, by id */
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

const char *entry_kind_name(unsigned int kind)
{
	return entry_kinds[kind < ARRAY_SIZE(entry_kinds) ? kind :
			   BTS_ENTRY_UNKNOWN];
}

/* The ABI's name, or NULL for none. */
const char *syscall_abi_name(unsigned int abi)
{
	return abi != BTS_ABI_NONE && abi < ARRAY_SIZE(syscall_abis) ?
	       syscall_abis[abi] : NULL;
}

static void window_free(struct printer *pr, struct thread *t);

/* The thread starts over: forget all it was doing. */
static void thread_reset(struct printer *pr, struct thread *t)
{
	t->at = 0;
	t->likely_at = 0;
	t->nhist = 0;
	t->head = 0;
	t->nframes = 0;
	t->have_detail = false;
	t->payload_have = 0;
	t->exec_pending = false;
	map_details_clear(&t->map);
	if (pr->output->thread_free)
		pr->output->thread_free(pr, t);
	t->out = NULL;
}

/* @t is a thread of process @pid, the one running now, from here on. */
static void thread_join(struct printer *pr, struct thread *t, u32 pid)
{
	t->pid = pid;
	t->proc = proc_get(pr->syms, pid);
	proc_thread_new(t->proc);
	t->exited = false;
}

/* @t exited: after its process's last thread, the process is over. */
static void thread_leave(struct printer *pr, struct thread *t)
{
	if (t->exited)
		return;
	t->exited = true;
	t->comm[0] = 0;
	proc_thread_exit(pr->syms, t->proc);
	/* A thread of its id next is another: it gets a header. */
	if (pr->shown == t)
		pr->shown = NULL;
}

static struct thread *thread_get(struct printer *pr, u32 tid,
				 u32 pid)
{
	struct thread *t;

	hash_for_each_possible(pr->threads, t, node, tid) {
		if (t->tid != tid)
			continue;
		if (t->pid != pid) {
			/*
			 * The id was reused by another process: the old
			 * thread's end is written as its own, and the old
			 * thread is gone, its exit unseen.
			 */
			thread_reset(pr, t);
			thread_leave(pr, t);
			thread_join(pr, t, pid);
			window_free(pr, t);
		}
		return t;
	}
	t = xcalloc(1, sizeof(*t));
	t->tid = tid;
	thread_join(pr, t, pid);
	hash_add(pr->threads, &t->node, tid);
	return t;
}

/* The thread whose records a stream is carrying. */
static struct thread **stream_thread(struct printer *pr, u32 id)
{
	struct stream *s;

	hash_for_each_possible(pr->streams, s, node, id)
		if (s->id == id)
			return &s->t;
	s = xcalloc(1, sizeof(*s));
	s->id = id;
	/* Records before any THREAD record: a thread nobody named. */
	s->t = thread_get(pr, 0, 0);
	hash_add(pr->streams, &s->node, id);
	return &s->t;
}

static void push_block(struct thread *t, u64 start, u64 end)
{
	t->hist[t->head].start = start;
	t->hist[t->head].end = start ? end : 0;
	t->head = (t->head + 1) % HIST;
	if (t->nhist < HIST)
		t->nhist++;
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

static void push_frame(struct thread *t, u64 site, u64 ret, bool signal)
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
	t->frames[t->nframes++] = (struct frame) { site, ret, signal };
}

/* The newest call that returns to @ret (or signal, @signal), or NULL. */
static const struct frame *frame_returning_to(const struct thread *t,
					      u64 ret, bool signal)
{
	unsigned int i = t->nframes;

	while (i--)
		if (t->frames[i].signal == signal &&
		    (signal || t->frames[i].ret == ret))
			return &t->frames[i];
	return NULL;
}

/*
 * Back out of the calls down to the newest that returns to @ret (or to
 * the newest signal, @signal).
 */
static bool pop_frames(struct thread *t, u64 ret, bool signal)
{
	const struct frame *f = frame_returning_to(t, ret, signal);

	if (f)
		t->nframes = f - t->frames;
	return f;
}

/* Where the function @addr is in starts, or 0 if it is not known. */
static u64 func_start(struct printer *pr, struct thread *t, u64 addr)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);

	return ai->sym ? addr - ai->sym_off : 0;
}

/*
 * A return to @to, which is no return address on the stack: back out to
 * the newest call made from @to's function, or else out of one call.
 * Never out of a signal's frame, which is the sigreturn's to pop.
 */
static void pop_unmatched(struct printer *pr, struct thread *t, u64 to)
{
	u64 func = func_start(pr, t, to);
	unsigned int i = t->nframes;

	while (func && i && !t->frames[i - 1].signal) {
		if (func_start(pr, t, t->frames[--i].site) == func) {
			t->nframes = i;
			return;
		}
	}
	if (t->nframes && !t->frames[t->nframes - 1].signal)
		t->nframes--;
}

/* Keep the calls the thread is in: see the comment at the top. */
static void track_calls(struct printer *pr, struct thread *t,
			const struct branch *b)
{
	if (branch_is_call(b))
		push_frame(t, b->from, b->end, false);
	else if (b->kind == INSN_RET && !pop_frames(t, b->to, false))
		pop_unmatched(pr, t, b->to);
}

/*
 * Where the function the thread runs in was called, or 0 if unknown (or
 * it is a signal handler, which the kernel called).
 */
u64 call_site(const struct thread *t)
{
	const struct frame *f = t->nframes ? &t->frames[t->nframes - 1] : NULL;

	return f && !f->signal ? f->site : 0;
}

/**
 * thread_comm() - the name @t goes by
 * @t: the thread
 *
 * Return: its own, or its process's, or NULL if the trace gave neither.
 */
const char *thread_comm(const struct thread *t)
{
	return t->comm[0] ? t->comm : proc_comm(t->proc);
}

/* "tid T pid P", and the thread's name where the trace gave it. */
const char *thread_label(const struct thread *t, char *buf, size_t len)
{
	const char *comm = thread_comm(t);

	if (comm)
		snprintf(buf, len, "tid %u pid %u %s", t->tid, t->pid, comm);
	else
		snprintf(buf, len, "tid %u pid %u", t->tid, t->pid);
	return buf;
}

/*
 * The name of the function at @addr, as call trees show it: its symbol,
 * else its file's name, else the address (in @buf).
 */
const char *func_name(struct printer *pr, struct thread *t, u64 addr,
		      char *buf, size_t len)
{
	const struct addr_info *ai = proc_addr(pr->syms, t->proc, addr);

	if (ai->sym)
		return ai->sym;
	if (ai->mod)
		return ai->mod;
	snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	return buf;
}

/* --tid: whether @t's records are shown. */
static bool thread_shown(const struct printer *pr, const struct thread *t)
{
	size_t i;

	for (i = 0; i < pr->opts.ntids; i++)
		if (pr->opts.tids[i] == t->tid || pr->opts.tids[i] == t->pid)
			return true;
	return !pr->opts.ntids;
}

static bool glob_any(char *const *globs, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s && !fnmatch(globs[i], s, 0))
			return true;
	return false;
}

/*
 * --dso: whether a glob matches the file @ai is in: a glob with a '/' its
 * path, one without its name.
 */
static bool dso_any(char *const *globs, size_t n, const struct addr_info *ai)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const char *s = strchr(globs[i], '/') ? ai->path : ai->mod;

		if (s && !fnmatch(globs[i], s, 0))
			return true;
	}
	return false;
}

/* --sym, --dso, --range: whether @addr passes each that was given. */
static bool addr_shown(struct printer *pr, struct thread *t, u64 addr)
{
	const struct print_opts *o = &pr->opts;
	const struct addr_info *ai;

	if (!addr)
		return false;
	if (o->range_end && (addr < o->range_start || addr >= o->range_end))
		return false;
	if (!o->nsyms && !o->ndsos)
		return true;
	ai = proc_addr(pr->syms, t->proc, addr);
	return (!o->nsyms || glob_any(o->syms, o->nsyms, ai->sym)) &&
	       (!o->ndsos || dso_any(o->dsos, o->ndsos, ai));
}

/*
 * Whether a record of @t's whose addresses are @a and @b (0: none) is
 * shown: it is when either passes the address filters.
 */
static bool shown(struct printer *pr, struct thread *t, u64 a, u64 b)
{
	const struct print_opts *o = &pr->opts;

	if (!thread_shown(pr, t))
		return false;
	if (!o->nsyms && !o->ndsos && !o->range_end)
		return true;
	return addr_shown(pr, t, a) || addr_shown(pr, t, b);
}

static void on_branch(struct printer *pr, struct thread *t,
		      const struct bts_record *r)
{
	struct branch b = {
		.from = r->from,
		.to = r->to,
		.depth = t->nframes,
	};
	unsigned int len;

	if (proc_insn_kind(pr->syms, t->proc, r->from, &b.kind, &len))
		b.end = r->from + len;
	else if (frame_returning_to(t, r->to, false))
		/*
		 * Code that cannot be read (a JIT's) went back to where a
		 * call on the stack returns to: it returned.
		 */
		b.kind = INSN_RET;
	else
		b.kind = INSN_JUMP;
	track_calls(pr, t, &b);
	if (pr->output->branch && shown(pr, t, b.from, b.to))
		pr->output->branch(pr, t, &b);
	push_block(t, t->at, b.end);
	t->at = r->to;
	t->likely_at = 0;
}

static void on_kernel(struct printer *pr, struct thread *t,
		      const struct bts_record *r)
{
	struct kernel k;

	/* An exec's own system call was made in the program before it. */
	if (t->exec_pending)
		proc_exec_entry(t->proc, t->at, r->flags);
	kernel_decode(pr, t, r, &k);
	kernel_what(&k, k.what, sizeof(k.what));
	k.depth = t->nframes;
	/* A handler runs a level deeper, which its return leaves. */
	if (k.how == RESUME_SIGNAL)
		push_frame(t, k.entry, 0, true);
	else if (k.how == RESUME_SIGRETURN)
		pop_frames(t, 0, true);
	else if (k.how == RESUME_EXEC)
		t->nframes = 0;
	if (pr->output->kernel && shown(pr, t, k.entry, k.resume))
		pr->output->kernel(pr, t, &k);
	if (t->exec_pending) {
		proc_exec_entry(t->proc, 0, 0);
		t->exec_pending = false;
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
	struct lost l = { .count = r->to };

	/* Mapping changes may be among what was lost. */
	proc_trace_gap(pr->syms, t->proc);
	if (arg == BTS_LOST_OVERRUN) {
		l.reason = "overrun";
		snprintf(l.what, sizeof(l.what),
			 "lost records: the hardware's buffer overran");
	} else if (arg == BTS_LOST_UNTRACED) {
		l.reason = "untraced";
		snprintf(l.what, sizeof(l.what),
			 "lost records: ran on a CPU that could not trace");
	} else {
		snprintf(l.what, sizeof(l.what), "lost %llu records",
			 (unsigned long long)r->to);
	}
	if (pr->output->lost && thread_shown(pr, t))
		pr->output->lost(pr, t, &l);
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

/*
 * An event the thread wrote (a user_event): which, where, and its payload
 * if all of it is in the trace (the front of a ring may have cut the
 * details off).
 */
static void on_marker(struct printer *pr, struct thread *t,
		      const struct bts_record *r)
{
	unsigned int len = BTS_MARKER_LEN(r->from);
	unsigned int need = (1U << (len + 15) / 16) - 1;
	struct marker m = {
		.r = r,
		.event = events_find(pr->events, BTS_MARKER_ID(r->flags),
				     BTS_MARKER_GEN(r->flags)),
		.have_payload = len <= BTS_MARKER_PAYLOAD_MAX &&
				(t->payload_have & need) == need,
	};

	if (pr->output->marker && shown(pr, t, r->to, call_site(t)))
		pr->output->marker(pr, t, &m);
}

/* A detail of the MAP record to come: keep what it says in @d. */
static void map_detail_add(struct map_details *d, const struct bts_record *r)
{
	unsigned int i = BTS_DETAIL_VAL(r->from);

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

/* What MAP record @r and the details @d kept before it say. */
static void map_change_of(struct map_details *d, const struct bts_record *r,
			  struct map_change *c)
{
	unsigned int id_len = BTS_MAP_BUILD_ID_LEN(r->from);
	unsigned int id_need = (1U << (id_len + 15) / 16) - 1;

	*c = (struct map_change) {
		.event = BTS_MAP_EVENT(r->from),
		.start = r->to,
		.end = r->flags,
		.flags = BTS_MAP_FLAGS(r->from),
		.name = map_name(d),
		.file = d->file_have == 3,
	};
	if (c->file) {
		c->offset = d->offset;
		c->inode = d->inode;
		c->dev_major = d->dev >> 32;
		c->dev_minor = (u32)d->dev;
		c->mtime = d->mtime;
	}
	if (id_len && id_len <= sizeof(d->build_id) &&
	    (d->id_have & id_need) == id_need) {
		c->build_id = d->build_id;
		c->build_id_len = id_len;
	}
}

/* The mapping a BTS_MAP_MMAP change makes; its path is @c's. */
static void mapping_of(const struct map_change *c, struct mapping *m)
{
	*m = (struct mapping) {
		.start = c->start,
		.end = c->end,
		.offset = c->offset,
		.inode = c->inode,
		.dev_major = c->dev_major,
		.dev_minor = c->dev_minor,
		.mtime = c->mtime,
		.path = (char *)(c->name ? c->name : ""),
	};
	if (c->build_id) {
		memcpy(m->build_id, c->build_id, c->build_id_len);
		m->build_id_len = c->build_id_len;
	}
	memcpy(m->perms, "r-xp", sizeof(m->perms));
}

/*
 * The trace's own word on @t's name (BTS_MAP_COMM): from here on, in the
 * next header; the main thread's names its process too, as /proc/PID/comm
 * does.
 */
static void thread_rename(struct printer *pr, struct thread *t,
			  const char *name)
{
	if (pr->shown == t)
		pr->shown = NULL;
	set_comm(t->comm, name, strlen(name));
	if (t->tid == t->pid)
		proc_set_comm(t->proc, name, strlen(name));
}

/*
 * The process's address space changed here: update its mappings, which
 * symbolize every later branch, and show the change if asked to.
 */
static void on_map(struct printer *pr, struct thread *t,
		   const struct bts_record *r)
{
	struct map_change c;
	struct mapping m;

	map_change_of(&t->map, r, &c);
	switch (c.event) {
	case BTS_MAP_EXEC:
		proc_exec(pr->syms, t->proc);
		t->exec_pending = true;
		c.what = "exec";
		break;
	case BTS_MAP_MMAP:
		mapping_of(&c, &m);
		if (m.start < m.end)
			proc_map(pr->syms, t->proc, &m);
		c.what = "mmap";
		break;
	case BTS_MAP_MUNMAP:
		if (c.start < c.end)
			proc_unmap(pr->syms, t->proc, c.start, c.end);
		c.what = "munmap";
		break;
	case BTS_MAP_COMM:
		if (!c.name)
			return;
		thread_rename(pr, t, c.name);
		c.what = "comm";
		break;
	default:
		/* A kind of change this bts-dump does not know: skipped. */
		return;
	}
	if (pr->opts.show_maps && pr->output->map && thread_shown(pr, t))
		pr->output->map(pr, t, &c);
}

static void on_thread(struct printer *pr, struct thread **cur,
		      const struct bts_record *r)
{
	unsigned int event = BTS_PSEUDO_ARG(r->from);
	struct thread *t;

	t = thread_get(pr, (u32)r->to, (u32)r->flags);
	*cur = t;
	if (event == BTS_THREAD_NEW) {
		thread_reset(pr, t);
		/* An id used again: of the process running now. */
		if (t->exited)
			thread_join(pr, t, t->pid);
	}
	if ((event == BTS_THREAD_NEW || event == BTS_THREAD_EXIT) &&
	    pr->output->thread && thread_shown(pr, t))
		pr->output->thread(pr, t, event);
	if (event == BTS_THREAD_EXIT)
		thread_leave(pr, t);
}

/* A pseudo-record of a type this bts-dump does not know. */
static void on_pseudo(struct printer *pr, struct thread *t,
		      const struct bts_record *r)
{
	char what[96];

	if (!pr->output->pseudo || !thread_shown(pr, t))
		return;
	snprintf(what, sizeof(what),
		 "pseudo-record type %u arg %u: 0x%llx 0x%llx",
		 BTS_PSEUDO_TYPE(r->from), BTS_PSEUDO_ARG(r->from),
		 (unsigned long long)r->to, (unsigned long long)r->flags);
	pr->output->pseudo(pr, t, r, what);
}

/* Decode and print one record of the stream @cur carries. */
static void p_record(struct printer *pr, struct thread **cur,
		     const struct bts_record *r)
{
	pr->nrecords++;
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
			map_detail_add(&(*cur)->map, r);
			return;
		}
		/*
		 * A layout this bts-dump does not know, or a detail of
		 * another type, is skipped: it leaves the KERNEL record's
		 * detail that came before it in place.
		 */
		if (BTS_DETAIL_TYPE(r->from) == BTS_PSEUDO_KERNEL &&
		    BTS_DETAIL_LAYOUT(r->from) == BTS_DETAIL_KERNEL_ENTRY) {
			(*cur)->have_detail = true;
			(*cur)->detail = *r;
		}
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
		on_pseudo(pr, *cur, r);
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
		if (pr->output->window_header)
			pr->output->window_header(pr, *cur);
		window_print(pr, *cur);
		fwrite(pr->scratch_buf, 1, len, out);
	}
	window_push(pr, *cur, pr->scratch_buf, len);
}

/**
 * output_error() - say once that writing the output failed, and why
 * @pr: the printer
 * @error: the errno of the write that failed
 *
 * Return: -1, for the caller to stop: a full disk will not take the rest.
 */
int output_error(struct printer *pr, int error)
{
	if (!pr->output_said)
		warnx("%s: write error: %s", pr->opts.out_name, strerror(error));
	pr->output_said = true;
	return -1;
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
	/* The errno of the write that set the error, nothing having failed since. */
	return ferror(pr->out) ? output_error(pr, errno) : 0;
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

static int p_file(struct sink *s, u32 pid, const struct file_id *id,
		  const void *data, size_t len)
{
	struct printer *pr = (struct printer *)s;

	proc_add_file(pr->syms, proc_get(pr->syms, pid), id, data, len);
	return 0;
}

static int p_event_format(struct sink *s, u32 id, u32 gen, const char *text,
			  size_t len)
{
	struct printer *pr = (struct printer *)s;

	events_add(pr->events, id, gen, text, len);
	return 0;
}

static int p_comm(struct sink *s, u32 pid, u32 tid, const char *name,
		  size_t len)
{
	struct printer *pr = (struct printer *)s;

	/* A new name shows in the next header. */
	if (pr->shown && pr->shown->pid == pid)
		pr->shown = NULL;
	if (!tid) {
		proc_set_comm(proc_get(pr->syms, pid), name, len);
		return 0;
	}
	set_comm(thread_get(pr, tid, pid)->comm, name, len);
	return 0;
}

static int p_jit(struct sink *s, u32 pid, u32 ns_pid, bool whole,
		 const char *text, size_t len)
{
	struct printer *pr = (struct printer *)s;

	proc_add_jit(proc_get(pr->syms, pid), ns_pid, whole, text, len);
	return 0;
}

/*
 * What the printer was given is out (the order stage, before it, let out
 * what settled): a person watching a live trace sees it.  An error stays
 * on the stream for printer_finish() to report.
 */
static int p_settle(struct sink *s, u64 before_ns)
{
	struct printer *pr = (struct printer *)s;

	(void)before_ns;
	fflush(pr->out);
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

static void p_unordered(void *arg, u32 tid, u32 pid)
{
	struct printer *pr = arg;
	struct thread *t = tid || pid ? thread_get(pr, tid, pid) : NULL;

	if (!t || thread_shown(pr, t))
		pr->output->unordered(pr, t);
}

/*
 * Records as they come, before the order stage holds them: read the files
 * their MAP records name now, while they are there, so that a program
 * rebuilt before its records print is still named from the build it ran.
 * A record whose details came in another read is left to its turn.
 */
static void p_arrived(void *arg, const struct bts_record *r, size_t n)
{
	struct printer *pr = arg;
	struct map_details d = { 0 };
	struct map_change c;
	struct mapping m;
	size_t i;

	for (i = 0; i < n; i++, r++) {
		if (BTS_RECORD_IS_PSEUDO(r->from)) {
			switch (BTS_PSEUDO_TYPE(r->from)) {
			case BTS_PSEUDO_THREAD:
				/* Framing: details may wait across it. */
				continue;
			case BTS_PSEUDO_DETAIL:
				if (BTS_DETAIL_TYPE(r->from) != BTS_PSEUDO_MAP)
					break;
				map_detail_add(&d, r);
				continue;
			case BTS_PSEUDO_MAP:
				map_change_of(&d, r, &c);
				if (c.event != BTS_MAP_MMAP || !c.name)
					break;
				mapping_of(&c, &m);
				syms_prefetch(pr->syms, &m);
				break;
			}
		}
		map_details_clear(&d);
	}
}

struct printer *printer_new(FILE *out, const struct print_opts *opts)
{
	struct printer *pr = xcalloc(1, sizeof(*pr));

	hash_init(pr->threads);
	hash_init(pr->streams);
	pr->sink.records = p_records;
	pr->sink.maps = p_maps;
	pr->sink.memory = p_memory;
	pr->sink.file = p_file;
	pr->sink.exit = p_exit;
	pr->sink.event_format = p_event_format;
	pr->sink.comm = p_comm;
	pr->sink.jit = p_jit;
	pr->sink.settle = p_settle;
	pr->out = out;
	pr->opts = *opts;
	if (!pr->opts.out_name)
		pr->opts.out_name = "the output";
	if (opts->calls)
		pr->output = &output_calls;
	else if (opts->format == FORMAT_JSONL)
		pr->output = &output_jsonl;
	else if (opts->format == FORMAT_FOLDED)
		pr->output = &output_folded;
	else if (opts->format == FORMAT_CHROME)
		pr->output = &output_chrome;
	else if (opts->format == FORMAT_PERF)
		pr->output = &output_perf;
	else if (opts->format == FORMAT_PT)
		pr->output = &output_pt;
	else
		pr->output = &output_text;
	pr->syms = syms_new(!pr->opts.mangled);
	pr->events = events_new();
	if (pr->output->unordered)
		pr->order = order_sink_new(&pr->sink, p_unordered, p_arrived,
					   pr);
	return pr;
}

/**
 * printer_sink() - where the printer takes what it prints
 * @pr: the printer
 *
 * Return: the sink; for the outputs a person reads line by line, it puts
 * the threads' records in time order first.
 */
struct sink *printer_sink(struct printer *pr)
{
	return pr->order ? order_sink(pr->order) : &pr->sink;
}

/*
 * Where the text showed no source lines for want of debug information,
 * say so once, at the end, as perf's "no symbols found" does.
 */
static void hint_lacking(struct printer *pr, enum syms_lack lack,
			 const char *what, const char *why)
{
	const char *names[3];
	size_t n, i;

	n = syms_lacking(pr->syms, lack, names, ARRAY_SIZE(names));
	if (!n)
		return;
	fprintf(stderr, "bts-dump: %s ", what);
	for (i = 0; i < n && i < ARRAY_SIZE(names); i++)
		fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
	if (n > ARRAY_SIZE(names))
		fprintf(stderr, " and %zu more", n - ARRAY_SIZE(names));
	fprintf(stderr, ": %s (build with -g, or install its debug symbols: Debian's -dbgsym or -dbg package)\n",
		why);
}

/* Why names or lines are missing, as perf's "no symbols found" says. */
static void hint_debuginfo(struct printer *pr)
{
	if (pr->output == &output_perf || pr->output == &output_pt)
		return;
	hint_lacking(pr, SYMS_NO_FUNCTIONS, "no function names in",
		     "stripped, addresses shown as offsets in the file");
	if (pr->output != &output_text && pr->output != &output_jsonl)
		return;
	if (pr->opts.fields && !(pr->opts.fields & FIELD_SRCLINE))
		return;
	hint_lacking(pr, SYMS_NO_LINES, "no source lines for",
		     "no debug information");
}

int printer_finish(struct printer *pr)
{
	int error = 0;

	if (pr->order)
		error = order_sink_finish(pr->order);
	pr->order = NULL;
	if (error)
		return -1;
	if (pr->output->finish && pr->output->finish(pr))
		return -1;
	hint_debuginfo(pr);
	if (fflush(pr->out) || ferror(pr->out))
		return output_error(pr, errno);
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
	struct hlist_node *tn;
	struct stream *s;
	struct thread *t;
	size_t b;

	hash_for_each_safe(pr->threads, b, tn, t, node) {
		if (pr->output->thread_free)
			pr->output->thread_free(pr, t);
		free(t->frames);
		window_free(pr, t);
		free(t);
	}
	if (pr->output->free)
		pr->output->free(pr);
	hash_for_each_safe(pr->streams, b, tn, s, node)
		free(s);
	free(pr->exit_cmd);
	if (pr->scratch)
		fclose(pr->scratch);
	free(pr->scratch_buf);
	events_free(pr->events);
	syms_free(pr->syms);
	free(pr);
}
