/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bts tracer's two halves: the recorders (trace_bts.c) and how their
 * records read (trace_bts_output.c).
 */
#ifndef _TRACE_BTS_H
#define _TRACE_BTS_H

#include <linux/seq_buf.h>
#include <asm/ds.h>

#include "trace.h"

/* options/bts-*: which side each CPU records, and how it is shown. */
enum {
	TRACE_BTS_OPT_KERNEL	= BIT(0),
	TRACE_BTS_OPT_USER	= BIT(1),
	TRACE_BTS_OPT_RAW	= BIT(2),
	TRACE_BTS_OPT_CONTINUOUS = BIT(3),
	TRACE_BTS_OPT_MARKERS	= BIT(4),
};

extern struct tracer_flags trace_bts_flags;

/**
 * struct trace_bts_task - who ran the records being copied
 * @tid: the thread, -1 if unknown
 * @tgid: its process
 */
struct trace_bts_task {
	s32	tid;
	s32	tgid;
};

/**
 * struct trace_bts_payload - a marker's payload, from the details before it
 * @bytes: the payload
 * @chunks: bit i set: its i-th 16 bytes are in @bytes
 */
struct trace_bts_payload {
	u8	bytes[BTS_MARKER_PAYLOAD_MAX];
	u32	chunks;
};

/* A task switch in the records: who runs the ones after it. */
static inline void trace_bts_follow(struct trace_bts_task *task,
				    const struct bts_record *r)
{
	if (BTS_RECORD_IS_PSEUDO(r->from) &&
	    BTS_PSEUDO_TYPE(r->from) == BTS_PSEUDO_SWITCH) {
		task->tid = r->to;
		task->tgid = r->flags;
	}
}

static inline bool trace_bts_is_detail(u64 from)
{
	return BTS_RECORD_IS_PSEUDO(from) &&
	       BTS_PSEUDO_TYPE(from) == BTS_PSEUDO_DETAIL;
}

static inline bool trace_bts_is_marker(u64 from)
{
	return BTS_RECORD_IS_PSEUDO(from) &&
	       BTS_PSEUDO_TYPE(from) == BTS_PSEUDO_MARKER;
}

/* A part of the payload of the marker that follows. */
static inline bool trace_bts_is_marker_detail(u64 from)
{
	return trace_bts_is_detail(from) &&
	       BTS_DETAIL_TYPE(from) == BTS_PSEUDO_MARKER;
}

void trace_bts_gather(struct trace_bts_payload *pl, const struct bts_record *r);
void trace_bts_gathered(struct trace_bts_payload *pl,
			const struct bts_record *r);
void trace_bts_describe(struct seq_buf *sb, const struct bts_record *r,
			const struct trace_bts_payload *pl, bool raw,
			bool streamed);
enum print_line_t trace_bts_print_line(struct trace_iterator *iter);
void trace_bts_print_header(struct seq_file *m);
int trace_bts_register_events(void);

#endif /* _TRACE_BTS_H */
