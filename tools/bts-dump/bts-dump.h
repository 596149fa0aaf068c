/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bts-dump: user-only branch traces from /dev/bts, symbolized.
 *
 * The tool is a pipeline of chunks: a producer (a live trace, main.c, or
 * a raw file, raw.c) hands records, /proc/PID/maps snapshots, memory
 * images and exit statuses to a sink in the order they must be applied,
 * and the sink either writes them to a raw file (raw.c) or decodes and
 * prints them (print.c).  A live run and a replay of its raw file feed
 * the printer the same chunks, so they print the same.
 */
#ifndef BTS_DUMP_H
#define BTS_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
/* the kernel tree's tools/include: u64, ARRAY_SIZE, lists, hash tables */
#include <linux/kernel.h>
#include <linux/types.h>
#include <linux/bts.h>

#define BTS_DUMP_VERSION "1"

/* Which file a mapping maps: where, and the file's inode. */
struct file_id {
	u64 start;
	u64 inode;
	u32 dev_major;
	u32 dev_minor;
};

/* Where chunks go; each returns 0, or -1 after reporting an error. */
struct sink {
	/* Records as read() returned them from one /dev/bts file. */
	int (*records)(struct sink *s, u32 stream,
		       const struct bts_record *r, size_t n);
	/* A snapshot of /proc/PID/maps; @ppid is 0 when unknown. */
	int (*maps)(struct sink *s, u32 pid, u32 ppid,
		    const char *text, size_t len);
	/* Memory of process @pid at @addr: the vDSO image. */
	int (*memory)(struct sink *s, u32 pid, u64 addr,
		      const void *data, size_t len);
	/*
	 * The whole file process @pid's mapping @id maps, as it was mapped:
	 * its path names another file now, or none.
	 */
	int (*file)(struct sink *s, u32 pid, const struct file_id *id,
		    const void *data, size_t len);
	/* How the traced command @cmd ended, as waitpid() reports it. */
	int (*exit)(struct sink *s, u32 pid, int status,
		    const char *cmd, size_t len);
	/* The format of the user_event markers name as @id of @gen. */
	int (*event_format)(struct sink *s, u32 id, u32 gen,
			    const char *text, size_t len);
	/*
	 * Process @pid's name (/proc/PID/comm), or with @tid not 0 its
	 * thread @tid's (/proc/PID/task/TID/comm), from here on.
	 */
	int (*comm)(struct sink *s, u32 pid, u32 tid, const char *name,
		    size_t len);
	/*
	 * Lines of process @pid's JIT map (perf's /tmp/perf-NS_PID.map, in
	 * its mount namespace, @ns_pid its pid in its pid namespace): what
	 * was added to the file since the last call, or the whole file,
	 * replacing what came before, if @whole.
	 */
	int (*jit)(struct sink *s, u32 pid, u32 ns_pid, bool whole,
		   const char *text, size_t len);
	/*
	 * The records of every run the kernel stamped before @before_ns
	 * (CLOCK_MONOTONIC) have been given: let them out now, rather than
	 * when a window fills or the trace ends.
	 */
	int (*settle)(struct sink *s, u64 before_ns);
};

/* The longest process name kept: the kernel's are 15 bytes. */
#define COMM_MAX	64

/*
 * Live tracing lets out, each second, the runs the kernel stamped this
 * long before: those of every thread have been read by then (a thread's
 * records reach the reader at its next context switch or full buffer).
 */
#define LIVE_SETTLE_SECONDS	1

/* calls.c: a sink's calls as data, for the stages that make them later */
enum sink_call_kind {
	CALL_RECORDS,
	CALL_MAPS,
	CALL_MEMORY,
	CALL_FILE,
	CALL_EXIT,
	CALL_EVENT_FORMAT,
	CALL_COMM,
	CALL_JIT,
	CALL_SETTLE,
};

struct sink_call {
	struct sink_call *next;	/* for the queue of the stage that has it */
	enum sink_call_kind kind;
	u32 id;			/* stream, pid or event id */
	u32 arg;		/* ppid, generation, tid or JIT map's ns pid */
	bool whole;		/* the whole JIT map */
	u64 addr;		/* or, settling, the time */
	struct file_id file;
	int status;
	size_t len;		/* of @data, in bytes */
	unsigned char data[];
};

/* A sink that hands each call made on it, as data, to @take. */
struct call_sink {
	struct sink sink;
	int (*take)(struct call_sink *cs, struct sink_call *c);
};

void call_sink_init(struct call_sink *cs,
		    int (*take)(struct call_sink *cs, struct sink_call *c));
int sink_call_make(struct sink *s, const struct sink_call *c);

/* async.c: a sink called from a thread of its own */
struct async_sink;

struct async_sink *async_sink_new(struct sink *next, size_t max_bytes);
struct sink *async_sink(struct async_sink *a);
int async_sink_finish(struct async_sink *a);

/* order.c: threads' records in the order of their time stamps */
struct order_sink;

struct order_sink *order_sink_new(struct sink *next,
				  void (*unordered)(void *arg, u32 tid,
						    u32 pid),
				  void (*arrived)(void *arg,
						  const struct bts_record *r,
						  size_t n),
				  void *arg);
struct sink *order_sink(struct order_sink *o);
int order_sink_finish(struct order_sink *o);

/* raw.c */
struct raw_writer {
	struct sink sink;
	FILE *f;
	const char *name;
};

int raw_writer_init(struct raw_writer *w, FILE *f, const char *name);

/* Told after each chunk the reader passed on: @records of it, if any. */
struct raw_progress {
	void (*chunk)(struct raw_progress *rp, size_t records);
};

int raw_read(FILE *f, const char *name, struct sink *s,
	     struct raw_progress *rp);

/* maps.c: the mappings of one process, every one seen so far */
struct module;

/* The longest build ID kept: SHA-1's are 20 bytes. */
#define BUILD_ID_MAX	32

struct mapping {
	u64 start;
	u64 end;
	u64 offset;
	u64 inode;
	u32 dev_major;
	u32 dev_minor;
	char perms[5];
	/*
	 * Which file was mapped, where the trace says (a MAP record): its
	 * modification time in ns since the epoch and its build ID; 0 and
	 * 0 bytes where it does not
	 */
	u64 mtime;
	unsigned int build_id_len;
	unsigned char build_id[BUILD_ID_MAX];
	/* symbols.c has looked for the module of this mapping */
	bool resolved;
	char *path;
	struct module *mod;
	u64 bias;		/* of @mod's load, where @mod is set */
};

struct mapset {
	struct mapping *v;
	size_t n;
};

void mapset_parse(const char *text, size_t len, struct mapset *out);
bool mapset_merge(struct mapset *ms, struct mapset *snap);
bool mapset_remove(struct mapset *ms, u64 start, u64 end);
void mapset_copy(struct mapset *dst, const struct mapset *src);
const struct mapping *mapset_find(const struct mapset *ms, u64 addr);
bool mapping_in_no_file(const struct mapping *map);
void mapset_free(struct mapset *ms);

/* events.c: the formats of the events markers name */
struct events;
struct event_format;

struct events *events_new(void);
void events_free(struct events *ev);
void events_add(struct events *ev, u32 id, u32 gen, const char *text,
		size_t len);
const struct event_format *events_find(const struct events *ev, u32 id,
				       u32 gen);
const char *event_name(const struct event_format *e);
void event_print_fields(FILE *f, const struct event_format *e,
			const u8 *payload, size_t len, bool json);
void event_write_tracefs_format(FILE *f, const struct event_format *e,
				u32 id);
size_t event_entry_fields(const struct event_format *e, const u8 *payload,
			  size_t len, u8 *out, size_t cap);
const struct event_format *events_get(const struct events *ev, size_t i);

/* decode.c: one x86 instruction */
enum insn_kind {
	INSN_OTHER,
	INSN_JUMP,	/* jmp, jcc, loop, jcxz */
	INSN_CALL,
	INSN_RET,	/* ret, lret, iret */
	INSN_SYSCALL,	/* syscall */
	INSN_SYSENTER,
	INSN_INT,	/* int n, int3, into, int1 */
};

enum eax_effect {
	EAX_NONE,	/* leaves eax alone */
	EAX_SET,	/* sets it to a known value */
	EAX_CLOBBER,	/* sets it to something we cannot know */
};

/* How a branch instruction names where it goes. */
enum branch_form {
	BRANCH_NONE,		/* not a branch */
	BRANCH_DIRECT,		/* always to @target: jmp, call */
	BRANCH_COND,		/* to @target or on: jcc, loop, jcxz */
	BRANCH_INDIRECT,	/* a register or memory says: ret too */
	BRANCH_FAR,		/* to the kernel, or another segment */
};

struct insn {
	u64 addr;
	unsigned int len;
	enum insn_kind kind;
	enum branch_form form;
	u64 target;		/* BRANCH_DIRECT and BRANCH_COND */
	int vector;		/* INSN_INT: the vector */
	bool is64;		/* decoded as 64-bit code */
	enum eax_effect eax;
	u64 eax_val;
	char text[200];		/* AT&T syntax: mnemonic and operands */
};

int decode_init(void);
void decode_exit(void);
bool decode(const unsigned char *code, size_t len, u64 addr, bool is64,
	    struct insn *out);

/* insn_len.c: the length of an instruction capstone does not know */
unsigned int insn_len(const u8 *code, size_t len, bool is64);

/* symbols.c */
struct addr_info {
	const char *sym;	/* function, NULL if unknown */
	u64 sym_off;
	const char *src;	/* source file's base name, NULL if unknown */
	int line;
	const char *mod;	/* mapping's name, NULL if in no mapping */
	u64 mod_off;
	/* the path of the mapping's file, NULL if in none */
	const char *path;
};

/* A function an address is in, where inlining put code of others. */
struct inline_frame {
	const char *func;	/* NULL if DWARF does not name it */
	const char *src;	/* where in it: base name, NULL if unknown */
	int line;
};

/* inline.c */
struct Dwfl_Module;
unsigned int inline_frames(struct Dwfl_Module *mod, u64 addr, const char *src,
			   int line, struct inline_frame **out);

/* jit.c: symbols of JIT code, from perf's /tmp/perf-PID.map */
struct jit_map;

struct jit_map *jit_map_new(u32 pid);
void jit_map_add(struct jit_map *j, u32 ns_pid, bool whole, const char *text,
		 size_t len);
const char *jit_map_find(struct jit_map *j, u64 addr, u64 *off,
			 const char **file);
void jit_map_free(struct jit_map *j);

struct proc;
struct syms;

struct syms *syms_new(bool demangle);
void syms_free(struct syms *st);
struct proc *proc_get(struct syms *st, u32 pid);
void proc_thread_new(struct proc *p);
void proc_thread_exit(struct syms *st, struct proc *p);
void proc_add_maps(struct syms *st, struct proc *p, u32 ppid,
		   const char *text, size_t len);
void proc_add_file(struct syms *st, struct proc *p, const struct file_id *id,
		   const void *data, size_t len);
void proc_add_memory(struct syms *st, struct proc *p, u64 addr,
		     const void *data, size_t len);
void proc_exec(struct syms *st, struct proc *p);
void proc_exec_entry(struct proc *p, u64 from, u64 addr);
void proc_set_comm(struct proc *p, const char *name, size_t len);
void proc_add_jit(struct proc *p, u32 ns_pid, bool whole, const char *text,
		  size_t len);
const char *proc_comm(const struct proc *p);
u32 proc_ppid(const struct proc *p);
const struct mapset *proc_maps(const struct proc *p, unsigned int *gen);
void proc_map(struct syms *st, struct proc *p, const struct mapping *m);
void syms_prefetch(struct syms *st, const struct mapping *m);
void proc_unmap(struct syms *st, struct proc *p, u64 start, u64 end);
void proc_trace_gap(struct syms *st, struct proc *p);
const struct addr_info *proc_addr(struct syms *st, struct proc *p,
				  u64 addr);
unsigned int proc_inline(struct syms *st, struct proc *p, u64 addr,
			 const struct inline_frame **frames);
/* What the files addresses were looked up in lack, for syms_lacking(). */
enum syms_lack {
	SYMS_NO_FUNCTIONS,	/* stripped: no symbol names a function */
	SYMS_NO_LINES,		/* no debug information: no source lines */
};

size_t syms_lacking(struct syms *st, enum syms_lack lack,
		    const char **names, size_t max);
const struct insn *proc_insn(struct syms *st, struct proc *p, u64 addr);

/* A loaded segment of a file: which bytes of it are code where. */
struct code_segment {
	const void *file;	/* the file as read: same bytes, same file */
	const char *path;	/* where it is on disk; NULL: in memory only */
	const unsigned char *data;	/* the whole file */
	u64 size;
	const char *mapped_as;	/* the mapping's path ("[vdso]") */
	u64 offset;		/* the segment's bytes in the file */
	u64 filesz;
	u64 addr;		/* where they are in the process */
};

bool proc_code_segment(struct syms *st, struct proc *p, u64 addr,
		       struct code_segment *seg);
bool proc_insn_kind(struct syms *st, struct proc *p, u64 addr,
		    enum insn_kind *kind, unsigned int *len);

/* print.c: the sink that decodes and prints */
enum format {
	FORMAT_TEXT,
	FORMAT_JSONL,
	FORMAT_RAW,
	FORMAT_FOLDED,		/* folded stacks, for flame graphs */
	FORMAT_CHROME,		/* Chrome's trace-event JSON */
	FORMAT_PERF,		/* perf.data of perf's intel_bts PMU */
	FORMAT_PT,		/* an Intel PT packet stream */
};

/* -F: the fields of each line, as perf script's -F names them */
enum print_field {
	FIELD_COMM	= 1 << 0,
	FIELD_TID	= 1 << 1,
	FIELD_PID	= 1 << 2,
	FIELD_IP	= 1 << 3,	/* a branch's source address */
	FIELD_ADDR	= 1 << 4,	/* its target */
	FIELD_SYM	= 1 << 5,	/* of each end shown */
	FIELD_SYMOFF	= 1 << 6,
	FIELD_DSO	= 1 << 7,
	FIELD_SRCLINE	= 1 << 8,
};

struct print_opts {
	enum format format;
	const char *out_name;	/* the output, in messages: -o's, or "stdout" */
	const char *out_path;	/* -o's; NULL: stdout */
	unsigned int fields;	/* -F: enum print_field bits; 0: the default */
	bool calls;		/* --calls */
	bool insn;		/* --insn */
	bool show_maps;		/* --show-maps */
	bool mangled;		/* --no-demangle */
	bool inline_frames;	/* --inline */
	/*
	 * --trigger: at each marker of an event @trigger matches, only the
	 * last @window lines before it
	 */
	const char *trigger;
	unsigned int window;
	/*
	 * Only the records of these threads, or of every thread of these
	 * processes (--tid); and of the records that have addresses, only
	 * those with one whose function matches one of @syms (--sym), whose
	 * file's name matches one of @dsos (--dso) and that is in
	 * [@range_start, @range_end) (--range).  None: no such filter.
	 */
	u32 *tids;
	size_t ntids;
	char **syms;
	size_t nsyms;
	char **dsos;
	size_t ndsos;
	u64 range_start;
	u64 range_end;
};

struct printer;

struct printer *printer_new(FILE *out, const struct print_opts *opts);
struct sink *printer_sink(struct printer *pr);
int printer_finish(struct printer *pr);
/* The exit chunk seen, if any: returns false when there was none. */
bool printer_exit(struct printer *pr, int *status, const char **cmd);
void printer_free(struct printer *pr);

/* syscalls.c, generated from the kernel's tables by gen-syscalls.sh */
extern const char *const syscalls_64[];
extern const unsigned int nr_syscalls_64;
extern const char *const syscalls_x32[];
extern const unsigned int nr_syscalls_x32;
extern const char *const syscalls_32[];
extern const unsigned int nr_syscalls_32;

/* symtab.c: a module's symbols, sorted */
struct Dwfl_Module;
struct symtab;

struct symtab *symtab_read(struct Dwfl_Module *mod, bool demangle);
const char *symtab_find(struct symtab *t, u64 addr, u64 *off);
bool symtab_has_functions(const struct symtab *t);
const char *symtab_shown_name(struct symtab *t, const char *name);
void symtab_free(struct symtab *t);

/* util.c */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void set_comm(char comm[COMM_MAX], const char *name, size_t len);
const char *base_name(const char *path);

#endif /* BTS_DUMP_H */
