#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/user-events/guest.sh RESULTS BUILD BTS_DUMP [oracle|selftests|nobts]
#
# Runs in the test VM, as root (started by tests/user-events/run): traces
# the user_events programs (BUILD/progs) with bts-dump --markers; with
# "oracle" also single-steps markers with the ptrace oracle and runs the
# kernel's selftests, with "selftests" only the latter; "nobts" (a CPU
# without BTS) runs gdb/nobts alone.  Raw results in
# RESULTS, where the host checks them:
#
#   markers/oracle   oracle -t                          -> oracle.txt
#   markers/dump     --markers='bts_test_*' (jsonl)     -> dump.jsonl
#   markers/only-a   --markers=bts_test_a (jsonl), while another
#                    bts-dump subscribes to every event -> only-a.jsonl
#   markers/none     no --markers (jsonl)               -> none.jsonl
#   markers/raw      --markers='bts_test_*' --format=raw -> dump.raw
#   markers/text     --markers='bts_test_*' (text)      -> dump.txt
#   markers/full-b   --markers=bts_test_b (text)        -> full-b.txt
#   markers/trigger  --trigger=bts_test_b --ring 5      -> trigger.txt
#   threads/dump     --markers, three threads at once   -> dump.jsonl
#   reregister/dump  --markers='bts_test_*'             -> dump.jsonl
#   m32/dump         --markers='bts_test_*', a 32-bit writer -> dump.jsonl
#   nobody/dump      markers, as the unprivileged user  -> dump.jsonl
#   nobody/formats   formats.c as the unprivileged user, asking for its
#                    own event's format and root's bts_test_secret's
#                    (its id in secret.id)
#   selftests/T      the kernel's own user_events selftests
#                    (tools/testing/selftests/user_events), T.out their TAP
#                    (T.first.out: abi_test's first run on the debug
#                    kernel, when user.forks alone failed and it ran again)
#   enable/*         the enable bit (enablebit.c): a.out, of nobody's
#                    process before, while and after nobody's bts-dump -p
#                    traces it (a.jsonl); b.out, of root's process of the
#                    same event meanwhile, untraced; c.out, of a process
#                    bts-dump starts (c.jsonl); fork-alone.out and
#                    fork-inherit.out, forkbit's child and parent traced
#                    with and without --no-inherit; uffd.out, uffdbit's
#                    account of an attach whose enable-bit fault waits
#                    on a userfaultfd while another process registers
#   gdb/*            with oracle: gdb's `bts markers` (the extension,
#                    tools/bts-dump/gdb/bts.py, and gdb_driver.py):
#                    gdbmarks.c under record btrace bts with a 4 MB
#                    buffer, stopped in stop_here() (threads.jsonl), the
#                    same with gdb's smallest buffer (older.jsonl), m32
#                    stopped at its exit (m32.jsonl), gdbmarks stopped by
#                    bts break-on bts_test_big (breakon.jsonl), gdbmarks
#                    fork stopped in stop_here() (fork.jsonl, its child's
#                    bit in fork.out), the enable bits it sets
#                    (enable.out) and the extension's errors
#                    (errors.err; paranoid.err as nobody with
#                    perf_event_paranoid 3; nobts.err on a CPU without
#                    BTS, nodev.err with /dev/bts hidden); gdbmarks
#                    wait with bts-dump -p and gdb attached to it, each
#                    thread's bts call-history (calls.jsonl) and
#                    bts-dump's --calls (calls.raw, calls.txt); the
#                    oracle's runs of the three
#                    (oracle.txt, m32-oracle.txt, fork-oracle.txt)
#   recorder/*       with oracle or selftests: the bts tracer with
#                    options/bts-markers, N = 65536: CPU 1's trace while
#                    markers runs there alone (alone.trace), then, with
#                    the user side only, traced by bts-dump
#                    --markers='bts_test_*' --format=raw from CPU 0
#                    (beside.trace; beside.raw, decoded to beside.jsonl
#                    after); enable.out, enablebit's bit before,
#                    while and after the recorder takes markers
#
# Each step leaves STEP.rc, STEP.out (the program's output: its log of
# the events it wrote), STEP.err and STEP.secs.
set -u

res=$1 build=$2 dump=$3 extra=${4:-}
here=$(dirname "$(realpath "$0")")
progs=$build/progs
run_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LC_ALL=C
	setarch x86_64 -R)
as_nobody=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)

step()
{
	local name=$1 start
	shift
	start=$EPOCHREALTIME
	"$@" >"$res/$name.out" 2>"$res/$name.err"
	echo $? >"$res/$name.rc"
	awk -v a="$start" -v b="$EPOCHREALTIME" \
		'BEGIN { printf "%.1f\n", b - a }' >"$res/$name.secs"
}

cd /tmp || exit 125
ulimit -c 0
mountpoint -q /sys/kernel/tracing ||
	mount -t tracefs nodev /sys/kernel/tracing || exit 125
for d in markers threads reregister m32 nobody enable selftests recorder gdb; do
	mkdir -p "$res/$d" && chmod 0777 "$res/$d" || exit 125
done

# A CPU without BTS (the boot's model has no DS): gdb cannot record,
# and the subscription says why.
if [ "$extra" = nobts ]; then
	step gdb/nobts "${run_env[@]}" timeout 300 gdb -nx -batch \
		-ex "source $here/../../tools/bts-dump/gdb/bts.py" \
		-ex "break main" -ex run -ex "record btrace bts" \
		-ex "bts markers bts_test_*" -ex kill --args "$progs/gdbmarks"
	exit 0
fi

if [ -n "$extra" ]; then
	for t in ftrace_test dyn_test perf_test abi_test; do
		step "selftests/$t" timeout 300 "$build/selftests/$t"
		# abi_test's user.forks gives a forked child 1 s to see its
		# bit, which the emulated debug kernel may miss (the child may
		# not have run by then).  That failure, alone and on the debug
		# kernel only, runs the binary once more, its first run kept
		# (T.first.out; run counts the retries); any other fails.
		[ "$(cat "$res/selftests/$t.rc")" = 0 ] && continue
		[ "$t" = abi_test ] && [[ $(uname -r) == *-debug ]] &&
			[ "$(sed -n -E 's/^not ok [0-9]+ //p' \
				"$res/selftests/$t.out")" = user.forks ] || continue
		mv "$res/selftests/$t.out" "$res/selftests/$t.first.out"
		step "selftests/$t" timeout 300 "$build/selftests/$t"
	done
fi
if [ "$extra" = oracle ]; then
	step markers/oracle "${run_env[@]}" "$build/oracle" -t \
		-o "$res/markers/oracle.txt" -- "$progs/markers"
fi
trace()		# trace STEP OUTPUT [bts-dump options...] -- PROG
{
	local name=$1 out=$2
	shift 2
	step "$name" "${run_env[@]}" "$dump" -o "$res/$out" "$@"
}
trace markers/dump markers/dump.jsonl --format=jsonl \
	--markers='bts_test_*' -- "$progs/markers"
# Every event has the bridge's probe while the other subscription lasts:
# the layer must still give this trace bts_test_a's markers only.
"$dump" -q --markers --format=raw -o /dev/null -- sleep 600 &
other=$!
for _ in $(seq 100); do
	pgrep -x -P "$other" sleep >/dev/null && break
	sleep 0.1
done
trace markers/only-a markers/only-a.jsonl --format=jsonl \
	--markers=bts_test_a -- "$progs/markers"
pkill -x -P "$other" sleep
wait "$other"
trace markers/none markers/none.jsonl --format=jsonl -- "$progs/markers"
trace markers/raw markers/dump.raw --format=raw \
	--markers='bts_test_*' -- "$progs/markers"
trace markers/text markers/dump.txt --markers='bts_test_*' \
	-- "$progs/markers"
trace markers/full-b markers/full-b.txt --markers=bts_test_b \
	-- "$progs/markers"
trace markers/trigger markers/trigger.txt --trigger=bts_test_b --ring 5 \
	-- "$progs/markers"
trace threads/dump threads/dump.jsonl --format=jsonl --markers \
	-- "$progs/threads"
trace reregister/dump reregister/dump.jsonl --format=jsonl \
	--markers='bts_test_*' -- "$progs/reregister"
trace m32/dump m32/dump.jsonl --format=jsonl --markers='bts_test_*' \
	-- "$progs/m32"

# The unprivileged user may write events (as the tracing group would);
# the formats come from /dev/bts, tracefs stays root's.
chmod 0711 /sys/kernel/tracing &&
	chmod 0666 /sys/kernel/tracing/user_events_data || exit 125
step nobody/dump "${as_nobody[@]}" "${run_env[@]}" "$dump" \
	--format=jsonl --markers='bts_test_*' -o "$res/nobody/dump.jsonl" \
	-- "$progs/markers"
# BTS_IOC_EVENT_FORMAT tells the formats of the events whose markers the
# file carried, no other: root's event, which no traced process wrote,
# stays as hidden as tracefs keeps it.
d=/sys/kernel/tracing
echo 'u:bts_test_secret u64 key' >>"$d/dynamic_events" &&
	cat "$d/events/user_events/bts_test_secret/id" \
		>"$res/nobody/secret.id" || exit 125
step nobody/formats "${as_nobody[@]}" timeout 60 "$progs/formats" \
	"$(cat "$res/nobody/secret.id")" 4096
echo '!u:bts_test_secret u64 key' >>"$d/dynamic_events" || exit 125

# until FILE PATTERN: wait (10 s at most) for PATTERN in FILE.
until_in()
{
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timed out waiting for '$2' in $1" >>"$res/enable/guest.err"
	return 1
}

# The enable bit: each enablebit waits for a byte per stage on its FIFO,
# kept open for writing here so that it never sees an end.
e=$res/enable
fifos=(/tmp/ue-a /tmp/ue-b /tmp/ue-c)
rm -f "${fifos[@]}"
mkfifo -m 0666 "${fifos[@]}" || exit 125
exec 7<>"${fifos[0]}" 8<>"${fifos[1]}" 9<>"${fifos[2]}"
"${as_nobody[@]}" "$progs/enablebit" "${fifos[0]}" 3 >"$e/a.out" 2>&1 &
a=$!
printf x >&7
until_in "$e/a.out" "stage 1"
"${as_nobody[@]}" "$dump" --progress --markers='bts_test_*' \
	--format=jsonl -o "$e/a.jsonl" -p "$a" 2>"$e/dump.err" &
d=$!
until_in "$e/dump.err" " 1 threads"
"$progs/enablebit" "${fifos[1]}" 1 >"$e/b.out" 2>&1 &
b=$!
printf x >&8
wait "$b"
printf x >&7
until_in "$e/a.out" "stage 2"
kill -INT "$d"
wait "$d"
echo $? >"$e/dump.rc"
printf x >&7
wait "$a"
"$dump" --markers='bts_test_*' --format=jsonl -o "$e/c.jsonl" \
	-- "$progs/enablebit" "${fifos[2]}" 1 >"$e/c.out" 2>&1 &
c=$!
printf x >&9
wait "$c"
echo $? >"$e/c.rc"
exec 7>&- 8>&- 9>&-
# Across fork(): the child's bit is its own traces', not its parent's.
step enable/fork-alone "${run_env[@]}" "$dump" --no-inherit \
	--markers='bts_test_*' --format=raw -o "$e/fork-alone.raw" \
	-- "$progs/forkbit"
step enable/fork-inherit "${run_env[@]}" "$dump" \
	--markers='bts_test_*' --format=raw -o "$e/fork-inherit.raw" \
	-- "$progs/forkbit"
# An attach's refresh faults an enable-bit page in without event_mutex:
# the fault waits on a userfaultfd while another process registers.
step enable/uffd timeout 120 "$progs/uffdbit"

# gdb's `bts markers`: every event placed in gdb's history where it was
# written, checked against the oracle's run of the same program.
# gdb_markers STEP BUFFER_SIZE START STOP PROG [ARG...]: record from
# START, subscribe, run to STOP, dump what the extension shows.
gdb_markers()
{
	local name=$1 size=$2 start=$3 stop=$4
	shift 4
	step "gdb/$name" "${run_env[@]}" timeout 300 gdb -nx -batch \
		-ex "source $here/../../tools/bts-dump/gdb/bts.py" \
		-ex "source $here/gdb_driver.py" \
		-ex "set record btrace bts buffer-size $size" \
		-ex 'handle SIGUSR1 nostop noprint pass' \
		-ex "break $start" -ex run \
		-ex 'record btrace bts' -ex "bts markers bts_test_*" \
		-ex "$stop" -ex continue \
		-ex "bts-test-dump $res/gdb/$name.jsonl" \
		-ex kill --args "$@"
}
# gdb's call history with the events, and bts-dump's --calls --markers of
# the same run: gdbmarks waits for a byte on its standard input while
# bts-dump -p attaches (it seizes the process, attaches each thread and
# lets go of it) and then gdb, which records, subscribes and writes the
# byte.  Three consumers on main's thread: gdb's perf BTS, the
# extension's ring and bts-dump's stream.
proc_status()	# proc_status PID FIELD: a field of /proc/PID/status
{
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}
gdb_calls()
{
	local fifo=/tmp/gdbmarks-go pid dumper switches
	rm -f "$fifo" && mkfifo "$fifo" || return
	"${run_env[@]}" "$progs/gdbmarks" wait 0<>"$fifo" >/dev/null 2>&1 &
	pid=$!
	# Not before it reads: its switches count from there.
	for _ in $(seq 600); do
		[[ $(cat "/proc/$pid/syscall" 2>/dev/null) == "0 "* ]] && break
		sleep 0.1
	done
	switches=$(proc_status "$pid" voluntary_ctxt_switches)
	"$dump" -q -p "$pid" --markers='bts_test_*' --format=raw \
		-o "$res/gdb/calls.raw" 2>"$res/gdb/calls-dump.err" &
	dumper=$!
	# It stopped (a switch, with bts-dump its tracer), was attached to,
	# and is let go: no tracer again.
	for _ in $(seq 600); do
		[ "$(proc_status "$pid" voluntary_ctxt_switches)" != \
			"$switches" ] &&
			[ "$(proc_status "$pid" TracerPid)" = 0 ] && break
		sleep 0.1
	done
	step gdb/calls timeout 300 gdb -nx -batch \
		-ex "source $here/../../tools/bts-dump/gdb/bts.py" \
		-ex "source $here/gdb_driver.py" \
		-ex 'handle SIGUSR1 nostop noprint pass' \
		-ex 'set record btrace bts buffer-size 4194304' \
		-ex 'record btrace bts' -ex "bts markers bts_test_*" \
		-ex 'break *stop_here' -ex "shell printf x >$fifo" \
		-ex continue -ex "bts-test-dump $res/gdb/calls.jsonl" \
		-ex kill -p "$pid"
	wait "$dumper"
	echo $? >"$res/gdb/calls-dump.rc"
	"$dump" -i "$res/gdb/calls.raw" --calls -o "$res/gdb/calls.txt"
}
if [ "$extra" = oracle ]; then
	step gdb/oracle "${run_env[@]}" "$build/oracle" -t \
		-o "$res/gdb/oracle.txt" -- "$progs/gdbmarks"
	step gdb/m32-oracle "${run_env[@]}" "$build/oracle" -t \
		-o "$res/gdb/m32-oracle.txt" -- "$progs/m32"
	step gdb/fork-oracle "${run_env[@]}" "$build/oracle" -t \
		-o "$res/gdb/fork-oracle.txt" -- "$progs/gdbmarks" fork
	gdb_markers threads 4194304 main 'break *stop_here' "$progs/gdbmarks"
	# gdb's least: a page, some 170 branches.
	gdb_markers older 1 main 'break *stop_here' "$progs/gdbmarks"
	gdb_markers m32 4194304 main32 'catch syscall exit' "$progs/m32"
	# gdb does not follow the child: the subscription does not either.
	gdb_markers fork 4194304 main 'break *stop_here' "$progs/gdbmarks" fork
	gdb_calls
	gdb_markers breakon 4194304 main 'bts break-on bts_test_big' \
		"$progs/gdbmarks"
	# The enable bits the subscription sets, in the inferior's memory:
	# bts_test_a's and bts_test_b's once registered (1 1), none after
	# `bts markers off' (0 0), bts_test_a's only with that glob (1 0).
	step gdb/enable "${run_env[@]}" timeout 300 gdb -nx -batch \
		-ex "source $here/../../tools/bts-dump/gdb/bts.py" \
		-ex "break main" -ex run -ex "record btrace bts" \
		-ex "bts markers bts_test_*" -ex "break signal" -ex continue \
		-ex 'printf "bits %d %d\n", enabled[0], enabled[1]' \
		-ex "bts markers off" \
		-ex 'printf "bits %d %d\n", enabled[0], enabled[1]' \
		-ex "bts markers bts_test_a" \
		-ex 'printf "bits %d %d\n", enabled[0], enabled[1]' \
		-ex kill --args "$progs/gdbmarks"
	# The errors a user can act on, in the order of the commands.
	step gdb/errors "${run_env[@]}" timeout 300 gdb -nx -batch \
		-ex "source $here/../../tools/bts-dump/gdb/bts.py" \
		-ex "bts markers bts_test_*" -ex "info bts-markers" \
		-ex "break main" -ex run -ex "bts markers bts_test_*" \
		-ex "bts goto-marker 1" -ex "record btrace bts" \
		-ex "bts markers bts_test_*" -ex "bts goto-marker 5" \
		-ex "bts goto-marker" -ex "bts break-on" \
		-ex kill --args "$progs/gdbmarks"
	# A kernel without the device (hidden for this run): gdb records,
	# the subscription says why it cannot be made.
	mv /dev/bts /dev/bts.hidden &&
		step gdb/nodev "${run_env[@]}" timeout 300 gdb -nx -batch \
		-ex "source $here/../../tools/bts-dump/gdb/bts.py" \
		-ex "break main" -ex run -ex "record btrace bts" \
		-ex "bts markers bts_test_*" -ex "info bts-markers" \
		-ex kill --args "$progs/gdbmarks"
	mv /dev/bts.hidden /dev/bts
	# perf_event_paranoid 3 (Debian's default) and a user without
	# CAP_PERFMON: gdb cannot record, and the subscription says why.
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
	echo 3 >/proc/sys/kernel/perf_event_paranoid &&
		step gdb/paranoid "${as_nobody[@]}" "${run_env[@]}" \
		timeout 300 gdb -nx -batch \
		-ex "source $here/../../tools/bts-dump/gdb/bts.py" \
		-ex "break main" -ex run -ex "record btrace bts" \
		-ex "bts markers bts_test_*" -ex kill --args "$progs/gdbmarks"
	echo "$paranoid" >/proc/sys/kernel/perf_event_paranoid
fi

# The flight recorder with markers: every event in every process, on
# every CPU; with a bts-dump beside it on the same thread.  Everything but
# the program runs on CPU 0: CPU 1's ring of the last N is the program's.
recorder()
{
	local r=$res/recorder T=/sys/kernel/tracing fifo=/tmp/ue-d e
	local run='taskset -c 1 "$0"; s=$?; echo 0 >/sys/kernel/tracing/tracing_on; exit $s'
	taskset -cp 0 $$ >/dev/null || return
	rm -f "$fifo"
	mkfifo -m 0600 "$fifo" || return
	exec 6<>"$fifo"
	"$progs/enablebit" "$fifo" 3 >"$r/enable.out" 2>&1 &
	e=$!
	printf x >&6
	until_in "$r/enable.out" "stage 1"
	echo 20000 >$T/buffer_size_kb
	echo 65536 >$T/bts_records
	echo bts >$T/current_tracer
	echo 1 >$T/options/bts-markers
	# The tracer subscribes moments later: then the event is "used".
	until_in $T/user_events_status "^bts_test_en # Used by other$"
	printf x >&6
	until_in "$r/enable.out" "stage 2"
	# Tracing off copies the rings: cleared, they start again from here,
	# and stop as soon as the program is done (run, below).
	echo 0 >$T/tracing_on; echo >$T/trace; echo 1 >$T/tracing_on
	step recorder/alone "${run_env[@]}" sh -c "$run" "$progs/markers"
	cat $T/per_cpu/cpu1/trace >"$r/alone.trace"
	# The user side only: its last N hold the program's run whatever the
	# kernel does on CPU 1 until tracing stops.
	echo 0 >$T/options/bts-kernel
	echo >$T/trace; echo 1 >$T/tracing_on
	# Raw: bts-dump decodes after, not while the recorder records it.
	step recorder/beside "${run_env[@]}" "$dump" -o "$r/beside.raw" \
		--format=raw --markers='bts_test_*' -- sh -c "$run" \
		"$progs/markers"
	cat $T/per_cpu/cpu1/trace >"$r/beside.trace"
	echo 0 >$T/options/bts-markers
	until_in $T/user_events_status "^bts_test_en$"
	printf x >&6
	until_in "$r/enable.out" "stage 3"
	wait "$e"
	echo 1 >$T/options/bts-kernel
	echo nop >$T/current_tracer
	echo 2048 >$T/bts_records
	exec 6>&-
	"$dump" -i "$r/beside.raw" --format=jsonl -o "$r/beside.jsonl"
	taskset -cp "0-$(($(nproc) - 1))" $$ >/dev/null
}
[ -n "$extra" ] && recorder

chmod 0700 /sys/kernel/tracing
chmod 0640 /sys/kernel/tracing/user_events_data
exit 0
