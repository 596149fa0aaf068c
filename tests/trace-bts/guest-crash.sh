#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/trace-bts/guest-crash.sh BUILD oops|panic: in a test VM of its
# own (started by tests/trace-bts/run), the bts tracer on, 512 records per
# crash dump: on CPU 1, bts_chain.ko's chain ending in a NULL write (an
# oops, which kills the writer: the VM goes on and ends), or sysrq-c (a
# panic, which ends the VM).  The dump is in the serial log, which the
# host checks (check.py --crash).
set -u

build=$1 what=$2
T=/sys/kernel/tracing
insmod "$build/bts_chain.ko" || exit 2
echo 1 >/proc/sys/kernel/bts_kernel_recording
echo 512 >$T/bts_dump_records
echo bts >$T/current_tracer || exit 3
case $what in
oops)
	# The ftrace buffer to the console too, with CPU 1's records in it.
	echo 1 >/proc/sys/kernel/ftrace_dump_on_oops
	taskset -c 1 sh -c 'echo 1 >/sys/kernel/debug/bts_chain_oops'
	echo "the writer: exit $?"
	;;
panic)
	echo 1 >/proc/sys/kernel/sysrq
	taskset -c 1 sh -c 'echo c >/proc/sysrq-trigger'
	;;
esac
