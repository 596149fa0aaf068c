// SPDX-License-Identifier: GPL-2.0
/*
 * pt-branches --pt FILE[:FROM-TO] --raw FILE:FROM-TO:ADDRESS...: the
 * branches an Intel PT packet stream says a program took, decoded with
 * libipt's instruction flow decoder; its arguments as libipt's ptxed
 * takes them (bytes FROM to TO of FILE, the code at ADDRESS), so that a
 * line of bts-dump's FILE.ptxed runs with it.  An independent reader of
 * bts-dump --format=pt: its output goes to tests/bts/compare.py like perf
 * script's.
 *
 * Prints "FROM => TO" (hex) for each branch taken: a call, return or
 * jump, a conditional jump whose next instruction is not the one after
 * it; "FROM => 0" where tracing stopped (a system call's instruction, or
 * where an interrupt came); "# overflow", "# error ..." where the decoder
 * lost the flow and synchronized again.  Exit 0 unless it cannot start.
 */
#include <err.h>
#include <fcntl.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void *map_file(const char *path, size_t *size)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		err(2, "%s", path);
	*size = st.st_size;
	p = mmap(NULL, st.st_size ? st.st_size : 1, PROT_READ, MAP_PRIVATE,
		 fd, 0);
	if (p == MAP_FAILED)
		err(2, "%s", path);
	close(fd);
	return p;
}

/* Cut ":NUMBER" off the end of @arg. */
static uint64_t cut_number(char *arg, const char *what)
{
	char *sep = strrchr(arg, ':'), *end;
	uint64_t n;

	if (!sep)
		errx(2, "%s: no %s", arg, what);
	n = strtoull(sep + 1, &end, 0);
	if (end == sep + 1 || *end)
		errx(2, "%s: bad %s", arg, what);
	*sep = 0;
	return n;
}

/* Cut ":FROM-TO" off the end of @arg; false if it has none. */
static bool cut_range(char *arg, uint64_t *from, uint64_t *to)
{
	char *sep = strrchr(arg, ':'), *dash, *end;

	if (!sep)
		return false;
	*from = strtoull(sep + 1, &dash, 0);
	if (dash == sep + 1 || *dash != '-')
		return false;
	*to = strtoull(dash + 1, &end, 0);
	if (end == dash + 1 || *end || *to <= *from)
		return false;
	*sep = 0;
	return true;
}

/* --raw FILE:FROM-TO:ADDRESS */
static void add_raw(struct pt_image *image, char *arg)
{
	uint64_t addr = cut_number(arg, "address"), from, to;

	if (!cut_range(arg, &from, &to))
		errx(2, "%s: no FROM-TO range", arg);
	if (pt_image_add_file(image, arg, from, to - from, NULL, addr) < 0)
		errx(2, "%s: libipt does not take 0x%" PRIx64 "-0x%" PRIx64
		     " at 0x%" PRIx64, arg, from, to, addr);
}

struct flow {
	bool have_last;
	struct pt_insn last;	/* the instruction before the next */
};

static bool always_branches(enum pt_insn_class c)
{
	return c == ptic_call || c == ptic_return || c == ptic_jump;
}

/* The flow got to @ip: from the last instruction, by a branch or not. */
static void reached(struct flow *f, uint64_t ip)
{
	const struct pt_insn *l = &f->last;

	if (f->have_last && (l->ip + l->size != ip ||
			     always_branches(l->iclass)))
		printf("%" PRIx64 " => %" PRIx64 "\n", l->ip, ip);
}

static void on_insn(struct flow *f, const struct pt_insn *in)
{
	reached(f, in->ip);
	f->last = *in;
	f->have_last = true;
}

static void on_event(struct flow *f, const struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_disabled:
		/* At the instruction that left: the last one decoded. */
		if (f->have_last)
			printf("%" PRIx64 " => 0\n", f->last.ip);
		f->have_last = false;
		break;
	case ptev_async_disabled:
		/* before the instruction there: a branch may have led to it */
		reached(f, ev->variant.async_disabled.at);
		printf("%" PRIx64 " => 0\n", ev->variant.async_disabled.at);
		f->have_last = false;
		break;
	case ptev_overflow:
		printf("# overflow\n");
		f->have_last = false;
		break;
	case ptev_enabled:
		f->have_last = false;
		break;
	case ptev_ptwrite:
		printf("ptwrite %" PRIx64 " at %" PRIx64 "\n",
		       ev->variant.ptwrite.payload,
		       ev->ip_suppressed ? 0 : ev->variant.ptwrite.ip);
		break;
	default:
		break;
	}
}

int main(int argc, char **argv)
{
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	struct flow f = { 0 };
	struct pt_event ev;
	struct pt_insn in;
	uint64_t from = 0, to = 0;
	unsigned char *pt;
	size_t size;
	int status, i;

	if (argc < 5 || strcmp(argv[1], "--pt"))
		errx(2, "usage: pt-branches --pt FILE[:FROM-TO] --raw FILE:FROM-TO:ADDRESS...");
	if (!cut_range(argv[2], &from, &to)) {
		from = 0;
		to = 0;
	}
	pt = map_file(argv[2], &size);
	if (to > size)
		errx(2, "%s: 0x%" PRIx64 "-0x%" PRIx64 " is past its end",
		     argv[2], from, to);
	pt_config_init(&cfg);
	cfg.begin = pt + from;
	cfg.end = pt + (to ? to : size);
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec)
		errx(2, "libipt: cannot make a decoder");
	for (i = 3; i + 1 < argc && !strcmp(argv[i], "--raw"); i += 2)
		add_raw(pt_insn_get_image(dec), argv[i + 1]);
	if (i != argc)
		errx(2, "%s: not --raw FILE:FROM-TO:ADDRESS", argv[i]);

	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status < 0)
			break;
		f.have_last = false;
		for (;;) {
			while (status & pts_event_pending) {
				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				on_event(&f, &ev);
			}
			if (status < 0 || (status & pts_eos))
				break;
			status = pt_insn_next(dec, &in, sizeof(in));
			if (status < 0)
				break;
			on_insn(&f, &in);
		}
		if (status < 0 && status != -pte_eos) {
			uint64_t off = 0;

			pt_insn_get_offset(dec, &off);
			printf("# error at offset 0x%" PRIx64 ": %s\n", off,
			       pt_errstr(pt_errcode(status)));
			continue;
		}
		if (status < 0 || (status & pts_eos))
			break;
	}
	pt_insn_free_decoder(dec);
	return 0;
}
