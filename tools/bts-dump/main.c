// SPDX-License-Identifier: GPL-2.0
/*
 * bts-dump: the user-mode branches of a command or of a running process,
 * through /dev/bts, printed with symbols or kept in a raw file.
 *
 * A command runs under ptrace, which attaches /dev/bts before its first
 * instruction (at the exec stop) and shows the mappings of each process
 * the trace follows when it appears, execs and exits: the moments a
 * short-lived process's libraries can still be seen.  ptrace stops it
 * at those events only (and to pass it its signals).
 *
 * A running process is stopped with PTRACE_INTERRUPT while each of its
 * threads gets a /dev/bts file of its own, so that no thread is created
 * unseen while they are attached.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bts-dump.h"

#define BTS_DEV		"/dev/bts"
/* Records taken per read(). */
#define READ_RECORDS	4096
/* The most of a maps file kept: what a raw file chunk can hold. */
#define MAX_MAPS	(60U << 20)
/* The most of a vDSO kept. */
#define MAX_VDSO	(1024U * 1024)
#define LPROC_HASH	256
/*
 * What read records may wait for the printer, in bytes: a few seconds of
 * a busy program's branches.  Past it, reading waits, and the lossless
 * streams hold the program back.
 */
#define PRINT_QUEUE_BYTES	(64U << 20)

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
	bool gone;
	unsigned long checked;	/* the read() it was last snapshotted for */
	struct lproc *next;
};

struct live {
	const struct opts *o;
	struct sink *out;
	struct stream *s;
	size_t ns;
	struct lproc *procs[LPROC_HASH];
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
	/* the event formats sent, by id and generation */
	struct { u32 id, gen; } *formats;
	size_t nformats;
};

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: bts-dump [options] [--] CMD [ARG...]\n"
		"       bts-dump [options] -p PID\n"
		"       bts-dump -i FILE [--format=FMT] [--calls|--insn]\n"
		"                [--show-maps] [--progress]\n"
		"\n"
		"Trace every user-mode branch of CMD (and of the threads and processes it\n"
		"creates), or of the running process PID, through /dev/bts, and print the\n"
		"branches with symbols and source lines.\n"
		"\n"
		"  -p, --pid PID       trace the running process PID (until it exits or\n"
		"                      bts-dump gets SIGINT or SIGTERM)\n"
		"  -o, --output FILE   write to FILE instead of standard output\n"
		"  -i, --input FILE    print a raw file written by --format=raw\n"
		"      --format=FMT    text (default), jsonl (one JSON object per record),\n"
		"                      folded (stacks for flame graphs), chrome (a\n"
		"                      timeline of calls in Chrome's trace-event JSON)\n"
		"                      or raw (a file for -i)\n"
		"      --calls         print a call tree per thread instead of branches\n"
		"      --insn          print the instructions run between branches\n"
		"      --show-maps     print where executable mappings came and went\n"
		"      --no-demangle   print C++ and Rust names as the symbol tables have them\n"
		"      --markers[=GLOB]  print the user_events the program writes whose\n"
		"                      name GLOB matches (default all), decoded, where\n"
		"                      it wrote them among its branches\n"
		"      --trigger=GLOB  with --ring N: at each user_event whose name GLOB\n"
		"                      matches, the last N lines of the writing thread\n"
		"                      before it, and the event\n"
		"      --lossy         do not slow the program down when bts-dump falls\n"
		"                      behind; lost records are reported\n"
		"      --size N        buffer N records per thread (default %u)\n"
		"      --ring N        keep only the last N records of each thread, printed\n"
		"                      when it exits (or is killed)\n"
		"      --no-inherit    trace only the one thread, not the threads and\n"
		"                      processes it creates\n"
		"      --progress      report progress every second (default on a terminal)\n"
		"  -q, --quiet         no progress or summary\n"
		"  -h, --help          this text\n"
		"      --version       bts-dump's version\n"
		"\n"
		"The exit status is CMD's (128+N if signal N killed it).  See bts-dump(1).\n",
		BTS_DEFAULT_RECORDS);
}

static noreturn void bad_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarnx(fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'bts-dump --help'.\n");
	exit(2);
}

static u32 parse_u32(const char *s, const char *what, u32 max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > max)
		bad_usage("bad %s '%s' (1 to %u)", what, s, max);
	return v;
}

/* parse_opts()'s messages for options that do not go together */
#define TRACING_OPTS_WITH_INPUT		"--lossy, --size, --ring, --no-inherit and --markers are for tracing, not -i"
#define RING_WITH_CONTINUOUS_OPTS	"--ring keeps the last N records: --lossy and --size are for continuous traces"

static void parse_opts(int argc, char **argv, struct opts *o)
{
	enum {
		OPT_FORMAT = 256, OPT_CALLS, OPT_INSN, OPT_LOSSY, OPT_SIZE,
		OPT_RING, OPT_NO_INHERIT, OPT_PROGRESS, OPT_VERSION,
		OPT_SHOW_MAPS, OPT_NO_DEMANGLE, OPT_MARKERS, OPT_TRIGGER,
	};
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "calls", no_argument, NULL, OPT_CALLS },
		{ "insn", no_argument, NULL, OPT_INSN },
		{ "show-maps", no_argument, NULL, OPT_SHOW_MAPS },
		{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
		{ "markers", optional_argument, NULL, OPT_MARKERS },
		{ "trigger", required_argument, NULL, OPT_TRIGGER },
		{ "lossy", no_argument, NULL, OPT_LOSSY },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "ring", required_argument, NULL, OPT_RING },
		{ "no-inherit", no_argument, NULL, OPT_NO_INHERIT },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	bool tracing_opt = false;
	int c;

	/* "+": options end at CMD, whose own options are its business. */
	while ((c = getopt_long(argc, argv, "+p:o:i:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->pid = parse_u32(optarg, "PID", INT_MAX);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'i':
			o->input = optarg;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "text"))
				o->print.format = FORMAT_TEXT;
			else if (!strcmp(optarg, "jsonl"))
				o->print.format = FORMAT_JSONL;
			else if (!strcmp(optarg, "raw"))
				o->print.format = FORMAT_RAW;
			else if (!strcmp(optarg, "folded"))
				o->print.format = FORMAT_FOLDED;
			else if (!strcmp(optarg, "chrome"))
				o->print.format = FORMAT_CHROME;
			else
				bad_usage("unknown format '%s' (text, jsonl, folded, chrome or raw)",
					  optarg);
			break;
		case OPT_CALLS:
			o->print.calls = true;
			break;
		case OPT_INSN:
			o->print.insn = true;
			break;
		case OPT_SHOW_MAPS:
			o->print.show_maps = true;
			break;
		case OPT_NO_DEMANGLE:
			o->print.mangled = true;
			break;
		case OPT_MARKERS:
			if (optarg && strlen(optarg) >= BTS_MARKERS_GLOB_MAX)
				bad_usage("--markers: the glob is longer than %u bytes",
					  BTS_MARKERS_GLOB_MAX - 1);
			o->markers = true;
			o->markers_glob = optarg;
			tracing_opt = true;
			break;
		case OPT_TRIGGER:
			if (strlen(optarg) >= BTS_MARKERS_GLOB_MAX)
				bad_usage("--trigger: the glob is longer than %u bytes",
					  BTS_MARKERS_GLOB_MAX - 1);
			o->print.trigger = optarg;
			break;
		case OPT_LOSSY:
			o->lossy = true;
			tracing_opt = true;
			break;
		case OPT_SIZE:
			o->size = parse_u32(optarg, "--size", BTS_MAX_RECORDS);
			tracing_opt = true;
			break;
		case OPT_RING:
			o->ring = parse_u32(optarg, "--ring", BTS_MAX_RECORDS);
			tracing_opt = true;
			break;
		case OPT_NO_INHERIT:
			o->no_inherit = true;
			tracing_opt = true;
			break;
		case OPT_PROGRESS:
			o->progress = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			print_usage(stdout);
			exit(0);
		case OPT_VERSION:
			printf("bts-dump %s\n", BTS_DUMP_VERSION);
			exit(0);
		default:
			fprintf(stderr, "Try 'bts-dump --help'.\n");
			exit(2);
		}
	}
	if (optind < argc)
		o->cmd = argv + optind;

	if (!!o->input + !!o->pid + !!o->cmd != 1)
		bad_usage("give one of a command, -p PID or -i FILE");
	/* -i --trigger=GLOB --ring N: the windows of a recorded trace. */
	if (o->input && o->print.trigger && o->ring)
		tracing_opt = o->lossy || o->size || o->no_inherit ||
			      o->markers;
	if (o->input && tracing_opt)
		bad_usage(TRACING_OPTS_WITH_INPUT);
	if (o->input && o->print.format == FORMAT_RAW)
		bad_usage("-i reads a raw file: print it in another format");
	if ((o->print.calls || o->print.insn) && o->print.format != FORMAT_TEXT)
		bad_usage("--calls and --insn are text formats");
	if (o->print.calls && o->print.insn)
		bad_usage("--calls and --insn do not go together");
	if (o->print.show_maps && o->print.format != FORMAT_TEXT &&
	    o->print.format != FORMAT_JSONL)
		bad_usage("--show-maps prints text or jsonl");
	if (o->print.trigger) {
		if (!o->ring)
			bad_usage("--trigger needs --ring N: the lines to show before each event");
		if (o->markers)
			bad_usage("--trigger's glob names the events: no --markers");
		if ((o->print.format != FORMAT_TEXT &&
		     o->print.format != FORMAT_JSONL) || o->print.calls)
			bad_usage("--trigger prints text or jsonl, without --calls");
		/* Every branch goes by; the printer keeps the last N lines. */
		o->markers = !o->input;
		o->markers_glob = o->print.trigger;
		o->print.window = o->ring;
		o->ring = 0;
	}
	if (o->ring && (o->lossy || o->size))
		bad_usage(RING_WITH_CONTINUOUS_OPTS);
}

/* "bts-dump: CMD killed by signal SIGSEGV"; returns the exit status. */
static int report_exit(const char *cmd, int status)
{
	const char *name;

	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		name = sigabbrev_np(WTERMSIG(status));
		if (name)
			warnx("%s killed by signal SIG%s", cmd, name);
		else
			warnx("%s killed by signal %d", cmd, WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return 1;
}

/*
 * -i with --progress: how far into the file the printer is, every second,
 * for a file that takes minutes.  Only records come often enough to look
 * at the clock; the rest goes straight through.
 */
struct file_progress {
	struct sink sink;
	struct sink *next;
	FILE *in;
	const char *name;
	off_t size;
	u64 records;
	time_t shown;		/* the second of the last report, or the start */
	bool reported;
};

static void file_progress_show(struct file_progress *fp, bool last)
{
	bool tty = isatty(STDERR_FILENO);
	off_t at = ftello(fp->in);

	fprintf(stderr, "%sbts-dump: %llu records", tty ? "\r" : "",
		(unsigned long long)fp->records);
	if (fp->size > 0 && at >= 0)
		fprintf(stderr, ", %lld%% of %s", (long long)(100 * at / fp->size),
			fp->name);
	fputs(tty && !last ? "\033[K" : "\n", stderr);
	fp->reported = true;
}

static int fp_records(struct sink *s, u32 stream, const struct bts_record *r,
		      size_t n)
{
	struct file_progress *fp = (struct file_progress *)s;
	struct timespec now;

	fp->records += n;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec != fp->shown) {
		fp->shown = now.tv_sec;
		file_progress_show(fp, false);
	}
	return fp->next->records(fp->next, stream, r, n);
}

static int fp_maps(struct sink *s, u32 pid, u32 ppid, const char *text,
		   size_t len)
{
	struct sink *next = ((struct file_progress *)s)->next;

	return next->maps(next, pid, ppid, text, len);
}

static int fp_memory(struct sink *s, u32 pid, u64 addr, const void *data,
		     size_t len)
{
	struct sink *next = ((struct file_progress *)s)->next;

	return next->memory(next, pid, addr, data, len);
}

static int fp_exit(struct sink *s, u32 pid, int status, const char *cmd,
		   size_t len)
{
	struct sink *next = ((struct file_progress *)s)->next;

	return next->exit(next, pid, status, cmd, len);
}

static int fp_event_format(struct sink *s, u32 id, u32 gen,
			   const char *text, size_t len)
{
	struct sink *next = ((struct file_progress *)s)->next;

	return next->event_format(next, id, gen, text, len);
}

static int print_file(const struct opts *o, FILE *out)
{
	struct file_progress fp = {
		.sink = {
			.records	= fp_records,
			.maps		= fp_maps,
			.memory		= fp_memory,
			.exit		= fp_exit,
			.event_format	= fp_event_format,
		},
		.name = o->input,
	};
	struct timespec start;
	struct printer *pr;
	struct stat sb;
	const char *cmd;
	FILE *in;
	int status, ret;

	in = strcmp(o->input, "-") ? fopen(o->input, "rb") : stdin;
	if (!in) {
		warn("%s", o->input);
		return 1;
	}
	if (decode_init())
		return 1;
	pr = printer_new(out, &o->print);
	fp.next = printer_sink(pr);
	fp.in = in;
	if (!fstat(fileno(in), &sb) && S_ISREG(sb.st_mode))
		fp.size = sb.st_size;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &start);
	fp.shown = start.tv_sec;
	ret = raw_read(in, o->input, o->progress ? &fp.sink : fp.next) ? 1 : 0;
	/* A file read within the second needs no report. */
	if (fp.reported)
		file_progress_show(&fp, true);
	if (printer_finish(pr))
		ret = 1;
	if (!ret && printer_exit(pr, &status, &cmd))
		report_exit(cmd, status);
	printer_free(pr);
	decode_exit();
	if (in != stdin)
		fclose(in);
	return ret;
}

/* Live tracing */

static struct lproc *lproc_get(struct live *lv, u32 pid, bool *created)
{
	struct lproc **head = &lv->procs[pid % LPROC_HASH], *lp;

	*created = false;
	for (lp = *head; lp; lp = lp->next)
		if (lp->pid == pid)
			return lp;
	lp = xcalloc(1, sizeof(*lp));
	lp->pid = pid;
	lp->next = *head;
	*head = lp;
	*created = true;
	return lp;
}

/* A /proc file, whole up to @max bytes (cut after its last full line). */
static char *read_proc(const char *path, size_t *len, size_t max)
{
	size_t cap = 65536, n = 0;
	char *buf;
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = xmalloc(cap);
	for (;;) {
		if (n == cap) {
			if (cap >= max)
				break;
			cap = cap * 2 < max ? cap * 2 : max;
			buf = xrealloc(buf, cap);
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	if (n == max)
		while (n && buf[n - 1] != '\n')
			n--;
	*len = n;
	return buf;
}

static u32 read_ppid(u32 pid)
{
	char path[64], *text, *p;
	unsigned long ppid = 0;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	text = read_proc(path, &len, 65536);
	if (!text)
		return 0;
	p = memmem(text, len, "\nPPid:", 6);
	if (p && p + 6 < text + len)
		ppid = strtoul(p + 6, NULL, 10);
	free(text);
	return ppid <= UINT32_MAX ? ppid : 0;
}

/* Send the vDSO's image once per address it is mapped at. */
static int send_vdso(struct live *lv, struct lproc *lp,
		     const struct mapset *snap)
{
	const struct mapping *m = NULL;
	char path[64];
	size_t i, len;
	ssize_t n;
	void *data;
	int fd;

	for (i = 0; i < snap->n; i++)
		if (!strcmp(snap->v[i].path, "[vdso]"))
			m = &snap->v[i];
	if (!m || m->start == lp->vdso)
		return 0;
	lp->vdso = m->start;
	len = m->end - m->start < MAX_VDSO ? m->end - m->start : MAX_VDSO;
	snprintf(path, sizeof(path), "/proc/%u/mem", lp->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	data = xmalloc(len);
	n = pread(fd, data, len, m->start);
	close(fd);
	if (n > 0 && lv->out->memory(lv->out, lp->pid, m->start, data, n)) {
		free(data);
		return -1;
	}
	free(data);
	return 0;
}

/* Send /proc/PID/maps (and the vDSO) if it changed since last time. */
static int snapshot(struct live *lv, struct lproc *lp)
{
	struct mapset snap;
	char path[64], *text;
	u32 ppid;
	size_t len;
	int ret;

	if (lp->gone)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", lp->pid);
	text = read_proc(path, &len, MAX_MAPS);
	if (!text) {
		if (errno == ENOENT || errno == ESRCH)
			lp->gone = true;
		return 0;
	}
	/* Empty: the process is a zombie, and its last snapshot stands. */
	if (!len || (lp->text && len == lp->len && !memcmp(text, lp->text, len))) {
		free(text);
		return 0;
	}
	ppid = lp->text ? 0 : read_ppid(lp->pid);
	if (lv->out->maps(lv->out, lp->pid, ppid, text, len)) {
		free(text);
		return -1;
	}
	free(lp->text);
	lp->text = text;
	lp->len = len;
	mapset_parse(text, len, &snap);
	ret = send_vdso(lv, lp, &snap);
	mapset_merge(&lp->maps, &snap);
	return ret;
}

static int check_addr(struct live *lv, struct lproc *lp, u64 addr)
{
	if (!addr || lp->gone || lp->checked == lv->reads ||
	    mapset_find(&lp->maps, addr))
		return 0;
	lp->checked = lv->reads;
	return snapshot(lv, lp);
}

/*
 * The format of the event a marker names, once per event: asked for as the
 * marker is read, since the event may be deleted (then the marker prints
 * undecoded).
 */
static int send_format(struct live *lv, struct stream *s, u32 id, u32 gen)
{
	struct bts_event_format e = {
		.size = sizeof(e),
		.id = id,
		.gen = gen,
	};
	char *text = NULL;
	size_t i;
	int ret;

	for (i = 0; i < lv->nformats; i++)
		if (lv->formats[i].id == id && lv->formats[i].gen == gen)
			return 0;
	lv->formats = xrealloc(lv->formats,
			       (lv->nformats + 1) * sizeof(*lv->formats));
	lv->formats[lv->nformats].id = id;
	lv->formats[lv->nformats].gen = gen;
	lv->nformats++;
	do {
		text = xrealloc(text, e.len ? e.len : 256);
		e.len = e.len ? e.len : 256;
		e.format = (uintptr_t)text;
		ret = ioctl(s->fd, BTS_IOC_EVENT_FORMAT, &e);
	} while (ret && errno == ENOSPC);
	if (!ret)
		ret = lv->out->event_format(lv->out, id, gen, text,
					    strlen(text));
	else if (errno != ENOENT)
		warn(BTS_DEV ": the format of event %u", id);
	free(text);
	return ret > 0 ? 0 : ret;
}

/*
 * Before records go out, make sure the mappings they need went out first:
 * a new process's, and a fresh snapshot (once per read) of a process when
 * a record points outside every mapping known.
 */
static int prescan(struct live *lv, struct stream *s,
		   const struct bts_record *r, size_t n)
{
	struct lproc *lp = NULL;
	bool created;
	size_t i;

	if (s->pid)
		lp = lproc_get(lv, s->pid, &created);
	for (i = 0; i < n; i++, r++) {
		if (BTS_RECORD_IS_PSEUDO(r->from)) {
			switch (BTS_PSEUDO_TYPE(r->from)) {
			case BTS_PSEUDO_THREAD:
				s->pid = r->flags;
				lp = lproc_get(lv, s->pid, &created);
				if (created) {
					lp->checked = lv->reads;
					if (snapshot(lv, lp))
						return -1;
				}
				break;
			case BTS_PSEUDO_MARKER:
				if (send_format(lv, s, BTS_MARKER_ID(r->flags),
						BTS_MARKER_GEN(r->flags)))
					return -1;
				break;
			case BTS_PSEUDO_KERNEL:
				if (lp && (check_addr(lv, lp, r->to) ||
					   check_addr(lv, lp, r->flags)))
					return -1;
				break;
			}
		} else if (lp && (check_addr(lv, lp, r->from) ||
				  check_addr(lv, lp, r->to))) {
			return -1;
		}
	}
	return 0;
}

static int read_stream(struct live *lv, size_t idx)
{
	struct stream *s = &lv->s[idx];
	ssize_t n;

	n = read(s->fd, lv->buf, sizeof(lv->buf));
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		warn(BTS_DEV ": read");
		s->eof = true;
		return -1;
	}
	if (n == 0) {
		s->eof = true;
		return 0;
	}
	if (n % sizeof(struct bts_record)) {
		warnx(BTS_DEV ": read() returned %zd bytes, not whole records",
		      n);
		return -1;
	}
	n /= sizeof(struct bts_record);
	lv->reads++;
	lv->records += n;
	if (prescan(lv, s, lv->buf, n))
		return -1;
	return lv->out->records(lv->out, idx, lv->buf, n);
}

static int open_dev(void)
{
	int fd = open(BTS_DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
		warnx("this kernel has no BTS branch tracing (" BTS_DEV
		      " missing); boot the bts kernel on a CPU with BTS");
	else if (errno == EACCES)
		warnx(BTS_DEV ": permission denied (the device's mode does not let you read it)");
	else
		warn(BTS_DEV);
	return -1;
}

static bool other_user(pid_t pid)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return !stat(path, &sb) && sb.st_uid != geteuid();
}

/* attach_error()'s messages when ptrace is not allowed, %s the target */
#define EPERM_OTHER_USER	"not allowed to trace %s: it belongs to another user (needs ptrace permission)"
#define EPERM_PTRACE_SCOPE	"not allowed to trace %s (needs ptrace permission; see /proc/sys/kernel/yama/ptrace_scope)"

static void attach_error(int e, pid_t tid, const char *what)
{
	switch (e) {
	case ESRCH:
		warnx("%s: no such process", what);
		break;
	case EPERM:
	case EACCES:
		if (other_user(tid))
			warnx(EPERM_OTHER_USER, what);
		else
			warnx(EPERM_PTRACE_SCOPE, what);
		break;
	case EBUSY:
		warnx("the thread is traced by as many others as the kernel allows; try again later");
		break;
	case EINVAL:
		warnx(BTS_DEV " rejected the trace settings (is the kernel older than bts-dump?)");
		break;
	case ENOMEM:
		warnx("not enough memory for the trace buffers; try a smaller --size or --ring");
		break;
	case EOPNOTSUPP:
		warnx("--markers: this kernel puts no user_events into branch traces (CONFIG_USER_EVENTS_BTS)");
		break;
	case EDQUOT:
		warnx("your trace buffers would pass the per-user limit (sysctl kernel.bts_user_max_kb); try a smaller --size or --ring");
		break;
	default:
		warnx("cannot trace %s: %s", what, strerror(e));
		break;
	}
}

/* Attach @fd to thread @tid; on failure returns the errno. */
static int attach(struct live *lv, int fd, pid_t tid)
{
	const struct opts *o = lv->o;
	struct bts_attach a = {
		.size = sizeof(a),
		.pid = tid,
	};
	int ret;

	if (!o->no_inherit)
		a.flags |= BTS_ATTACH_INHERIT;
	if (o->ring) {
		a.mode = BTS_MODE_RING;
		a.nr_records = o->ring;
	} else {
		a.mode = BTS_MODE_CONTINUOUS;
		a.nr_records = o->size;
		if (!o->lossy)
			a.flags |= BTS_ATTACH_LOSSLESS;
	}
	/*
	 * The mapping changes in stream order symbolize each branch with
	 * what was mapped when it ran; a kernel without them (EINVAL for
	 * the flag) leaves the /proc snapshots alone to do it.
	 */
	a.flags |= BTS_ATTACH_MAPS;
	if (o->markers) {
		a.flags |= BTS_ATTACH_MARKERS;
		a.markers = (uintptr_t)o->markers_glob;
	}
	ret = ioctl(fd, BTS_IOC_ATTACH, &a);
	if (ret && errno == EINVAL) {
		a.flags &= ~BTS_ATTACH_MAPS;
		ret = ioctl(fd, BTS_IOC_ATTACH, &a);
	}
	if (ret)
		return errno;
	lv->s = xrealloc(lv->s, (lv->ns + 1) * sizeof(*lv->s));
	lv->s[lv->ns].fd = fd;
	lv->s[lv->ns].eof = false;
	lv->s[lv->ns].pid = 0;
	lv->ns++;
	return 0;
}

static void detach_all(struct live *lv)
{
	size_t i;

	if (lv->detached)
		return;
	for (i = 0; i < lv->ns; i++)
		if (ioctl(lv->s[i].fd, BTS_IOC_DETACH, 0))
			warn(BTS_DEV ": detach");
	lv->detached = true;
}

static void progress(struct live *lv, bool last)
{
	struct bts_status st, sum = { 0 };
	bool tty = isatty(STDERR_FILENO);
	size_t i;

	for (i = 0; i < lv->ns; i++) {
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		if (ioctl(lv->s[i].fd, BTS_IOC_STATUS, &st))
			continue;
		sum.threads += st.threads;
		sum.live += st.live;
		sum.lost += st.lost;
	}
	fprintf(stderr, "%sbts-dump: %llu records read, %u threads (%u running), %llu lost%s",
		tty ? "\r" : "", lv->records, sum.threads, sum.live,
		(unsigned long long)sum.lost, tty && !last ? "\033[K" : "\n");
	lv->progress_shown = true;
}

/* The traced threads' losses and the threads left untraced, summed. */
static void losses(struct live *lv, struct bts_status *sum)
{
	struct bts_status st;
	size_t i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < lv->ns; i++) {
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		if (ioctl(lv->s[i].fd, BTS_IOC_STATUS, &st))
			continue;
		sum->lost += st.lost;
		sum->untraced += st.untraced;
	}
}

/*
 * The ptrace stops of the command and of the processes it creates: let
 * them run, taking a snapshot of a process's mappings when it appears,
 * execs and exits.  @block: until the command is gone.
 */
static int child_events(struct live *lv, bool block)
{
	bool created;
	int st, sig;
	pid_t w;

	while (!block || !lv->child_done) {
		w = waitpid(-1, &st, __WALL | (block ? 0 : WNOHANG));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (w == lv->child) {
				lv->child_done = true;
				lv->child_status = st;
			}
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		sig = WSTOPSIG(st);
		switch (st >> 16) {
		case PTRACE_EVENT_STOP:
			/* A group stop: stay stopped until SIGCONT. */
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
			    sig == SIGTTOU) {
				ptrace(PTRACE_LISTEN, w, 0, 0);
				break;
			}
			/* A new process's first stop. */
			fallthrough;
		case PTRACE_EVENT_EXEC:
		case PTRACE_EVENT_EXIT:
			if (snapshot(lv, lproc_get(lv, w, &created)))
				return -1;
			ptrace(PTRACE_CONT, w, 0, 0);
			break;
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
			ptrace(PTRACE_CONT, w, 0, 0);
			break;
		default:
			/* A signal for the process: deliver it. */
			ptrace(PTRACE_CONT, w, 0, sig);
			break;
		}
	}
	return 0;
}

/*
 * SIGINT and SIGQUIT from the terminal reach the command too, and
 * SIGTERM and SIGHUP are passed on to it: while it runs, its end ends the
 * trace.  Otherwise the first signal detaches (what was recorded is still
 * printed) and a second one stops reading.
 */
static int on_signals(struct live *lv)
{
	struct signalfd_siginfo si;
	bool running;

	while (read(lv->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			if (lv->child && child_events(lv, false))
				return -1;
			continue;
		}
		running = lv->child && !lv->child_done;
		if (running && (si.ssi_signo == SIGINT || si.ssi_signo == SIGQUIT))
			continue;
		if (running) {
			kill(lv->child, si.ssi_signo);
			continue;
		}
		if (lv->detached)
			lv->abandon = true;
		detach_all(lv);
	}
	return 0;
}

static u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static int periodic(struct live *lv)
{
	struct lproc *lp;
	size_t b;

	/* ld.so and dlopen() map libraries after the first snapshot. */
	for (b = 0; b < LPROC_HASH; b++)
		for (lp = lv->procs[b]; lp; lp = lp->next)
			if (snapshot(lv, lp))
				return -1;
	if (lv->o->progress)
		progress(lv, false);
	return 0;
}

/* Read every file until each is at its end. */
static int trace_loop(struct live *lv)
{
	struct pollfd *pfd = xcalloc(lv->ns + 1, sizeof(*pfd));
	size_t *idx = xcalloc(lv->ns, sizeof(*idx));
	u64 next = now_ms() + 1000, t;
	size_t i, n;
	int ret = -1;

	for (;;) {
		for (i = 0, n = 0; i < lv->ns; i++) {
			if (lv->s[i].eof)
				continue;
			pfd[n].fd = lv->s[i].fd;
			pfd[n].events = POLLIN;
			idx[n++] = i;
		}
		if (!n || lv->abandon)
			break;
		pfd[n].fd = lv->sigfd;
		pfd[n].events = POLLIN;
		t = now_ms();
		if (poll(pfd, n + 1, t < next ? (int)(next - t) : 0) < 0 &&
		    errno != EINTR) {
			warn("poll");
			goto out;
		}
		if ((pfd[n].revents & POLLIN) && on_signals(lv))
			goto out;
		for (i = 0; i < n; i++)
			if (pfd[i].revents && read_stream(lv, idx[i]))
				goto out;
		if (now_ms() >= next) {
			if (periodic(lv))
				goto out;
			next = now_ms() + 1000;
		}
	}
	ret = 0;
out:
	free(pfd);
	free(idx);
	return ret;
}

static void finish_live(struct live *lv)
{
	struct bts_status sum;

	if (lv->o->progress)
		progress(lv, true);
	if (lv->o->quiet)
		return;
	losses(lv, &sum);
	if (sum.untraced)
		warnx("%u threads or processes the command created were not traced (the per-user limit, sysctl kernel.bts_user_max_kb, or no memory): the trace is incomplete",
		      sum.untraced);
	/* A ring overwrites by design. */
	if (sum.lost && !lv->o->ring)
		warnx("%llu records were lost: the trace has gaps (drop --lossy, or use a larger --size)",
		      (unsigned long long)sum.lost);
}

static int setup_signals(struct live *lv, sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, old);
	lv->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (lv->sigfd < 0) {
		warn("signalfd");
		return -1;
	}
	return 0;
}

static noreturn void exec_child(char **cmd, int gate, const sigset_t *mask)
{
	char c;
	int e;

	sigprocmask(SIG_SETMASK, mask, NULL);
	/* Run only once the parent traces us: then exec stops us. */
	while (read(gate, &c, 1) < 0 && errno == EINTR)
		;
	execvp(cmd[0], cmd);
	e = errno;
	fprintf(stderr, "bts-dump: %s: %s\n", cmd[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

static int trace_cmd(struct live *lv)
{
	const struct opts *o = lv->o;
	int fd, gate[2], st, e;
	long ptrace_opts = PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;
	bool created;
	sigset_t old;

	/* Follow the processes BTS follows, to see their mappings too. */
	if (!o->no_inherit)
		ptrace_opts |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;

	fd = open_dev();
	if (fd < 0)
		return 1;
	if (setup_signals(lv, &old) || pipe2(gate, O_CLOEXEC)) {
		warn("cannot start %s", o->cmd[0]);
		return 1;
	}
	lv->child = fork();
	if (lv->child < 0) {
		warn("fork");
		return 1;
	}
	if (!lv->child) {
		close(gate[1]);
		exec_child(o->cmd, gate[0], &old);
	}
	close(gate[0]);
	e = ptrace(PTRACE_SEIZE, lv->child, 0, ptrace_opts) ? errno : 0;
	close(gate[1]);
	if (e) {
		kill(lv->child, SIGKILL);
		waitpid(lv->child, &st, 0);
		attach_error(e, lv->child, o->cmd[0]);
		return 1;
	}

	/* Until the exec stop, or the end of a command that did not exec. */
	for (;;) {
		if (waitpid(lv->child, &st, __WALL) < 0) {
			warn("waitpid");
			return 1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return report_exit(o->cmd[0], st);
		if (st >> 8 == (SIGTRAP | PTRACE_EVENT_EXEC << 8))
			break;
		ptrace(PTRACE_CONT, lv->child, 0,
		       st >> 16 ? 0 : WSTOPSIG(st));
	}
	e = attach(lv, fd, lv->child);
	if (e) {
		attach_error(e, lv->child, o->cmd[0]);
		kill(lv->child, SIGKILL);
		return 1;
	}
	if (snapshot(lv, lproc_get(lv, lv->child, &created))) {
		kill(lv->child, SIGKILL);
		return 1;
	}
	ptrace(PTRACE_CONT, lv->child, 0, 0);

	if (trace_loop(lv)) {
		/* The command goes on, untraced once bts-dump is gone. */
		detach_all(lv);
		return 1;
	}
	if (child_events(lv, true))
		return 1;
	if (!lv->child_done) {
		warn("waitpid");
		return 1;
	}
	finish_live(lv);
	if (lv->out->exit(lv->out, lv->child, lv->child_status, o->cmd[0],
			  strlen(o->cmd[0])))
		return 1;
	return report_exit(o->cmd[0], lv->child_status);
}

/* The threads of @pid, from /proc/PID/task; @tids grows as needed. */
static size_t list_threads(pid_t pid, pid_t **tids, size_t *cap)
{
	struct dirent *de;
	char path[64];
	size_t n = 0;
	DIR *d;
	long t;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		t = strtol(de->d_name, NULL, 10);
		if (t <= 0)
			continue;
		if (n == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			*tids = xrealloc(*tids, *cap * sizeof(**tids));
		}
		(*tids)[n++] = t;
	}
	closedir(d);
	return n;
}

struct frozen {
	pid_t tid;
	int sig;	/* a signal its stop took, to give back */
	bool seized;
};

static struct frozen *find_frozen(struct frozen *f, size_t n, pid_t tid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (f[i].tid == tid)
			return &f[i];
	return NULL;
}

/*
 * Stop every thread of @pid with PTRACE_INTERRUPT, listing the threads
 * again until no new one shows up.  A thread that cannot be stopped (the
 * process is being debugged) is attached to while it runs.
 */
static size_t freeze(pid_t pid, struct frozen **out)
{
	struct frozen *f = NULL;
	size_t n = 0, cap = 0, tcap = 0, nt, i;
	pid_t *tids = NULL;
	bool more = true;
	int st;

	while (more) {
		more = false;
		nt = list_threads(pid, &tids, &tcap);
		for (i = 0; i < nt; i++) {
			if (find_frozen(f, n, tids[i]))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				f = xrealloc(f, cap * sizeof(*f));
			}
			memset(&f[n], 0, sizeof(f[n]));
			f[n].tid = tids[i];
			f[n].seized = !ptrace(PTRACE_SEIZE, tids[i], 0, 0) &&
				      !ptrace(PTRACE_INTERRUPT, tids[i], 0, 0);
			if (f[n].seized) {
				while (waitpid(tids[i], &st, __WALL) < 0 &&
				       errno == EINTR)
					;
				if (!WIFSTOPPED(st))
					f[n].seized = false;
				else if (!(st >> 16))
					f[n].sig = WSTOPSIG(st);
			}
			n++;
			more = true;
		}
	}
	free(tids);
	*out = f;
	return n;
}

static int trace_pid(struct live *lv)
{
	const struct opts *o = lv->o;
	struct frozen *f = NULL;
	size_t n, i;
	char what[32];
	bool created;
	sigset_t old;
	int fd, e, ret = 1;

	snprintf(what, sizeof(what), "%d", o->pid);
	if (kill(o->pid, 0) && errno == ESRCH) {
		warnx("%s: no such process", what);
		return 1;
	}
	if (setup_signals(lv, &old))
		return 1;
	if (o->no_inherit) {
		f = xcalloc(1, sizeof(*f));
		f->tid = o->pid;
		n = 1;
	} else {
		n = freeze(o->pid, &f);
	}
	for (i = 0; i < n; i++) {
		fd = open_dev();
		if (fd < 0)
			goto out;
		e = attach(lv, fd, f[i].tid);
		if (e) {
			close(fd);
			/* A thread that exited meanwhile is no loss. */
			if (e == ESRCH && f[i].tid != o->pid)
				continue;
			attach_error(e, f[i].tid, what);
			goto out;
		}
	}
	if (!lv->ns) {
		warnx("%s: no such process", what);
		goto out;
	}
	if (snapshot(lv, lproc_get(lv, o->pid, &created)))
		goto out;
	ret = 0;
out:
	for (i = 0; i < n; i++)
		if (f[i].seized)
			ptrace(PTRACE_DETACH, f[i].tid, 0, f[i].sig);
	free(f);
	if (ret) {
		detach_all(lv);
		return ret;
	}
	if (trace_loop(lv)) {
		detach_all(lv);
		ret = 1;
	}
	finish_live(lv);
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct async_sink *printing = NULL;
	struct raw_writer rw;
	struct printer *pr = NULL;
	struct live *lv;
	FILE *out = stdout;
	int ret;

	parse_opts(argc, argv, &o);
	/* -i: not over its own output on the terminal. */
	if (!o.quiet && isatty(STDERR_FILENO) &&
	    (!o.input || o.output || !isatty(STDOUT_FILENO)))
		o.progress = true;
	if (o.quiet)
		o.progress = false;
	if (o.output) {
		out = fopen(o.output, "w");
		if (!out)
			err(1, "%s", o.output);
	} else if (o.print.format == FORMAT_RAW && isatty(STDOUT_FILENO)) {
		errx(2, "not writing a raw trace to a terminal; use -o FILE");
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	if (o.input) {
		ret = print_file(&o, out);
		if (out != stdout && fclose(out))
			err(1, "%s", o.output);
		return ret;
	}

	lv = xcalloc(1, sizeof(*lv));
	lv->o = &o;
	if (o.print.format == FORMAT_RAW) {
		if (raw_writer_init(&rw, out, o.output ? o.output : "stdout"))
			return 1;
		lv->out = &rw.sink;
	} else {
		if (decode_init())
			return 1;
		pr = printer_new(out, &o.print);
		printing = async_sink_new(printer_sink(pr), PRINT_QUEUE_BYTES);
		lv->out = async_sink(printing);
	}
	ret = o.cmd ? trace_cmd(lv) : trace_pid(lv);
	if (pr) {
		if (async_sink_finish(printing) && !ret)
			ret = 1;
		if (printer_finish(pr) && !ret)
			ret = 1;
		printer_free(pr);
		decode_exit();
	} else if (fflush(out) && !ret) {
		warn("%s", o.output ? o.output : "stdout");
		ret = 1;
	}
	if (out != stdout && fclose(out) && !ret) {
		warn("%s", o.output);
		ret = 1;
	}
	return ret;
}
