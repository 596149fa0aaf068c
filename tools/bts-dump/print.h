/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The printer's insides, shared by its two halves: the decoder (print.c)
 * works out what each record says in its thread's context (which
 * instruction branched, the calls the thread is in, which system call,
 * whether a signal handler was entered), and one output, chosen by
 * --format and --calls, writes that down.  An output is a table of
 * handlers, one per kind of record (struct output); adding a format is
 * adding a table, not a case to every handler.
 */
#ifndef BTS_DUMP_PRINT_H
#define BTS_DUMP_PRINT_H

#include <linux/hashtable.h>

#include "bts-dump.h"

/* A call the thread is in, or a signal handler it runs. */
struct frame {
	u64 site;		/* the call instruction, or where a signal came */
	u64 ret;		/* its return address; 0 for a signal */
	/* a signal handler's, left by sigreturn alone, not by a return */
	bool signal;
};

/* Straight-line code [start, end) that ran; end == 0: unknown code. */
struct block {
	u64 start;
	u64 end;
};

/* Blocks of each thread kept for finding system call numbers. */
#define HIST		8
/* The longest block decoded, in bytes: longer ones are not straight. */
#define MAX_BLOCK	(64U * 1024)
/* the printer's threads and streams: 2^THREAD_HASH_BITS buckets */
#define THREAD_HASH_BITS	10

/* What the details before a BTS_PSEUDO_MAP record said. */
struct map_details {
	unsigned int file_have;		/* BTS_DETAIL_MAP_FILE parts */
	unsigned int id_have;		/* BTS_DETAIL_MAP_BUILD_ID details */
	unsigned int name_have;		/* BTS_DETAIL_MAP_NAME details */
	u64 offset, inode, dev, mtime;
	unsigned char build_id[BUILD_ID_MAX];
	char name[BTS_MAP_NAME_MAX];
};

struct thread {
	u32 tid;
	u32 pid;
	struct proc *proc;
	/* its exit was seen: @proc no longer counts it */
	bool exited;
	/* it executed a program, the system call's record not seen yet */
	bool exec_pending;
	/* its own name, if the trace gave it one; "" goes by its process's */
	char comm[COMM_MAX];
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
	/* the output's own, freed by its thread_free() */
	void *out;
	struct hlist_node node;		/* in printer::threads, by tid */
};

/* How execution went on after a stretch in the kernel. */
enum resume {
	RESUME_NORMAL,		/* where it would have without a signal */
	RESUME_UNKNOWN,		/* cannot tell */
	RESUME_SIGNAL,		/* a signal handler */
	RESUME_SIGRETURN,	/* a signal handler returned */
	RESUME_EXEC,		/* a new program */
};

/* A branch, and the instruction that took it. */
struct branch {
	u64 from;
	u64 to;
	/*
	 * When the code is not known: INSN_RET to a return address on the
	 * stack, else INSN_JUMP.
	 */
	enum insn_kind kind;
	u64 end;		/* past the instruction, 0 if not known */
	unsigned int depth;	/* the thread's calls before it */
};

/*
 * Whether @b is a call into a function: not one to the next instruction
 * ("call 1f; 1: pop", how position-independent code finds where it is),
 * which only pushes an address and never returns; perf's thread stacks
 * and gdb's btrace leave it out too.
 */
static inline bool branch_is_call(const struct branch *b)
{
	return b->kind == INSN_CALL && b->to != b->end;
}

/* A BTS_PSEUDO_KERNEL record, worked out. */
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
	/* "syscall write", "exception #PF page fault", ... */
	char what[96];
	unsigned int depth;	/* the thread's calls before it */
};

/* A BTS_PSEUDO_LOST record. */
struct lost {
	const char *reason;	/* "overrun", "untraced", or NULL */
	u64 count;		/* without a reason: how many */
	char what[96];		/* what the text output says */
};

/* A BTS_PSEUDO_MARKER record, with its payload if all of it came. */
struct marker {
	const struct bts_record *r;
	const struct event_format *event;	/* NULL if not known */
	bool have_payload;
};

/* A BTS_PSEUDO_MAP record, with its details. */
struct map_change {
	unsigned int event;	/* BTS_MAP_EXEC, _MMAP, _MUNMAP or _COMM */
	const char *what;	/* "exec", "mmap", "munmap", "comm" */
	u64 start;
	u64 end;
	unsigned int flags;
	const char *name;	/* NULL if not all of it came */
	/* BTS_DETAIL_MAP_FILE: whether it came, and what it says */
	bool file;
	u64 offset;
	u64 inode;
	u32 dev_major;
	u32 dev_minor;
	u64 mtime;
	const unsigned char *build_id;	/* NULL if not all of it came */
	unsigned int build_id_len;
};

struct output;

struct printer {
	struct sink sink;
	/* puts threads in time order before @sink, for outputs that say so */
	struct order_sink *order;
	FILE *out;
	struct print_opts opts;
	const struct output *output;
	struct syms *syms;
	DECLARE_HASHTABLE(threads, THREAD_HASH_BITS);
	/* the trace's streams, by id */
	DECLARE_HASHTABLE(streams, THREAD_HASH_BITS);
	/* the thread whose header was printed last */
	const struct thread *shown;
	struct events *events;
	/* records seen so far: the tree outputs' x-axis */
	u64 nrecords;
	/* the output's own, freed by its free() */
	void *out_state;
	/* --trigger: where a record prints, to go to its thread's window */
	FILE *scratch;
	char *scratch_buf;
	size_t scratch_size;
	bool have_exit;
	int exit_status;
	char *exit_cmd;
	/* output_error() said why the output failed */
	bool output_said;
};

/*
 * One output: what it writes for each kind of record, after the decoder
 * has applied the record to the thread (its calls, its mappings).  A
 * NULL handler writes nothing for that kind.
 */
struct output {
	void (*branch)(struct printer *pr, struct thread *t,
		       const struct branch *b);
	void (*kernel)(struct printer *pr, struct thread *t,
		       const struct kernel *k);
	void (*lost)(struct printer *pr, struct thread *t,
		     const struct lost *l);
	void (*marker)(struct printer *pr, struct thread *t,
		       const struct marker *m);
	/* only with --show-maps */
	void (*map)(struct printer *pr, struct thread *t,
		    const struct map_change *m);
	/*
	 * a pseudo-record of a type this bts-dump does not know; @what is
	 * what the text outputs say of it
	 */
	void (*pseudo)(struct printer *pr, struct thread *t,
		       const struct bts_record *r, const char *what);
	/* BTS_THREAD_NEW or BTS_THREAD_EXIT */
	void (*thread)(struct printer *pr, struct thread *t,
		       unsigned int event);
	/* --trigger: what goes before a thread's window */
	void (*window_header)(struct printer *pr, const struct thread *t);
	/*
	 * before the first record, when the threads' records come in the
	 * order they were read: the trace has no times to order them by;
	 * or (@t) before those of a thread that has none, in a trace whose
	 * others have; an output that is not in time order has none
	 */
	void (*unordered)(struct printer *pr, const struct thread *t);
	/* at the end of the trace */
	int (*finish)(struct printer *pr);
	void (*thread_free)(struct printer *pr, struct thread *t);
	/* frees the printer's out_state */
	void (*free)(struct printer *pr);
};

extern const struct output output_text;
extern const struct output output_calls;
extern const struct output output_jsonl;
extern const struct output output_folded;
extern const struct output output_chrome;
extern const struct output output_perf;
extern const struct output output_pt;

/* print.c: what the outputs share */
int output_error(struct printer *pr, int error);
const char *thread_comm(const struct thread *t);
const char *thread_label(const struct thread *t, char *buf, size_t len);
u64 call_site(const struct thread *t);
const char *func_name(struct printer *pr, struct thread *t, u64 addr,
		      char *buf, size_t len);
const char *entry_kind_name(unsigned int kind);
const char *syscall_abi_name(unsigned int abi);

/* What the text outputs say of a trace without times, on a line. */
#define UNORDERED_NOTE	"threads in the order their records were read: the trace has no times to order them by"
/* printf()'s format, with tid and pid */
#define UNSTAMPED_NOTE	"tid %u pid %u has no time stamps: its records are where they were read among the others'"

/* print_text.c: text for the text and --calls outputs */
void text_header(struct printer *pr, const struct thread *t);
void text_addr(struct printer *pr, struct thread *t, u64 addr);
void text_marker(struct printer *pr, struct thread *t,
		 const struct marker *m);
void put_build_id(FILE *f, const unsigned char *id, unsigned int len);

/* print_json.c */
void json_esc(FILE *f, const char *s);

#endif /* BTS_DUMP_PRINT_H */
