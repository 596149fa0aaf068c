#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/qemu-bts.sh: what the BTS emulation in qemu/patches/ costs the guest.
#
# Times a fixed user-mode workload (bench/workload.c: calls, indirect
# calls, returns, conditional jumps, getpid() every K iterations) in the
# test VM on
#   a  stock QEMU (Debian's 7.2, same configure, no patches), CPU model
#      without DS (the runner's model minus +ds,+dtes64,+ds-cpl,+pdcm)
#   b  our QEMU, the same CPU model; BTS off
#   c  our QEMU, the runner's DS/BTS CPU model; BTS off (nobody sets
#      DEBUGCTL.BTS)
#   d  our QEMU, the DS/BTS CPU; BTS on: perf record -e branches:u -c 1
#      (the kernel's ds.c BTS path) traces the workload
#   e  our QEMU, the DS/BTS CPU; BTS on by the bts tracer's flight
#      recorder as it comes (both sides, 2048 records): the hardware
#      writes its ring and nobody drains it, so this is the emulation's
#      cost with the least the kernel adds (a record at each switch, none
#      per branch).  Not user mode alone: that recorder drains its
#      staging buffer at every threshold, an NMI each (README.md)
# and prints medians, spread and ratios to a, of two clocks: the guest's
# CLOCK_MONOTONIC around each run, and the host CPU time QEMU's threads got
# meanwhile (bench/vmclock.py, through a second serial port), which other
# work on the host disturbs less.  For d also the branch records per
# second.  The workload's user-mode instruction count (exact, from the TCG
# plugin bench/insn-range.c) turns times into instructions per second.
# Figures, never pass/fail: see README.md.
#
# The VMs of a, b, c and d alternate, in rounds, so that load from other
# work on the machine spreads over all of them.  Stock QEMU is built into
# build/bench/qemu-stock the first time (a few minutes).
#
# Environment: BENCH_ROUNDS (5), BENCH_REPS (2 timed runs per VM for a-c),
# BENCH_REPS_D (1 for d), BENCH_ITERS (16000000), BENCH_SYSCALL_EVERY (64).
# About 15 minutes on a 2-core machine under light load (891 s on
# 2026-11-30; BENCH_ROUNDS=2: 278 s), plus the stock QEMU build the first
# time.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench"
vm="$repo/tests/vm/run"

rounds=${BENCH_ROUNDS:-5}
reps=${BENCH_REPS:-2}
reps_d=${BENCH_REPS_D:-1}
iters=${BENCH_ITERS:-16000000}
every=${BENCH_SYSCALL_EVERY:-64}
# BTS on writes a record per taken branch (about 9 per iteration) and
# perf stores each as a 32-byte sample: d runs 1/32 of the iterations, so
# its trace (about 150 MB) fits in the guest's memory, and is compared per
# iteration.
iters_d=$((iters / 32))

# The runner's CPU model, with and without the Debug Store features.
cpu_ds="max,vendor=GenuineIntel,family=6,model=16,stepping=1"
cpu_ds+=",+ds,+dtes64,+ds-cpl,+pdcm,pmu=on"
cpu_plain="max,vendor=GenuineIntel,family=6,model=16,stepping=1,pmu=on"

ours="$repo/build/qemu/obj/qemu-system-x86_64"
stock="$out/qemu-stock/obj/qemu-system-x86_64"

mkdir -p "$out"
start=$SECONDS
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# Stock QEMU: Debian's source with an empty patch series, built by the
# workbench's own script (so with the very same configure options).
mkdir -p "$out/no-patches"
[ -e "$out/no-patches/series" ] || : >"$out/no-patches/series"
if [ ! -x "$stock" ]; then
	echo "bench: building stock QEMU in $out/qemu-stock (first run only)" >&2
fi
if ! nice "$repo/workbench/qemu.sh" "$out/qemu-stock" "$out/no-patches" \
	>"$out/qemu-stock.log" 2>&1; then
	cat "$out/qemu-stock.log" >&2
	exit 1
fi
for f in "$stock" "$ours"; do
	if [ ! -x "$f" ]; then
		echo "bench: $f missing (run 'make qemu kernel' first)" >&2
		exit 1
	fi
done

# The workload (static, non-PIE: its code sits at fixed addresses, which
# the instruction-counting plugin relies on), the plugin, and the ptrace
# single-step oracle of tests/bts, to know how many branches BTS records.
if [ "$out/workload" -ot "$here/workload.c" ]; then
	gcc -static -no-pie -O2 -Wall -o "$out/workload" "$here/workload.c"
fi
"$here/build-plugin.sh" "$here/insn-range.c" "$out/libinsn-range.so" \
	"$out/qemu-stock/src/include/qemu"
if [ "$out/oracle" -ot "$repo/tests/bts/oracle.c" ]; then
	gcc -O2 -Wall -o "$out/oracle" "$repo/tests/bts/oracle.c" -lcapstone
fi
work="$out/workload"

results="$out/results"
rm -rf "$results"
mkdir -p "$results"
samples="$results/samples"
: >"$samples"
# A short path: Unix socket names are limited to 107 bytes.
sock=$(mktemp -u /tmp/bench-mark.XXXXXX)
trap 'rm -f "$sock" "$sock.ready"' EXIT

# guest CONFIG ROUND QEMU CPU SCRIPT: run SCRIPT in a VM whose /dev/ttyS1
# leads to vmclock.py, keep the output, and append one line per timed run
# to $samples:
#   CONFIG ROUND ITERS GUEST_NS HOST_WALL_NS HOST_CPU_NS [RECORDS LOST]
guest()
{
	local cfg=$1 round=$2 qemu=$3 cpu=$4 script=$5 dir clock pid
	dir="$results/$cfg.$round"
	clock="$dir.clock"
	rm -f "$sock.ready"
	python3 "$here/vmclock.py" "$sock" "$clock" &
	pid=$!
	while [ ! -e "$sock.ready" ]; do
		kill -0 $pid 2>/dev/null || { echo "bench: vmclock.py failed" >&2; exit 1; }
		sleep 0.05
	done
	if ! "$vm" --qemu "$qemu" --cpu "$cpu" --results "$dir" --timeout 600 \
		--qemu-arg -chardev --qemu-arg "socket,id=mark,path=$sock" \
		--qemu-arg -device --qemu-arg isa-serial,chardev=mark \
		-- bash -c "$script" >"$dir.out" 2>"$dir.err"; then
		echo "bench: VM for $cfg failed; see $dir.err and $dir/" >&2
		cat "$dir.err" >&2
		kill $pid 2>/dev/null
		exit 1
	fi
	wait $pid
	awk -v cfg="$cfg" -v round="$round" -v clock="$clock" '
		/^workload / {
			for (i = 2; i <= NF; i++) {
				split($i, kv, "="); v[kv[1]] = kv[2]
			}
			hw = hc = "-"
			if ((getline c < clock) > 0) {
				split(c, f, /[ =]/); hw = f[3]; hc = f[5]
			}
			line = cfg " " round " " v["iters"] " " v["ns"] " " hw " " hc
			if (cfg != "d")
				print line
		}
		/^records / { print line " " $2 " " $3 }
	' "$dir.out" >>"$samples"
}

# Timed runs write marks to /dev/ttyS1 ($BENCH_MARK); the warm-up does not.
timed="cd /tmp; w=$work
\$w $((iters / 16)) $every 1 >/dev/null   # warm-up, not counted
BENCH_MARK=/dev/ttyS1 \$w $iters $every $reps"

# For d, perf's own report counts the samples perf got; LOST records
# mean the perf tool could not keep up (each may stand for many).
traced="cd /tmp; w=$work
for i in \$(seq $reps_d); do
	BENCH_MARK=/dev/ttyS1 perf record -q -N -B -m 256 \\
		-e branches:u -c 1 -o /tmp/x.data -- \$w $iters_d $every 1 || exit 1
	perf report --stats -i /tmp/x.data 2>/dev/null | awk '
		/LOST events:/ { lost = \$3 }
		/SAMPLE events:/ { n = \$3 }
		END { print \"records\", n, lost + 0 }'
	rm -f /tmp/x.data
done"

# For e, the flight recorder on every CPU, then as a-c.
recorded="echo bts >/sys/kernel/tracing/current_tracer || exit 1
$timed"

configs=(a b c d e)
for ((r = 1; r <= rounds; r++)); do
	echo "bench: round $r of $rounds" >&2
	# Rotate the order from round to round.
	for ((k = 0; k < ${#configs[@]}; k++)); do
		cfg=${configs[(k + r - 1) % ${#configs[@]}]}
		case $cfg in
		a) guest a $r "$stock" "$cpu_plain" "$timed" ;;
		b) guest b $r "$ours" "$cpu_plain" "$timed" ;;
		c) guest c $r "$ours" "$cpu_ds" "$timed" ;;
		d) guest d $r "$ours" "$cpu_ds" "$traced" ;;
		e) guest e $r "$ours" "$cpu_ds" "$recorded" ;;
		esac
	done
done

# Guest instructions of one workload run: user-mode instructions in the
# workload's .text, exact (the same every run), on stock and on our QEMU.
read -r text_lo text_size < <(readelf -SW "$work" |
	sed -n 's/.* \.text *PROGBITS *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\) .*/\1 \2/p')
plugin="$out/libinsn-range.so,lo=0x$text_lo"
plugin+=",hi=$(printf '0x%x' $((0x$text_lo + 0x$text_size)))"
for q in stock ours; do
	qemu=$stock cpu=$cpu_plain
	[ $q = stock ] || { qemu=$ours; cpu=$cpu_ds; }
	"$vm" --qemu "$qemu" --cpu "$cpu" --results "$results/insn-$q" \
		--qemu-arg -plugin --qemu-arg "$plugin" \
		--qemu-arg -d --qemu-arg plugin \
		--qemu-arg -D --qemu-arg "$results/insn-$q.log" \
		-- "$work" "$iters" "$every" 1 >/dev/null 2>"$results/insn-$q.err" || {
		cat "$results/insn-$q.err" >&2
		exit 1
	}
done

# Branches BTS records in user mode per iteration, from the oracle
# (ptrace single-step, no BTS): the difference of two short runs.
branches()
{
	(cd /tmp && "$out/oracle" -o "$results/oracle.$1" -- \
		"$work" "$1" "$every" 1 >/dev/null)
	grep -vc '^#' "$results/oracle.$1"
}
b1=$(branches $((every * 10)))
b2=$(branches $((every * 20)))

python3 "$here/report.py" "$samples" "$iters" "$iters_d" "$every" \
	"$(sed -n 's/^insns-in-range: //p' "$results/insn-stock.log")" \
	"$(sed -n 's/^insns-in-range: //p' "$results/insn-ours.log")" \
	"$b1" "$b2" "$((SECONDS - start))" \
	"$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)" |
	tee "$results/report"

# The emulation alone (no perf in the guest), and BTS off structurally
"$here/qemu-bts-emu.sh"
