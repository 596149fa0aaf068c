// SPDX-License-Identifier: GPL-2.0
/*
 * The formats of the user_events that markers name, and the payloads they
 * describe.  A format is the event as the application registered it
 * (BTS_IOC_EVENT_FORMAT): "NAME TYPE FIELD; TYPE FIELD; ...", where the
 * fields follow one another in the payload without padding, as
 * user_events lays them out after the common fields of a trace entry.
 */
#include <stdlib.h>
#include <string.h>

#include "bts-dump.h"

/* The common fields of a trace entry, which __data_loc offsets count. */
#define TRACE_ENTRY_SIZE	8

enum field_kind {
	FIELD_INT,
	FIELD_UINT,
	FIELD_CHARS,	/* char[N]: a string of at most N bytes */
	FIELD_BYTES,	/* unsigned char[N], struct: bytes */
	FIELD_DATA_LOC,	/* u32: offset from the entry, length */
	FIELD_REL_LOC,	/* u32: offset from the field's end, length */
};

struct field {
	char *name;
	enum field_kind kind;
	bool chars;	/* a __data_loc or __rel_loc of chars */
	unsigned int offset;
	unsigned int size;
};

struct event_format {
	u32 id;
	u32 gen;
	char *name;
	struct field *fields;
	size_t nfields;
	bool bad;	/* a field this reader does not know */
};

struct events {
	struct event_format *v;
	size_t n;
};

struct events *events_new(void)
{
	return xcalloc(1, sizeof(struct events));
}

static void format_free(struct event_format *e)
{
	size_t i;

	for (i = 0; i < e->nfields; i++)
		free(e->fields[i].name);
	free(e->fields);
	free(e->name);
}

void events_free(struct events *ev)
{
	size_t i;

	if (!ev)
		return;
	for (i = 0; i < ev->n; i++)
		format_free(&ev->v[i]);
	free(ev->v);
	free(ev);
}

static const struct {
	const char *type;
	unsigned int size;
	bool is_signed;
} scalars[] = {
	{ "s64", 8, true }, { "u64", 8, false },
	{ "s32", 4, true }, { "u32", 4, false },
	{ "int", 4, true }, { "unsigned int", 4, false },
	{ "s16", 2, true }, { "u16", 2, false },
	{ "short", 2, true }, { "unsigned short", 2, false },
	{ "s8", 1, true }, { "u8", 1, false },
	{ "char", 1, true }, { "unsigned char", 1, false },
};

/* "char[16]" or "unsigned char[16]": the count, 0 if not an array. */
static unsigned int array_count(const char *type, bool *chars)
{
	const char *br = strchr(type, '[');
	char *end;
	long n;

	if (!br)
		return 0;
	if (!strncmp(type, "char[", 5))
		*chars = true;
	else if (!strncmp(type, "unsigned char[", 14))
		*chars = false;
	else
		return 0;
	n = strtol(br + 1, &end, 10);
	if (end == br + 1 || strcmp(end, "]") || n <= 0 || n > 65535)
		return 0;
	return n;
}

/* One field, "TYPE NAME" or "struct TYPE NAME SIZE"; false if unknown. */
static bool parse_field(char *text, struct field *f, unsigned int offset)
{
	char *name, *type = text, *size_s = NULL, *end;
	unsigned int n;
	bool chars;
	size_t i;

	memset(f, 0, sizeof(*f));
	name = strrchr(text, ' ');
	if (!name)
		return false;
	*name++ = '\0';
	if (!strncmp(type, "struct ", 7)) {
		size_s = name;
		name = strrchr(type, ' ');
		if (!name || name == type + 6)
			return false;
		*name++ = '\0';
	}
	f->name = xstrdup(name);
	f->offset = offset;
	if (size_s) {
		f->kind = FIELD_BYTES;
		f->size = strtoul(size_s, &end, 10);
		return *end == '\0' && f->size > 0;
	}
	if (!strncmp(type, "__data_loc ", 11) ||
	    !strncmp(type, "__rel_loc ", 10)) {
		f->kind = type[2] == 'd' ? FIELD_DATA_LOC : FIELD_REL_LOC;
		f->size = 4;
		f->chars = strstr(type, "char");
		return true;
	}
	n = array_count(type, &chars);
	if (n) {
		f->kind = chars ? FIELD_CHARS : FIELD_BYTES;
		f->size = n;
		return true;
	}
	for (i = 0; i < ARRAY_SIZE(scalars); i++) {
		if (strcmp(type, scalars[i].type))
			continue;
		f->kind = scalars[i].is_signed ? FIELD_INT : FIELD_UINT;
		f->size = scalars[i].size;
		return true;
	}
	return false;
}

/*
 * Keep the format of event @id of generation @gen.  A format this reader
 * cannot follow to its end keeps its name and the fields before.
 */
void events_add(struct events *ev, u32 id, u32 gen, const char *text,
		size_t len)
{
	struct event_format *e;
	char *s = xstrndup(text, len), *p, *next;
	unsigned int offset = 0;

	if (events_find(ev, id, gen)) {
		free(s);
		return;
	}
	ev->v = xrealloc(ev->v, (ev->n + 1) * sizeof(*ev->v));
	e = &ev->v[ev->n++];
	memset(e, 0, sizeof(*e));
	e->id = id;
	e->gen = gen;
	p = strchr(s, ' ');
	if (p)
		*p++ = '\0';
	e->name = xstrdup(s);
	for (; p && *p; p = next) {
		next = strstr(p, "; ");
		if (next) {
			*next = '\0';
			next += 2;
		}
		e->fields = xrealloc(e->fields,
				     (e->nfields + 1) * sizeof(*e->fields));
		if (!parse_field(p, &e->fields[e->nfields], offset)) {
			free(e->fields[e->nfields].name);
			e->bad = true;
			break;
		}
		offset += e->fields[e->nfields].size;
		e->nfields++;
	}
	free(s);
}

const struct event_format *events_find(const struct events *ev, u32 id,
				       u32 gen)
{
	size_t i;

	for (i = 0; i < ev->n; i++)
		if (ev->v[i].id == id && ev->v[i].gen == gen)
			return &ev->v[i];
	return NULL;
}

const char *event_name(const struct event_format *e)
{
	return e->name;
}

static u64 get_le(const u8 *p, unsigned int size)
{
	u64 v = 0;

	while (size--)
		v = v << 8 | p[size];
	return v;
}

/* Bytes as a string: printable ASCII as is, the rest escaped. */
static void put_string(FILE *f, const u8 *p, size_t n, bool json)
{
	size_t i;

	putc('"', f);
	for (i = 0; i < n && p[i]; i++) {
		if (p[i] == '"' || p[i] == '\\')
			fprintf(f, "\\%c", p[i]);
		else if (p[i] >= 0x20 && p[i] < 0x7f)
			putc(p[i], f);
		else if (json)
			fprintf(f, "\\u%04x", p[i]);
		else
			fprintf(f, "\\x%02x", p[i]);
	}
	putc('"', f);
}

static void put_bytes(FILE *f, const u8 *p, size_t n)
{
	size_t i;

	putc('"', f);
	for (i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
	putc('"', f);
}

/*
 * The value of @fl in @payload (@len bytes captured of the event's, which
 * the marker cut if @truncated); false when it is not all there.
 */
static bool put_value(FILE *f, const struct field *fl, const u8 *payload,
		      size_t len, bool json)
{
	u64 v, at, n;

	if (fl->offset + fl->size > len)
		return false;
	v = get_le(payload + fl->offset, fl->size);
	switch (fl->kind) {
	case FIELD_INT:
		/* Sign-extend from the field's size. */
		if (fl->size < 8 && (v >> (8 * fl->size - 1)) & 1)
			v |= ~0ULL << (8 * fl->size);
		fprintf(f, "%lld", (long long)v);
		return true;
	case FIELD_UINT:
		fprintf(f, "%llu", (unsigned long long)v);
		return true;
	case FIELD_CHARS:
		put_string(f, payload + fl->offset, fl->size, json);
		return true;
	case FIELD_BYTES:
		put_bytes(f, payload + fl->offset, fl->size);
		return true;
	case FIELD_DATA_LOC:
	case FIELD_REL_LOC:
		at = v & 0xffff;
		n = v >> 16;
		if (fl->kind == FIELD_DATA_LOC) {
			if (at < TRACE_ENTRY_SIZE)
				return false;
			at -= TRACE_ENTRY_SIZE;
		} else {
			at += fl->offset + 4;
		}
		if (at + n > len)
			return false;
		if (fl->chars)
			put_string(f, payload + at, n, json);
		else
			put_bytes(f, payload + at, n);
		return true;
	}
	return false;
}

/*
 * Print the fields of @e in @payload: " NAME=VALUE" each as text, or a
 * JSON member "fields" whose members they are.  A field the captured
 * payload does not hold (a marker carries the first BTS_MARKER_PAYLOAD_MAX
 * bytes) is "?" as text and null in JSON.  When the format has a field
 * this reader does not know, the text goes on with the payload in hex.
 */
void event_print_fields(FILE *f, const struct event_format *e,
			const u8 *payload, size_t len, bool json)
{
	size_t i;

	if (json)
		fputs(",\"fields\":{", f);
	for (i = 0; i < e->nfields; i++) {
		const struct field *fl = &e->fields[i];

		if (json) {
			if (i)
				putc(',', f);
			put_string(f, (const u8 *)fl->name, strlen(fl->name),
				   true);
			putc(':', f);
		} else {
			fprintf(f, " %s=", fl->name);
		}
		if (!put_value(f, fl, payload, len, json))
			fputs(json ? "null" : "?", f);
	}
	if (json) {
		putc('}', f);
	} else if (e->bad) {
		fputs(" payload=", f);
		put_bytes(f, payload, len);
	}
}

/* A field's declaration in a tracefs format file. */
static void put_decl(FILE *f, const struct field *fl)
{
	const char *elem = fl->chars ? "char" : "unsigned char";

	switch (fl->kind) {
	case FIELD_INT:
		fprintf(f, "s%u %s", 8 * fl->size, fl->name);
		break;
	case FIELD_UINT:
		fprintf(f, "u%u %s", 8 * fl->size, fl->name);
		break;
	case FIELD_CHARS:
		fprintf(f, "char %s[%u]", fl->name, fl->size);
		break;
	case FIELD_BYTES:
		fprintf(f, "unsigned char %s[%u]", fl->name, fl->size);
		break;
	case FIELD_DATA_LOC:
		fprintf(f, "__data_loc %s[] %s", elem, fl->name);
		break;
	case FIELD_REL_LOC:
		fprintf(f, "__rel_loc %s[] %s", elem, fl->name);
		break;
	}
}

/* A field's conversion and argument in the print format. */
static void put_print(FILE *f, const struct field *fl, bool arg)
{
	const char *rel = fl->kind == FIELD_REL_LOC ? "rel_" : "";

	if (!arg) {
		if (fl->kind == FIELD_INT)
			fputs(fl->size == 8 ? "%lld" : "%d", f);
		else if (fl->kind == FIELD_UINT)
			fputs(fl->size == 8 ? "%llu" : "%u", f);
		else
			fputs("%s", f);
		return;
	}
	switch (fl->kind) {
	case FIELD_INT:
	case FIELD_UINT:
	case FIELD_CHARS:
		fprintf(f, "REC->%s", fl->name);
		break;
	case FIELD_BYTES:
		fprintf(f, "__print_hex(REC->%s, %u)", fl->name, fl->size);
		break;
	case FIELD_DATA_LOC:
	case FIELD_REL_LOC:
		if (fl->chars) {
			fprintf(f, "__get_%sstr(%s)", rel, fl->name);
			break;
		}
		fprintf(f, "__print_hex(__get_%sdynamic_array(%s), ", rel,
			fl->name);
		fprintf(f, "__get_%sdynamic_array_len(%s))", rel, fl->name);
		break;
	}
}

/*
 * Event @e as tracefs's format file describes a user_event, under id @id:
 * the common fields of a trace entry, the event's own after them, and a
 * print format that shows them as the text output does.  For perf's
 * tracing data (--format=perf).  The fields after one this reader does not
 * know are left out.
 */
void event_write_tracefs_format(FILE *f, const struct event_format *e,
				u32 id)
{
	size_t i;

	fprintf(f, "name: %s\nID: %u\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n",
		e->name, id);
	for (i = 0; i < e->nfields; i++) {
		const struct field *fl = &e->fields[i];

		fputs("\tfield:", f);
		put_decl(f, fl);
		fprintf(f, ";\toffset:%u;\tsize:%u;\tsigned:%d;\n",
			TRACE_ENTRY_SIZE + fl->offset, fl->size,
			fl->kind == FIELD_INT || fl->kind == FIELD_CHARS);
	}
	fputs("\nprint fmt: \"", f);
	for (i = 0; i < e->nfields; i++) {
		fprintf(f, "%s%s=", i ? " " : "", e->fields[i].name);
		put_print(f, &e->fields[i], false);
	}
	fputc('"', f);
	for (i = 0; i < e->nfields; i++) {
		fputs(", ", f);
		put_print(f, &e->fields[i], true);
	}
	fputc('\n', f);
}

/*
 * The event's fields as a trace entry holds them after its common fields,
 * from a marker's @len bytes of @payload, into @out (room for @cap): its
 * fixed fields whole, those the marker cut zero; a dynamic field whose
 * data the marker cut, empty.  Return: the bytes written.
 */
size_t event_entry_fields(const struct event_format *e, const u8 *payload,
			  size_t len, u8 *out, size_t cap)
{
	size_t i, n = len < cap ? len : cap;

	memcpy(out, payload, n);
	for (i = 0; i < e->nfields; i++) {
		const struct field *fl = &e->fields[i];
		u64 v, at;

		if (fl->offset + fl->size > cap)
			break;
		if (fl->offset + fl->size > n) {
			memset(out + n, 0, fl->offset + fl->size - n);
			n = fl->offset + fl->size;
			continue;
		}
		if (fl->kind != FIELD_DATA_LOC && fl->kind != FIELD_REL_LOC)
			continue;
		v = get_le(out + fl->offset, 4);
		at = v & 0xffff;
		if (fl->kind == FIELD_REL_LOC)
			at += fl->offset + 4;
		else if (at >= TRACE_ENTRY_SIZE)
			at -= TRACE_ENTRY_SIZE;
		else
			at = len;	/* before the fields: none */
		if (at + (v >> 16) > len)
			memset(out + fl->offset, 0, 4);
	}
	return n;
}

/* The formats known, one by one: NULL past the last. */
const struct event_format *events_get(const struct events *ev, size_t i)
{
	return ev && i < ev->n ? &ev->v[i] : NULL;
}
