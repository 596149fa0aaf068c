#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/bts-dump/guest.sh RESULTS BUILD BTS_DUMP PROG... [-- SLOW_PROG...]
#
# Runs in the test VM, as root (started by tests/bts-dump/run): traces
# each PROG (BUILD/progs/PROG) with the oracle (-f: every thread of every
# process) and with
# bts-dump, and leaves the raw results in RESULTS, where the host compares
# them:
#
#   PROG/oracle     oracle -t                       -> oracle.txt
#   PROG/dump       bts-dump --format=jsonl         -> dump.jsonl
#   PROG/ring       bts-dump --ring 64 (jsonl)      -> ring.jsonl
#   PROG/raw        bts-dump --format=raw           -> dump.raw
#   calls/text      bts-dump (text format)          -> dump.txt
#   threads/noinherit  bts-dump --no-inherit        -> noinherit.jsonl
#   jit/dump        bts-dump --format=jsonl of BUILD/progs/jit, which
#                   names its JIT code in /tmp/perf-PID.map -> dump.jsonl
#   jit/container   the same in a container (pid and mount namespaces,
#                   its own /tmp)   -> container.jsonl; and as a raw file
#                   (container-raw), read back (container-read)
#                                   -> container-read.jsonl
#   env/*           the environment of env(1) run plainly and by bts-dump;
#                   its trace printed to /dev/full (env/full)
#   reuse/*         BUILD/progs/reuse (progs/reuse.c): a pid a process had
#                   given to the next, traced live (dump.jsonl) and as a
#                   raw file (dump.raw) read back (read.jsonl)
#   unlinked/WHO    bts-dump -p, as root and as nobody, of a process whose
#                   program was deleted after it started (WHO.jsonl), and
#                   (self) of one that deletes its own program
#   live/*          the text of a shell that sleeps, copied while it
#                   sleeps (while.txt), and at its end (sleep.txt)
#   nobody/*        as the unprivileged user: trace calls; attach to
#                   a process of one's own, and to one of root's
#   abi/*           BUILD/abi (abi.c), the ABI rules of /dev/bts, as root
#                   and as the unprivileged user
#   paranoid/WHO    calls traced by nobody, nobody with CAP_PERFMON and
#                   root while kernel.perf_event_paranoid is 3
#   memcg/*         bts-dump -p, in cgroup bts-tracer, of a shell in
#                   bts-traced that forks 16 sleepers: each cgroup's
#                   memory.current before (C.before) and while they run
#                   (C.after), and the processes then in bts-traced (procs)
#   maps/nobody     BUILD/maps (maps.c), the address-space annotations
#                   of a traced child, as the unprivileged user
#   comm/nobody     BUILD/comm (comm.c), the thread names in the streams
#                   of a child that renames itself and its thread
#   lossless/*      bts-dump --progress of BUILD/progs/spin (10^7
#                   branches, 10^8 in the long tier) in raw format, piped
#                   to rawcheck in the VM; dump.rc and dump.err bts-dump's
#   slow/SLOW_PROG  BUILD/slowread (slowread.c), a lossless trace read
#                   slowly: records in SLOW_PROG.rec, its counts in .out
#   filtered/*      kernel.bts_kernel_recording=0 on this Meltdown-affected
#                   CPU: calls and signals traced as nobody (PROG.jsonl),
#                   and IA32_DEBUGCTL of the CPU a traced spin runs on
#                   with the knob at 0 (debugctl.off) and 1 (debugctl.on)
#   released/*      DEBUGCTL of every CPU after bts-dump -p let go of
#                   BUILD/progs/napper's running threads, while another
#                   trace keeps the layer active (samples, attached);
#                   BUILD/renamer's sleeping thread renamed 100,000
#                   times meanwhile, untraced and traced
#                   (rename-untraced.out, rename-traced.out)
#   audit           records with a kernel address outside the entry code
#                   that reached the staging buffers during all of the
#                   above (ds.c's debugfs x86/ds_kernel_records)
#
# Each step leaves STEP.rc (exit status), STEP.out and STEP.err (the
# traced program's and the tool's output) and STEP.secs (wall time).
#
# Every traced run gets the same environment, no ASLR (setarch -R) and
# its stdout in a regular file in RESULTS, so glibc's start-up takes the
# same branches each time and the traces compare record by record.
set -u

res=$1 build=$2 dump=$3
shift 3
progs=$build/progs
slow=()
for ((i = 1; i <= $#; i++)); do
	if [ "${!i}" = -- ]; then
		slow=("${@:i + 1}")
		set -- "${@:1:i - 1}"
		break
	fi
done

run_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LC_ALL=C
	setarch x86_64 -R)
as_nobody=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)

# step NAME CMD...: run CMD, its output in NAME.out/.err, status in NAME.rc
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

# dir NAME: a results folder the unprivileged user may write to
dir()
{
	mkdir -p "$res/$1" && chmod 0777 "$res/$1"
}

cd /tmp || exit 125
ulimit -c 0
uname -v >"$res/uname"
# Count the staged records with a kernel address outside the entry code
# from here on (ds.c's test hook): /dev/bts alone must cause none.
audit=/sys/kernel/debug/x86/ds_kernel_records
echo 1 >"$audit" || exit 125
for p in "$@"; do
	dir "$p" || exit 125
done

# The oracle's runs go on beside everything else: single-stepping is what
# takes time, the VM has two CPUs, and no trace depends on timing.
for p in "$@"; do
	step "$p/oracle" "${run_env[@]}" "$build/oracle" -f \
		-o "$res/$p/oracle.txt" -- "$progs/$p"
done &
oracles=$!

for p in "$@"; do
	step "$p/dump" "${run_env[@]}" "$dump" --format=jsonl \
		-o "$res/$p/dump.jsonl" -- "$progs/$p"
	step "$p/ring" "${run_env[@]}" "$dump" --ring 64 --format=jsonl \
		-o "$res/$p/ring.jsonl" -- "$progs/$p"
	step "$p/raw" "${run_env[@]}" "$dump" --format=raw \
		-o "$res/$p/dump.raw" -- "$progs/$p"
	case $p in
	calls)
		step calls/text "${run_env[@]}" "$dump" \
			-o "$res/calls/dump.txt" -- "$progs/calls"
		;;
	threads)
		step threads/noinherit "${run_env[@]}" "$dump" --no-inherit \
			--format=jsonl -o "$res/threads/noinherit.jsonl" \
			-- "$progs/threads"
		;;
	esac
done

# JIT code, named as perf asks JIT compilers to.
dir jit || exit 125
step jit/dump "${run_env[@]}" "$dump" --format=jsonl \
	-o "$res/jit/dump.jsonl" -- "$build/progs/jit"
# The same in a container: its own pid namespace, where it is pid 1, and
# mount namespace, with its own /tmp, which its map is in.  Printed live,
# and read back from a raw file once the container is gone.  The program
# runs from /dev/shm: the new /tmp would hide a tree under /tmp.
cp "$build/progs/jit" /dev/shm/jit || exit 125
container=(unshare --pid --fork --mount --propagation private sh -c
	"mount -t tmpfs tmpfs /tmp && exec /dev/shm/jit")
step jit/container "${run_env[@]}" "$dump" --format=jsonl \
	-o "$res/jit/container.jsonl" -- "${container[@]}"
step jit/container-raw "${run_env[@]}" "$dump" --format=raw \
	-o "$res/jit/container.raw" -- "${container[@]}"
step jit/container-read "$dump" -i "$res/jit/container.raw" \
	--format=jsonl -o "$res/jit/container-read.jsonl"

# bts-dump must give the traced program the environment it got, as the
# oracle does (it execs the program with its own).
dir env || exit 125
step env/plain "${run_env[@]}" /usr/bin/env -0
step env/dump "${run_env[@]}" "$dump" -q --format=raw -o /dev/null -- \
	/usr/bin/env -0
# A trace that cannot be written: the printer's thread fails, and so must
# bts-dump, saying why.
step env/full "${run_env[@]}" "$dump" -o /dev/full -- /usr/bin/env -0

# Live text keeps up with the program: the shell's branches before it
# sleeps are in the output while it sleeps (bts-dump lets out each second
# what was stamped a second before), not only once it ends.  Once the
# shell sleeps, a copy of the output is taken when it has more than 100
# branches, or after 8 of the 10 seconds of sleep, if the program is
# still running then (live/while.txt), and how long that took.  Not at
# its first line: a release can come while the start of the program,
# slow under TCG, is still being stamped.  One short field a line (-F
# ip): the whole trace stays under stdio's buffer, which would otherwise
# let some out as it fills.
dir live || exit 125
"${run_env[@]}" "$dump" -F ip -o "$res/live/sleep.txt" -- /bin/sh -c \
	': >"$0"; exec sleep 10' "$res/live/sleeping" \
	>"$res/live/sleep.out" 2>"$res/live/sleep.err" &
live=$!
for ((i = 0; i < 600; i++)); do
	[ -e "$res/live/sleeping" ] && break
	sleep 0.1
done
for ((i = 0; i < 80; i++)); do
	[ "$(grep -c '^0x' "$res/live/sleep.txt" 2>/dev/null)" -gt 100 ] &&
		break
	sleep 0.1
done
kill -0 "$live" 2>/dev/null && cp "$res/live/sleep.txt" "$res/live/while.txt"
echo "$((i / 10)).$((i % 10))" >"$res/live/waited"
wait "$live"
echo $? >"$res/live/sleep.rc"

# Unprivileged: trace one's own program; attach to one's own process and
# to one of root's.
dir nobody || exit 125
step nobody/calls "${as_nobody[@]}" "${run_env[@]}" "$dump" \
	--format=jsonl -o "$res/nobody/calls.jsonl" -- "$progs/calls"
# One's own process: head, which waits for a byte from a FIFO and exits
# once it has it.  It is sent only once bts-dump -p says (--progress) that
# it traces the one thread, so that the trace always has head's end.
fifo=/tmp/bts-dump-fifo
rm -f "$fifo"
mkfifo -m 0666 "$fifo" || exit 125
"${as_nobody[@]}" head -c 1 "$fifo" >/dev/null &
own=$!
sleep 600 &
root=$!
# Until it has exec'ed head, the first is still root's.
for _ in $(seq 600); do
	[ "$(readlink "/proc/$own/exe")" = /usr/bin/head ] && break
	sleep 0.1
done
echo "$own" >"$res/nobody/own.pid"
step nobody/own "${as_nobody[@]}" timeout 300 "$dump" -p "$own" \
	--progress --format=jsonl -o "$res/nobody/own.jsonl" &
own_dump=$!
for _ in $(seq 3000); do
	grep -q ' 1 threads (1 running)' "$res/nobody/own.err" 2>/dev/null &&
		break
	sleep 0.1
done
# (A writer waits for a reader: not forever, should head be gone.)
timeout 60 sh -c 'echo x >"$1"' sh "$fifo"
wait "$own_dump"
rm -f "$fifo"
step nobody/root "${as_nobody[@]}" timeout 30 "$dump" -p "$root" \
	--format=jsonl -o "$res/nobody/root.jsonl"
# As the unprivileged user, with root's process and a set-user-ID program.
dir abi || exit 125
step abi/root timeout 120 "$build/abi"
step abi/nobody "${as_nobody[@]}" timeout 120 "$build/abi" "$root" \
	/usr/bin/mount
kill "$root"
wait "$own" "$root"
# kernel.perf_event_paranoid above 2 (Debian's default): no /dev/bts for
# the unprivileged user, whom bts-dump tells why; CAP_PERFMON and root
# still trace.
dir paranoid || exit 125
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
echo 3 >/proc/sys/kernel/perf_event_paranoid || exit 125
step paranoid/nobody "${as_nobody[@]}" "${run_env[@]}" "$dump" \
	--format=jsonl -o "$res/paranoid/nobody.jsonl" -- "$progs/calls"
step paranoid/perfmon "${as_nobody[@]}" --inh-caps=+perfmon \
	--ambient-caps=+perfmon "${run_env[@]}" "$dump" \
	--format=jsonl -o "$res/paranoid/perfmon.jsonl" -- "$progs/calls"
step paranoid/root "${run_env[@]}" "$dump" \
	--format=jsonl -o "$res/paranoid/root.jsonl" -- "$progs/calls"
echo "$paranoid" >/proc/sys/kernel/perf_event_paranoid || exit 125

# Memory cgroups: the streams of the processes a traced one forks are
# charged to the tracer's cgroup, not to the traced one's, whose fork
# allocates them.  The traced shell forks 16 sleepers once bts-dump -p
# traces it; memory.current of both cgroups before, and while the
# sleepers run (each has a stream of 65536 records, 1.5 MiB).
dir memcg || exit 125
cg=/sys/fs/cgroup
{ mountpoint -q "$cg" || mount -t cgroup2 none "$cg"; } &&
	echo +memory >"$cg/cgroup.subtree_control" &&
	mkdir -p "$cg/bts-tracer" "$cg/bts-traced" || exit 125
fifo=/tmp/bts-dump-memcg
rm -f "$fifo"
mkfifo -m 0600 "$fifo" || exit 125
sh -c 'echo $$ >"$1/cgroup.procs" && read -r x <"$2" &&
	for i in $(seq 16); do sleep 10 & done; wait' sh \
	"$cg/bts-traced" "$fifo" &
traced=$!
for _ in $(seq 100); do
	grep -qx "$traced" "$cg/bts-traced/cgroup.procs" && break
	sleep 0.1
done
step memcg/dump sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' \
	sh "$cg/bts-tracer" timeout 120 "$dump" -p "$traced" --progress \
	--size 65536 --format=raw -o /dev/null &
memcg_dump=$!
for _ in $(seq 300); do
	grep -q ' 1 threads' "$res/memcg/dump.err" 2>/dev/null && break
	sleep 0.1
done
for c in tracer traced; do
	cat "$cg/bts-$c/memory.current" >"$res/memcg/$c.before"
done
echo x >"$fifo"
for _ in $(seq 100); do
	[ "$(grep -c . "$cg/bts-traced/cgroup.procs")" -ge 17 ] && break
	sleep 0.1
done
sleep 1
for c in tracer traced; do
	cat "$cg/bts-$c/memory.current" >"$res/memcg/$c.after"
done
grep -c . "$cg/bts-traced/cgroup.procs" >"$res/memcg/procs"
wait "$traced" "$memcg_dump"
rm -f "$fifo"
rmdir "$cg/bts-tracer" "$cg/bts-traced"
dir maps || exit 125
step maps/nobody "${as_nobody[@]}" timeout 120 "$build/maps"
dir comm || exit 125
step comm/nobody "${as_nobody[@]}" timeout 120 "$build/comm"

# A process whose program file is deleted after it started, traced with
# -p: as root, bts-dump carries a copy of the file as mapped
# (/proc/PID/map_files) and names its code; as nobody, it says why it
# cannot.  Each waits for a byte on a FIFO until bts-dump traces it.
dir unlinked || exit 125
for who in root nobody; do
	fifo=/tmp/bts-dump-unlinked-fifo
	prog=/tmp/bts-dump-unlinked-$who
	wrap=()
	[ "$who" = nobody ] && wrap=("${as_nobody[@]}")
	rm -f "$fifo" "$prog"
	mkfifo -m 0666 "$fifo" && install -m 0755 "$progs/unlinked" "$prog" ||
		exit 125
	"${wrap[@]}" "$prog" "$fifo" &
	pid=$!
	for _ in $(seq 600); do
		[ "$(readlink "/proc/$pid/exe")" = "$prog" ] && break
		sleep 0.1
	done
	rm -f "$prog"
	step "unlinked/$who" "${wrap[@]}" timeout 300 "$dump" -p "$pid" \
		--progress --format=jsonl -o "$res/unlinked/$who.jsonl" &
	traced=$!
	for _ in $(seq 3000); do
		grep -q ' 1 threads (1 running)' "$res/unlinked/$who.err" \
			2>/dev/null && break
		sleep 0.1
	done
	timeout 60 sh -c 'echo x >"$1"' sh "$fifo"
	wait "$traced" "$pid"
	rm -f "$fifo"
done
# Traced from its start, deleting its own file first: bts-dump sees the
# file gone at the latest when the program exits.
install -m 0755 "$progs/unlinked" /tmp/bts-dump-unlinked-self || exit 125
step unlinked/self "$dump" --format=jsonl -o "$res/unlinked/self.jsonl" \
	-- /tmp/bts-dump-unlinked-self -

# Lossless: spin's 4 N + 1 branches (10^7, 10^8 in the long tier), every
# one kept, counted here as bts-dump writes them: the raw stream goes
# through a pipe to rawcheck (as /proc/self/fd/0: the VM has no
# /dev/stdin), so no file has to hold its 24 bytes a branch.
dir lossless || exit 125
mapfile -t ranges <"$build/spin.ranges"
lossless()
{
	"${run_env[@]}" "$dump" --progress --format=raw -- "$progs/spin" \
		2>"$res/lossless/dump.err" |
		"$build/rawcheck" "${ranges[@]}" /proc/self/fd/0
	local rc=("${PIPESTATUS[@]}")
	echo "${rc[0]}" >"$res/lossless/dump.rc"
	return "${rc[1]}"
}
step lossless/rawcheck lossless

# Lossless backpressure: a reader slower than the program (slowread.c).
dir slow || exit 125
for p in "${slow[@]}"; do
	step "slow/$p" "${run_env[@]}" "$build/slowread" \
		-o "$res/slow/$p.rec" -- "$progs/$p"
done

# Kernel-mode recording refused: the CPU model is one Meltdown affects
# (PTI is on), and the VM boots with kernel.bts_kernel_recording=1; at 0,
# /dev/bts must trace as it does at 1: it never has the hardware record
# the kernel.
dir filtered || exit 125
cat /sys/devices/system/cpu/vulnerabilities/meltdown >"$res/filtered/meltdown"
knob=/proc/sys/kernel/bts_kernel_recording
# debugctl NAME: IA32_DEBUGCTL (MSR 0x1d9) of CPU 1, read from CPU 0 again
# and again while a traced spin runs three times on CPU 1 (--lossy: it
# never waits for bts-dump, on CPU 0), one decimal number a line in
# filtered/NAME.  CPU 1 may be idle or in the kernel at some of the reads.
debugctl()
{
	local out=$res/filtered/$1 dump_pid
	taskset -c 0 "${as_nobody[@]}" "${run_env[@]}" "$dump" --lossy \
		--format=raw -o /dev/null -- taskset -c 1 sh -c \
		'"$1" && "$1" && "$1"' sh "$progs/spin" 2>"$out.err" &
	dump_pid=$!
	: >"$out"
	for _ in $(seq 200); do
		taskset -c 0 dd if=/dev/cpu/1/msr bs=8 count=1 \
			skip=$((0x1d9)) iflag=skip_bytes status=none \
			2>>"$out.err" | od -A n -t u8 | tr -d ' ' >>"$out"
		kill -0 "$dump_pid" 2>/dev/null || break
	done
	wait "$dump_pid"
}
echo 0 >"$knob" || exit 125
for p in calls signals; do
	step "filtered/$p" "${as_nobody[@]}" "${run_env[@]}" "$dump" \
		--format=jsonl -o "$res/filtered/$p.jsonl" -- "$progs/$p"
done
debugctl debugctl.off
echo 1 >"$knob" || exit 125
debugctl debugctl.on

wait "$oracles"

# A child runs true(1); a later one gets its pid again (progs/reuse.c),
# soon with pid_max a little above the pids in use: last, alone, since
# the oracle, which tells threads apart by their ids, would see them
# wrap.
dir reuse || exit 125
pid_max=$(cat /proc/sys/kernel/pid_max) || exit 125
read -r _ _ _ _ last_pid </proc/loadavg || exit 125
echo $((last_pid + 200)) >/proc/sys/kernel/pid_max || exit 125
step reuse/dump "${run_env[@]}" "$dump" --format=jsonl \
	-o "$res/reuse/dump.jsonl" -- "$progs/reuse" /bin/true
step reuse/raw "${run_env[@]}" "$dump" --format=raw \
	-o "$res/reuse/dump.raw" -- "$progs/reuse" /bin/true
echo "$pid_max" >/proc/sys/kernel/pid_max || exit 125
step reuse/read "$dump" -i "$res/reuse/dump.raw" --format=jsonl \
	-o "$res/reuse/read.jsonl"

# Tracers let go of running threads: a sleeping process traced through
# /dev/bts keeps the layer active, napper's six threads spin and sleep a
# microsecond without end, and in each of RELEASED_ROUNDS rounds bts-dump
# -p traces them (--progress: until it says it traces all six), 0.3 s
# more, and is killed.  Nobody traces napper then: IA32_DEBUGCTL of every
# CPU, read three times, must have TR and BTS clear.  One line per read
# in released/samples: "ROUND CPU VALUE"; released/attached: the rounds
# whose tracer traced all six threads.
dir released || exit 125
rounds=$(cat "$build/released.rounds") || exit 125
sleep 600 &
keep=$!
"$dump" -p "$keep" --progress --format=raw -o /dev/null \
	2>"$res/released/keep.err" &
keep_dump=$!
"$progs/napper" &
napper=$!
: >"$res/released/samples"
: >"$res/released/attached"
for ((r = 0; r < rounds; r++)); do
	err=$res/released/dump.$r.err
	"$dump" -p "$napper" --progress --format=raw -o /dev/null 2>"$err" &
	traced=$!
	for _ in $(seq 100); do
		grep -q ' 6 threads' "$err" 2>/dev/null && break
		sleep 0.1
	done
	grep -q ' 6 threads' "$err" && echo "$r" >>"$res/released/attached"
	sleep 0.3
	kill -KILL "$traced"
	wait "$traced"
	for _ in 1 2 3; do
		for cpu in /dev/cpu/[0-9]*; do
			cpu=${cpu#/dev/cpu/}
			echo "$r $cpu $(dd if="/dev/cpu/$cpu/msr" bs=8 count=1 \
				skip=$((0x1d9)) iflag=skip_bytes status=none |
				od -A n -t u8 | tr -d ' ')"
		done
	done >>"$res/released/samples"
done
# Renaming a sleeping thread 100,000 times (BUILD/renamer, renamer.c),
# with the trace above still taking thread names somewhere: untraced,
# and traced by bts-dump (thread names on).  Neither may grow the
# kernel's unreclaimable memory with the count.
"$build/renamer" 100000 >"$res/released/rename-untraced.out" \
	2>"$res/released/rename-untraced.err"
echo $? >"$res/released/rename-untraced.rc"
"$dump" --format=raw -o /dev/null -- "$build/renamer" 100000 \
	>"$res/released/rename-traced.out" 2>"$res/released/rename-traced.err"
echo $? >"$res/released/rename-traced.rc"
kill "$napper" "$keep_dump"
wait "$napper" "$keep_dump"
kill "$keep"
wait "$keep"

cat "$audit" >"$res/audit"
exit 0
