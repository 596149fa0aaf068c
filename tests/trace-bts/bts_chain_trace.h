/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bts_chain's tracepoint, for tests/trace-bts: bts_chain_c() fires it on
 * each call, with the call's index, so that an event trigger (bts_snapshot)
 * runs at a known point of the chain.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM bts_chain

#if !defined(_BTS_CHAIN_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _BTS_CHAIN_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(bts_chain_c,
	TP_PROTO(int i),
	TP_ARGS(i),
	TP_STRUCT__entry(
		__field(int, i)
	),
	TP_fast_assign(
		__entry->i = i;
	),
	TP_printk("i=%d", __entry->i)
);

#endif /* _BTS_CHAIN_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE bts_chain_trace
#include <trace/define_trace.h>
