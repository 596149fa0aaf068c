// SPDX-License-Identifier: GPL-2.0
/*
 * A sink's calls as data.  The stages that hold calls back to make them
 * later, async.c (from a thread of its own) and order.c (in time order),
 * take each call as a struct sink_call with a copy of its data, from a
 * struct call_sink, and make it on the next sink with sink_call_make().
 */
#include <string.h>

#include "bts-dump.h"

static struct sink_call *call_new(enum sink_call_kind kind, u32 id, u32 arg,
				  u64 addr, int status, const void *data,
				  size_t len)
{
	struct sink_call *c = xmalloc(sizeof(*c) + len);

	c->next = NULL;
	c->kind = kind;
	c->id = id;
	c->arg = arg;
	c->whole = false;
	c->addr = addr;
	c->status = status;
	c->len = len;
	if (len)
		memcpy(c->data, data, len);
	return c;
}

static int take(struct sink *s, enum sink_call_kind kind, u32 id, u32 arg,
		u64 addr, int status, const void *data, size_t len)
{
	struct call_sink *cs = (struct call_sink *)s;

	return cs->take(cs, call_new(kind, id, arg, addr, status, data, len));
}

static int cs_records(struct sink *s, u32 stream, const struct bts_record *r,
		      size_t n)
{
	return take(s, CALL_RECORDS, stream, 0, 0, 0, r, n * sizeof(*r));
}

static int cs_maps(struct sink *s, u32 pid, u32 ppid, const char *text,
		   size_t len)
{
	return take(s, CALL_MAPS, pid, ppid, 0, 0, text, len);
}

static int cs_memory(struct sink *s, u32 pid, u64 addr, const void *data,
		     size_t len)
{
	return take(s, CALL_MEMORY, pid, 0, addr, 0, data, len);
}

static int cs_file(struct sink *s, u32 pid, const struct file_id *id,
		   const void *data, size_t len)
{
	struct call_sink *cs = (struct call_sink *)s;
	struct sink_call *c = call_new(CALL_FILE, pid, 0, 0, 0, data, len);

	c->file = *id;
	return cs->take(cs, c);
}

static int cs_exit(struct sink *s, u32 pid, int status, const char *cmd,
		   size_t len)
{
	return take(s, CALL_EXIT, pid, 0, 0, status, cmd, len);
}

static int cs_event_format(struct sink *s, u32 id, u32 gen,
			   const char *text, size_t len)
{
	return take(s, CALL_EVENT_FORMAT, id, gen, 0, 0, text, len);
}

static int cs_comm(struct sink *s, u32 pid, u32 tid, const char *name,
		   size_t len)
{
	return take(s, CALL_COMM, pid, tid, 0, 0, name, len);
}

static int cs_jit(struct sink *s, u32 pid, u32 ns_pid, bool whole,
		  const char *text, size_t len)
{
	struct call_sink *cs = (struct call_sink *)s;
	struct sink_call *c = call_new(CALL_JIT, pid, ns_pid, 0, 0, text, len);

	c->whole = whole;
	return cs->take(cs, c);
}

static int cs_settle(struct sink *s, u64 before_ns)
{
	return take(s, CALL_SETTLE, 0, 0, before_ns, 0, NULL, 0);
}

/**
 * call_sink_init() - make @cs a sink that hands each call to @take
 * @cs: the sink
 * @take: gets each call made on @cs, as data it owns from then on;
 *	returns what the call returns
 */
void call_sink_init(struct call_sink *cs,
		    int (*take)(struct call_sink *cs, struct sink_call *c))
{
	cs->sink = (struct sink) {
		.records	= cs_records,
		.maps		= cs_maps,
		.memory		= cs_memory,
		.file		= cs_file,
		.exit		= cs_exit,
		.event_format	= cs_event_format,
		.comm		= cs_comm,
		.jit		= cs_jit,
		.settle		= cs_settle,
	};
	cs->take = take;
}

/**
 * sink_call_make() - make the call @c on @s
 * @s: the sink
 * @c: the call, as a call_sink took it
 *
 * Return: what the call returns.
 */
int sink_call_make(struct sink *s, const struct sink_call *c)
{
	switch (c->kind) {
	case CALL_RECORDS:
		return s->records(s, c->id, (const void *)c->data,
				  c->len / sizeof(struct bts_record));
	case CALL_MAPS:
		return s->maps(s, c->id, c->arg, (const char *)c->data, c->len);
	case CALL_MEMORY:
		return s->memory(s, c->id, c->addr, c->data, c->len);
	case CALL_FILE:
		return s->file(s, c->id, &c->file, c->data, c->len);
	case CALL_EXIT:
		return s->exit(s, c->id, c->status, (const char *)c->data,
			       c->len);
	case CALL_EVENT_FORMAT:
		return s->event_format(s, c->id, c->arg, (const char *)c->data,
				       c->len);
	case CALL_COMM:
		return s->comm(s, c->id, c->arg, (const char *)c->data,
			       c->len);
	case CALL_JIT:
		return s->jit(s, c->id, c->arg, c->whole, (const char *)c->data,
			      c->len);
	case CALL_SETTLE:
		return s->settle(s, c->addr);
	}
	return -1;
}
