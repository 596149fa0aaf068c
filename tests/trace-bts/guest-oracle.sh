#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/trace-bts/guest-oracle.sh RESULTS BUILD: in a test VM of its own
# whose QEMU logs, with the TCG plugin discontinuities.c, every branch
# taken from module code or from chain's text (started by
# tests/trace-bts/run).  The recorder on (N = 131072); chain, started on
# CPU 1 so that all of it runs there, calls its user chain and
# bts_chain.ko's; then CPU 1's ring, read in raw form from CPU 0
# (oracle.trace).  Module code and chain's text run on CPU 1 only while
# it records: bts_chain.ko is loaded from CPU 0, and nothing calls into it
# afterwards.  The host compares the ring with the plugin's log
# (oracle.py).
set -u

res=$1 build=$2
T=/sys/kernel/tracing
cd /tmp || exit 125
taskset -p -c 0 $$ >/dev/null
insmod "$build/bts_chain.ko" || exit 2
echo 20000 >$T/buffer_size_kb
echo 131072 >$T/bts_records
echo bts >$T/current_tracer || exit 3
taskset -c 1 "$build/chain" 1 /sys/kernel/debug/bts_chain /dev/null \
	/dev/null >"$res/oracle.out" 2>"$res/oracle.err"
echo $? >"$res/oracle.rc"
# Stop recording at once: CPU 1's ring keeps its start however long the
# rest takes.  Tracing off copies the rings into the buffer.
echo 0 >$T/tracing_on
echo 1 >$T/options/bts-raw
cat $T/per_cpu/cpu1/trace >"$res/oracle.trace"
echo nop >$T/current_tracer
