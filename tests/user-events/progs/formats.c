// SPDX-License-Identifier: GPL-2.0
/*
 * Which formats BTS_IOC_EVENT_FORMAT gives, for tests/user-events:
 * "formats ID MAXGEN" traces itself through /dev/bts with every event's
 * markers (glob "*"), registers bts_test_fmt (u32 x) and writes it once,
 * reads its own stream until the marker comes, then asks for the format
 * of that marker's event id, and of event ID (one it never wrote), under
 * every generation from 1 to MAXGEN.  It prints
 *
 *   own ID GEN given N: FORMAT     the marker's event; N formats given
 *   other ID given N: FORMAT...    event ID; N formats given
 *
 * and exits 0 once it asked, whatever the answers: the host judges them.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <linux/bts.h>
#include "user_events.h"

#define RECORDS	4096

static struct bts_record recs[RECORDS];

/* The format of @id at @gen into @buf, or 0 if not given. */
static int format(int bts, unsigned int id, unsigned int gen, char *buf,
		  unsigned int len)
{
	struct bts_event_format e = {
		.size = sizeof(e),
		.id = id,
		.gen = gen,
		.len = len,
		.format = (uintptr_t)buf,
	};

	if (!ioctl(bts, BTS_IOC_EVENT_FORMAT, &e))
		return 1;
	CHECK(errno == ENOENT);
	return 0;
}

/* Ask for @id under each generation; print what was given. */
static void probe(int bts, const char *what, unsigned int id,
		  unsigned int maxgen)
{
	char buf[256], given[4096] = "";
	unsigned int gen, n = 0;
	size_t len = 0;

	for (gen = 1; gen <= maxgen; gen++) {
		if (!format(bts, id, gen, buf, sizeof(buf)))
			continue;
		n++;
		len += snprintf(given + len, sizeof(given) - len, " [%u] %s",
				gen, buf);
		CHECK(len < sizeof(given));
	}
	printf("%s given %u:%s\n", what, n, given);
}

int main(int argc, char **argv)
{
	struct bts_attach a = {
		.size = sizeof(a),
		.flags = BTS_ATTACH_MARKERS,
		.pid = getpid(),
		.mode = BTS_MODE_CONTINUOUS,
	};
	struct __attribute__((packed)) { int idx; unsigned int x; } ev;
	unsigned int other, maxgen, id = 0, gen = 0, tries;
	char what[64];
	int bts, ue;
	ssize_t n;

	CHECK(argc == 3);
	other = strtoul(argv[1], NULL, 0);
	maxgen = strtoul(argv[2], NULL, 0);
	/* Not blocking: its own records come only while it runs. */
	bts = open("/dev/bts", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	CHECK(bts >= 0);
	CHECK(ioctl(bts, BTS_IOC_ATTACH, &a) == 0);
	ue = open(USER_EVENTS_DATA, O_WRONLY | O_CLOEXEC);
	CHECK(ue >= 0);
	ev.idx = ue_register(ue, "bts_test_fmt u32 x", 0);
	ev.x = 1;
	ue_write(ue, &ev, sizeof(ev));
	/* The write's return to user mode staged the marker; reads drain. */
	for (tries = 0; !gen && tries < 100; tries++) {
		n = read(bts, recs, sizeof(recs));
		CHECK(n >= 0 || errno == EAGAIN);
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(recs[0]); i++) {
			if (BTS_RECORD_IS_PSEUDO(recs[i].from) &&
			    BTS_PSEUDO_TYPE(recs[i].from) == BTS_PSEUDO_MARKER) {
				id = BTS_MARKER_ID(recs[i].flags);
				gen = BTS_MARKER_GEN(recs[i].flags);
			}
		}
		if (!gen)
			usleep(10000);
	}
	CHECK(gen);
	snprintf(what, sizeof(what), "own %u %u", id, gen);
	probe(bts, what, id, maxgen);
	snprintf(what, sizeof(what), "other %u", other);
	probe(bts, what, other, maxgen);
	return 0;
}
