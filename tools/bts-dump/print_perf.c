// SPDX-License-Identifier: GPL-2.0
/*
 * --format=perf: a perf.data file that perf script and perf report read as
 * a recording of perf's intel_bts PMU.
 *
 * perf.data comes in two formats (tools/perf/Documentation/
 * perf.data-file-format.txt): a regular file gets a file's, anything else
 * the pipe format (perf script -i -).  Either holds:
 *
 * - the attribute of one intel_bts event, user mode only, with one id
 *   (in the file's header, or a HEADER_ATTR record), and an AUXTRACE_INFO
 *   record that names perf's intel_bts decoder;
 * - per thread, a FORK record if the trace saw it start (a process from
 *   the parent the trace names, a thread from its process) and a COMM
 *   record (its process and its name) before its first branch, a COMM
 *   record flagged as an exec after an exec, an EXIT record when it ends;
 * - per process, its executable mappings (MMAP2, with the build ID the
 *   trace gives) before the first branch after each appeared or
 *   changed;
 * - its branches as AUXTRACE records, one AUX queue per thread: each
 *   record is the 24-byte BTS record the hardware writes (from, to,
 *   flags).  A stay in the kernel is the record perf's intel_bts PMU gets
 *   for it from the layer: the branch into the kernel with its kernel end
 *   zeroed (Documentation/arch/x86/ds.rst), which perf shows as a branch to
 *   0 ("tr end").  Lost records are an AUX record flagged TRUNCATED, which
 *   perf reports as lost trace data.
 *
 * The samples perf makes of the branches have no time.  The file's clock
 * counts branches instead, in half steps: a side-band record written
 * after N branches has time 2N + 1 (never 0, which perf takes for "no
 * time"), and an AUXTRACE record whose first branch is branch N has the
 * reference (perf orders AUX data by it) 2N + 2.  perf decodes the AUX
 * data with references up to a side-band record's time before it applies
 * the record, so each branch is decoded with the mappings and the name of
 * its time, also across an exec.  (With references of 0 perf 6.1 decodes
 * nothing; with no times but references, everything at the end, with the
 * last mappings.)
 *
 * Markers are samples of the user_event's tracepoint (the kernel's
 * user_events system), with the event's fields after the common ones as
 * their raw data, at the marker's system call and time: perf script prints
 * each with its fields where it was written among the branches (the
 * pending AUX data ends at it).  Their attributes come with ids of their
 * own, and the file's tracing data (a HEADER_TRACING_DATA feature, or
 * record in a pipe) has each event's format, as tracefs would show it,
 * under an id the file gives it.  A pipe says the attributes and formats
 * once, at the first marker, of the events known then: a later event's
 * markers are left out, and bts-dump says how many.  So are markers of an
 * event whose format the trace does not have.
 *
 * Pseudo-records of unknown types have no perf counterpart and are left
 * out.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <linux/hashtable.h>

#include "print.h"

/*
 * perf's own record types, beyond the kernel's (tools/lib/perf/include/
 * perf/event.h, enum perf_user_event_type), and what perf.data says.
 */
#define PERF_RECORD_HEADER_ATTR		64
#define PERF_RECORD_HEADER_TRACING_DATA	66
#define PERF_RECORD_AUXTRACE_INFO	70
#define PERF_RECORD_AUXTRACE		71
#define PERF_MAGIC			0x32454c4946524550ULL	/* "PERFILE2" */
#define PERF_AUXTRACE_INTEL_BTS		2	/* enum auxtrace_type */
/*
 * The intel_bts AUXTRACE_INFO private words (tools/perf/util/intel-bts.h):
 * PMU type, time shift, multiplier and zero, cap_user_time_zero, snapshot
 * mode.
 */
#define INTEL_BTS_PRIV_WORDS		6
/*
 * The PMU type of the event: perf matches the AUX data to the event by it,
 * nothing else.  Not a type the kernel hands out (they count up from
 * PERF_TYPE_MAX), so perf never mistakes the event for a PMU of the
 * machine that reads the file.
 */
#define BTS_DUMP_PMU_TYPE		0x7fffffff
#define EVENT_ID			1
/* The side-band records' sample_id_all fields: TID, TIME, IDENTIFIER. */
#define SAMPLE_TYPE	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			 PERF_SAMPLE_IDENTIFIER)
struct sample_id {
	u32 pid, tid;
	u64 time;
	u64 id;
};

/*
 * A marker's sample: the side-band fields, the CPU (not known: -1; perf
 * script wants one for a tracepoint), then the raw data.
 */
#define MARKER_SAMPLE_TYPE	(SAMPLE_TYPE | PERF_SAMPLE_CPU | \
				 PERF_SAMPLE_RAW)
/* the common fields of a trace entry, before an event's own */
#define TRACE_ENTRY_SIZE		8
/* a marker's raw data at most: the entry, the event's fixed fields */
#define MARKER_RAW_MAX			(TRACE_ENTRY_SIZE + 4096)

/* A user_event whose markers the file has, as perf knows it. */
struct perf_tracepoint {
	const struct event_format *format;
	u32 ev_id, gen;			/* the trace's */
	u16 type;			/* the file's id of its format */
	u64 sample_id;			/* its attribute's */
};

/* BTS records written per AUXTRACE record at most */
#define AUX_BATCH			4096
/* the processes' state: 2^PROC_HASH_BITS buckets */
#define PROC_HASH_BITS			10

struct perf_state {
	struct thread *pending;		/* whose records are in @buf */
	struct bts_record buf[AUX_BATCH + 1];	/* + the end mark */
	unsigned int nbuf;
	u64 nbranches;			/* BTS records written: the clock */
	bool file;			/* a file's format, not a pipe's */
	off_t data_at;			/* where its records start */
	u32 next_queue;
	int failed;			/* a write's errno: finish() says so */
	DECLARE_HASHTABLE(procs, PROC_HASH_BITS);
	DECLARE_HASHTABLE(dsos, PROC_HASH_BITS);
	size_t dsos_size;		/* their HEADER_BUILD_ID records' */
	struct perf_tracepoint *tps;	/* the events of the markers */
	unsigned int ntps;
	bool tps_said;			/* a pipe's: attributes and formats */
	u64 markers_left_out;
};

/*
 * The longest build ID an MMAP2 record holds: it takes the place of the
 * device and inode numbers (struct perf_record_mmap2).
 */
#define MMAP2_BUILD_ID_MAX	20

/* A file mapped with a build ID, for the file's HEADER_BUILD_ID. */
struct perf_dso {
	char *path;
	u8 build_id_len;
	u8 build_id[MMAP2_BUILD_ID_MAX];
	struct hlist_node node;		/* in perf_state::dsos */
};

/*
 * What the file has said of a process's code.  perf keeps the mappings
 * per process, for all its threads, until one overlapping comes: each
 * needs saying once.
 */
struct perf_proc {
	u32 pid;
	bool maps_said;
	unsigned int maps_gen;		/* of the mappings it said */
	struct mapset maps;		/* the mappings as said */
	struct hlist_node node;		/* in perf_state::procs, by pid */
};

/* What the file has said of a thread so far. */
struct perf_thread {
	struct perf_proc *proc;		/* its process's */
	u32 queue;			/* its AUX queue */
	u64 offset;			/* bytes written to it */
	bool started;			/* BTS_THREAD_NEW: a FORK is due */
	bool comm_written;
	char comm[COMM_MAX];		/* the name it said */
	bool exec;			/* an exec since: the next COMM says so */
};

static void put_file_header(struct printer *pr);
static void put_header(struct printer *pr, u32 type, unsigned int misc,
		       size_t size);

/* The output's state; made with the file's first bytes. */
static struct perf_state *state_of(struct printer *pr)
{
	if (!pr->out_state) {
		pr->out_state = xcalloc(1, sizeof(struct perf_state));
		put_file_header(pr);
	}
	return pr->out_state;
}

static struct perf_proc *proc_of(struct printer *pr, u32 pid)
{
	struct perf_state *st = state_of(pr);
	struct perf_proc *pp;

	hash_for_each_possible(st->procs, pp, node, pid)
		if (pp->pid == pid)
			return pp;
	pp = xcalloc(1, sizeof(*pp));
	pp->pid = pid;
	hash_add(st->procs, &pp->node, pid);
	return pp;
}

static struct perf_thread *thread_of(struct printer *pr, struct thread *t)
{
	struct perf_thread *pt = t->out;

	if (!pt) {
		pt = xcalloc(1, sizeof(*pt));
		pt->proc = proc_of(pr, t->pid);
		pt->queue = state_of(pr)->next_queue++;
		t->out = pt;
	}
	return pt;
}

static void put(struct printer *pr, const void *data, size_t len)
{
	if (fwrite_unlocked(data, 1, len, pr->out) != len)
		state_of(pr)->failed = errno ?: EIO;
}

static void put_header(struct printer *pr, u32 type, unsigned int misc,
		       size_t size)
{
	struct perf_event_header h = {
		.type = type,
		.misc = misc,
		.size = size,
	};

	put(pr, &h, sizeof(h));
}

/* The event's attribute: intel_bts, user mode, side-band with ids. */
static const struct perf_event_attr event_attr = {
	.type = BTS_DUMP_PMU_TYPE,
	.size = sizeof(struct perf_event_attr),
	.sample_period = 1,
	.sample_type = SAMPLE_TYPE,
	.exclude_kernel = 1,
	.exclude_hv = 1,
	.sample_id_all = 1,
};

static const u64 event_id = EVENT_ID;

/*
 * A file's header (tools/perf/util/header.h, struct perf_file_header), the
 * event's id and its attribute with where the id is; the records, @data_size
 * bytes, follow them, then the features.  The one feature is an empty AUX
 * index (HEADER_AUXTRACE): perf then reads the AUX data where the AUXTRACE
 * records are, and knows the file has AUX data.  Before it, if any file
 * was mapped with a build ID, HEADER_BUILD_ID.
 */
struct perf_file_section {
	u64 offset;
	u64 size;
};

#define HEADER_TRACING_DATA	1	/* the features' bits */
#define HEADER_BUILD_ID		2
#define HEADER_AUXTRACE		18

/*
 * With @attrs, the header alone, its attributes there (the intel_bts
 * event's and the markers' tracepoints', written after the features);
 * else with the intel_bts event's after it.
 */
static void put_file_parts(struct printer *pr, u64 data_size,
			   const struct perf_file_section *attrs)
{
	const struct perf_state *st = pr->out_state;
	struct {
		u64 magic;
		u64 size;
		u64 attr_size;
		struct perf_file_section attrs;
		struct perf_file_section data;
		struct perf_file_section event_types;
		u64 features[4];
	} header;
	struct perf_file_section ids;
	const u64 attr_size = sizeof(event_attr) + sizeof(ids);
	const u64 ids_at = sizeof(header), attrs_at = ids_at + sizeof(event_id);

	header = (typeof(header)){
		.magic = PERF_MAGIC,
		.size = sizeof(header),
		.attr_size = attr_size,
		.attrs = { attrs_at, attr_size },
		.data = { attrs_at + attr_size, data_size },
		.features = { 1ULL << HEADER_AUXTRACE },
	};
	if (st && st->dsos_size)
		header.features[0] |= 1ULL << HEADER_BUILD_ID;
	if (attrs) {
		header.attrs = *attrs;
		header.features[0] |= 1ULL << HEADER_TRACING_DATA;
		put(pr, &header, sizeof(header));
		return;
	}
	ids = (struct perf_file_section){
		.offset = ids_at,
		.size = sizeof(event_id),
	};
	put(pr, &header, sizeof(header));
	put(pr, &event_id, sizeof(event_id));
	put(pr, &event_attr, sizeof(event_attr));
	put(pr, &ids, sizeof(ids));
}

/*
 * The start of the file.  A file's header, written again at the end, says
 * where its parts are; the pipe format needs no seeking, but perf 6.1
 * reads its AUX data only from a pipe.
 */
static void put_file_header(struct printer *pr)
{
	struct perf_state *st = pr->out_state;
	static const u64 pipe_header[2] = { PERF_MAGIC, 16 };
	u64 info[1 + INTEL_BTS_PRIV_WORDS] = {
		PERF_AUXTRACE_INTEL_BTS,
		BTS_DUMP_PMU_TYPE,
		0, 1, 0, 0,		/* the branch clock is the "TSC" */
		0,			/* not a snapshot */
	};
	struct stat sb;

	st->file = !fstat(fileno(pr->out), &sb) && S_ISREG(sb.st_mode) &&
		   ftello(pr->out) == 0;
	if (st->file) {
		/* Room for the header, the id and the attribute. */
		put_file_parts(pr, 0, NULL);
		st->data_at = ftello(pr->out);
	} else {
		put(pr, pipe_header, sizeof(pipe_header));
		put_header(pr, PERF_RECORD_HEADER_ATTR, 0,
			   sizeof(struct perf_event_header) +
			   sizeof(event_attr) + sizeof(event_id));
		put(pr, &event_attr, sizeof(event_attr));
		put(pr, &event_id, sizeof(event_id));
	}
	put_header(pr, PERF_RECORD_AUXTRACE_INFO, 0,
		   sizeof(struct perf_event_header) + sizeof(info));
	put(pr, info, sizeof(info));
}

/* Write the pending records as one AUXTRACE record of their thread's. */
static void flush_pending(struct printer *pr)
{
	struct perf_state *st = state_of(pr);
	struct perf_thread *pt;
	struct {
		u64 size;
		u64 offset;
		u64 reference;
		u32 idx;
		u32 tid;
		u32 cpu;
		u32 reserved;
	} aux;

	if (!st->nbuf)
		return;
	pt = st->pending->out;
	/*
	 * perf's decoder (intel_bts_process_buffer()) stops one record short
	 * of a buffer's end: end each with a record of zeros, which it skips
	 * where it gets to one.
	 */
	st->buf[st->nbuf++] = (struct bts_record){ 0 };
	aux = (typeof(aux)){
		.size = st->nbuf * sizeof(st->buf[0]),
		.offset = pt->offset,
		.reference = 2 * (st->nbranches - (st->nbuf - 1)) + 2,
		.idx = pt->queue,
		.tid = st->pending->tid,
		.cpu = (u32)-1,
	};
	/* The data follows the record; the header's size leaves it out. */
	put_header(pr, PERF_RECORD_AUXTRACE, 0,
		   sizeof(struct perf_event_header) + sizeof(aux));
	put(pr, &aux, sizeof(aux));
	put(pr, st->buf, aux.size);
	pt->offset += aux.size;
	st->nbuf = 0;
}

/* A record with a file name, padded to 8 bytes with NULs. */
static void put_name(struct printer *pr, const char *name)
{
	static const char zeros[8];
	size_t len = strlen(name) + 1;

	put(pr, name, len);
	put(pr, zeros, -len & 7);
}

static size_t name_size(const char *name)
{
	return (strlen(name) + 1 + 7) & ~(size_t)7;
}

/* The time of a side-band record written now. */
static u64 sideband_time(struct printer *pr)
{
	return 2 * state_of(pr)->nbranches + 1;
}

/*
 * A side-band record of @t: the header for @len bytes of body and @name
 * (if any) that the caller writes next, then put_sample_id().
 */
static void put_sideband_header(struct printer *pr, u32 type,
				unsigned int misc, size_t len,
				const char *name)
{
	put_header(pr, type, misc,
		   sizeof(struct perf_event_header) + len +
		   (name ? name_size(name) : 0) + sizeof(struct sample_id));
}

/* The fields every side-band record ends with: whose, and when. */
static void put_sample_id(struct printer *pr, const struct thread *t)
{
	struct sample_id id = {
		.pid = t->pid,
		.tid = t->tid,
		.time = sideband_time(pr),
		.id = EVENT_ID,
	};

	put(pr, &id, sizeof(id));
}

static void put_comm(struct printer *pr, struct thread *t,
		     struct perf_thread *pt)
{
	const char *comm = thread_comm(t);
	char unknown[16];
	u32 ids[2] = { t->pid, t->tid };

	/* As perf calls a thread whose name it does not know. */
	if (!comm) {
		snprintf(unknown, sizeof(unknown), ":%u", t->tid);
		comm = unknown;
	}
	put_sideband_header(pr, PERF_RECORD_COMM,
			    pt->exec ? PERF_RECORD_MISC_COMM_EXEC : 0,
			    sizeof(ids), comm);
	put(pr, ids, sizeof(ids));
	put_name(pr, comm);
	put_sample_id(pr, t);
	snprintf(pt->comm, sizeof(pt->comm), "%s", comm);
	pt->comm_written = true;
	pt->exec = false;
}

/*
 * Where @t came from, as the kernel's FORK record says: the process and
 * thread that made it.  The trace does not say which thread of the
 * parent did: its main thread stands for it, as in the FORK records
 * perf record makes up for the threads already there.
 */
static void put_fork(struct printer *pr, struct thread *t)
{
	u32 ppid = t->tid == t->pid ? proc_ppid(t->proc) : t->pid;
	u32 ids[4] = { t->pid, ppid, t->tid, ppid };
	u64 time = sideband_time(pr);

	put_sideband_header(pr, PERF_RECORD_FORK, 0,
			    sizeof(ids) + sizeof(time), NULL);
	put(pr, ids, sizeof(ids));
	put(pr, &time, sizeof(time));
	put_sample_id(pr, t);
}

/*
 * The code perf needs to see: what is executable.  perf finds the vDSO by
 * its name, and names code in no file (a JIT's), which it knows as
 * "//anon", from the process's /tmp/perf-PID.map, as it does for its own
 * recordings.
 */
static bool code_mapping(const struct mapping *m)
{
	return m->perms[2] == 'x' && m->path;
}

static const char *perf_path(const struct mapping *m)
{
	if (mapping_in_no_file(m) && strcmp(m->path, "[vdso]"))
		return "//anon";
	return m->path;
}

/*
 * perf.data's HEADER_BUILD_ID feature (tools/perf/util/header.c,
 * write_buildid()): per file, this and its name, zero-padded to a
 * multiple of 64 bytes; the process -1 is the host.
 */
struct perf_build_id {
	struct perf_event_header header;	/* only misc and size */
	s32 pid;
	u8 build_id[MMAP2_BUILD_ID_MAX];
	u8 build_id_size;
	u8 reserved[3];
};

#define PERF_RECORD_MISC_BUILD_ID_SIZE	(1 << 15)
#define BUILD_ID_NAME_ALIGN		64

static size_t build_id_name_len(const char *path)
{
	return (strlen(path) + BUILD_ID_NAME_ALIGN) &
	       ~(size_t)(BUILD_ID_NAME_ALIGN - 1);
}

/*
 * perf buildid-list and perf archive read the files a recording needs from
 * the file's header, not from its MMAP2 records: each file with a build ID
 * goes there once.
 */
static void note_dso(struct perf_state *st, const struct mapping *m)
{
	struct perf_dso *d;
	u32 key;

	memcpy(&key, m->build_id, sizeof(key));
	hash_for_each_possible(st->dsos, d, node, key)
		if (d->build_id_len == m->build_id_len &&
		    !memcmp(d->build_id, m->build_id, m->build_id_len) &&
		    !strcmp(d->path, m->path))
			return;
	d = xcalloc(1, sizeof(*d));
	d->path = xstrdup(m->path);
	d->build_id_len = m->build_id_len;
	memcpy(d->build_id, m->build_id, m->build_id_len);
	hash_add(st->dsos, &d->node, key);
	st->dsos_size += sizeof(struct perf_build_id) +
			 build_id_name_len(d->path);
}

static void put_build_ids(struct printer *pr)
{
	struct perf_state *st = pr->out_state;
	static const char zeros[BUILD_ID_NAME_ALIGN];
	struct perf_build_id b;
	struct perf_dso *d;
	size_t b_len, len;
	unsigned int k;

	hash_for_each(st->dsos, k, d, node) {
		len = strlen(d->path);
		b_len = build_id_name_len(d->path);
		b = (struct perf_build_id){
			.header.misc = PERF_RECORD_MISC_USER |
				       PERF_RECORD_MISC_BUILD_ID_SIZE,
			.header.size = sizeof(b) + b_len,
			.pid = -1,
			.build_id_size = d->build_id_len,
		};
		memcpy(b.build_id, d->build_id, d->build_id_len);
		put(pr, &b, sizeof(b));
		put(pr, d->path, len);
		put(pr, zeros, b_len - len);
	}
}

static void put_mmap(struct printer *pr, struct thread *t,
		     const struct mapping *m)
{
	struct {
		u32 pid, tid;
		u64 start, len, pgoff;
		union {
			struct {
				u32 maj, min;
				u64 ino, ino_generation;
			};
			struct {
				u8 build_id_size;
				u8 reserved[3];
				u8 build_id[MMAP2_BUILD_ID_MAX];
			};
		};
		u32 prot, flags;
	} mm = {
		.pid = t->pid,
		.tid = t->tid,
		.start = m->start,
		.len = m->end - m->start,
		.pgoff = m->offset,
		.prot = PROT_EXEC | (m->perms[0] == 'r' ? PROT_READ : 0),
		.flags = m->perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE,
	};
	unsigned int misc = PERF_RECORD_MISC_USER;

	/*
	 * With the build ID the trace gives, perf symbolizes the mapping
	 * only from a file of that build (its build-id cache, or the path
	 * if it was not rebuilt since): never from another.
	 */
	if (m->build_id_len && m->build_id_len <= MMAP2_BUILD_ID_MAX) {
		misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
		mm.build_id_size = m->build_id_len;
		memcpy(mm.build_id, m->build_id, m->build_id_len);
		note_dso(pr->out_state, m);
	} else {
		mm.maj = m->dev_major;
		mm.min = m->dev_minor;
		mm.ino = m->inode;
	}
	put_sideband_header(pr, PERF_RECORD_MMAP2, misc, sizeof(mm),
			    perf_path(m));
	put(pr, &mm, sizeof(mm));
	put_name(pr, perf_path(m));
	put_sample_id(pr, t);
}

/* Whether perf's record of @a says all it would of @b. */
static bool same_mapping(const struct mapping *a, const struct mapping *b)
{
	return a->start == b->start && a->end == b->end &&
	       a->offset == b->offset && a->inode == b->inode &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       !strcmp(a->perms, b->perms) && !strcmp(a->path, b->path) &&
	       a->build_id_len == b->build_id_len &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len);
}

/*
 * The executable mappings of @t's process that it has not said as they
 * are now.  One gone needs no word: code runs there no more, and the
 * next one mapped over it replaces it in perf too.
 */
static void put_maps(struct printer *pr, struct thread *t,
		     struct perf_proc *pp, const struct mapset *maps,
		     unsigned int gen)
{
	const struct mapping *m, *said;
	size_t i;

	for (i = 0; i < maps->n; i++) {
		m = &maps->v[i];
		said = mapset_find(&pp->maps, m->start);
		if (code_mapping(m) && (!said || !same_mapping(said, m)))
			put_mmap(pr, t, m);
	}
	mapset_free(&pp->maps);
	mapset_copy(&pp->maps, maps);
	pp->maps_said = true;
	pp->maps_gen = gen;
}

/*
 * Before a record of @t: what perf must know first, its name and its
 * process's code as of now.
 */
static void sync_thread(struct printer *pr, struct thread *t,
			struct perf_thread *pt)
{
	struct perf_proc *pp = pt->proc;
	const struct mapset *maps;
	unsigned int gen;
	const char *comm;

	maps = proc_maps(t->proc, &gen);
	comm = thread_comm(t);
	if (pt->comm_written && !pt->exec && pp->maps_said &&
	    gen == pp->maps_gen &&
	    (!comm || !strcmp(comm, pt->comm)))
		return;
	flush_pending(pr);
	/* A new process whose parent the trace does not name: no FORK. */
	if (pt->started && (t->tid != t->pid || proc_ppid(t->proc)))
		put_fork(pr, t);
	pt->started = false;
	if (!pt->comm_written || pt->exec || (comm && strcmp(comm, pt->comm)))
		put_comm(pr, t, pt);
	if (!pp->maps_said || gen != pp->maps_gen)
		put_maps(pr, t, pp, maps, gen);
}

static void put_record(struct printer *pr, struct thread *t, u64 from, u64 to)
{
	struct perf_state *st = state_of(pr);
	struct perf_thread *pt = thread_of(pr, t);

	sync_thread(pr, t, pt);
	if (st->pending != t || st->nbuf == AUX_BATCH) {
		flush_pending(pr);
		st->pending = t;
	}
	st->buf[st->nbuf++] = (struct bts_record){ .from = from, .to = to };
	st->nbranches++;
}

static void perf_branch(struct printer *pr, struct thread *t,
			const struct branch *b)
{
	put_record(pr, t, b->from, b->to);
}

static void perf_kernel(struct printer *pr, struct thread *t,
			const struct kernel *k)
{
	if (k->entry)
		put_record(pr, t, k->entry, 0);
	if (k->how == RESUME_EXEC)
		thread_of(pr, t)->exec = true;
}

/* The attribute of a marker event's tracepoint. */
static struct perf_event_attr tracepoint_attr(const struct perf_tracepoint *tp)
{
	return (struct perf_event_attr){
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(struct perf_event_attr),
		.config = tp->type,
		.sample_period = 1,
		.sample_type = MARKER_SAMPLE_TYPE,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.sample_id_all = 1,
	};
}

static struct perf_tracepoint *add_tracepoint(struct perf_state *st,
					      const struct event_format *e)
{
	struct perf_tracepoint *tp;

	if (st->ntps == 0xffff)		/* common_type is 16 bits */
		return NULL;
	st->tps = xrealloc(st->tps, (st->ntps + 1) * sizeof(*st->tps));
	tp = &st->tps[st->ntps++];
	tp->format = e;
	tp->type = st->ntps;
	tp->sample_id = EVENT_ID + st->ntps;
	return tp;
}

/*
 * perf's tracing data (tools/perf/util/trace-event-read.c, version 0.6):
 * little-endian, 8-byte longs, 4 KiB pages; the ring buffer's page header
 * as tracefs shows it; no ftrace events; the user_events system with the
 * markers' events; no kernel symbols, printk formats or command lines.
 * Return: it, malloc()ed, @len bytes.
 */
static char *tracing_data(const struct perf_state *st, size_t *len)
{
	static const char header_page[] =
		"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
		"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
		"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
		"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
	const u64 page_len = sizeof(header_page) - 1, zero64 = 0;
	const u32 page_size = 4096, zero32 = 0, one = 1, n = st->ntps;
	char *buf = NULL, *fmt = NULL;
	size_t fmt_len = 0;
	unsigned int i;
	FILE *f;

	f = open_memstream(&buf, len);
	if (!f)
		err(1, "tracing data");
	/* The magic, the version with its NUL, little-endian, longs. */
	fwrite("\027\010\104tracing0.6\0\0\010", 1, 16, f);
	fwrite(&page_size, 4, 1, f);
	fwrite("header_page", 1, 12, f);
	fwrite(&page_len, 8, 1, f);
	fwrite(header_page, 1, page_len, f);
	fwrite("header_event", 1, 13, f);
	fwrite(&zero64, 8, 1, f);
	fwrite(&zero32, 4, 1, f);	/* ftrace's own events */
	fwrite(&one, 4, 1, f);		/* systems */
	fwrite("user_events", 1, 12, f);
	fwrite(&n, 4, 1, f);
	for (i = 0; i < st->ntps; i++) {
		FILE *ff = open_memstream(&fmt, &fmt_len);
		u64 size;

		if (!ff)
			err(1, "tracing data");
		event_write_tracefs_format(ff, st->tps[i].format,
					   st->tps[i].type);
		if (fclose(ff))
			err(1, "tracing data");
		size = fmt_len;
		fwrite(&size, 8, 1, f);
		fwrite(fmt, 1, fmt_len, f);
		free(fmt);
		fmt = NULL;
	}
	fwrite(&zero32, 4, 1, f);	/* kallsyms */
	fwrite(&zero32, 4, 1, f);	/* printk formats */
	fwrite(&zero64, 8, 1, f);	/* saved command lines */
	if (fclose(f))
		err(1, "tracing data");
	return buf;
}

/*
 * A pipe's say of the markers' events, at the first marker: a HEADER_ATTR
 * record for each event known then, then the tracing data with their
 * formats (perf reads tracing data once), which names them.
 */
static void say_pipe_tracepoints(struct printer *pr)
{
	static const char zeros[8];
	struct perf_state *st = state_of(pr);
	const struct event_format *e;
	struct perf_event_attr attr;
	struct {
		u32 size;
		u32 pad;
	} td;
	size_t i, len;
	char *data;

	st->tps_said = true;
	for (i = 0; (e = events_get(pr->events, i)); i++)
		if (!add_tracepoint(st, e))
			break;
	for (i = 0; i < st->ntps; i++) {
		attr = tracepoint_attr(&st->tps[i]);
		put_header(pr, PERF_RECORD_HEADER_ATTR, 0,
			   sizeof(struct perf_event_header) + sizeof(attr) +
			   sizeof(st->tps[i].sample_id));
		put(pr, &attr, sizeof(attr));
		put(pr, &st->tps[i].sample_id, sizeof(st->tps[i].sample_id));
	}
	data = tracing_data(st, &len);
	/* The data follows the record, padded to 8 bytes. */
	td = (typeof(td)){ .size = (len + 7) & ~(size_t)7 };
	put_header(pr, PERF_RECORD_HEADER_TRACING_DATA, 0,
		   sizeof(struct perf_event_header) + sizeof(td));
	put(pr, &td, sizeof(td));
	put(pr, data, len);
	put(pr, zeros, td.size - len);
	free(data);
}

/* The tracepoint of @m's event, NULL if perf cannot be told of it. */
static const struct perf_tracepoint *tracepoint_of(struct printer *pr,
						   const struct marker *m)
{
	struct perf_state *st = state_of(pr);
	unsigned int i;

	if (!m->event)
		return NULL;
	if (!st->file && !st->tps_said)
		say_pipe_tracepoints(pr);
	for (i = 0; i < st->ntps; i++)
		if (st->tps[i].format == m->event)
			return &st->tps[i];
	return st->file ? add_tracepoint(st, m->event) : NULL;
}

/*
 * A marker: a sample of its event's tracepoint, at its system call, at
 * its place among the branches; its raw data the trace entry the event
 * would have made, with the fields the marker carries.
 */
static void perf_marker(struct printer *pr, struct thread *t,
			const struct marker *m)
{
	struct perf_state *st = state_of(pr);
	const struct perf_tracepoint *tp = tracepoint_of(pr, m);
	u8 raw[MARKER_RAW_MAX + 8] = { 0 };
	struct __packed {
		u64 id;
		u64 ip;
		u32 pid, tid;
		u64 time;
		u32 cpu, res;
		u32 raw_size;
	} head;
	size_t n;

	if (!tp) {
		st->markers_left_out++;
		return;
	}
	sync_thread(pr, t, thread_of(pr, t));
	flush_pending(pr);
	/* The entry's common fields: type, flags, preempt count, pid. */
	memcpy(raw, &tp->type, sizeof(tp->type));
	memcpy(raw + 4, &t->tid, sizeof(t->tid));
	n = TRACE_ENTRY_SIZE +
	    event_entry_fields(tp->format, t->payload,
			       m->have_payload ? BTS_MARKER_LEN(m->r->from) : 0,
			       raw + TRACE_ENTRY_SIZE,
			       MARKER_RAW_MAX - TRACE_ENTRY_SIZE);
	head = (typeof(head)){
		.id = tp->sample_id,
		.ip = m->r->to,
		.pid = t->pid,
		.tid = t->tid,
		.time = sideband_time(pr),
		.cpu = (u32)-1,
		/* With its size, the raw data takes whole 8-byte words. */
		.raw_size = ((n + 4 + 7) & ~(size_t)7) - 4,
	};
	put_header(pr, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER,
		   sizeof(struct perf_event_header) + sizeof(head) +
		   head.raw_size);
	put(pr, &head, sizeof(head));
	put(pr, raw, head.raw_size);
}

/*
 * A file's attributes, after its features: the intel_bts event's and the
 * markers' tracepoints', each with its id.
 */
static struct perf_file_section put_attrs(struct printer *pr, off_t at)
{
	struct perf_state *st = state_of(pr);
	struct perf_file_section ids;
	struct perf_event_attr attr;
	const u64 ids_at = at;
	unsigned int i;

	put(pr, &event_id, sizeof(event_id));
	for (i = 0; i < st->ntps; i++)
		put(pr, &st->tps[i].sample_id, sizeof(st->tps[i].sample_id));
	ids = (struct perf_file_section){ ids_at, sizeof(event_id) };
	put(pr, &event_attr, sizeof(event_attr));
	put(pr, &ids, sizeof(ids));
	for (i = 0; i < st->ntps; i++) {
		attr = tracepoint_attr(&st->tps[i]);
		ids = (struct perf_file_section){
			ids_at + (i + 1) * sizeof(u64), sizeof(u64)
		};
		put(pr, &attr, sizeof(attr));
		put(pr, &ids, sizeof(ids));
	}
	return (struct perf_file_section){
		ids_at + (st->ntps + 1) * sizeof(u64),
		(st->ntps + 1) * (sizeof(attr) + sizeof(ids)),
	};
}

static void perf_lost(struct printer *pr, struct thread *t,
		      const struct lost *l)
{
	struct perf_thread *pt = thread_of(pr, t);
	struct {
		u64 aux_offset;
		u64 aux_size;
		u64 flags;
	} aux;

	(void)l;
	flush_pending(pr);
	aux = (typeof(aux)){
		.aux_offset = pt->offset,
		.flags = PERF_AUX_FLAG_TRUNCATED,
	};
	put_sideband_header(pr, PERF_RECORD_AUX, 0, sizeof(aux), NULL);
	put(pr, &aux, sizeof(aux));
	put_sample_id(pr, t);
}

static void forget_maps(struct perf_proc *pp)
{
	mapset_free(&pp->maps);
	pp->maps_said = false;
}

static void perf_thread(struct printer *pr, struct thread *t,
			unsigned int event)
{
	struct perf_thread *pt;
	/*
	 * As the kernel's EXIT record: the parent process, pid and tid
	 * (its main thread's: the trace does not know the thread that
	 * made it), also for a thread.
	 */
	u32 ppid = proc_ppid(t->proc);
	u32 ids[4] = { t->pid, ppid, t->tid, ppid };
	u64 time = sideband_time(pr);

	if (event == BTS_THREAD_NEW) {
		pt = thread_of(pr, t);
		pt->started = true;
		/*
		 * A new process of a pid used before: perf forgets the old
		 * one's mappings at its FORK.
		 */
		if (t->tid == t->pid)
			forget_maps(pt->proc);
		return;
	}
	/* A thread that ends without a record was never said. */
	pt = t->out;
	if (!pt || !pt->comm_written)
		return;
	flush_pending(pr);
	put_sideband_header(pr, PERF_RECORD_EXIT, 0,
			    sizeof(ids) + sizeof(time), NULL);
	put(pr, ids, sizeof(ids));
	put(pr, &time, sizeof(time));
	put_sample_id(pr, t);
}

static void perf_thread_free(struct printer *pr, struct thread *t)
{
	struct perf_state *st = pr->out_state;

	/* A thread id used again: the old thread's records go first. */
	if (st && st->pending == t) {
		flush_pending(pr);
		st->pending = NULL;
	}
	free(t->out);
}

static int perf_finish(struct printer *pr)
{
	struct perf_state *st = state_of(pr);
	struct perf_file_section index[3], attrs;
	const u64 no_entries = 0;
	unsigned int n = 0;
	size_t tracing_len = 0;
	char *tracing = NULL;
	off_t end, at;

	flush_pending(pr);
	/*
	 * The features' index, in the order of their bits, and each's
	 * content; with markers the attributes after them; then the header
	 * again with the size of the records.
	 */
	if (st->file && !st->failed) {
		if (st->ntps)
			tracing = tracing_data(st, &tracing_len);
		end = ftello(pr->out);
		at = end + (1 + !!st->ntps + !!st->dsos_size) * sizeof(*index);
		if (st->ntps) {
			index[n++] = (struct perf_file_section){
				.offset = at, .size = tracing_len,
			};
			at += tracing_len;
		}
		if (st->dsos_size) {
			index[n++] = (struct perf_file_section){
				.offset = at, .size = st->dsos_size,
			};
			at += st->dsos_size;
		}
		index[n++] = (struct perf_file_section){
			.offset = at, .size = sizeof(no_entries),
		};
		at += sizeof(no_entries);
		put(pr, index, n * sizeof(*index));
		put(pr, tracing, tracing_len);
		if (st->dsos_size)
			put_build_ids(pr);
		put(pr, &no_entries, sizeof(no_entries));
		if (st->ntps)
			attrs = put_attrs(pr, at);
		if (end < 0 || fseeko(pr->out, 0, SEEK_SET))
			st->failed = errno ?: EIO;
		else
			put_file_parts(pr, end - st->data_at,
				       st->ntps ? &attrs : NULL);
		if (fseeko(pr->out, 0, SEEK_END))
			st->failed = errno ?: EIO;
		free(tracing);
	}
	if (st->markers_left_out)
		warnx("--format=perf: %llu markers left out: the trace lacks their event's format, or, in a pipe, it came after the first marker",
		      (unsigned long long)st->markers_left_out);
	return st->failed ? output_error(pr, st->failed) : 0;
}

static void perf_free(struct printer *pr)
{
	struct perf_state *st = pr->out_state;
	struct perf_proc *pp;
	struct perf_dso *d;
	struct hlist_node *tmp;
	unsigned int b;

	if (st) {
		hash_for_each_safe(st->procs, b, tmp, pp, node) {
			mapset_free(&pp->maps);
			free(pp);
		}
		hash_for_each_safe(st->dsos, b, tmp, d, node) {
			free(d->path);
			free(d);
		}
		free(st->tps);
	}
	free(st);
}

const struct output output_perf = {
	.branch		= perf_branch,
	.kernel		= perf_kernel,
	.lost		= perf_lost,
	.marker		= perf_marker,
	.thread		= perf_thread,
	.finish		= perf_finish,
	.thread_free	= perf_thread_free,
	.free		= perf_free,
};
