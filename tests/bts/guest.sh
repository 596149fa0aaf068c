#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/bts/guest.sh OUTDIR PROG TOOL...
#
# Runs in the test VM (started by tests/bts/run): trace PROG with each
# TOOL and leave the raw results in OUTDIR (a folder shared with the host,
# where the comparison happens, at native speed):
#
#   oracle    ptrace single-step oracle        -> oracle.txt
#   branches  perf record -e branches:u -c 1   -> branches.data
#   bts       perf record -e intel_bts//u, with a /dev/bts reader and
#             the bts tracer tracing other programs -> bts.data
#   gdb       gdb record btrace bts, function-call-history /c and
#             instruction-history -> gdb.txt
#   snapshot  perf record -Se -e intel_bts//u (snapshot mode, one
#             snapshot at the end)  -> snapshot.data
#   snapwrap  the same with a 64 KB ring, which the run wraps
#                                   -> snapwrap.data
#   btsparts  perf record -e intel_bts//u with a 256 KB AUX buffer, which
#             perf reads more than once  -> btsparts.data
#   btsall    perf record -e intel_bts// (both modes) alone: without PTI
#             the layer lends the hardware windows of the AUX buffer
#             -> btsall.data, btsall.windows (windows lent meanwhile)
#   btsallparts  the same with a 1 MB AUX buffer: windows end at its
#             page runs and at perf's wakeup mark
#                                   -> btsallparts.data, .windows
#   btsmix    the same, PROG and bts-dump tracing a shell loop pinned to
#             one CPU: the windows come and go -> btsmix.data,
#             btsmix.windows, btsmix.raw (bts-dump's trace)
#   together  perf's branches:u -c 1 and bts-dump trace PROG at once, the
#             bts tracer recording every CPU meanwhile
#                                  -> together.data, together.raw, .trace
#
# and for each TOOL: TOOL.rc (exit status), TOOL.out/TOOL.err (PROG's and
# the tool's output), TOOL.secs (wall time).
#
# Every run of PROG gets the same environment, no ASLR (setarch -R) and
# its stdout in a regular file in OUTDIR, so glibc's startup code (which
# walks the environment and looks at its stdout) takes the same branches
# each time and the traces can be compared record by record.
#
# perf record changes the environment its child inherits: it prepends
# /usr/lib/perf-core to PATH and sets PREFIX, PERF_BUILDID_DIR,
# DEBUGINFOD_URLS and, with an AUX event such as intel_bts,
# JITDUMP_USE_ARCH_TIMESTAMP.  We set all of those beforehand to the
# values perf picks, so its setenv() only rewrites them in place, and
# capture the result (a perf record of env(1)) to give the very same
# environment to the oracle and gdb.  Each perf tool's own environment is
# captured too (TOOL.env), and the host checks that it is the same.
set -u

out=$1 prog=$2
shift 2
here=$(dirname "$(realpath "$0")")
build=$(realpath "$here/../../build/tests/bts")
tracing=/sys/kernel/tracing
# Scratch space in OUTDIR: the guest's /tmp may not be writable by the
# unprivileged user.
tmp=$out/tmp
mkdir -p "$tmp" || exit 125
cd "$tmp" || exit 125

# The same everywhere (no OUTDIR in it): runs in different VMs and folders
# compare with one oracle run.  perf writes nothing to HOME with -N.
base_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LC_ALL=C
	PREFIX=/usr PERF_BUILDID_DIR=/tmp/.debug DEBUGINFOD_URLS=
	JITDUMP_USE_ARCH_TIMESTAMP=1)
perf_run=("${base_env[@]}" setarch x86_64 -R)

# capture_env FILE PERF_RECORD_ARGS...: the environment perf record with
# these arguments gives its child, NUL-separated.
capture_env()
{
	local file=$1
	shift
	"${base_env[@]}" perf record -q "$@" -o "$tmp/env.data" -- \
		/usr/bin/env -0 >"$file" 2>"$file.err"
}

capture_env "$out/perf.env" -N -B -e dummy:u || exit 125
mapfile -d '' perf_env <"$out/perf.env"
run=(env -i "${perf_env[@]}" setarch x86_64 -R)

# run_tool NAME CMD...: run CMD with PROG's output and errors in OUTDIR.
run_tool()
{
	local name=$1 start rc
	shift
	start=$EPOCHREALTIME
	"$@" >"$out/$name.out" 2>"$out/$name.err"
	rc=$?
	echo $rc >"$out/$name.rc"
	awk -v a="$start" -v b="$EPOCHREALTIME" \
		'BEGIN { printf "%.1f\n", b - a }' >"$out/$name.secs"
}

# attach_release: attach /dev/bts to a sleeping process and close it.
attach_release()
{
	python3 - <<'EOF'
import fcntl, os, struct, subprocess
sleeper = subprocess.Popen(["sleep", "60"])
fd = os.open("/dev/bts", os.O_RDONLY)
# BTS_IOC_ATTACH, struct bts_attach { size, flags, pid, mode, nr_records,
# reserved }: continuous, 1024 records.
fcntl.ioctl(fd, 0xB901, struct.pack("6I", 24, 0, sleeper.pid, 0, 1024, 0))
os.close(fd)
sleeper.kill()
sleeper.wait()
EOF
}

# beside CMD...: run CMD while a /dev/bts reader traces a sleeping process
# and the bts tracer records every CPU: other consumers of the DS layer,
# tracing other programs.  CMD's exit status.
beside()
{
	echo 1 >/proc/sys/kernel/bts_kernel_recording
	echo bts >$tracing/current_tracer || return 125
	python3 - "$@" <<'EOF'
import fcntl, os, struct, subprocess, sys
sleeper = subprocess.Popen(["sleep", "600"])
fd = os.open("/dev/bts", os.O_RDONLY)
# BTS_IOC_ATTACH, struct bts_attach { size, flags, pid, mode, nr_records,
# reserved }: continuous, 1024 records.
fcntl.ioctl(fd, 0xB901, struct.pack("6I", 24, 0, sleeper.pid, 0, 1024, 0))
rc = subprocess.call(sys.argv[1:])
os.close(fd)
sleeper.kill()
sleeper.wait()
sys.exit(rc)
EOF
	local rc=$?
	echo nop >$tracing/current_tracer
	return $rc
}

# The perf record arguments of each perf tool.
# branches: -d records the branch target (PERF_SAMPLE_ADDR) too; -m makes
# room for the bursts of a BTS buffer drain.  bts: intel_bts works per
# thread only, and perf 6.1 needs telling; a 4 MB AUX buffer holds the
# whole trace (with a small one, perf under TCG cannot keep up and loses
# data, as it would on hardware).  -N -B: no build-id cache or
# collection (perf script runs on the host, where the binaries are the
# same; and the post-processing would mmap the data file, which 9p does
# not allow).  No -q, so perf's warnings about lost data reach TOOL.err.
branches_args=(-N -B -d -e branches:u -c 1 -m 256)
bts_args=(-N -B --per-thread -e intel_bts//u -m ,1024)
# Snapshot mode: the AUX buffer a ring the kernel keeps writing, copied
# by perf when asked, here once at the end (e); 4 MB holds every branch.
snapshot_args=(-N -B --per-thread -e intel_bts//u -m ,1024 -Se)
snapwrap_args=(-N -B --per-thread -e intel_bts//u -m ,16 -Se)
# A buffer of a little more than loops' trace: perf is woken to read it at
# half full, so its AUX data comes in pieces, each of which perf's decoder
# stops one record short of (the kernel ends each with a record of zeros).
btsparts_args=(-N -B --per-thread -e intel_bts//u -m ,64)
# Both modes: room for the kernel's branches too.
btsall_args=(-N -B --per-thread -e intel_bts// -m ,4096)
btsallparts_args=(-N -B --per-thread -e intel_bts// -m ,256)
windows=/sys/kernel/debug/x86/ds_windows

# lent TOOL CMD...: run_tool TOOL CMD, leaving in TOOL.windows how many
# windows consumers lent the hardware meanwhile.
lent()
{
	local tool=$1 before
	shift
	before=$(cat $windows) || return 125
	run_tool "$tool" "$@"
	echo $(($(cat $windows) - before)) >"$out/$tool.windows"
}

for tool in "$@"; do
	case $tool in
	oracle)
		run_tool oracle "${run[@]}" "$build/oracle" \
			-o "$out/oracle.txt" -- "$prog"
		;;
	branches)
		capture_env "$out/branches.env" "${branches_args[@]}"
		# A /dev/bts consumer just released leaves the DS layer's
		# buffers set up for a while: perf's claim must take them over.
		attach_release || exit 125
		run_tool branches "${perf_run[@]}" perf record \
			"${branches_args[@]}" -o "$out/branches.data" -- "$prog"
		;;
	bts)
		capture_env "$out/bts.env" "${bts_args[@]}"
		run_tool bts beside "${perf_run[@]}" perf record \
			"${bts_args[@]}" -o "$out/bts.data" -- "$prog"
		;;
	gdb)
		# Record from main to the return from stop_here(), print the
		# calls and the instructions.  A 4 MB buffer: gdb's default
		# (64 KB, some 2,700 records) keeps only the last of loops'.
		run_tool gdb env -i "${perf_env[@]}" gdb -nx -batch \
			-ex 'set record function-call-history-size unlimited' \
			-ex 'set record instruction-history-size unlimited' \
			-ex 'set record btrace bts buffer-size 4194304' \
			-ex 'handle SIGUSR1 SIGUSR2 SIGILL nostop noprint pass' \
			-ex 'break main' -ex run \
			-ex 'record btrace bts' \
			-ex 'break stop_here' -ex continue -ex finish \
			-ex 'record function-call-history /c' \
			-ex 'echo -- instruction-history\n' \
			-ex 'record instruction-history' \
			-ex 'info record' \
			-ex kill --args "$prog"
		cp "$out/gdb.out" "$out/gdb.txt"
		;;
	snapshot)
		capture_env "$out/snapshot.env" "${snapshot_args[@]}"
		run_tool snapshot "${perf_run[@]}" perf record \
			"${snapshot_args[@]}" -o "$out/snapshot.data" -- "$prog"
		;;
	snapwrap)
		capture_env "$out/snapwrap.env" "${snapwrap_args[@]}"
		run_tool snapwrap "${perf_run[@]}" perf record \
			"${snapwrap_args[@]}" -o "$out/snapwrap.data" -- "$prog"
		;;
	btsparts)
		capture_env "$out/btsparts.env" "${btsparts_args[@]}"
		run_tool btsparts "${perf_run[@]}" perf record \
			"${btsparts_args[@]}" -o "$out/btsparts.data" -- "$prog"
		;;
	btsall)
		capture_env "$out/btsall.env" "${btsall_args[@]}"
		echo 1 >/proc/sys/kernel/bts_kernel_recording
		lent btsall "${perf_run[@]}" perf record \
			"${btsall_args[@]}" -o "$out/btsall.data" -- "$prog"
		;;
	btsallparts)
		capture_env "$out/btsallparts.env" "${btsallparts_args[@]}"
		echo 1 >/proc/sys/kernel/bts_kernel_recording
		lent btsallparts "${perf_run[@]}" perf record \
			"${btsallparts_args[@]}" -o "$out/btsallparts.data" \
			-- "$prog"
		;;
	btsmix)
		# A second consumer on PROG's CPU, now and then: each time
		# the shell runs, the hardware goes back to the staging
		# buffer for both, and the windows come back after.
		capture_env "$out/btsmix.env" "${btsall_args[@]}"
		echo 1 >/proc/sys/kernel/bts_kernel_recording
		rm -f "$tmp/stop"
		taskset -c 0 "$build/tool/bts-dump" --format=raw \
			-o "$out/btsmix.raw" -- sh -c \
			"while [ ! -e $tmp/stop ]; do sleep 0.02; done" &
		dump=$!
		lent btsmix taskset -c 0 "${perf_run[@]}" perf record \
			"${btsall_args[@]}" -o "$out/btsmix.data" -- "$prog"
		touch "$tmp/stop"
		wait $dump
		echo $? >"$out/btsmix.dump.rc"
		;;
	together)
		# Three consumers of the DS layer that know nothing of each
		# other: the bts tracer (every CPU, both sides), perf (its
		# per-CPU consumers, following perf's schedule) and bts-dump
		# (PROG's threads, /dev/bts).  perf traces bts-dump too (it
		# inherits into PROG); the host keeps PROG's part.  bts-dump
		# passes perf's environment on unchanged.
		capture_env "$out/together.env" "${branches_args[@]}"
		echo 1 >/proc/sys/kernel/bts_kernel_recording
		echo bts >$tracing/current_tracer || exit 125
		# Room for bts-dump's branches too (some 350,000 with raw
		# output, most of them ld.so's loading its libraries), which
		# perf, writing to the shared folder, would lose; and
		# the file in the guest's memory, copied after, for the same
		# reason (a loaded host slows the folder down).
		run_tool together "${perf_run[@]}" perf record \
			"${branches_args[@]}" -m 8192 \
			-o /dev/shm/together.data -- \
			"$build/tool/bts-dump" --format=raw \
			-o "$out/together.raw" -- "$prog"
		mv /dev/shm/together.data "$out/together.data"
		cat $tracing/trace >"$out/together.trace"
		echo nop >$tracing/current_tracer
		;;
	*)
		echo "guest.sh: unknown tool $tool" >&2
		exit 125
		;;
	esac
done
