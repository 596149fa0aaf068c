// SPDX-License-Identifier: GPL-2.0
/*
 * oracle: the taken user-mode branches of a program, found by ptrace
 * single-stepping instead of by BTS, to check BTS traces against.
 *
 *	oracle [-o FILE] [-l MAX_STEPS] -- CMD [ARG...]
 *
 * The child asks to be traced and execs CMD; the exec stops it before the
 * first instruction of the new image (for a static binary, _start), which
 * is where perf's enable_on_exec starts a BTS trace too.  From there on
 * every user instruction is single-stepped and decoded with capstone.
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
 * Limitations: single-threaded tracees only; a non-branch instruction
 * whose next PC is not its fall-through, other than a repeated string
 * instruction restarting itself, is reported as UNEXPLAINED and makes the
 * oracle fail rather than guess.
 */
#define _GNU_SOURCE
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

#define CACHE_BITS	18
#define CACHE_SIZE	(1u << CACHE_BITS)

static struct insn *cache;
static unsigned int cache_used;
static csh cs;
static int memfd;

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
		 * its length from where the step ends.
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
 */
static int cond_taken(pid_t pid, const struct insn *in)
{
	unsigned long f = peek_user(pid, REG(eflags));
	unsigned long rcx = peek_user(pid, REG(rcx));
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
	case X86_INS_LOOP:	return rcx != 1;
	case X86_INS_LOOPE:	return rcx != 1 && zf;
	case X86_INS_LOOPNE:	return rcx != 1 && !zf;
	}
	fprintf(stderr, "oracle: no condition for %s\n", cs_insn_name(cs, in->id));
	exit(2);
}

static void usage(void)
{
	fprintf(stderr, "usage: oracle [-o FILE] [-l MAX_STEPS] -- CMD [ARG...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long steps = 0, branches = 0, syscalls = 0, signals = 0;
	unsigned long long unexplained = 0, max_steps = 5000000;
	const char *out_name = NULL;
	int opt, status, inject = 0;
	uint64_t pc, next;
	char path[64];
	FILE *out;
	pid_t pid;

	while ((opt = getopt(argc, argv, "+o:l:")) != -1) {
		switch (opt) {
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
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK ||
	    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK) {
		fprintf(stderr, "oracle: capstone init failed\n");
		return 2;
	}

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("oracle: fork");
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			die("oracle: PTRACE_TRACEME");
		execvp(argv[optind], &argv[optind]);
		fprintf(stderr, "oracle: exec %s: %s\n", argv[optind],
			strerror(errno));
		_exit(127);
	}

	/* The exec SIGTRAP: stopped at the new image's entry point. */
	if (waitpid(pid, &status, 0) != pid)
		die("oracle: waitpid");
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		fprintf(stderr, "oracle: %s did not start (status %#x)\n",
			argv[optind], status);
		return 2;
	}
	if (ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)PTRACE_O_EXITKILL))
		die("oracle: PTRACE_SETOPTIONS");
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	memfd = open(path, O_RDONLY);
	if (memfd < 0)
		die(path);

	pc = peek_user(pid, REG(rip));
	fprintf(out, "# start %llx\n", (unsigned long long)pc);

	for (;;) {
		struct insn *in = lookup(pc);
		int taken = -1;
		siginfo_t si;

		if (in->kind == K_COND && in->target == pc + in->len)
			taken = cond_taken(pid, in);
		if (++steps > max_steps) {
			fprintf(stderr, "oracle: more than %llu steps\n",
				max_steps);
			kill(pid, SIGKILL);
			return 2;
		}
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL,
			   (void *)(long)inject))
			die("oracle: PTRACE_SINGLESTEP");
		inject = 0;
		if (waitpid(pid, &status, 0) != pid)
			die("oracle: waitpid");
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (!WIFSTOPPED(status)) {
			fprintf(stderr, "oracle: odd status %#x\n", status);
			return 2;
		}
		next = peek_user(pid, REG(rip));

		if (WSTOPSIG(status) != SIGTRAP) {
			/*
			 * Signal-delivery-stop: the stepped instruction did
			 * not complete (a fault), or no instruction ran yet
			 * since a syscall queued this signal.  Deliver it.
			 */
			inject = WSTOPSIG(status);
			signals++;
			fprintf(out, "# signal %d at %llx\n", inject,
				(unsigned long long)next);
			pc = next;
			continue;
		}
		if (ptrace(PTRACE_GETSIGINFO, pid, NULL, &si))
			die("oracle: PTRACE_GETSIGINFO");
		if (si.si_code == SIGTRAP) {
			/* ptrace_notify(): entered a signal handler. */
			fprintf(out, "# handler %llx\n",
				(unsigned long long)next);
			pc = next;
			continue;
		}
		if (si.si_code != TRAP_TRACE && si.si_code != TRAP_BRKPT) {
			/* A real SIGTRAP (kill, raise): pass it on. */
			inject = SIGTRAP;
			signals++;
			fprintf(out, "# signal %d at %llx\n", inject,
				(unsigned long long)next);
			pc = next;
			continue;
		}

		/* The instruction at pc completed; next is its successor. */
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
			if (next != pc + in->len)
				fprintf(out, "# %s %llx returned to %llx\n",
					cs_insn_name(cs, in->id),
					(unsigned long long)pc,
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
			/* "jmp*", "call*": indirect, through a register or memory */
			fprintf(out, "%llx %llx %s%s\n", (unsigned long long)pc,
				(unsigned long long)next,
				cs_insn_name(cs, in->id),
				in->indirect ? "*" : "");
		}
		pc = next;
		continue;
odd:
		unexplained++;
		fprintf(out, "# UNEXPLAINED %llx %llx %s\n",
			(unsigned long long)pc, (unsigned long long)next,
			cs_insn_name(cs, in->id));
		pc = next;
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
