#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: show what the project does today.  It grows with each
# capability; for now it boots the test kernel on the emulated Intel CPU
# with BTS and shows upstream perf, our bts-dump and gdb tracing a
# program's branches, perf and bts-dump tracing one at once, the ftrace
# flight recorder, an application's user_events as markers among its
# branches, in bts-dump's trace and in gdb's history, and then the
# recorder's last branches of a boot that a triple fault ended, read in
# the next boot.
set -euo pipefail

repo=$(realpath "$(dirname "$0")/..")
out="$repo/build/demo"
mkdir -p "$out"
# The calls test program: recursion and calls through function pointers.
gcc -static -no-pie -O1 -g -o "$out/calls" "$repo/tests/bts/progs/calls.c"
# The crash test program: some loop iterations, then a store through NULL.
gcc -static -no-pie -O1 -g -I"$repo/tests/bts/progs" -o "$out/crash" \
	"$repo/tests/bts-dump/progs/crash.c"
make -s -C "$repo/tools/bts-dump"
# The flight recorder's demo: a test module's known chain of kernel calls,
# and a program that runs it on CPU 1 and reads the recorders at once.
mkdir -p "$out/chain"
cp "$repo/tests/trace-bts/bts_chain.c" \
	"$repo/tests/trace-bts/bts_chain_trace.h" \
	"$repo/tests/trace-bts/bts_persist_plant.c" "$repo/tests/trace-bts/Kbuild" \
	"$out/chain/"
make -s -C "$repo/build/linux" O="$repo/build/kernel" M="$out/chain" modules
gcc -static -no-pie -O1 -o "$out/chain/chain" "$repo/tests/trace-bts/chain.c"
# An application's user_events between known calls; the build host's
# headers may be older than user_events.
mkdir -p "$out/include/linux"
cp "$repo/build/linux/include/uapi/linux/user_events.h" "$out/include/linux/"
gcc -static -no-pie -O1 -g -I"$repo/tests/bts/progs" -I"$out/include" \
	-o "$out/markers" "$repo/tests/user-events/progs/markers.c"

"$repo/tests/vm/run" --results "$out" -- bash -c '
	set -e
	cd /tmp
	echo "== The test VM: our kernel on an emulated Intel CPU with BTS =="
	echo "kernel:   $(uname -r), $(nproc) CPUs"
	echo "ds flags: $(grep -m1 ^flags /proc/cpuinfo | tr " " "\n" |
		grep -E -x "dts|dtes64|ds_cpl|bts|pebs|pdcm|arch_perfmon" | xargs)"
	dmesg | grep -m1 "Performance Events"
	echo
	echo "== perf record -e branches:u -c 1: every user-mode branch of a program =="
	perf record -q -N -B -d -e branches:u -c 1 -m 256 -o /tmp/p.data -- '"$out"'/calls
	echo "$(perf script -i /tmp/p.data -F ip | wc -l) branches recorded; the first calls of the program'"'"'s own functions:"
	perf script -i /tmp/p.data -F ip,addr,sym 2>/dev/null |
		grep -E " (main|rec|leaf|op_[a-z]+|stop_here)$" | head -12
	echo
	PATH="'"$repo"'/tools/bts-dump:$PATH"
	echo "== bts-dump: every user-mode branch via /dev/bts, symbolized; from the call of main() =="
	bts-dump -q -- '"$out"'/calls |
		awk "/ -> 0x[0-9a-f]+ main \\(/ { on = 1 } on && /^0x/ && n++ < 15"
	echo
	echo "== bts-dump --calls: the call tree from call/ret, the part under main() =="
	bts-dump -q --calls -- '"$out"'/calls | awk "/^[0-9]*\t *main\$/ { on = 1 } on && n++ < 18"
	echo
	echo "== bts-dump --ring 8: keep only the last 8 branches, printed when a NULL store kills the program =="
	rc=0
	# The signal report (stderr) after the trace (stdout, printed at exit).
	bts-dump -q --ring 8 -- '"$out"'/crash 2>/tmp/ring.err || rc=$?
	cat /tmp/ring.err
	echo "(exit status $rc: the program'"'"'s, 128 + SIGSEGV)"
	echo
	echo "== bts-dump as user nobody: tracing PID 1 needs ptrace permission over it =="
	rc=0
	setpriv --reuid=nobody --regid=nogroup --clear-groups bts-dump -p 1 2>&1 || rc=$?
	echo "(exit status $rc)"
	echo
	echo "== perf and bts-dump at once: both consumers of the DS layer, each gets every branch =="
	# perf follows bts-dump into the program; its samples of the program
	# itself are those in its code (static, below 4 GiB), not those of
	# bts-dump'"'"'s child before the exec, which perf may deliver after it.
	perf record -q -N -B -d -e branches:u -c 1 -m 4096 -o /tmp/pd.data -- \
		bts-dump -q --format=raw -o /tmp/pd.raw -- '"$out"'/calls
	echo "perf record -e branches:u -c 1: $(perf script -i /tmp/pd.data \
		--comms calls -F ip 2>/dev/null | awk "length(\$1) <= 8" |
		wc -l) branches of calls"
	echo "bts-dump, at the same time:     $(bts-dump -i /tmp/pd.raw \
		--format=jsonl | grep -c "\"kind\":\"branch\"") branches of calls"
	echo
	echo "== gdb: record btrace bts, then the call history of main() =="
	gdb -nx -batch -ex "set record function-call-history-size unlimited" \
		-ex "break main" -ex run -ex "record btrace bts" \
		-ex "break stop_here" -ex continue -ex finish \
		-ex "record function-call-history /c" -ex kill \
		--args '"$out"'/calls 2>&1 | sed -n "/^1\t/,/^Kill/p" | grep -v ^Kill
	echo
	echo "== the ftrace flight recorder: echo bts > current_tracer; each CPU keeps its last branches =="
	# The emulated CPU is one Meltdown affects: kernel recording is opt-in.
	echo 1 >/proc/sys/kernel/bts_kernel_recording
	insmod '"$out"'/chain/bts_chain.ko
	# N: enough to hold the switch to the program, which names its task.
	echo 16384 >/sys/kernel/tracing/bts_records
	echo bts >/sys/kernel/tracing/current_tracer
	# On CPU 1: user_a() calls user_b() 3 times, then a write runs the
	# module'"'"'s bts_chain_a() -> b() -> c() x3; then the trace is read.
	'"$out"'/chain/chain 1 /sys/kernel/debug/bts_chain \
		/sys/kernel/tracing/trace /tmp/trace.txt
	grep -m1 "^# CPU" /tmp/trace.txt
	awk "\$1 == 1" /tmp/trace.txt | grep -B4 -A12 -m1 " -> bts_chain_a+0x0/" |
		cut -c1-130
	echo
	echo "== bts_snapshot: an event trigger copies the last branches of the event'"'"'s CPU =="
	# The module'"'"'s tracepoint in bts_chain_c(), at its third call.
	T=/sys/kernel/tracing
	echo 256 >$T/bts_dump_records
	echo >$T/trace
	echo "bts_snapshot if i == 2" >$T/events/bts_chain/bts_chain_c/trigger
	taskset -c 1 sh -c "echo 1 >/sys/kernel/debug/bts_chain"
	# The snapshot'"'"'s calls of the chain, then the last records: the
	# tracepoint'"'"'s path into the trigger, to the freeze that took it.
	{ timeout 2 cat $T/per_cpu/cpu1/trace_pipe || true; } >/tmp/snap.txt
	sed -n "s/^ *[^ ]* *\[001\][^:]*: //p" /tmp/snap.txt
	grep -E -- "-> bts_chain_[a-z]+\+0x0/" /tmp/snap.txt | cut -c1-130
	echo "  ... and last:"
	tail -2 /tmp/snap.txt | cut -c1-130
	echo nop >/sys/kernel/tracing/current_tracer
	echo
	echo "== bts-dump --markers: the program'"'"'s user_events among its branches, decoded =="
	# Each event where the program wrote it: after the call that wrote
	# it, before the system call; the function that wrote it, its line.
	'"$repo"'/tools/bts-dump/bts-dump --markers="bts_test_*" -- \
		'"$out"'/markers >/tmp/markers.txt 2>&1
	grep -m 1 -B 3 -A 1 -- "-- event u:bts_test_b" /tmp/markers.txt
	echo "  ... $(grep -c -- "-- event u:" /tmp/markers.txt) events in all"
	echo
	echo "== gdb: the same events in its branch history: bts markers, info bts-markers, bts goto-marker =="
	# tools/bts-dump/gdb/bts.py: record, subscribe, run to the end of the
	# events; list them; replay from the write of the seventh.
	gdb -nx -batch -ex "source '"$repo"'/tools/bts-dump/gdb/bts.py" \
		-ex "set record btrace bts buffer-size 1048576" \
		-ex "break main" -ex run -ex "record btrace bts" \
		-ex "bts markers bts_test_*" \
		-ex "break '"$(grep -n "CHECK(write(STDOUT_FILENO" 			"$repo/tests/user-events/progs/markers.c" | cut -d: -f1)"'" \
		-ex continue -ex "info bts-markers" -ex "bts goto-marker 7" \
		-ex "info record" -ex "record instruction-history /f -" \
		-ex kill --args '"$out"'/markers 2>&1 |
		sed -n "/^1  /,/^Kill/p" | grep -v ^Kill | sed -n "1,8p;/^#0/,\$p"
'

# Across a reset: a run of two boots.  The first starts the recorder with
# its rings in reserve_mem= memory and triple-faults CPU 1 from the
# module's chain; the second reads what the hardware left there.
reset="$out/reset"
mkdir -p "$reset"
persist="reserve_mem=4M:4096:bts bts_persist=bts"
echo
echo "== across a reset: $persist; the next boot's bts_last_boot =="
echo "first boot:  echo bts > current_tracer; on CPU 1 the module's chain, then a"
echo "             triple fault (an empty IDT): the machine resets at once"
echo "second boot: cat /sys/kernel/tracing/bts_last_boot (module addresses named"
echo "             from the first boot's /proc/kallsyms)"
"$repo/tests/vm/run" --results "$reset" --append "$persist" \
	--after-reset "cat /sys/kernel/tracing/bts_last_boot" \
	-- "$repo/tests/trace-bts/guest-reset.sh" "$reset" "$out/chain" triple \
	>"$reset/last_boot.txt"
python3 "$repo/tests/trace-bts/last_boot.py" name "$reset/kallsyms" \
	"$reset/last_boot.txt" >"$reset/named.txt"
head -1 "$reset/named.txt"
grep "^CPU" "$reset/named.txt"
echo "CPU 1's last 12 branches:"
tail -12 "$reset/named.txt" | cut -c1-130
