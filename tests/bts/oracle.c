// SPDX-License-Identifier: GPL-2.0
/*
 * oracle: the taken user-mode branches of a program, found by ptrace
 * single-stepping instead of by BTS, to check BTS traces against.
 *
 *	oracle [-t | -f] [-o FILE] [-l MAX_STEPS] -- CMD [ARG...]
 *
 * The child asks to be traced and execs CMD; the exec stops it before the
 * first instruction of the new image (for a static binary, _start), which
 * is where perf's enable_on_exec starts a BTS trace too.  From there on
 * every user instruction is single-stepped and decoded with capstone, in
 * 64-bit or 32-bit mode as the tracee's code segment says.
 *
 * Output, one line per taken branch, in execution order:
 *
 *	FROM TO MNEMONIC		(hex addresses, no 0x)
 *
 * where MNEMONIC is capstone's name, with a '*' appended for an indirect
 * jmp or call ("jmp*", "call*").
 *
 * Lines starting with '#' are notes (signal deliveries, system calls that
 * did not return to the next instruction, the final summary); a comparison
 * skips them.
 *
 * -t follows the threads CMD creates (PTRACE_O_TRACECLONE), stepping each
 * on its own, and lists what a user-only trace of each thread holds,
 * including its stretches in the kernel.  -f is -t that also follows the
 * processes CMD and its descendants fork (PTRACE_O_TRACEFORK, _TRACEVFORK),
 * each process's threads too.  Every line starts with the thread id, and
 * lines of different threads interleave:
 *
 *	TID B FROM TO MNEMONIC	a taken branch, as above
 *	TID K FROM TO ENTRY	a stretch in the kernel: entered at FROM,
 *				back in user mode at TO; ENTRY is
 *				"syscall:NR" (NR: rax as the thread made
 *				the call, eax from 32-bit code, int $0x80
 *				or sysenter),
 *				"exception:SIG" (a fault that raised signal
 *				SIG) or "unknown" (FROM 0: the thread was
 *				born in the kernel, at the exec or the clone).
 *				TO is 0 when the thread never came back.
 *	# TID NOTE		notes, as above; among them, at each
 *				thread's first stop, "process PID": the
 *				thread belongs to process PID (its Tgid)
 *
 * A stretch ends where the next instruction completes, which may be in a
 * signal handler.  Faults the kernel handles without a signal (page
 * faults) and interrupts are invisible to ptrace and not listed.
 *
 * What counts as a taken branch, and why it matches BTS with user-only
 * filtering (BTS_OFF_OS, or perf's software filter):
 *
 * - jmp, call, ret (near or far, direct or indirect) are always taken,
 *   even when the target happens to be the next instruction ("jmp .+2").
 * - jcc, loop* and j*cxz are taken when the next PC is not the fall-through.
 *   A conditional branch whose target *is* the fall-through is decided from
 *   EFLAGS/RCX read before stepping it.
 * - syscall, sysenter and int* are never user->user branches: BTS records
 *   them as user->kernel, and the return (sysret/iret) runs at CPL 0 so a
 *   user-only trace has no record of it.  When such an instruction does
 *   not come back to its fall-through (rt_sigreturn, a restarted system
 *   call) we print a note, not a branch.
 * - Interrupts and faults (page faults, the #UD of ud2) are not branches
 *   of the interrupted instruction; BTS gives them a kernel target.
 * - Signal delivery: after a signal-delivery-stop we resume the tracee
 *   with PTRACE_SINGLESTEP and the signal number; the kernel builds the
 *   frame and, because the tracee is being stepped, reports a SIGTRAP stop
 *   (si_code SIGTRAP, from ptrace_notify() in signal_delivered()) with the
 *   PC at the handler *before any instruction ran*.  So the new PC is the
 *   handler, but no instruction executed, and in particular the
 *   instruction at the old PC did not branch: the jump into the handler is
 *   the kernel's iret/sysret, which a user-only BTS trace does not show.
 *   The handler's final ret to the restorer (__restore_rt) is a normal
 *   user branch; rt_sigreturn is a syscall and gets a note.
 *
 * So a resume "completed an instruction" only when the next stop is a
 * SIGTRAP with si_code TRAP_TRACE (the #DB after one instruction) or
 * TRAP_BRKPT (the kernel's report after a stepped syscall instruction).
 * Any other stop (a signal-delivery-stop such as SIGILL from ud2 or a
 * SIGUSR1 queued by kill(), or the handler-entry SIGTRAP) means the PC
 * changed, if at all, without the old instruction completing.
 *
 * With -t, a thread that steps clone() first reports a PTRACE_EVENT_CLONE
 * stop (with -f, a fork() or vfork() PTRACE_EVENT_FORK or _VFORK), in the
 * middle of the system call; it is resumed with the same step pending.
 * The new thread or process starts with a SIGSTOP, at the instruction
 * after the system call, which is not delivered.  A forked child has its
 * parent's code at the same addresses, so instructions are decoded from
 * CMD's memory for every process.
 *
 * Limitations: a non-branch instruction whose next PC is not its
 * fall-through, other than a repeated string instruction restarting
 * itself, is reported as UNEXPLAINED and makes the oracle fail rather than
 * guess.  Without -t, only the thread that execs CMD is followed.  With
 * -t, CMD must not end while threads other than the one ending it run: a
 * thread killed between its stop and its next step makes the oracle fail.
 * With -f, CMD must also wait for its children before it ends (the oracle
 * ends with CMD, and its children would be killed), and a followed
 * process must not exec (its code would no longer be CMD's): the oracle
 * fails if one does.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TRAP_BRKPT
#define TRAP_BRKPT	1
#endif
#ifndef TRAP_TRACE
#define TRAP_TRACE	2
#endif

/* The user code segment of a 32-bit task on x86-64 (__USER32_CS). */
#define USER32_CS	0x23

enum kind {
	K_OTHER,	/* not a control transfer */
	K_COND,		/* jcc, loop*, j*cxz */
	K_UNCOND,	/* jmp, call, ret, far forms, iret */
	K_KERNEL,	/* syscall, sysenter, int*: enters the kernel */
	K_REP,		/* rep-prefixed string op: may restart itself */
};

struct insn {
	uint64_t pc;		/* 0: empty slot */
	uint64_t target;	/* direct target, or 0 */
	unsigned int id;	/* capstone instruction id */
	uint8_t len;
	uint8_t kind;
	uint8_t indirect;	/* jmp or call through a register or memory */
};

/* How a thread's current stretch in the kernel began (-t). */
enum entry {
	E_NONE,		/* in user mode */
	E_UNKNOWN,	/* born in the kernel: exec or clone */
	E_SYSCALL,
	E_EXCEPTION,	/* a fault that raised a signal */
};

struct thread {
	pid_t tid;
	int started;		/* had its first stop */
	uint64_t pc;		/* where the next step starts */
	struct insn *in;	/* the instruction at pc */
	int taken;		/* decided before the step, or -1 */
	int inject;		/* signal to deliver with the next step */
	enum entry entry;	/* -t: the kernel stretch not listed yet */
	uint64_t kfrom;		/* where it entered the kernel */
	int ksig;		/* E_EXCEPTION: the signal */
	uint64_t nr;		/* rax before the last K_KERNEL step */
	int midway;		/* the next step goes on with a system call */
	uint64_t knr;		/* E_SYSCALL: the system call number */
	struct thread *next;
};

#define CACHE_BITS	18
#define CACHE_SIZE	(1u << CACHE_BITS)

static struct insn *cache;
static unsigned int cache_used;
static csh cs;
static int memfd;
static int mode32;		/* the tracee runs 32-bit code */
static int follow;		/* -t or -f */
static int follow_forks;	/* -f */
static FILE *out;
static pid_t leader;
static struct thread *threads;
static unsigned long long steps, branches, syscalls, signals, unexplained;
static unsigned long long max_steps = 5000000, nthreads;

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static unsigned int hash(uint64_t pc)
{
	return (unsigned int)((pc * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS));
}

static enum kind classify(const cs_insn *ci)
{
	const cs_x86 *x = &ci->detail->x86;
	int i;

	switch (ci->id) {
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ:
	case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return K_COND;
	case X86_INS_JMP: case X86_INS_LJMP:
	case X86_INS_CALL: case X86_INS_LCALL:
	case X86_INS_RET: case X86_INS_RETF: case X86_INS_RETFQ:
	case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ:
		return K_UNCOND;
	case X86_INS_SYSCALL: case X86_INS_SYSENTER:
	case X86_INS_INT: case X86_INS_INT1: case X86_INS_INT3:
	case X86_INS_INTO:
		return K_KERNEL;
	}
	for (i = 0; i < 4; i++)
		if (x->prefix[i] == X86_PREFIX_REP ||
		    x->prefix[i] == X86_PREFIX_REPNE)
			return K_REP;
	return K_OTHER;
}

/* Is this a VEX, EVEX or XOP encoded instruction (after any prefixes)? */
static int vex_encoded(const uint8_t *b, ssize_t n)
{
	ssize_t i = 0;

	while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 ||
			 b[i] == 0xf3 || b[i] == 0xf0 || b[i] == 0x2e ||
			 b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x36 ||
			 b[i] == 0x64 || b[i] == 0x65))
		i++;
	return i < n && (b[i] == 0x62 || b[i] == 0xc4 || b[i] == 0xc5 ||
			 b[i] == 0x8f);
}

/* Decode the instruction at @pc of the tracee, once per address. */
static struct insn *lookup(uint64_t pc)
{
	unsigned int h = hash(pc);
	const cs_x86_op *op;
	int near, direct;
	uint8_t buf[16];
	struct insn *in;
	cs_insn *ci;
	ssize_t n;

	for (;;) {
		in = &cache[h];
		if (in->pc == pc)
			return in;
		if (!in->pc)
			break;
		h = (h + 1) & (CACHE_SIZE - 1);
	}
	if (++cache_used > CACHE_SIZE / 2) {
		fprintf(stderr, "oracle: too many distinct instructions\n");
		exit(2);
	}

	/* A short read is fine: the instruction may end at a page end. */
	n = pread(memfd, buf, sizeof(buf), (off_t)pc);
	if (n <= 0)
		die("oracle: read tracee code");
	in->pc = pc;
	if (cs_disasm(cs, buf, n, pc, 1, &ci) != 1) {
		/*
		 * capstone 4 does not know some AVX-512 forms.  Every
		 * control transfer is a legacy opcode it does know, so a
		 * VEX/EVEX/XOP-encoded instruction is not a branch; learn
		 * its length from where the step ends.  (In 32-bit mode
		 * these opcodes are also LES, LDS, BOUND and POP, which
		 * capstone decodes.)
		 */
		if (!vex_encoded(buf, n)) {
			fprintf(stderr, "oracle: cannot decode at %#llx\n",
				(unsigned long long)pc);
			exit(2);
		}
		in->id = X86_INS_INVALID;
		in->len = 0;
		in->kind = K_OTHER;
		in->target = 0;
		return in;
	}
	in->id = ci->id;
	in->len = ci->size;
	in->kind = classify(ci);
	near = ci->id == X86_INS_JMP || ci->id == X86_INS_CALL;
	op = &ci->detail->x86.operands[0];
	direct = ci->detail->x86.op_count == 1 && op->type == X86_OP_IMM;
	in->target = direct && (near || in->kind == K_COND) ? op->imm : 0;
	in->indirect = near && !direct;
	cs_free(ci, 1);
	return in;
}

static unsigned long peek_user(pid_t pid, size_t off)
{
	long v;

	errno = 0;
	v = ptrace(PTRACE_PEEKUSER, pid, (void *)off, NULL);
	if (v == -1 && errno)
		die("oracle: PTRACE_PEEKUSER");
	return (unsigned long)v;
}

#define REG(r)	offsetof(struct user, regs.r)

/*
 * Would the conditional branch @in, about to execute, be taken?  Only
 * needed when its target is its fall-through, so the next PC cannot tell.
 * 32-bit code counts in ECX (loop*), and tests ECX or, with an address
 * size prefix, CX (jecxz, jcxz).
 */
static int cond_taken(pid_t pid, const struct insn *in)
{
	unsigned long f = peek_user(pid, REG(eflags));
	unsigned long rcx = peek_user(pid, REG(rcx));
	unsigned long count = mode32 ? (uint32_t)rcx : rcx;
	int cf = !!(f & 0x1), pf = !!(f & 0x4), zf = !!(f & 0x40);
	int sf = !!(f & 0x80), of = !!(f & 0x800);

	switch (in->id) {
	case X86_INS_JO:	return of;
	case X86_INS_JNO:	return !of;
	case X86_INS_JB:	return cf;
	case X86_INS_JAE:	return !cf;
	case X86_INS_JE:	return zf;
	case X86_INS_JNE:	return !zf;
	case X86_INS_JBE:	return cf || zf;
	case X86_INS_JA:	return !cf && !zf;
	case X86_INS_JS:	return sf;
	case X86_INS_JNS:	return !sf;
	case X86_INS_JP:	return pf;
	case X86_INS_JNP:	return !pf;
	case X86_INS_JL:	return sf != of;
	case X86_INS_JGE:	return sf == of;
	case X86_INS_JLE:	return zf || sf != of;
	case X86_INS_JG:	return !zf && sf == of;
	case X86_INS_JRCXZ:	return rcx == 0;
	case X86_INS_JECXZ:	return (uint32_t)rcx == 0;
	case X86_INS_JCXZ:	return (uint16_t)rcx == 0;
	case X86_INS_LOOP:	return count != 1;
	case X86_INS_LOOPE:	return count != 1 && zf;
	case X86_INS_LOOPNE:	return count != 1 && !zf;
	}
	fprintf(stderr, "oracle: no condition for %s\n", cs_insn_name(cs, in->id));
	exit(2);
}

/* A note line: "# TEXT", with -t "# TID TEXT". */
static void __attribute__((format(printf, 2, 3)))
note(const struct thread *t, const char *fmt, ...)
{
	va_list ap;

	fputs("# ", out);
	if (follow)
		fprintf(out, "%d ", t->tid);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
}

/* List @t's stretch in the kernel (-t), which ended with user mode at @to. */
static void kernel_end(struct thread *t, uint64_t to)
{
	if (t->entry == E_NONE)
		return;
	fprintf(out, "%d K %llx %llx ", t->tid, (unsigned long long)t->kfrom,
		(unsigned long long)to);
	if (t->entry == E_EXCEPTION)
		fprintf(out, "exception:%d\n", t->ksig);
	else if (t->entry == E_SYSCALL)
		fprintf(out, "syscall:%llu\n", (unsigned long long)t->knr);
	else
		fputs("unknown\n", out);
	t->entry = E_NONE;
}

/* -t: @t entered the kernel at @pc, unless it is there already. */
static void kernel_begin(struct thread *t, enum entry entry, uint64_t pc,
			 int sig)
{
	if (!follow || t->entry != E_NONE)
		return;
	t->entry = entry;
	t->kfrom = pc;
	t->ksig = sig;
	t->knr = t->nr;
}

static struct thread *find_thread(pid_t tid)
{
	struct thread *t;

	for (t = threads; t; t = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

static struct thread *add_thread(pid_t tid)
{
	struct thread *t = calloc(1, sizeof(*t));

	if (!t)
		die("oracle: calloc");
	t->tid = tid;
	t->next = threads;
	threads = t;
	nthreads++;
	return t;
}

static void remove_thread(struct thread *gone)
{
	struct thread **p;

	for (p = &threads; *p != gone; p = &(*p)->next)
		;
	*p = gone->next;
	free(gone);
}

/* The process @tid belongs to: its Tgid in /proc. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	long tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "r");
	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	if (tgid <= 0) {
		fprintf(stderr, "oracle: no Tgid in %s\n", path);
		exit(2);
	}
	return tgid;
}

/* The first stop of a thread: it starts, in the kernel, at its PC. */
static void start_thread(struct thread *t)
{
	t->started = 1;
	t->pc = peek_user(t->tid, REG(rip));
	if (follow)
		note(t, "process %d", tgid_of(t->tid));
	note(t, "start %llx", (unsigned long long)t->pc);
	kernel_begin(t, E_UNKNOWN, 0, 0);
}

/* Step @t over the instruction at its pc, delivering t->inject. */
static void step(struct thread *t)
{
	struct insn *in = lookup(t->pc);

	t->in = in;
	t->taken = -1;
	if (in->kind == K_COND && in->target == t->pc + in->len)
		t->taken = cond_taken(t->tid, in);
	/*
	 * The system call number, as the kernel's entry will see it; not
	 * when the step goes on after a stop inside the call, where rax is
	 * the kernel's by now.
	 */
	if (follow && in->kind == K_KERNEL && !t->midway) {
		t->nr = peek_user(t->tid, REG(rax));
		if (mode32 || in->id != X86_INS_SYSCALL)
			t->nr = (uint32_t)t->nr;
	}
	t->midway = 0;
	if (++steps > max_steps) {
		fprintf(stderr, "oracle: more than %llu steps\n", max_steps);
		kill(leader, SIGKILL);
		exit(2);
	}
	if (ptrace(PTRACE_SINGLESTEP, t->tid, NULL, (void *)(long)t->inject))
		die("oracle: PTRACE_SINGLESTEP");
	t->inject = 0;
}

/* @t stopped after a step with @status: account for it, step again. */
static void stopped(struct thread *t, int status)
{
	struct insn *in = t->in;
	uint64_t pc = t->pc, next;
	int taken = t->taken;
	siginfo_t si;

	next = peek_user(t->tid, REG(rip));
	t->pc = next;

	if (WSTOPSIG(status) != SIGTRAP) {
		/*
		 * Signal-delivery-stop: the stepped instruction did not
		 * complete (a fault), or no instruction ran yet since a
		 * syscall queued this signal.  Deliver it.
		 */
		t->inject = WSTOPSIG(status);
		signals++;
		note(t, "signal %d at %llx", t->inject,
		     (unsigned long long)next);
		kernel_begin(t, E_EXCEPTION, next, t->inject);
		step(t);
		return;
	}
	if (ptrace(PTRACE_GETSIGINFO, t->tid, NULL, &si))
		die("oracle: PTRACE_GETSIGINFO");
	if (si.si_code == SIGTRAP) {
		/* ptrace_notify(): entered a signal handler. */
		note(t, "handler %llx", (unsigned long long)next);
		step(t);
		return;
	}
	if (si.si_code != TRAP_TRACE && si.si_code != TRAP_BRKPT) {
		/* A real SIGTRAP (kill, raise): pass it on. */
		t->inject = SIGTRAP;
		signals++;
		note(t, "signal %d at %llx", t->inject,
		     (unsigned long long)next);
		kernel_begin(t, E_EXCEPTION, next, t->inject);
		step(t);
		return;
	}

	/* The instruction at pc completed; next is its successor. */
	kernel_end(t, pc);
	switch (in->kind) {
	case K_COND:
		if (taken < 0)
			taken = next != pc + in->len;
		if (taken && next != in->target)
			goto odd;
		break;
	case K_UNCOND:
		taken = 1;
		if (in->target && next != in->target)
			goto odd;
		break;
	case K_KERNEL:
		syscalls++;
		kernel_begin(t, E_SYSCALL, pc, 0);
		if (next != pc + in->len)
			note(t, "%s %llx returned to %llx",
			     cs_insn_name(cs, in->id), (unsigned long long)pc,
			     (unsigned long long)next);
		break;
	case K_REP:
		if (next != pc && next != pc + in->len)
			goto odd;
		break;
	default:
		if (!in->len && next > pc && next - pc <= 15)
			in->len = next - pc;
		if (next != pc + in->len)
			goto odd;
		break;
	}
	if (taken > 0) {
		branches++;
		if (follow)
			fprintf(out, "%d B ", t->tid);
		/* "jmp*", "call*": indirect, through a register or memory */
		fprintf(out, "%llx %llx %s%s\n", (unsigned long long)pc,
			(unsigned long long)next, cs_insn_name(cs, in->id),
			in->indirect ? "*" : "");
	}
	step(t);
	return;
odd:
	unexplained++;
	note(t, "UNEXPLAINED %llx %llx %s", (unsigned long long)pc,
	     (unsigned long long)next, cs_insn_name(cs, in->id));
	step(t);
}

/* -t: a stop of a thread that is not a step's end.  Handled? */
static int thread_event(struct thread *t, int status)
{
	int event = status >> 16;
	unsigned long msg;

	if (WSTOPSIG(status) == SIGTRAP &&
	    (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
	     event == PTRACE_EVENT_VFORK)) {
		/* In the middle of clone() or fork(): the step goes on. */
		if (ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg))
			die("oracle: PTRACE_GETEVENTMSG");
		if (!find_thread(msg))
			add_thread(msg);
		note(t, "%s %lu", event == PTRACE_EVENT_CLONE ? "clone" : "fork",
		     msg);
		t->midway = 1;
		step(t);
		return 1;
	}
	if (WSTOPSIG(status) == SIGTRAP && event == PTRACE_EVENT_EXEC) {
		fprintf(stderr, "oracle: %d exec'ed: -f cannot follow that\n",
			t->tid);
		exit(2);
	}
	if (!t->started) {
		/* A new thread's first stop; the SIGSTOP is not delivered. */
		if (WSTOPSIG(status) != SIGSTOP) {
			fprintf(stderr, "oracle: thread %d starts with status %#x\n",
				t->tid, status);
			exit(2);
		}
		start_thread(t);
		step(t);
		return 1;
	}
	return 0;
}

/*
 * -t: a thread is gone; the leader goes last.  Its last stretch in the
 * kernel has no end: a fatal signal, or the system call it was stepping
 * (exit, exit_group) never completed.
 */
static void thread_gone(struct thread *t, int status)
{
	if (WIFSIGNALED(status))
		note(t, "killed by signal %d", WTERMSIG(status));
	else
		note(t, "exit %d", WEXITSTATUS(status));
	if (t->in->kind == K_KERNEL)
		kernel_begin(t, E_SYSCALL, t->pc, 0);
	kernel_end(t, 0);
	remove_thread(t);
}

static void usage(void)
{
	fprintf(stderr, "usage: oracle [-t | -f] [-o FILE] [-l MAX_STEPS] -- CMD [ARG...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *out_name = NULL;
	struct thread *t;
	int opt, status;
	char path[64];
	long options;
	pid_t pid;

	while ((opt = getopt(argc, argv, "+tfo:l:")) != -1) {
		switch (opt) {
		case 't':
			follow = 1;
			break;
		case 'f':
			follow = 1;
			follow_forks = 1;
			break;
		case 'o':
			out_name = optarg;
			break;
		case 'l':
			max_steps = strtoull(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();

	out = out_name ? fopen(out_name, "w") : stdout;
	if (!out)
		die(out_name);
	/* Big buffer: one line per branch, tens of thousands of them. */
	setvbuf(out, NULL, _IOFBF, 1 << 20);

	cache = calloc(CACHE_SIZE, sizeof(*cache));
	if (!cache)
		die("oracle: calloc");

	fflush(NULL);
	leader = fork();
	if (leader < 0)
		die("oracle: fork");
	if (leader == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			die("oracle: PTRACE_TRACEME");
		execvp(argv[optind], &argv[optind]);
		fprintf(stderr, "oracle: exec %s: %s\n", argv[optind],
			strerror(errno));
		_exit(127);
	}

	/* The exec SIGTRAP: stopped at the new image's entry point. */
	if (waitpid(leader, &status, 0) != leader)
		die("oracle: waitpid");
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		fprintf(stderr, "oracle: %s did not start (status %#x)\n",
			argv[optind], status);
		return 2;
	}
	options = PTRACE_O_EXITKILL | (follow ? PTRACE_O_TRACECLONE : 0) |
		  (follow_forks ? PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
				  PTRACE_O_TRACEEXEC : 0);
	if (ptrace(PTRACE_SETOPTIONS, leader, NULL, (void *)options))
		die("oracle: PTRACE_SETOPTIONS");
	snprintf(path, sizeof(path), "/proc/%d/mem", leader);
	memfd = open(path, O_RDONLY);
	if (memfd < 0)
		die(path);

	mode32 = peek_user(leader, REG(cs)) == USER32_CS;
	if (cs_open(CS_ARCH_X86, mode32 ? CS_MODE_32 : CS_MODE_64, &cs) !=
	    CS_ERR_OK || cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK) {
		fprintf(stderr, "oracle: capstone init failed\n");
		return 2;
	}

	t = add_thread(leader);
	start_thread(t);
	step(t);

	for (;;) {
		pid = waitpid(follow ? -1 : leader, &status,
			      follow ? __WALL : 0);
		if (pid < 0)
			die("oracle: waitpid");
		t = find_thread(pid);
		/*
		 * -t: a new thread, stopped before its parent's clone event
		 * (or -f: a new process, before the fork event).
		 */
		if (!t)
			t = add_thread(pid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (!follow || pid == leader)
				break;
			thread_gone(t, status);
			continue;
		}
		if (!WIFSTOPPED(status)) {
			fprintf(stderr, "oracle: odd status %#x\n", status);
			return 2;
		}
		if (follow && thread_event(t, status))
			continue;
		stopped(t, status);
	}

	if (follow) {
		thread_gone(t, status);
		fprintf(out, "# threads %llu\n", nthreads);
	}
	fprintf(out, "# summary steps=%llu branches=%llu syscalls=%llu",
		steps, branches, syscalls);
	fprintf(out, " signals=%llu unexplained=%llu status=%#x\n",
		signals, unexplained, status);
	if (fclose(out))
		die("oracle: write");
	if (unexplained) {
		fprintf(stderr, "oracle: %llu unexplained control transfers\n",
			unexplained);
		return 2;
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "oracle: %s killed by signal %d\n",
			argv[optind], WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status) ? 1 : 0;
}
