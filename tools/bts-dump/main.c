// SPDX-License-Identifier: GPL-2.0
/*
 * bts-dump: the user-mode branches of a command or of a running process,
 * through /dev/bts, printed with symbols or kept in a raw file.
 *
 * Here: the options, and where the records go: a raw file, or the
 * printer (in a thread of its own while tracing); -i prints a raw file.
 * The tracing itself is trace.c's and live.c's.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live.h"

/*
 * What read records may wait for the printer, in bytes: a few seconds of
 * a busy program's branches.  Past it, reading waits, and the lossless
 * streams hold the program back.
 */
#define PRINT_QUEUE_BYTES	(64U << 20)
/* The output's stdio buffer: a write() a megabyte. */
static char out_buffer[1 << 20];

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: bts-dump [options] [--] CMD [ARG...]\n"
		"       bts-dump [options] -p PID\n"
		"       bts-dump -i FILE [-o FILE] [--format=FMT] [--calls|--insn|-F FIELDS]\n"
		"                [--show-maps] [--inline] [--tid LIST] [--sym GLOBS]\n"
		"                [--dso GLOBS] [--range START-END] [--progress]\n"
		"\n"
		"Trace every user-mode branch of CMD (and of the threads and processes it\n"
		"creates), or of the running process PID, through /dev/bts, and print the\n"
		"branches with symbols and source lines.\n"
		"\n"
		"  -p, --pid PID       trace the running process PID (until it exits or\n"
		"                      bts-dump gets SIGINT, SIGTERM, SIGHUP or SIGQUIT)\n"
		"  -o, --output FILE   write to FILE instead of standard output\n"
		"  -i, --input FILE    print a raw file written by --format=raw\n"
		"      --format=FMT    text (default), jsonl (one JSON object per record),\n"
		"                      folded (stacks for flame graphs), chrome (a\n"
		"                      timeline of calls in Chrome's trace-event JSON),\n"
		"                      perf (a perf.data file for perf script and perf\n"
		"                      report), pt (one thread's branches as an Intel PT\n"
		"                      packet stream; -o FILE: FILE.ptxed, the images to\n"
		"                      decode it with) or raw (a file for -i)\n"
		"      --calls         print a call tree per thread instead of branches\n"
		"      --insn          print the instructions run between branches\n"
		"      --show-maps     print where executable mappings came and went\n"
		"  -F, --fields LIST   text lines with only these fields, as perf script's:\n"
		"                      comm, tid, pid, ip, addr, sym, symoff, dso, srcline\n"
		"      --tid LIST      print only these threads, or all threads of these\n"
		"                      processes (comma-separated ids)\n"
		"      --sym GLOBS     print only branches (system calls, markers) with an\n"
		"                      end in a function a glob of GLOBS matches\n"
		"      --dso GLOBS     the same for the file's name (libc.so.6), or with a\n"
		"                      '/' its path (/usr/lib/*)\n"
		"      --range START-END  the same for addresses in [START, END) (hex)\n"
		"      --no-demangle   print C++ and Rust names as the symbol tables have them\n"
		"      --inline        with each address, the functions inlined there (DWARF)\n"
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
		"      --progress      report progress every second on stderr (the default\n"
		"                      when it is a terminal, with -i only if the output\n"
		"                      is not)\n"
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
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > max)
		bad_usage("bad %s '%s' (1 to %u)", what, s, max);
	return v;
}

/* The items of a comma-separated list, in @*v (grown), @*n of them. */
static void parse_list(const char *s, const char *what, char ***v, size_t *n)
{
	const char *end;

	do {
		end = strchrnul(s, ',');
		if (end == s)
			bad_usage("%s: an empty item in the list", what);
		*v = xrealloc(*v, (*n + 1) * sizeof(**v));
		(*v)[(*n)++] = xstrndup(s, end - s);
		s = end + 1;
	} while (*end);
}

static void parse_tids(const char *s, struct print_opts *p)
{
	char **items = NULL;
	size_t i, n = 0;

	parse_list(s, "--tid", &items, &n);
	p->tids = xrealloc(p->tids, (p->ntids + n) * sizeof(*p->tids));
	for (i = 0; i < n; i++) {
		p->tids[p->ntids++] = parse_u32(items[i], "--tid", INT_MAX);
		free(items[i]);
	}
	free(items);
}

/* --range=START-END: addresses, hexadecimal with or without 0x. */
static void parse_range(const char *arg, struct print_opts *p)
{
	const char *s = arg;
	char *end;

	errno = 0;
	p->range_start = strtoull(s, &end, 16);
	if (!errno && end != s && *end == '-') {
		s = end + 1;
		p->range_end = strtoull(s, &end, 16);
	}
	if (errno || end == s || *end || p->range_end <= p->range_start)
		bad_usage("bad --range '%s' (START-END, hexadecimal, START below END)",
			  arg);
}

/* -F FIELDS: perf script's names of the fields bts-dump has. */
static unsigned int parse_fields(const char *s)
{
	static const struct {
		const char *name;
		unsigned int bit;
	} names[] = {
		{ "comm", FIELD_COMM }, { "tid", FIELD_TID },
		{ "pid", FIELD_PID }, { "ip", FIELD_IP },
		{ "addr", FIELD_ADDR }, { "sym", FIELD_SYM },
		{ "symoff", FIELD_SYMOFF }, { "dso", FIELD_DSO },
		{ "srcline", FIELD_SRCLINE },
	};
	unsigned int fields = 0;
	char **items = NULL;
	size_t i, k, n = 0;

	parse_list(s, "-F", &items, &n);
	for (i = 0; i < n; i++) {
		for (k = 0; k < ARRAY_SIZE(names); k++)
			if (!strcmp(items[i], names[k].name))
				break;
		if (k == ARRAY_SIZE(names))
			bad_usage("-F: unknown field '%s' (comm, tid, pid, ip, addr, sym, symoff, dso, srcline)",
				  items[i]);
		fields |= names[k].bit;
		free(items[i]);
	}
	free(items);
	if (!(fields & (FIELD_IP | FIELD_ADDR | FIELD_SYM | FIELD_DSO |
			FIELD_SRCLINE)))
		bad_usage("-F: no field of a branch (ip, addr, sym, dso, srcline)");
	return fields;
}

/* parse_opts()'s messages for options that do not go together */
#define TRACING_OPTS_WITH_INPUT		"--lossy, --size, --ring, --no-inherit and --markers are for tracing, not -i"
#define RING_WITH_CONTINUOUS_OPTS	"--ring keeps the last N records: --lossy and --size are for continuous traces"

static void parse_opts(int argc, char **argv, struct opts *o)
{
	enum {
		OPT_FORMAT = 256, OPT_CALLS, OPT_INSN, OPT_LOSSY, OPT_SIZE,
		OPT_RING, OPT_NO_INHERIT, OPT_PROGRESS, OPT_VERSION,
		OPT_SHOW_MAPS, OPT_NO_DEMANGLE, OPT_INLINE, OPT_MARKERS, OPT_TRIGGER,
		OPT_TID, OPT_SYM, OPT_DSO, OPT_RANGE,
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
		{ "inline", no_argument, NULL, OPT_INLINE },
		{ "markers", optional_argument, NULL, OPT_MARKERS },
		{ "trigger", required_argument, NULL, OPT_TRIGGER },
		{ "fields", required_argument, NULL, 'F' },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "sym", required_argument, NULL, OPT_SYM },
		{ "dso", required_argument, NULL, OPT_DSO },
		{ "range", required_argument, NULL, OPT_RANGE },
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
	while ((c = getopt_long(argc, argv, "+p:o:i:F:qh", longopts, NULL)) != -1) {
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
			else if (!strcmp(optarg, "perf"))
				o->print.format = FORMAT_PERF;
			else if (!strcmp(optarg, "pt"))
				o->print.format = FORMAT_PT;
			else
				bad_usage("unknown format '%s' (text, jsonl, folded, chrome, perf, pt or raw)",
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
		case OPT_INLINE:
			o->print.inline_frames = true;
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
		case 'F':
			o->print.fields = parse_fields(optarg);
			break;
		case OPT_TID:
			parse_tids(optarg, &o->print);
			break;
		case OPT_SYM:
			parse_list(optarg, "--sym", &o->print.syms,
				   &o->print.nsyms);
			break;
		case OPT_DSO:
			parse_list(optarg, "--dso", &o->print.dsos,
				   &o->print.ndsos);
			break;
		case OPT_RANGE:
			parse_range(optarg, &o->print);
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
	if ((o->print.nsyms || o->print.ndsos || o->print.range_end) &&
	    (o->print.calls || (o->print.format != FORMAT_TEXT &&
				o->print.format != FORMAT_JSONL)))
		bad_usage("--sym, --dso and --range choose branches: text or jsonl, without --calls");
	if (o->print.fields && (o->print.format != FORMAT_TEXT ||
				o->print.calls || o->print.insn))
		bad_usage("-F chooses the fields of the text format's lines, not --calls' or --insn's");
	if (o->print.inline_frames &&
	    ((o->print.format != FORMAT_TEXT &&
	      o->print.format != FORMAT_JSONL) || o->print.calls))
		bad_usage("--inline shows addresses' inlined functions: text or jsonl, without --calls");
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
int report_exit(const char *cmd, int status)
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
 * for a file that takes minutes.  Only records chunks come often enough
 * to look at the clock for.
 */
struct file_progress {
	struct raw_progress rp;
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

static void file_progress_chunk(struct raw_progress *rp, size_t records)
{
	struct file_progress *fp = (struct file_progress *)rp;
	struct timespec now;

	if (!records)
		return;
	fp->records += records;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec != fp->shown) {
		fp->shown = now.tv_sec;
		file_progress_show(fp, false);
	}
}

static int print_file(const struct opts *o, FILE *in, FILE *out)
{
	struct file_progress fp = {
		.rp.chunk = file_progress_chunk,
		.name = o->input,
	};
	struct timespec start;
	struct printer *pr;
	struct stat sb;
	const char *cmd;
	int status, ret;

	if (decode_init())
		return 1;
	pr = printer_new(out, &o->print);
	fp.in = in;
	if (!fstat(fileno(in), &sb) && S_ISREG(sb.st_mode))
		fp.size = sb.st_size;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &start);
	fp.shown = start.tv_sec;
	ret = raw_read(in, o->input, printer_sink(pr),
		       o->progress ? &fp.rp : NULL) ? 1 : 0;
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

/* What parse_opts() allocated. */
static void opts_free(struct opts *o)
{
	size_t i;

	for (i = 0; i < o->print.nsyms; i++)
		free(o->print.syms[i]);
	for (i = 0; i < o->print.ndsos; i++)
		free(o->print.dsos[i]);
	free(o->print.syms);
	free(o->print.dsos);
	free(o->print.tids);
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct async_sink *printing = NULL;
	struct raw_writer rw;
	struct printer *pr = NULL;
	struct live *lv;
	FILE *in = NULL, *out = stdout;
	int ret;

	parse_opts(argc, argv, &o);
	o.print.out_name = o.output ? o.output : "stdout";
	o.print.out_path = o.output;
	/* Before -o empties a file: -i of one that is not there is a typo. */
	if (o.input) {
		in = strcmp(o.input, "-") ? fopen(o.input, "rb") : stdin;
		if (!in)
			err(1, "%s", o.input);
	}
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
	} else if ((o.print.format == FORMAT_RAW ||
		    o.print.format == FORMAT_PERF ||
		    o.print.format == FORMAT_PT) && isatty(STDOUT_FILENO)) {
		errx(2, "not writing a binary file to a terminal; use -o FILE");
	}
	/* glibc takes a size only with a buffer: else st_blksize, 4 KB. */
	setvbuf(out, out_buffer, _IOFBF, sizeof(out_buffer));
	if (o.input) {
		ret = print_file(&o, in, out);
		/* Its write error is said already. */
		if (out != stdout && fclose(out) && !ret) {
			warn("%s", o.output);
			ret = 1;
		}
		opts_free(&o);
		return ret;
	}

	lv = xcalloc(1, sizeof(*lv));
	hash_init(lv->procs);
	hash_init(lv->threads);
	lv->o = &o;
	if (o.print.format == FORMAT_RAW) {
		if (raw_writer_init(&rw, out, o.print.out_name))
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
		warn("%s", o.print.out_name);
		ret = 1;
	}
	if (out != stdout && fclose(out) && !ret) {
		warn("%s", o.output);
		ret = 1;
	}
	opts_free(&o);
	return ret;
}
