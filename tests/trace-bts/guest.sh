#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/trace-bts/guest.sh RESULTS BUILD BTS_DUMP: in the test VM, as
# root (started by tests/trace-bts/run), the bts tracer's runs; raw results
# in RESULTS, checked on the host by check.py:
#
#   refused.*     with kernel.bts_kernel_recording=0 on this Meltdown-
#                 affected CPU: echo bts > current_tracer, and the log
#   big.*         N = 65536: chain's output (chain.c) on CPU 1
#   ring.*        the default N: CPU 1's trace in raw form, and N
#   user.*        options/bts-kernel off: chain on CPU 1
#   kernel.*      options/bts-user off: chain on CPU 1
#   beside.*      N = 65536 while bts-dump traces loops on CPU 1: chain's
#                 output, and bts-dump's jsonl (beside.jsonl), against
#                 bts-dump's jsonl of the same run without the tracer
#                 (alone.jsonl)
#   together.*    N = 65536, and one run of chain traced at the same time
#                 by perf record -e branches:u -c 1 (together.data) and
#                 bts-dump (together.jsonl), which run on CPU 0: chain
#                 starts there and moves itself to CPU 1
#   hotplug.*     N = 65536, CPU 1 offline and online again: chain on it
#   snapshot.*    N = 65536, 1024 records a snapshot, the trigger
#                 "bts_snapshot if i == 2" on bts_chain:bts_chain_c: chain
#                 on CPU 1, then CPU 1's trace_pipe (snapshot.trace)
#   cont.*        options/bts-continuous, N = 2048: chain on CPU 1 while
#                 CPU 1's trace_pipe streams (cont.pipe); tracing off at
#                 the end flushes the streams; CPU 1's ftrace counters
#                 (cont.stats) and the recorders' (cont.bts_stats)
#   lost.*        the same while CPU 1 calls a function 200,000 times with
#                 interrupts off (bts_chain_spin)
#   tracecmd.*    trace-cmd record -p bts of chain on CPU 1 (N = 65536),
#                 and trace-cmd report of it (tracecmd.report.out), also
#                 with plugin_bts (tracecmd.plugin.out); then the same with
#                 -O bts-continuous (tracecmd.cont.*), read with the plugin
#   loop.*        start, stop and switch the tracer 20 times (loop.out: the
#                 steps that failed); loop-plant.*, a round switching
#                 to a tracer that does not exist
set -u

res=$1 build=$2 dump=$3
T=/sys/kernel/tracing
cd /tmp || exit 125

# step NAME CMD...: run CMD, keep its output, errors and exit status
step()
{
	local name=$1
	shift
	"$@" >"$res/$name.out" 2>"$res/$name.err"
	echo $? >"$res/$name.rc"
}

# chain NAME: chain.c on CPU 1 with an empty ftrace buffer, so that its
# copy of the rings is all the trace holds
chain()
{
	echo >$T/trace
	step "$1" "$build/chain" 1 /sys/kernel/debug/bts_chain $T/trace \
		"$res/$1.trace"
}

insmod "$build/bts_chain.ko" || exit 2
cat /sys/devices/system/cpu/vulnerabilities/meltdown >"$res/meltdown"

# Kernel recording is refused until the administrator allows it.
echo 0 >/proc/sys/kernel/bts_kernel_recording
dmesg -C
step refused sh -c "echo bts >$T/current_tracer"
dmesg >"$res/refused.log"
echo 1 >/proc/sys/kernel/bts_kernel_recording

echo 20000 >$T/buffer_size_kb
echo 65536 >$T/bts_records
echo bts >$T/current_tracer
cat $T/current_tracer >"$res/current_tracer"
cat $T/bts_dump_records >"$res/dump_records"
chain big

# The default N: the first copy is the last N records, and says how many
# older ones it did not keep.
echo nop >$T/current_tracer
echo 2048 >$T/bts_records
cat $T/bts_records >"$res/ring.n"
echo bts >$T/current_tracer
echo 1 >$T/options/bts-raw
sleep 1
cat $T/per_cpu/cpu1/trace >"$res/ring.trace"
echo 0 >$T/options/bts-raw

echo nop >$T/current_tracer
echo 65536 >$T/bts_records
echo bts >$T/current_tracer
echo 0 >$T/options/bts-kernel
cat $T/options/bts-kernel >"$res/user.option"
chain user
echo 1 >$T/options/bts-kernel
echo 0 >$T/options/bts-user
chain kernel
echo 1 >$T/options/bts-user

# Beside a /dev/bts user on the same CPU: both exact.
env -i setarch -R taskset -c 1 "$dump" --format=jsonl -o "$res/alone.jsonl" \
	-- "$build/loops" >/dev/null 2>"$res/alone.err"
echo $? >"$res/alone.rc"
env -i setarch -R taskset -c 1 "$dump" --format=jsonl -o "$res/beside.jsonl" \
	-- "$build/loops" >/dev/null 2>"$res/beside.err" &
dump_pid=$!
chain beside
wait $dump_pid
echo $? >"$res/beside.dump.rc"

# One program, three consumers that know nothing of each other: the
# recorder (every CPU, both sides), perf (its branches:u -c 1 events,
# following chain's schedule) and bts-dump (chain's thread, /dev/bts).
# perf traces bts-dump too (it inherits into chain); the host keeps
# chain's part.  -N -B: no build-id work on the shared folder.
echo >$T/trace
taskset -c 0 perf record -N -B -d -e branches:u -c 1 -m 4096 \
	-o "$res/together.data" -- "$dump" --format=jsonl \
	-o "$res/together.jsonl" -- "$build/chain" 1 \
	/sys/kernel/debug/bts_chain $T/trace "$res/together.trace" \
	>"$res/together.out" 2>"$res/together.err"
echo $? >"$res/together.rc"

# A CPU that went offline while recording records again when it is back.
echo 0 >/sys/devices/system/cpu/cpu1/online
echo 1 >/sys/devices/system/cpu/cpu1/online
chain hotplug

# A snapshot of the branches that led to an event: the chain's third
# bts_chain_c(), and only that one.  trace_pipe shows what the buffer holds
# without the copy of the rings that opening trace makes.
ev=$T/events/bts_chain/bts_chain_c
echo 1024 >$T/bts_dump_records
echo >$T/trace
echo 'bts_snapshot if i == 2' >$ev/trigger
cat $ev/trigger >"$res/snapshot.trigger"
step snapshot "$build/chain" 1 /sys/kernel/debug/bts_chain /dev/null /dev/null
timeout 5 cat $T/per_cpu/cpu1/trace_pipe >"$res/snapshot.trace"
echo '!bts_snapshot if i == 2' >$ev/trigger
echo 64 >$T/bts_dump_records

# continuous NAME CMD...: CMD in continuous mode, where every branch goes
# into the buffer as it comes and trace_pipe streams it: CPU 1's
# trace_pipe (NAME.pipe), its ftrace counters (NAME.stats) and the
# recorders' (NAME.bts_stats) once tracing is off.  The reader and this
# shell run on CPU 0: on CPU 1 they would fill the buffer with their own
# branches, faster than the reader reads them (the buffer overruns).
continuous()
{
	local name=$1 pipe i
	shift
	taskset -p -c 0 $$ >/dev/null
	echo nop >$T/current_tracer
	echo 60000 >$T/buffer_size_kb
	echo 2048 >$T/bts_records
	echo bts >$T/current_tracer
	# Emptying the buffer stops its writers a while: the streams would
	# fall behind (and say so) if it came after.
	echo >$T/trace
	echo 1 >$T/options/bts-continuous
	cat $T/options/bts-continuous >"$res/$name.option"
	taskset -c 0 cat $T/per_cpu/cpu1/trace_pipe >/tmp/$name.pipe &
	pipe=$!
	sleep 1
	step "$name" "$@"
	echo 0 >$T/tracing_on
	# The reader is slower than CPU 1's stream: let it read all.
	for i in $(seq 300); do
		grep -q '^entries: 0$' $T/per_cpu/cpu1/stats && break
		sleep 1
	done
	sleep 1
	kill $pipe
	wait $pipe
	cp /tmp/$name.pipe "$res/"
	cp $T/per_cpu/cpu1/stats "$res/$name.stats"
	cp $T/bts_stats "$res/$name.bts_stats"
	taskset -p -c 0,1 $$ >/dev/null
	echo 20000 >$T/buffer_size_kb
	echo 1 >$T/tracing_on
	echo 0 >$T/options/bts-continuous
	echo 65536 >$T/bts_records
}

continuous cont "$build/chain" 1 /sys/kernel/debug/bts_chain /dev/null \
	/dev/null
# Falling behind: 200,000 calls with interrupts off on CPU 1, where the
# callback cannot move the stream (32768 records) into the buffer.
continuous lost taskset -c 1 sh -c 'echo 200000 >/sys/kernel/debug/bts_chain_spin'

# trace-cmd sets the tracer, runs the program, turns tracing off (which
# copies the rings into the buffer) and reads the buffer.
echo nop >$T/current_tracer
step tracecmd trace-cmd record -p bts -o /tmp/tracecmd.dat -- \
	"$build/chain" 1 /sys/kernel/debug/bts_chain /dev/null /dev/null
step tracecmd.report trace-cmd report -i /tmp/tracecmd.dat
export TRACEEVENT_PLUGIN_DIR=$build/plugin
step tracecmd.plugin trace-cmd report -i /tmp/tracecmd.dat
echo 1 >$T/tracing_on
step tracecmd.cont trace-cmd record -p bts -O bts-continuous -b 20000 \
	-o /tmp/tracecmd.cont.dat -- \
	"$build/chain" 1 /sys/kernel/debug/bts_chain /dev/null /dev/null
step tracecmd.cont.plugin trace-cmd report -i /tmp/tracecmd.cont.dat
unset TRACEEVENT_PLUGIN_DIR
echo 1 >$T/tracing_on
echo 0 >$T/options/bts-continuous

# Start, stop, switch: every write and read of every round must work.
# tracer_round TRACER: one round; says which step failed.
tracer_round()
{
	local step
	for step in "0 tracing_on" "1 tracing_on" "nop current_tracer" \
		"$1 current_tracer"; do
		echo "${step% *}" >"$T/${step#* }" ||
			{ echo "'echo ${step% *} > ${step#* }' refused"; return 1; }
	done
	cat $T/trace >/dev/null || { echo "reading trace failed"; return 1; }
}
for i in $(seq 20); do
	tracer_round bts || echo "in round $i"
done >"$res/loop.out" 2>&1
# The loop's own check, planted: a tracer the kernel refuses fails it.
tracer_round no-such-tracer >"$res/loop-plant.out" 2>&1
echo $? >"$res/loop-plant.rc"
echo nop >$T/current_tracer
echo done >"$res/done"
