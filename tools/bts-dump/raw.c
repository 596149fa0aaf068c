// SPDX-License-Identifier: GPL-2.0
/*
 * The raw file format (see bts-dump.1, RAW FORMAT): a 16-byte header, then
 * chunks, each an 8-byte header (type, payload size) and its payload, all
 * little-endian.  The writer is a sink; the reader feeds a sink, and as it
 * reads whatever it is given (it is fuzzed, fuzz/), it checks every size
 * before it uses it and never allocates more than the data it has read.
 */
#include <endian.h>
#include <err.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bts-dump.h"

#define RAW_MAGIC	"BTSDUMP\n"
#define RAW_VERSION	1
#define RAW_HEADER_SIZE	16
/* A header may grow in later versions; not beyond this. */
#define RAW_HEADER_MAX	4096
#define RAW_CHUNK_HEADER 8
/* The largest payload a chunk may have. */
#define RAW_MAX_PAYLOAD	(64U << 20)
/* The reader grows its buffer by this much as data arrives. */
#define RAW_READ_STEP	(1024U * 1024)

enum raw_chunk {
	RAW_RECORDS	= 1,
	RAW_MAPS	= 2,
	RAW_MEMORY	= 3,
	RAW_EXIT	= 4,
	RAW_EVENT_FORMAT = 5,
	RAW_COMM	= 6,
	RAW_JIT		= 7,
	RAW_FILE	= 8,
	RAW_THREAD_COMM	= 9,
};

/* RAW_JIT's flags */
#define RAW_JIT_WHOLE	1

static void put32(unsigned char *p, u32 v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, u64 v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static u32 get32(const unsigned char *p)
{
	u32 v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static u64 get64(const unsigned char *p)
{
	u64 v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static int w_chunk(struct raw_writer *w, u32 type, const void *head,
		   size_t head_len, const void *data, size_t len)
{
	unsigned char hdr[RAW_CHUNK_HEADER];

	if (len > RAW_MAX_PAYLOAD - head_len) {
		warnx("%s: chunk of %zu bytes is too large", w->name, len);
		return -1;
	}
	put32(hdr, type);
	put32(hdr + 4, head_len + len);
	if (fwrite(hdr, sizeof(hdr), 1, w->f) != 1 ||
	    fwrite(head, head_len, 1, w->f) != 1 ||
	    (len && fwrite(data, len, 1, w->f) != 1)) {
		warn("%s", w->name);
		return -1;
	}
	return 0;
}

static int w_records(struct sink *s, u32 stream,
		     const struct bts_record *r, size_t n)
{
	struct raw_writer *w = (struct raw_writer *)s;
	unsigned char head[8], rec[512 * sizeof(*r)];
	size_t i, done, part;

	put32(head, stream);
	put32(head + 4, 0);
	/* Keep chunks small enough for any reader, whatever @n is. */
	for (done = 0; done < n; done += part) {
		part = n - done < 512 ? n - done : 512;
		for (i = 0; i < part; i++) {
			put64(rec + 24 * i, r[done + i].from);
			put64(rec + 24 * i + 8, r[done + i].to);
			put64(rec + 24 * i + 16, r[done + i].flags);
		}
		if (w_chunk(w, RAW_RECORDS, head, sizeof(head), rec, 24 * part))
			return -1;
	}
	return 0;
}

static int w_maps(struct sink *s, u32 pid, u32 ppid,
		  const char *text, size_t len)
{
	struct raw_writer *w = (struct raw_writer *)s;
	unsigned char head[8];

	put32(head, pid);
	put32(head + 4, ppid);
	return w_chunk(w, RAW_MAPS, head, sizeof(head), text, len);
}

static int w_memory(struct sink *s, u32 pid, u64 addr,
		    const void *data, size_t len)
{
	struct raw_writer *w = (struct raw_writer *)s;
	unsigned char head[16];

	put32(head, pid);
	put32(head + 4, 0);
	put64(head + 8, addr);
	return w_chunk(w, RAW_MEMORY, head, sizeof(head), data, len);
}

static int w_file(struct sink *s, u32 pid, const struct file_id *id,
		  const void *data, size_t len)
{
	struct raw_writer *w = (struct raw_writer *)s;
	unsigned char head[32];

	put32(head, pid);
	put32(head + 4, 0);
	put64(head + 8, id->start);
	put64(head + 16, id->inode);
	put32(head + 24, id->dev_major);
	put32(head + 28, id->dev_minor);
	return w_chunk(w, RAW_FILE, head, sizeof(head), data, len);
}

static int w_event_format(struct sink *s, u32 id, u32 gen, const char *text,
			  size_t len)
{
	struct raw_writer *w = (struct raw_writer *)s;
	unsigned char head[8];

	put32(head, id);
	put32(head + 4, gen);
	return w_chunk(w, RAW_EVENT_FORMAT, head, sizeof(head), text, len);
}

/*
 * A thread's name has a type of its own: readers before it would take
 * it for its process's.
 */
static int w_comm(struct sink *s, u32 pid, u32 tid, const char *name,
		  size_t len)
{
	struct raw_writer *w = (struct raw_writer *)s;
	unsigned char head[8];

	put32(head, pid);
	put32(head + 4, tid);
	return w_chunk(w, tid ? RAW_THREAD_COMM : RAW_COMM, head, sizeof(head),
		       name, len);
}

static int w_jit(struct sink *s, u32 pid, u32 ns_pid, bool whole,
		 const char *text, size_t len)
{
	struct raw_writer *w = (struct raw_writer *)s;
	unsigned char head[12];

	put32(head, pid);
	put32(head + 4, whole ? RAW_JIT_WHOLE : 0);
	put32(head + 8, ns_pid);
	return w_chunk(w, RAW_JIT, head, sizeof(head), text, len);
}

static int w_exit(struct sink *s, u32 pid, int status, const char *cmd,
		  size_t len)
{
	struct raw_writer *w = (struct raw_writer *)s;
	unsigned char head[8];

	put32(head, pid);
	put32(head + 4, status);
	return w_chunk(w, RAW_EXIT, head, sizeof(head), cmd, len);
}

/* A raw file read while it is written has what was traced so far. */
static int w_settle(struct sink *s, u64 before_ns)
{
	struct raw_writer *w = (struct raw_writer *)s;

	(void)before_ns;
	if (fflush(w->f)) {
		warn("%s", w->name);
		return -1;
	}
	return 0;
}

int raw_writer_init(struct raw_writer *w, FILE *f, const char *name)
{
	unsigned char hdr[RAW_HEADER_SIZE];

	w->sink.records = w_records;
	w->sink.maps = w_maps;
	w->sink.memory = w_memory;
	w->sink.file = w_file;
	w->sink.exit = w_exit;
	w->sink.event_format = w_event_format;
	w->sink.comm = w_comm;
	w->sink.jit = w_jit;
	w->sink.settle = w_settle;
	w->f = f;
	w->name = name;
	memcpy(hdr, RAW_MAGIC, 8);
	put32(hdr + 8, RAW_VERSION);
	put32(hdr + 12, RAW_HEADER_SIZE);
	if (fwrite(hdr, sizeof(hdr), 1, f) != 1) {
		warn("%s", name);
		return -1;
	}
	return 0;
}

/* Read @len bytes into *@buf, growing it only as the data comes in. */
static int read_payload(FILE *f, unsigned char **buf, size_t *cap,
			size_t len)
{
	size_t got = 0, want;

	while (got < len) {
		want = len - got < RAW_READ_STEP ? len - got : RAW_READ_STEP;
		if (got + want > *cap) {
			*cap = got + want;
			*buf = xrealloc(*buf, *cap);
		}
		if (fread(*buf + got, 1, want, f) != want)
			return -1;
		got += want;
	}
	return 0;
}

static int bad(const char *name, u64 off, const char *what)
{
	warnx("%s: chunk at offset %llu: %s", name, (unsigned long long)off,
	      what);
	return -1;
}

static int dispatch(struct sink *s, const char *name, u64 off,
		    u32 type, unsigned char *p, size_t len)
{
	struct bts_record *r;
	size_t i, n;

	switch (type) {
	case RAW_RECORDS:
		if (len < 8 || (len - 8) % sizeof(*r))
			return bad(name, off, "bad records chunk size");
		if (get32(p + 4))
			return bad(name, off, "reserved field not zero");
		/* The buffer is malloc()ed and records start 8 bytes in. */
		r = (struct bts_record *)(p + 8);
		n = (len - 8) / sizeof(*r);
		for (i = 0; i < n; i++) {
			r[i].from = le64toh(r[i].from);
			r[i].to = le64toh(r[i].to);
			r[i].flags = le64toh(r[i].flags);
		}
		return s->records(s, get32(p), r, n);
	case RAW_MAPS:
		if (len < 8)
			return bad(name, off, "bad maps chunk size");
		return s->maps(s, get32(p), get32(p + 4), (char *)p + 8,
			       len - 8);
	case RAW_MEMORY:
		if (len < 16)
			return bad(name, off, "bad memory chunk size");
		if (get32(p + 4))
			return bad(name, off, "reserved field not zero");
		return s->memory(s, get32(p), get64(p + 8), p + 16, len - 16);
	case RAW_EXIT:
		if (len < 8)
			return bad(name, off, "bad exit chunk size");
		return s->exit(s, get32(p), (int)get32(p + 4), (char *)p + 8,
			       len - 8);
	case RAW_EVENT_FORMAT:
		if (len < 8)
			return bad(name, off, "bad event format chunk size");
		return s->event_format(s, get32(p), get32(p + 4),
				       (char *)p + 8, len - 8);
	case RAW_COMM:
		if (len < 8 || len - 8 >= COMM_MAX)
			return bad(name, off, "bad comm chunk size");
		if (get32(p + 4))
			return bad(name, off, "reserved field not zero");
		return s->comm(s, get32(p), 0, (char *)p + 8, len - 8);
	case RAW_THREAD_COMM:
		if (len < 8 || len - 8 >= COMM_MAX)
			return bad(name, off, "bad thread comm chunk size");
		if (!get32(p + 4))
			return bad(name, off, "thread comm chunk without a thread");
		return s->comm(s, get32(p), get32(p + 4), (char *)p + 8,
			       len - 8);
	case RAW_JIT:
		if (len < 12)
			return bad(name, off, "bad JIT map chunk size");
		if (get32(p + 4) & ~RAW_JIT_WHOLE)
			return bad(name, off, "unknown JIT map flags");
		return s->jit(s, get32(p), get32(p + 8),
			      get32(p + 4) & RAW_JIT_WHOLE, (char *)p + 12,
			      len - 12);
	case RAW_FILE: {
		struct file_id id;

		if (len < 32)
			return bad(name, off, "bad mapped file chunk size");
		if (get32(p + 4))
			return bad(name, off, "reserved field not zero");
		id = (struct file_id) {
			.start = get64(p + 8), .inode = get64(p + 16),
			.dev_major = get32(p + 24), .dev_minor = get32(p + 28),
		};
		return s->file(s, get32(p), &id, p + 32, len - 32);
	}
	default:
		/* A later version's chunk: what it says is not needed. */
		return 0;
	}
}

/*
 * Read the raw file @f (@name in messages) to its end, each chunk handed
 * to @s and then counted to @rp (NULL: none); a chunk type this version
 * does not know is skipped.  Returns 0, or -1 on a malformed file or a
 * sink's error, said on stderr.
 */
int raw_read(FILE *f, const char *name, struct sink *s,
	     struct raw_progress *rp)
{
	unsigned char hdr[RAW_HEADER_SIZE], chdr[RAW_CHUNK_HEADER];
	unsigned char *buf = NULL;
	size_t cap = 0, n;
	u32 version, hsize, type, len;
	u64 off;
	int ret = -1;

	n = fread(hdr, 1, sizeof(hdr), f);
	if (n < sizeof(hdr)) {
		if (ferror(f))
			warn("%s", name);
		else if (n >= 8 && !memcmp(hdr, RAW_MAGIC, 8))
			warnx("%s: truncated header", name);
		else
			warnx("%s: bad magic (not a bts-dump raw file)", name);
		return -1;
	}
	if (memcmp(hdr, RAW_MAGIC, 8)) {
		warnx("%s: bad magic (not a bts-dump raw file)", name);
		return -1;
	}
	version = get32(hdr + 8);
	hsize = get32(hdr + 12);
	if (version != RAW_VERSION) {
		warnx("%s: unsupported version %u (this bts-dump reads version %u)",
		      name, version, RAW_VERSION);
		return -1;
	}
	if (hsize < RAW_HEADER_SIZE || hsize > RAW_HEADER_MAX) {
		warnx("%s: bad header size %u", name, hsize);
		return -1;
	}
	if (read_payload(f, &buf, &cap, hsize - RAW_HEADER_SIZE)) {
		warnx("%s: truncated header", name);
		goto out;
	}
	off = hsize;
	for (;;) {
		n = fread(chdr, 1, sizeof(chdr), f);
		if (n == 0 && !ferror(f))
			break;
		if (n < sizeof(chdr)) {
			if (ferror(f))
				warn("%s", name);
			else
				bad(name, off, "truncated chunk header");
			goto out;
		}
		type = get32(chdr);
		len = get32(chdr + 4);
		if (len > RAW_MAX_PAYLOAD) {
			bad(name, off, "chunk too large");
			goto out;
		}
		if (read_payload(f, &buf, &cap, len)) {
			if (ferror(f))
				warn("%s", name);
			else
				bad(name, off, "truncated");
			goto out;
		}
		if (dispatch(s, name, off, type, buf, len))
			goto out;
		if (rp)
			rp->chunk(rp, type == RAW_RECORDS && len >= 8 ?
				  (len - 8) / sizeof(struct bts_record) : 0);
		off += RAW_CHUNK_HEADER + len;
	}
	ret = 0;
out:
	free(buf);
	return ret;
}
