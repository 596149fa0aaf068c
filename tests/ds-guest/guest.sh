#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/ds-guest/guest.sh RESULTS BUILD
#
# Runs in the test VM (started by tests/ds-guest/run): loads
# ds_consumers.ko from BUILD, runs the phases below and leaves the raw
# results in RESULTS, where check.py looks at them on the host.  Each step
# records its exit status in a STEP.rc file; the script itself fails only
# when it cannot run at all.
#
#   oracle   the ptrace oracle's traces of progs/work and progs/sleepy
#   main     every consumer kind at once on progs/work, pinned to CPU 0:
#            per-task and per-CPU, all/user/kernel, continuous and ring,
#            a tiny lossy stream and a slow lossless one; and what ds.c's
#            debugfs x86/ds_kernel_records counted meanwhile
#   sleepy   a slow lossless consumer on a task that sleeps between bursts
#   sysmix   (long tier: BUILD/full is y) a slow lossless consumer
#            without an overflow callback on a task that alternates
#            system calls and long compute stretches
#   feedback two kernel-only consumers of one task, consuming in their
#            overflow callbacks
#   flight   a lone per-CPU ring, written by the hardware as a ring while
#            alone on the CPU (progs/flight)
#   resume   suspend and resume from the traced CPU (progs/resumer)
#   arb      perf's BTS sampling events and the layer's consumers trace
#            side by side
#   policy   kernel-mode recording refused on this Meltdown-affected CPU
#            unless kernel.bts_kernel_recording is 1
#   swap     an overflow callback takes the storage instead of copying
#   inherit  consumers follow the threads and processes a task creates
#   exitrace a release while the task's exit runs the task_exit callbacks
set -u

res=$1 build=$2
D=/sys/kernel/debug/ds_consumers
prog=$build/progs

# Every run of a workload gets the same environment and no ASLR, so the
# oracle's trace and the traced run take the same branches.
run_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LC_ALL=C
	setarch x86_64 -R)

# step NAME CMD...: run CMD, its output in NAME.out/.err, status in NAME.rc
step()
{
	local name=$1
	shift
	"$@" >"$res/$name.out" 2>"$res/$name.err"
	echo $? >"$res/$name.rc"
}

# ctl DIR NAME COMMAND: write COMMAND to the control file, status in
# DIR/NAME.rc and the error in DIR/NAME.err.
ctl()
{
	local rc=0

	# shellcheck disable=SC2320 # the echo to the control file is the command
	echo "$3" 2>"$1/$2.err" >$D/control || rc=$?
	echo $rc >"$1/$2.rc"
}

# save DIR NAME...: the records and status of consumers
save()
{
	local dir=$1 n
	shift
	for n in "$@"; do
		cat "$D/$n/records" >"$dir/$n.bin"
		cat "$D/$n/status" >"$dir/$n.status"
		cat "$D/$n/kids" >"$dir/$n.kids"
	done
}

# traced PHASE PROG NAME...: PROG on CPU 0 under the consumers NAME... of
# the attach lines on stdin (dsrun), its status in PHASE/run.rc; then their
# records and status are saved and they are released (PHASE/release.rc).
traced()
{
	local x=$res/$1 path=$2
	shift 2
	mkdir -p "$x"
	cat >"$x/spec"
	step "${x#"$res"/}/run" "${run_env[@]}" "$build/dsrun" -c 0 \
		-a "$x/spec" -- "$path"
	save "$x" "$@"
	ctl "$x" release "release $*"
}

mkdir -p "$res" || exit 125
cd /tmp || exit 125
uname -v >"$res/uname"
step insmod insmod "$build/ds_consumers.ko"
[ "$(cat "$res/insmod.rc")" = 0 ] || exit 2
grep -i ' [tT] ' /proc/kallsyms >"$res/kallsyms"
nproc >"$res/nproc"

# --- oracle ----------------------------------------------------------------
for p in work sleepy; do
	# -t: also each stretch in the kernel, where it entered and where
	# it came back, as a user-only stream shows them.
	step "$p.oracle" "${run_env[@]}" "$build/oracle" -t \
		-o "$res/$p.oracle.txt" -- "$prog/$p"
done

# --- main ------------------------------------------------------------------
# Every kind at once: 7 per-CPU consumers on CPU 0 and 8 (the most a task
# may have) on the workload.  Continuous streams are big enough, except
# tiny (16 records: losses) and lossless (256 records, drained 256 records
# every 10 ms).
m=$res/main
mkdir -p "$m"
cpu_names="cpu_all cpu_user cpu_kernel cpu_all_ring cpu_user_ring cpu_kernel_ring cpu_tiny"
task_names="t_all t_user t_kernel t_all_ring t_user_ring t_kernel_ring t_tiny t_lossless"
# Continuous streams are consumed by work items on CPU 1: consuming in the
# overflow callback, on CPU 0, would put the copying into CPU 0's and the
# task's kernel-side streams (see the feedback phase).
cat >"$m/spec" <<'EOF'
attach cpu_all cpu=0 priv=all mode=cont size=262144 cap=4000000 drain=work wcpu=1
attach cpu_user cpu=0 priv=user mode=cont size=65536 cap=1000000 drain=work wcpu=1
attach cpu_kernel cpu=0 priv=kernel mode=cont size=262144 cap=4000000 drain=work wcpu=1
attach cpu_all_ring cpu=0 priv=all mode=ring size=30000
attach cpu_user_ring cpu=0 priv=user mode=ring size=3000
attach cpu_kernel_ring cpu=0 priv=kernel mode=ring size=30000
attach cpu_tiny cpu=0 priv=all mode=cont size=16 cap=1000000 drain=work wcpu=1
attach t_all task=@PID@ priv=all mode=cont size=65536 cap=2000000 drain=work wcpu=1
attach t_user task=@PID@ priv=user mode=cont size=65536 cap=1000000 drain=work wcpu=1
attach t_kernel task=@PID@ priv=kernel mode=cont size=65536 cap=2000000 drain=work wcpu=1
attach t_all_ring task=@PID@ priv=all mode=ring size=5000
attach t_user_ring task=@PID@ priv=user mode=ring size=2000
attach t_kernel_ring task=@PID@ priv=kernel mode=ring size=3000
attach t_tiny task=@PID@ priv=all mode=cont size=16 cap=1000000 drain=work wcpu=1
attach t_lossless task=@PID@ priv=user mode=cont size=256 lossless=1 drain=slow batch=256 period=10 wcpu=1 cap=1000000
EOF
# ds.c's count of staged records with a kernel address outside the entry
# code: the kernel consumers' records must show in it.
audit=/sys/kernel/debug/x86/ds_kernel_records
echo 1 >"$audit"
step main/work "${run_env[@]}" taskset -c 1 "$build/dsrun" -c 0 \
	-a "$m/spec" -s "$m/start" -- "$prog/work"
cat "$audit" >"$m/audit"
# A fence in the per-CPU streams, right before the rings stop and then the
# continuous streams: check.py aligns them at this marker.
step main/fence taskset -c 0 "$prog/fence"
ctl "$m" suspend_all "suspend"
# shellcheck disable=SC2086
save "$m" $cpu_names $task_names
ctl "$m" release "release"

# --- sleepy ----------------------------------------------------------------
s=$res/sleepy
mkdir -p "$s"
cat >"$s/spec" <<'EOF'
attach s_ll task=@PID@ priv=user mode=cont size=256 lossless=1 drain=slow batch=64 period=20 wcpu=1 cap=1000000
EOF
step sleepy/sleepy "${run_env[@]}" taskset -c 1 "$build/dsrun" -c 0 \
	-a "$s/spec" -s "$s/start" -- "$prog/sleepy"
save "$s" s_ll
ctl "$s" release "release"

# --- sysmix (long tier) ----------------------------------------------------
# A slow lossless consumer without an overflow callback (notify=0: no
# irq_work after a drain) of a task whose system calls separate compute
# stretches longer than the headroom: a drain on the way out to user mode
# must hold the task back as one in an NMI does.  Too many records to
# keep: the module counts them (discard=1).  Each drain waits for the
# reader's next jiffy: about 90 s.
if [ "$(cat "$build/full" 2>/dev/null)" = y ]; then
	x=$res/sysmix
	mkdir -p "$x"
	cat >"$x/spec" <<'EOF'
attach x_ll task=@PID@ priv=user mode=cont size=256 lossless=1 drain=slow batch=65536 period=1 wcpu=1 cap=65536 discard=1 notify=0 markers=0
EOF
	step sysmix/sysmix "${run_env[@]}" taskset -c 1 "$build/dsrun" -c 0 \
		-a "$x/spec" -s "$x/start" -- "$prog/sysmix"
	save "$x" x_ll
	ctl "$x" release "release"
fi

# --- feedback --------------------------------------------------------------
# Two kernel-side consumers of one task that consume in their overflow
# callbacks, as the API suggests: the callbacks run in the task's context.
f=$res/feedback
mkdir -p "$f"
cat >"$f/spec" <<'EOF'
attach fb1 task=@PID@ priv=kernel mode=cont size=8192 cap=100000
attach fb2 task=@PID@ priv=kernel mode=cont size=8192 cap=100000
EOF
step feedback/sleepy timeout 120 "${run_env[@]}" taskset -c 1 \
	"$build/dsrun" -c 0 -a "$f/spec" -- "$prog/sleepy"
save "$f" fb1 fb2
ctl "$f" release "release"

# --- flight ----------------------------------------------------------------
# A lone per-CPU ring of both sides (the hardware writes it as a ring
# while the task, traced by T, sleeps), which the task suspends itself.
fl=$res/flight
mkdir -p "$fl"
cat >"$fl/spec" <<'EOF'
attach F cpu=0 priv=all mode=ring size=2000
attach T task=@PID@ priv=all mode=cont size=262144 cap=1000000 drain=work wcpu=1
EOF
step flight/flight "${run_env[@]}" taskset -c 1 "$build/dsrun" -c 0 \
	-a "$fl/spec" -s "$fl/start" -- "$prog/flight"
save "$fl" F T
ctl "$fl" release "release"

# --- resume ----------------------------------------------------------------
r=$res/resume
mkdir -p "$r"
ctl "$r" attach "attach A cpu=0 priv=all mode=cont size=65536 cap=4000000 drain=work wcpu=1
attach R cpu=0 priv=all mode=cont size=65536 cap=4000000 drain=work wcpu=1 suspended=1
attach S cpu=0 priv=all mode=cont size=65536 cap=4000000 drain=work wcpu=1"
step resume/resumer taskset -c 0 "$prog/resumer"
ctl "$r" suspend "suspend"
save "$r" A R S
ctl "$r" release "release"

# --- arb -------------------------------------------------------------------
a=$res/arb
mkdir -p "$a"
perf_args=(-N -B -e branches:u -c 1)
# With a consumer attached, perf's BTS event is a consumer too...
ctl "$a" attach1 "attach arb1 cpu=1 priv=all mode=ring size=64"
step arb/perf1 perf record "${perf_args[@]}" -o /tmp/arb1.data -- true
ctl "$a" release1 "release arb1"
# ...and while perf traces, consumers attach.  perf's workload waits for a
# byte on a FIFO, written once the attaches are done.
mkfifo /tmp/arb.fifo
perf record "${perf_args[@]}" -o /tmp/arb2.data -- head -c 1 /tmp/arb.fifo \
	>"$a/perf2.out" 2>"$a/perf2.err" &
perf_pid=$!
# Up to 120 s for perf to start its workload (the exec enables the event).
for _ in $(seq 1200); do
	pgrep -x -P $perf_pid head >/dev/null && break
	sleep 0.1
done
pgrep -x -P $perf_pid head >"$a/perf2.child"
ctl "$a" attach2 "attach arb2 cpu=1 priv=all mode=ring size=64"
ctl "$a" attach2t "attach arb2t task=$$ priv=user mode=cont size=64"
timeout 120 sh -c 'echo x >/tmp/arb.fifo'
wait $perf_pid
echo $? >"$a/perf2.rc"
# And once perf is gone.
ctl "$a" attach3 "attach arb3 cpu=1 priv=all mode=ring size=64"
ctl "$a" release3 "release"

# --- policy ----------------------------------------------------------------
# The VM boots with kernel.bts_kernel_recording=1; at 0, a consumer that
# records kernel mode is refused (EACCES) on this CPU model, which
# Meltdown affects, and a user-only one is not.
p=$res/policy
mkdir -p "$p"
knob=/proc/sys/kernel/bts_kernel_recording
cat /sys/devices/system/cpu/vulnerabilities/meltdown >"$p/meltdown"
echo 0 >"$knob"
ctl "$p" kernel "attach pk cpu=1 priv=kernel mode=ring size=64"
ctl "$p" all "attach pa task=$$ priv=all mode=ring size=64"
ctl "$p" user "attach pu task=$$ priv=user mode=ring size=64"
ctl "$p" release "release"
echo 1 >"$knob"
ctl "$p" allowed "attach pk cpu=1 priv=kernel mode=ring size=64"
ctl "$p" release2 "release"
dmesg | grep -F 'kernel-mode branch recording refused' >"$p/log"

# --- swap ------------------------------------------------------------------
# An overflow callback that takes the stream's storage with
# ds_swap_bts_buffer() instead of copying gets what one that consumes gets.
traced swap "$prog/work" sref sswap <<'EOF'
attach sref task=@PID@ priv=user mode=cont size=262144 drain=cb
attach sswap task=@PID@ priv=user mode=cont size=4096 wakeup=1024 drain=swap
EOF

# --- inherit ---------------------------------------------------------------
# DS_BTS_INHERIT: the threads and processes a traced task creates get
# consumers of their own (inherit.c: 2 threads, 3 processes); without it,
# they are not traced.
traced inherit "$build/inherit" inh noinh <<'EOF'
attach inh task=@PID@ priv=user mode=cont size=65536 inherit=1
attach noinh task=@PID@ priv=user mode=cont size=65536
EOF

# --- exitrace --------------------------------------------------------------
# A release while the task's exit calls the task_exit callbacks: e1's
# sleeps (as it may), and e2 is released meanwhile.  e2's callback must not
# come after its release returned.  Last: it may crash the kernel.
x=$res/exitrace
mkdir -p "$x"
cat >"$x/spec" <<'EOF'
attach e1 task=@PID@ priv=all mode=ring size=64 exit_sleep=1000
attach e2 task=@PID@ priv=all mode=cont size=64
EOF
(
	"${run_env[@]}" taskset -c 1 "$build/dsrun" -c 0 -a "$x/spec" \
		-- "$prog/sleepy" >"$x/sleepy.out" 2>"$x/sleepy.err"
	echo $? >"$x/sleepy.rc"
) &
for _ in $(seq 600); do
	[ "$(awk '$1 == "exited" { print $2 }' $D/e1/status 2>/dev/null)" = 1 ] &&
		break
	sleep 0.05
done
cp $D/e1/status "$x/e1.status"
cat $D/raced >"$x/raced.before"
ctl "$x" release2 "release e2"
cat $D/raced >"$x/raced"
wait
cat $D/late >"$x/late"
ctl "$x" release "release"

step rmmod rmmod ds_consumers
exit 0
