#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/trace-bts/guest-reset.sh RESULTS OUT: the first boot of
# tests/trace-bts/last-boot.  Loads bts_chain.ko, keeps where its
# functions are (RESULTS/kallsyms: the next boot has no module to name
# them), has perf set up the DS save areas (perf clears what it owns of
# them: the region's headers must not be there), starts the flight
# recorder on every CPU, and triple-faults CPU 1 from the module's chain.
# Never returns: the machine resets.
set -eu

res=$1 out=$2
T=/sys/kernel/tracing
insmod "$out/bts_chain.ko"
grep -w '\[bts_chain\]' /proc/kallsyms >"$res/kallsyms"
perf stat -e instructions -- true 2>"$res/perf.txt"
echo bts >$T/current_tracer
echo 1 >$T/tracing_on
sync
taskset -c 1 sh -c 'echo x >/sys/kernel/debug/bts_chain_reset'
echo "the machine did not reset" >&2
exit 1
