/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bts-dump's live side: the options, and the tracer that reads /dev/bts
 * files (live.c) for the command or process it traces (trace.c).
 */
#ifndef BTS_DUMP_LIVE_H
#define BTS_DUMP_LIVE_H

#include <sys/types.h>

#include <linux/hashtable.h>

#include "bts-dump.h"

#define BTS_DEV		"/dev/bts"
/* Records taken per read(). */
#define READ_RECORDS	4096
/* the traced processes: 2^LPROC_HASH_BITS buckets */
#define LPROC_HASH_BITS	8

struct opts {
	const char *output;
	const char *input;
	pid_t pid;
	struct print_opts print;
	bool lossy;
	bool no_inherit;
	bool progress;
	bool quiet;
	u32 size;
	u32 ring;
	bool markers;
	const char *markers_glob;	/* NULL: all */
	char **cmd;
};

/* One /dev/bts file. */
struct stream {
	int fd;
	bool eof;
	/* the process whose records read() is returning */
	u32 pid;
};

/* What the tracer knows of a traced process's mappings. */
struct lproc {
	u32 pid;
	struct mapset maps;
	char *text;		/* the last maps snapshot sent */
	size_t len;
	u64 vdso;		/* the vDSO image sent, by address */
	char comm[COMM_MAX];	/* the name sent */
	/* its threads whose BTS_THREAD_NEW came and BTS_THREAD_EXIT not yet */
	unsigned int threads;
	bool gone;
	unsigned long checked;	/* the read() it was last snapshotted for */
	/* its JIT map: its pid there, what was sent of which file, when */
	u32 ns_pid;
	off_t jit_sent;
	ino_t jit_ino;
	dev_t jit_dev;
	unsigned long jit_checked;
	/* the mapped files whose copies were sent, or tried */
	struct file_id *files;
	size_t nfiles;
	struct hlist_head lthreads;	/* its threads but the main one */
	struct hlist_node node;		/* in live::procs, by pid */
};

/* A traced thread, not its process's main one: its name is its own. */
struct lthread {
	u32 tid;
	struct lproc *lp;
	char comm[COMM_MAX];	/* the name sent as its own; "": none */
	unsigned long checked;	/* the read() its name was last read for */
	struct hlist_node in_proc;	/* in lproc::lthreads */
	struct hlist_node node;		/* in live::threads, by tid */
};

struct live {
	const struct opts *o;
	struct sink *out;
	struct stream *s;
	size_t ns;
	DECLARE_HASHTABLE(procs, LPROC_HASH_BITS);
	DECLARE_HASHTABLE(threads, LPROC_HASH_BITS);
	struct bts_record buf[READ_RECORDS];
	unsigned long reads;
	unsigned long long records;
	int sigfd;
	pid_t child;
	bool child_done;
	int child_status;
	bool detached;
	bool abandon;
	bool progress_shown;
	bool said_map_files;	/* a copy of a mapped file was refused */
	/*
	 * The kernel names the threads in their streams (BTS_MAP_COMM), at
	 * the point of each change: /proc's comm files, read later, are not
	 * looked at any more.
	 */
	bool kernel_names;
	/* the event formats sent, by id and generation */
	struct { u32 id, gen; } *formats;
	size_t nformats;
};

/* main.c */
int report_exit(const char *cmd, int status);

/* live.c: the /dev/bts files, the mappings sent, the poll loop */
struct lproc *lproc_find(struct live *lv, u32 pid);
struct lproc *lproc_get(struct live *lv, u32 pid, bool *created);
int snapshot(struct live *lv, struct lproc *lp);
int open_dev(void);
int attach(struct live *lv, int fd, pid_t tid);
void attach_error(int e, pid_t tid, const char *what);
void detach_all(struct live *lv);
void losses(struct live *lv, struct bts_status *sum);
int child_events(struct live *lv, bool block);
int trace_loop(struct live *lv);
void finish_live(struct live *lv);

/* trace.c: a command started, or a running process frozen, and traced */
int trace_cmd(struct live *lv);
int trace_pid(struct live *lv);

#endif /* BTS_DUMP_LIVE_H */
