#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/ds-guest/stress-guest.sh BUILD SECONDS RESULTS
#
# Runs in the debug VM (started by tests/ds-guest/stress): for SECONDS,
# storms of consumers attaching and detaching (small wakeup marks, so
# overflow callbacks run all the time) race with threads that come and
# go, a task that execs itself over and over, a shell that forks, perf's
# BTS sampling events (consumers too) made and closed, users of /dev/bts tracing a forking shell
# (tests/ds-guest/stress-progs/devbts.c), and CPU 1 going offline and
# online; then the bts ftrace tracer's rounds beside execs and hotplug;
# then a lossless consumer is released while it holds its task back, and
# CPU 1 comes online without memory for its staging buffer.  Prints
# TAP.  Kernel reports and leaks are for tests/vm/run to find.  The
# records whose content stress-check.py checks on the host go to RESULTS.
set -u

build=$1 secs=$2 res=$3
D=/sys/kernel/debug/ds_consumers
prog=$build/stress-progs
tmp=$(mktemp -d)
n=0
fails=0

tap()		# tap OK|FAIL DESCRIPTION
{
	n=$((n + 1))
	if [ "$1" = OK ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fails=$((fails + 1))
	fi
}

check()		# check DESCRIPTION CMD...: CMD's output as diagnostics
{
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		tap OK "$desc"
	else
		tap FAIL "$desc"
	fi
	# shellcheck disable=SC2001 # every line
	[ -z "$out" ] || sed 's/^/#   /' <<<"$out"
}

# status NAME KEY: a counter of a consumer
status()
{
	awk -v k="$2" '$1 == k { print $2 }' "$D/$1/status" 2>/dev/null
}

# The kind of consumer number $1 of a storm, with small wakeup marks.
kind()
{
	case $(($1 % 6)) in
	0) echo "priv=all mode=cont size=64 wakeup=1" ;;
	1) echo "priv=user mode=cont size=32 wakeup=2" ;;
	2) echo "priv=kernel mode=ring size=128" ;;
	3) echo "priv=kernel mode=cont size=256 wakeup=8 drain=work" ;;
	4) echo "priv=all mode=ring size=16 suspended=1" ;;
	5) echo "priv=user mode=cont size=512 wakeup=4 drain=slow batch=16 period=1" ;;
	esac
}

# storm NAME TARGETS...: attach consumers to the targets ("cpu=N",
# "task=PID", "threads=PID" for a random thread of PID or "child=PID" for
# a random child of PID) one after the
# other, keeping up to four alive, suspending and resuming some, until
# the time is up.  Counts attach results by errno text in $tmp/NAME.*.
storm()
{
	local name=$1 i=0 t target live=() err
	shift
	while [ $SECONDS -lt "$end" ]; do
		t=${*:$((i % $# + 1)):1}
		case $t in
		threads=*)
			# shellcheck disable=SC2012 # thread ids, plain numbers
			target=$(ls "/proc/${t#threads=}/task" 2>/dev/null | shuf -n 1)
			[ -n "$target" ] || { i=$((i + 1)); continue; }
			target="task=$target"
			;;
		child=*)
			target=$(pgrep -P "${t#child=}" | shuf -n 1)
			[ -n "$target" ] || { i=$((i + 1)); continue; }
			target="task=$target"
			;;
		*) target=$t ;;
		esac
		# shellcheck disable=SC2116 # echo writes to the control file
		if err=$(echo "attach $name$i $target $(kind $i)" 2>&1 >$D/control); then
			echo ok >>"$tmp/$name.attach"
			live+=("$name$i")
		else
			echo "${err##*: }" >>"$tmp/$name.attach"
		fi
		if [ ${#live[@]} -gt 3 ]; then
			[ $((i % 3)) -ne 0 ] || echo "suspend ${live[1]}" >$D/control
			[ $((i % 3)) -ne 1 ] || echo "resume ${live[2]}" >$D/control
			echo "release ${live[0]}" >$D/control ||
				echo "release ${live[0]} failed" >>"$tmp/errors"
			live=("${live[@]:1}")
		fi
		i=$((i + 1))
	done
	for t in "${live[@]}"; do
		echo "release $t" >$D/control ||
			echo "release $t failed" >>"$tmp/errors"
	done
}

check "insmod ds_consumers.ko" insmod "$build/ds_consumers.ko"
end=$((SECONDS + secs))

# A watchdog: if the test is still running long after the storms should
# have ended, the blocked tasks and every CPU's stack go to the kernel log.
# Builtins only (a fork could block on the layer's locks too).
mkfifo "$tmp/watchdog"
(
	# A FIFO open for reading and writing: read waits for the timeout.
	exec 3<>"$tmp/watchdog"
	read -r -t $((secs + 120)) -u 3
	echo "# watchdog: still running $((secs + 120))s after the start" >&2
	echo 1 >/proc/sys/kernel/sysrq
	echo w >/proc/sysrq-trigger
	echo l >/proc/sysrq-trigger
	read -r -t 60 -u 3
	echo t >/proc/sysrq-trigger
) &
watchdog=$!

# The traced: threads coming and going, an exec chain, a forking shell.
nice "$prog/threads" "$secs" >"$tmp/threads.out" 2>&1 &
threads=$!
(
	while [ $SECONDS -lt "$end" ]; do
		nice "$prog/execer" 20 || echo "execer exit $?" >>"$tmp/errors"
		echo x >>"$tmp/execs"
	done
) &
execs=$!
(
	while [ $SECONDS -lt "$end" ]; do
		/bin/true
		echo x >>"$tmp/forks"
		sleep 0.05
	done
) &
forks=$!

# A lossless consumer on a task that never sleeps, drained slowly: it
# must get everything, whatever else happens: busy's LL_STEPS calls of
# step(), which stress-check.py checks record by record.
LL_STEPS=100000
cat >"$tmp/ll.spec" <<EOF
attach ll task=@PID@ priv=user mode=cont size=256 lossless=1 drain=slow batch=128 period=2
EOF
# The consumer is released by the storms' end; dsrun saves its numbers
# first through the status file, polled below.
"$build/dsrun" -a "$tmp/ll.spec" -- "$prog/busy" $LL_STEPS \
	>"$tmp/busy.out" 2>&1 &
busy=$!

# The storms: per-CPU consumers on both CPUs, per-task ones on the threads,
# the exec chain and the forking shell.  Each storm's first target lives
# as long as the storms do: under the debug kernel with every branch
# traced a storm may only get a few attempts in, and "never attached"
# must not depend on a short-lived thread's luck.
storm c cpu=0 cpu=1 &
storms=($!)
storm t "task=$forks" "threads=$threads" "threads=$threads" "child=$execs" &
storms+=($!)
storm u cpu=1 "threads=$threads" &
storms+=($!)

# Users of /dev/bts trace a shell that forks an exec chain and a second of
# threads coming and going, each trace ended another way: to the end,
# detached, or closed early.
nice -n 19 "$prog/devbts" "$((secs / 2))" \
	sh -c "$prog/execer 2 && $prog/threads 1 >/dev/null; /bin/true" \
	>"$tmp/devbts.out" 2>&1 &
devbts=$!

# perf's BTS sampling events come and go: every CPU's for a moment (-a),
# and a command's; and an intel_bts// event of a busy shell, both modes
# (without PTI the hardware writes its AUX pages while it is alone on its
# CPU, which the storms' consumers come to and leave).  Every CPU runs
# busy programs: with a buffer of two pages, perf loses most of their
# branches rather than spend the VM's time on writing them.  (perf starts
# slowly on the debug kernel: an iteration or two.)  perf record -a
# fails, as on stock, when a CPU goes offline between its reading the
# online CPUs and opening their events (ENODEV): it holds the hotplug
# lock, which CPU 1 goes offline under.
echo 1 >/proc/sys/kernel/bts_kernel_recording
# The KCSAN kernel (stress --kcsan): reports from the layer's functions
# only, then on.
if [ -e /sys/kernel/debug/kcsan ]; then
	echo whitelist >/sys/kernel/debug/kcsan
	while read -r f; do
		echo "!$f" >/sys/kernel/debug/kcsan
	done <"$build/kcsan-functions" 2>/dev/null
	check "KCSAN on" sh -c 'echo on >/sys/kernel/debug/kcsan'
fi
windows_before=$(cat /sys/kernel/debug/x86/ds_windows)
hotplug_lock=$tmp/hotplug.lock
perf_round()	# perf_round NAME PERF-RECORD-ARGS...: its outcome in $tmp/perf
{
	local name=$1
	shift
	if perf record -q -N -B -o "$tmp/perf.data" "$@" >/dev/null \
		2>"$tmp/perf.err"; then
		echo "$name ok" >>"$tmp/perf"
	else
		echo "$name failed: $(grep -m1 . "$tmp/perf.err")" >>"$tmp/perf"
	fi
}
(
	while [ $SECONDS -lt "$end" ]; do
		{
			flock 9
			perf_round "branches:u -a" -e branches:u -c 1 -a -m 2 \
				-- sleep 0.1
		} 9>"$hotplug_lock"
		perf_round "branches:u --" -e branches:u -c 1 -- true
		perf_round "intel_bts// --" -e intel_bts// --per-thread -m ,16 \
			-- sh -c 'i=0; while [ $i -lt 300 ]; do i=$((i + 1)); done'
	done
) &
perf=$!

# CPU 1 goes and comes back.
(
	cpu1=/sys/devices/system/cpu/cpu1/online
	while [ $SECONDS -lt "$end" ]; do
		flock "$hotplug_lock" sh -c "
			echo 0 >$cpu1 || echo 'cpu1 offline failed' >>'$tmp/errors'
			sleep 0.3
			echo 1 >$cpu1 || echo 'cpu1 online failed' >>'$tmp/errors'"
		echo x >>"$tmp/hotplug"
		sleep 0.3
	done
	echo 1 >$cpu1 2>/dev/null
) &
hotplug=$!

# Poll the lossless consumer's counters while it lives.
while kill -0 $busy 2>/dev/null; do
	[ -e $D/ll/status ] && cp $D/ll/status "$tmp/ll.status" 2>/dev/null
	sleep 0.5
done
wait $busy
echo $? >"$tmp/busy.rc"
[ -e $D/ll/status ] && cp $D/ll/status "$tmp/ll.status"
[ -e $D/ll/records ] && cat $D/ll/records >"$tmp/ll.records"
echo "release ll" >$D/control
# For stress-check.py: the records, the counters, the steps.
cp "$tmp/ll.records" "$res/ll.bin" 2>/dev/null
cp "$tmp/ll.status" "$res/ll.status" 2>/dev/null
echo $LL_STEPS >"$res/ll.steps"

wait "${storms[@]}" $threads $execs $forks $perf $hotplug
wait $devbts
echo $? >"$tmp/devbts.rc"
count() { [ -e "$1" ] && wc -l <"$1" || echo 0; }
echo "# $(cat "$tmp/threads.out"), $(count "$tmp/execs") exec chains of 21," \
	"$(count "$tmp/forks") forks, $(count "$tmp/hotplug") CPU 1 offline/online cycles"
echo "# perf: $(sort "$tmp/perf" 2>/dev/null | uniq -c | tr '\n' ' ')"
windows=$(($(cat /sys/kernel/debug/x86/ds_windows) - windows_before))
echo "# windows of intel_bts's AUX buffer lent to the hardware: $windows"
for s in c t u; do
	echo "# storm $s attach: $(sort "$tmp/$s.attach" 2>/dev/null | uniq -c | tr '\n' ' ')"
done

expected_errors()
{
	local bad
	[ ! -s "$tmp/errors" ] || { cat "$tmp/errors"; return 1; }
	# A thread may be gone (ESRCH), a CPU or task full or perf may hold
	# the hardware (EBUSY); nothing else may fail.
	bad=$(cat "$tmp"/?.attach | grep -v -x -E 'ok|No such process|Device or resource busy' |
		sort | uniq -c)
	[ -z "$bad" ] || { echo "$bad"; return 1; }
	for s in c t u; do
		grep -q -x ok "$tmp/$s.attach" || { echo "storm $s never attached"; return 1; }
	done
	[ "$(count "$tmp/hotplug")" -gt 0 ] || { echo "CPU 1 never cycled"; return 1; }
	grep -q -x -- "branches:u -a ok" "$tmp/perf" &&
		grep -q -x -- "branches:u -- ok" "$tmp/perf" &&
		grep -q -x -- "intel_bts// -- ok" "$tmp/perf" ||
		{ echo "perf never traced, with -a, a command, intel_bts//"; return 1; }
	# The hardware writes perf's pages without PTI only.
	if grep -q -w nopti /proc/cmdline; then
		[ "$windows" -gt 0 ] || { echo "no window lent without PTI"; return 1; }
	else
		[ "$windows" -eq 0 ] || { echo "windows lent with PTI"; return 1; }
	fi
}
check "storms: every attach worked or failed with ESRCH/EBUSY, CPU 1 cycled, perf traced, windows lent without PTI only" \
	expected_errors

devbts()
{
	cat "$tmp/devbts.out"
	[ "$(cat "$tmp/devbts.rc")" = 0 ] &&
		grep -q '^[1-9][0-9]* traces' "$tmp/devbts.out"
}
check "/dev/bts traces of a forking shell: valid records, lossless lost none" \
	devbts

lossless()
{
	local lost throttled size
	lost=$(awk '$1 == "lost" { print $2 }' "$tmp/ll.status" 2>/dev/null)
	throttled=$(awk '$1 == "throttled" { print $2 }' "$tmp/ll.status" 2>/dev/null)
	size=$(stat -c %s "$tmp/ll.records" 2>/dev/null)
	echo "busy exit $(cat "$tmp/busy.rc"), lost ${lost:-?}, throttled" \
		"${throttled:-?}, $((${size:-0} / 24)) records"
	[ "$(cat "$tmp/busy.rc")" = 0 ] && [ "${lost:-1}" = 0 ] &&
		[ "${throttled:-0}" -gt 0 ] && [ "$((${size:-0} / 24))" -gt 200000 ]
}
check "lossless under stress: nothing lost, the task was throttled" lossless

# The bts tracer, after the storms: beside them its rounds are heavy kernel
# work (their per-CPU consumers record the kernel side of everything), a
# round took 84 to 109 s and starved the niced threads program (50 threads
# in the minute instead of 5,392).  Here, for 20 s, beside an exec chain
# and CPU 1 going offline and online: rounds of start, read (which stops,
# copies and restarts the recorders), tracing off and on, stop, with N
# 2048 (the hardware's ring) and 4096 (the layer's), both sides and user
# only, and a bts_snapshot of the exec'ing CPU's last branches at each
# exec.  At least three rounds, however long a loaded host makes them
# (a round took 9 to 13 s beside other VMs): the check is that each
# works, not how fast.
tracer()
{
	local T=/sys/kernel/tracing stop=$((SECONDS + 20)) i=0 bg=() t0 rounds=()
	local busy="$tmp/tracer-busy"
	echo 1 >/proc/sys/kernel/bts_kernel_recording
	echo bts_snapshot >$T/events/sched/sched_process_exec/trigger || return 1
	# The load runs while $busy exists, until the rounds are done.
	touch "$busy"
	(
		while [ -e "$busy" ]; do
			echo 0 >/sys/devices/system/cpu/cpu1/online
			sleep 0.3
			echo 1 >/sys/devices/system/cpu/cpu1/online
			sleep 0.3
		done
	) &
	bg+=($!)
	(
		while [ -e "$busy" ]; do
			"$prog/execer" 5 || echo "execer exit $?" >>"$tmp/errors"
		done
	) &
	bg+=($!)
	while [ $SECONDS -lt $stop ] || [ ${#rounds[@]} -lt 3 ]; do
		i=$((i + 1))
		echo $((i % 2 ? 2048 : 4096)) >$T/bts_records
		echo $((i % 3 ? 0 : 1)) >$T/options/bts-kernel
		t0=$SECONDS
		if ! echo bts >$T/current_tracer; then
			echo "round $i: the tracer did not start" >>"$tmp/errors"
			break
		fi
		head -n 64 $T/trace >/dev/null
		echo 0 >$T/tracing_on
		echo 1 >$T/tracing_on
		head -n 64 $T/per_cpu/cpu1/trace >/dev/null
		if ! echo nop >$T/current_tracer; then
			echo "round $i: the tracer did not stop" >>"$tmp/errors"
			break
		fi
		rounds+=($((SECONDS - t0)))
	done
	rm -f "$busy"
	wait "${bg[@]}"
	echo 1 >/sys/devices/system/cpu/cpu1/online 2>/dev/null
	echo 1 >$T/options/bts-kernel
	echo '!bts_snapshot' >$T/events/sched/sched_process_exec/trigger
	echo "${#rounds[@]} rounds (seconds each: ${rounds[*]})"
	cat "$tmp/errors" 2>/dev/null
	[ ! -s "$tmp/errors" ] && [ ${#rounds[@]} -ge 3 ]
}
check "the bts tracer started, read, stopped, snapshotted beside execs and hotplug" \
	tracer

# Flight recorders alone on their CPUs, which the hardware writes as rings,
# while the CPUs switch tasks all the time; stress-check.py checks that
# what they hold is well formed.  Without markers, which would need the
# splay (ds_ring_candidate()): with them the hardware ran in sub-buffers,
# and a read of the ring from its own CPU never ended on the debug kernel
# (its copying refilled the ring) until reads were bounded.  Read from
# their own CPUs, they are full only if the hardware wrote the rings.
flight()
{
	local c fails=0 len
	echo "attach fr0 cpu=0 priv=all mode=ring size=1000 markers=0
attach fr1 cpu=1 priv=all mode=ring size=2700 markers=0" >$D/control ||
		return 1
	for c in 0 1; do
		taskset -c $c sh -c 'yes | head -c 30000000 >/dev/null' &
	done
	wait
	for c in 0 1; do
		# From the recorder's CPU: in sub-buffers the copy would make
		# records that cut it short; a hardware ring takes them.
		taskset -c $c cat $D/fr$c/records >"$res/fr$c.bin"
		len=$(($(stat -c %s "$res/fr$c.bin") / 24))
		echo "fr$c: $len records after the load"
		[ "$len" = "$(awk '$1 == "size" { print $2 }' $D/fr$c/status)" ] ||
			fails=1
	done
	echo "release fr0 fr1" >$D/control || return 1
	return $fails
}
check "flight recorders alone on busy CPUs (hardware ring mode)" flight

# ring_shows_busy C STEP: CPU C's flight recorder holds 100 calls of busy's
# step() (at STEP, hex as od prints it).
ring_shows_busy()
{
	od -An -v -tx8 -w24 "$D/fb$1/records" |
		awk -v s="$2" '$2 == s { n++ } END { exit n < 100 }'
}

# A flight recorder of a CPU that runs busy, a loop of known branches,
# suspended from the other CPU once its ring shows the loop: its records
# go to stress-check.py (fbC.bin, busy's pid in fbC.pid), which checks
# them record by record against the loop.
busy_rings()
{
	local c o pid i step ready fails=0

	step=$(nm "$prog/busy" | awk '$3 == "step" { print $1 }')
	[ -n "$step" ] || { echo "no step() in busy"; return 1; }
	for c in 0 1; do
		o=$((1 - c))
		# This shell, its polls and the suspend stay off CPU C.  check()
		# runs us in a subshell: $$ would pin its parent, not us.
		taskset -p -c $o $BASHPID >/dev/null || return 1
		echo "attach fb$c cpu=$c priv=all mode=ring size=3000" \
			>$D/control || return 1
		taskset -c $c "$prog/busy" 4000000000 &
		pid=$!
		# Each read costs the ring the traced entry and exit of the
		# IPI that drains CPU C (thousands of records on the debug
		# kernel): the first read that shows the loop is the answer,
		# a second right after it could show mostly that IPI.
		ready=
		for i in $(seq 600); do
			ring_shows_busy $c "$step" && { ready=1; break; }
			sleep 0.2
		done
		[ -n "$ready" ] ||
			{ echo "fb$c: no loop of busy in 120s"; fails=1; }
		echo "suspend fb$c" >$D/control || fails=1
		kill "$pid"
		wait "$pid"
		cat $D/fb$c/records >"$res/fb$c.bin"
		echo "$pid" >"$res/fb$c.pid"
		echo "release fb$c" >$D/control || fails=1
		echo "fb$c: $(($(stat -c %s "$res/fb$c.bin") / 24)) records," \
			"busy $pid, ready after $i polls"
	done
	taskset -p -c 0,1 $BASHPID >/dev/null
	return $fails
}
check "flight recorders of CPUs running a known loop, suspended from the other CPU" \
	busy_rings

# Releases racing with the exit of their task: the exit calls the
# task_exit callbacks one after the other, and ex's sleeps (as it may)
# until ey's release begins, however long the debug kernel takes to get
# there (at most 30 s).  No callback may come after its release returned
# (ds_consumers counts and WARNs), nothing may be used after it is freed
# (KASAN).
exit_race()
{
	local k=0 tid late fifo=$tmp/go hits=0 raced pid i
	mkfifo "$fifo"
	# Eight releases in the window; a release that missed it (it came
	# after the 30 s) does not count, up to eight misses.
	while [ $hits -lt 8 ] && [ $k -lt 16 ]; do
		k=$((k + 1))
		: >"$tmp/tid"
		"$prog/exiter" "$fifo" >"$tmp/tid" &
		pid=$!
		for i in $(seq 600); do
			[ -s "$tmp/tid" ] && break
			sleep 0.1
		done
		tid=$(cat "$tmp/tid")
		[ -n "$tid" ] || { echo "no thread"; return 1; }
		echo "attach ex$k task=$tid priv=all mode=ring size=64 exit_sleep=30000
attach ey$k task=$tid priv=all mode=cont size=64 wakeup=1" >$D/control ||
			return 1
		timeout 60 sh -c "echo >$fifo" || { echo "no reader"; return 1; }
		for i in $(seq 3000); do
			[ "$(status "ex$k" exited)" = 1 ] && break
			sleep 0.02
		done
		raced=$(cat $D/raced)
		echo "release ey$k" >$D/control || return 1
		# ds_consumers counts the releases that began while a
		# task_exit callback slept.
		[ "$(cat $D/raced)" -gt "$raced" ] && hits=$((hits + 1))
		wait "$pid"
		echo "release ex$k" >$D/control || return 1
	done
	late=$(cat $D/late)
	echo "$hits of $k releases while the exit ran the callbacks;" \
		"$late callbacks after their release"
	[ "$late" = 0 ] && [ $hits -eq 8 ]
}
check "release racing with the exit of its task" exit_race

# A lossless consumer that never drains holds its task back; releasing it
# must let the task go.
cat >"$tmp/stuck.spec" <<EOF
attach stuck task=@PID@ priv=user mode=cont size=64 lossless=1 drain=none
EOF
(
	"$build/dsrun" -a "$tmp/stuck.spec" -- "$prog/busy" 100000 \
		>"$tmp/stuck.out" 2>&1
	echo $? >"$tmp/stuck.rc"
) &

# stuck_state: busy's pid and state; true once it is throttled and waits
stuck_state()
{
	local pid state
	pid=$(pgrep -n -x busy) || return 1
	state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)
	echo "$pid ${state:-?}"
	# Killable waits show as D.
	[ "$(status stuck throttled)" -gt 0 ] 2>/dev/null &&
		{ [ "$state" = D ] || [ "$state" = S ]; }
}

stuck_release()
{
	local pid state i
	# Up to 120 s for the task to fill the stream and wait.
	for i in $(seq 600); do
		stuck_state >/dev/null && break
		sleep 0.2
	done
	# No process substitution: the guest has no /dev/fd.
	read -r pid state <<<"$(stuck_state)"
	echo "busy ${pid:-?} in state ${state:-?}, throttled $(status stuck throttled)"
	stuck_state >/dev/null || return 1
	echo "release stuck" >$D/control || return 1
	for i in $(seq 600); do
		[ -e "$tmp/stuck.rc" ] && break
		sleep 0.2
	done
	if [ ! -e "$tmp/stuck.rc" ]; then
		echo "busy still there 120s after the release"
		kill -9 "$pid"
		return 1
	fi
	echo "busy exit $(cat "$tmp/stuck.rc")"
	[ "$(cat "$tmp/stuck.rc")" = 0 ]
}
check "lossless consumer released while its task waits: the task goes on" \
	stuck_release

# records_of NAME: the consumer's records, "TYPE ARG" for pseudo-records
# and "B" for branches, one per line.
records_of()
{
	python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
for o in range(0, len(d) - len(d) % 24, 24):
    f = struct.unpack_from("<Q", d, o)[0]
    print("B" if f >> 32 != 0x80000000 else f"{f & 0xff} {(f >> 8) & 0xffffff}")
' "$D/$1/records"
}

# CPU 1 comes online without memory for its staging buffer (fail_page_alloc
# on its hotplug thread, for order-4 allocations only): a thread traced
# there gets one BTS_LOST_UNTRACED record (type 3, argument 2) and no
# branch, rather than a silent gap; a CPU consumer of CPU 1 that cannot
# have the buffer either is refused; the next consumer arms CPU 1, and
# the thread's branches there are traced again.
hotplug_nomem()
{
	local F=/sys/kernel/debug/fail_page_alloc cpu1 hp t ok=0 first second
	cpu1=/sys/devices/system/cpu/cpu1/online
	hp=$(pgrep -x cpuhp/1) || { echo "no cpuhp/1 thread"; return 1; }
	# Pinned from outside: taskset as a launcher, stopped before its
	# exec, would pin itself again when continued.
	"$prog/busy" 4000000000 &
	t=$!
	taskset -p -c 0 $t >/dev/null
	kill -STOP $t
	echo "attach hk1 task=$t priv=user mode=cont size=4096 cap=200000" \
		>$D/control || return 1
	echo 0 >$cpu1 || return 1
	echo 0 >$F/verbose
	echo N >$F/ignore-gfp-wait
	echo 4 >$F/min-order
	echo Y >$F/task-filter
	echo -1 >$F/times
	echo 100 >$F/probability
	echo 1 >/proc/$hp/make-it-fail
	echo 1 >$cpu1
	echo 0 >/proc/$hp/make-it-fail
	dmesg | grep -o 'CPU 1: no staging buffer.*' | tail -n 1
	taskset -p -c 1 $t >/dev/null
	kill -CONT $t
	sleep 0.5
	kill -STOP $t
	first=$(records_of hk1 | paste -sd, -)
	echo "on CPU 1 without its buffer: ${first:-no record}"
	[ "$first" = "3 2" ] || ok=1
	if (echo 1 >/proc/$BASHPID/make-it-fail &&
	    echo "attach hk2 cpu=1 priv=user mode=cont size=64 cap=64" \
		>$D/control) \
		2>/dev/null; then
		echo "a consumer of CPU 1 was accepted without a buffer for it"
		echo "release hk2" >$D/control
		ok=1
	fi
	echo 0 >$F/probability
	echo "attach hk3 cpu=1 priv=all mode=ring size=100" >$D/control ||
		{ echo "no consumer of CPU 1 once memory is back"; ok=1; }
	kill -CONT $t
	sleep 0.5
	kill -STOP $t
	second=$(records_of hk1 | grep -c '^B')
	echo "then, armed again: $second branches"
	[ "$second" -gt 1000 ] || ok=1
	kill -9 $t
	echo "release hk1 hk3" >$D/control
	return $ok
}
if [ -d /sys/kernel/debug/fail_page_alloc ]; then
	check "a CPU online without its staging buffer: a loss record, then armed again" \
		hotplug_nomem
else
	# The plain kernel (--plain) has no fault injection to take it away.
	n=$((n + 1))
	echo "ok $n - a CPU online without its staging buffer # SKIP no fail_page_alloc in this kernel"
fi

check "release everything, rmmod" sh -c "echo release >$D/control && rmmod ds_consumers"
kill $watchdog 2>/dev/null
rm -rf "$tmp"
echo "1..$n"
[ $fails -eq 0 ]
