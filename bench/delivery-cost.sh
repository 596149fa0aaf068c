#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/delivery-cost.sh: the guest kernel's instructions per user-mode
# branch record delivered to a tracer: bts-dump through /dev/bts, against
# perf's `perf record -e branches:u -c 1` (perf's own BTS path,
# arch/x86/events/intel/ds.c, one sample per branch), tracing the same
# program (bench/workload.c) in the same guest on our kernel; and the bts
# ftrace tracer in continuous mode, user side only, delivering every
# branch of the CPU into the ftrace buffer (32 records an entry); and
# perf's intel_bts//u (an AUX buffer of BTS records).  And perf alone on
# the stock 6.12 kernel, where it drives the BTS hardware itself (ours
# makes its events consumers of the DS layer): branches:u with PTI like
# ours, intel_bts//u without (stock does not register intel_bts with PTI;
# there the hardware writes perf's AUX pages, zero-copy, where ours copies
# each record of a user-only event from the layer's stream).  And
# intel_bts// (both modes), which ours lends the AUX pages to the hardware
# for, zero-copy, when PTI is off: ours without PTI and with (copied)
# against stock without.
#
# Counted, not timed: the TCG plugin insn-marks.c, with kernel=on, counts
# the instructions executed at kernel addresses between two marks that
# bench/mark.c sets around a whole command line, so the count covers the
# tracer's start-up, the traced run, every read of the trace and its write
# to a file on tmpfs (/dev/shm), and the tracer's exit.  Each command line
# runs twice, the workload doing ITERS iterations and 1; the same command
# lines without a tracer are the baseline.  The figure is the marginal
# cost of a record:
#
#   ((traced[ITERS] - traced[1]) - (untraced[ITERS] - untraced[1]))
#     / (records[ITERS] - records[1])
#
# with the records counted in the files afterwards, outside the marks:
# bts-dump's raw file's branch records (tests/bts-dump/rawcheck.c), perf's
# samples (perf script), intel_bts's branches (perf script --itrace=b),
# the tracer's lines of branches in trace (bts-raw).
# The tracer records the whole CPU, the workload and the commands around
# it: the difference of the two runs leaves the workload's.  The whole cost, start-up included, is shown too.
# One vCPU (the plugin's counter is not atomic), and -icount shift=0,
# sleep=off, so that timer interrupts come at fixed instruction counts
# rather than with the host's load, as in bench/idle-cost.sh.
# TCG counts each iteration of a REP-prefixed instruction
# (the kernel's copies) as one instruction, which favours neither side:
# both copy their records.
#
# Environment: BENCH_ITERS (100000 workload iterations, about 0.9 M
# branches), BENCH_SYSCALL_EVERY (1000).  About 2 minutes once the stock
# kernel is built (bench/idle-cost.sh builds it the first time).
# BENCH_PROFILE=CASE (bts-dump, perf, tracer, intel_bts, intel_bts_all)
# runs that case alone on our kernel, ITERS iterations, under the plugin
# insn-profile.c instead, and prints where its kernel instructions go per
# record, by function (bench/insn-profile.py): the whole command line,
# start-up and exit included.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/delivery-cost"
vm="$repo/tests/vm/run"
iters=${BENCH_ITERS:-100000}
every=${BENCH_SYSCALL_EVERY:-1000}
kernel="$repo/build/kernel/arch/x86/boot/bzImage"
stock="$repo/build/kernel-stock/arch/x86/boot/bzImage"

mkdir -p "$out"
start=$SECONDS
if [ ! -e "$kernel" ]; then
	echo "bench: $kernel missing (run 'make kernel qemu' first)" >&2
	exit 1
fi
if ! nice "$repo/workbench/kernel.sh" "$repo" "$repo/build" stock \
	>"$out/kernel-stock.log" 2>&1; then
	cat "$out/kernel-stock.log" >&2
	exit 1
fi
make -s -C "$repo/tools/bts-dump" >&2
gcc -static -no-pie -O2 -Wall -o "$out/workload" "$here/workload.c"
gcc -static -O2 -Wall -o "$out/mark" "$here/mark.c"
gcc -O2 -Wall -I"$repo/include/uapi" -o "$out/rawcheck" \
	"$repo/tests/bts-dump/rawcheck.c"
profile=${BENCH_PROFILE:-}
plugin=insn-marks sizes="$iters 1" baseline=none
if [ -n "$profile" ]; then
	# Region 1, mark.c's; no baseline and no run of 1 iteration.
	plugin=insn-profile sizes=$iters baseline=
fi
"$here/build-plugin.sh" "$here/$plugin.c" "$out/lib$plugin.so" \
	"$repo/build/qemu/src/include/qemu"

results="$out/results"
rm -rf "$results"
mkdir -p "$results"

# In the guest: the untraced command line and each case given, between
# marks, in that order (the plugin prints one region line each), then the
# records each tracer got.
cat >"$results/guest.sh" <<EOF
set -eu
m=$out/mark w=$out/workload
# perf's samples are not throttled for the CPU time they take: under TCG
# they would be, and perf would deliver a fraction of the branches.
echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent
# Ours asks for the administrator's word before recording the kernel on a
# CPU that Meltdown affects; stock has no such knob.
k=/proc/sys/kernel/bts_kernel_recording
[ ! -e \$k ] || echo 1 >\$k
T=/sys/kernel/tracing
run_case()
{
	local n=\$1
	case \$2 in
	none)
		\$m open; \$w \$n $every 1 >/dev/null; \$m close
		;;
	bts-dump)
		\$m open
		$repo/tools/bts-dump/bts-dump --format=raw \
			-o /dev/shm/t.\$n.raw -- \$w \$n $every 1 >/dev/null
		\$m close
		;;
	perf)
		\$m open
		perf record -q -m 8192 -e branches:u -c 1 \
			-o /dev/shm/p.\$n.data -- \$w \$n $every 1 >/dev/null
		\$m close
		;;
	intel_bts)
		\$m open
		perf record -q --per-thread -m ,8192 -e intel_bts//u \
			-o /dev/shm/b.\$n.data -- \$w \$n $every 1 >/dev/null
		\$m close
		;;
	intel_bts_all)
		\$m open
		perf record -q --per-thread -m ,8192 -e intel_bts// \
			-o /dev/shm/a.\$n.data -- \$w \$n $every 1 >/dev/null
		\$m close
		;;
	tracer)
		echo 1 >/proc/sys/kernel/bts_kernel_recording
		echo 0 >\$T/options/bts-kernel
		echo 1 >\$T/options/bts-continuous
		echo 1 >\$T/options/bts-raw
		echo 131072 >\$T/buffer_size_kb
		echo >\$T/trace
		\$m open
		echo bts >\$T/current_tracer
		\$w \$n $every 1 >/dev/null
		echo 0 >\$T/tracing_on
		\$m close
		echo "tracer \$n branches=\$(grep -c -- ' -> ' \$T/trace) overrun=\$(awk '\$1 == "overrun:" { print \$2 }' \$T/per_cpu/cpu0/stats)"
		echo nop >\$T/current_tracer
		echo 1 >\$T/tracing_on
		;;
	esac
}
records()
{
	local n=\$1
	case \$2 in
	bts-dump) echo "bts-dump \$n \$($out/rawcheck /dev/shm/t.\$n.raw)" ;;
	perf) echo "perf \$n samples=\$(perf script -i /dev/shm/p.\$n.data -F ip 2>/dev/null | wc -l)" ;;
	intel_bts) echo "intel_bts \$n records=\$(perf script -i /dev/shm/b.\$n.data --itrace=b -F ip 2>/dev/null | wc -l)" ;;
	intel_bts_all) echo "intel_bts_all \$n records=\$(perf script -i /dev/shm/a.\$n.data --itrace=b -F ip 2>/dev/null | wc -l)" ;;
	esac
}
# Each case once first, unmarked: a tool's first run in a boot does work
# the later ones skip (perf record fills its build-id cache, reading
# /proc/kallsyms, some 200 M instructions), which would count as the
# marginal cost of whichever case came first.
for c in "\$@"; do
	m=true run_case 1 \$c
done
for n in $sizes; do
	for c in $baseline "\$@"; do
		run_case \$n \$c
	done
done
for n in $sizes; do
	for c in "\$@"; do
		records \$n \$c
	done
done
EOF

# run_vm NAME KERNEL APPEND CASE...: the guest script in a VM of its own,
# the plugin's log in plugin-NAME, what the guest printed in out-NAME.
run_vm()
{
	local name=$1 kernel=$2 append=$3
	shift 3
	if ! "$vm" --kernel "$kernel" --smp 1 ${append:+--append "$append"} \
		--results "$results/vm-$name" --timeout 1800 \
		--qemu-arg -icount --qemu-arg shift=0,sleep=off \
		--qemu-arg -plugin \
		--qemu-arg "$out/lib$plugin.so,kernel=on${profile:+,region=1}" \
		--qemu-arg -d --qemu-arg plugin \
		--qemu-arg -D --qemu-arg "$results/plugin-$name" \
		-- bash "$results/guest.sh" "$@" >"$results/out-$name" \
		2>"$results/err-$name"; then
		echo "bench: the $name VM failed; see $results/err-$name" >&2
		cat "$results/err-$name" >&2
		exit 1
	fi
}

# Ours with PTI; stock with PTI for perf's branches, and without for its
# intel_bts, which stock does not register with PTI; ours without PTI for
# intel_bts//, whose AUX pages the hardware then writes.
if [ -n "$profile" ]; then
	run_vm ours "$kernel" "" "$profile"
	case $profile in
	bts-dump|tracer) key=branches ;;
	perf) key=samples ;;
	*) key=records ;;
	esac
	n=$(sed -nE "s/^$profile $iters .* $key=([0-9]+).*/\1/p" \
		"$results/out-ours")
	[ -n "$n" ] || { echo "bench: no record count in $results/out-ours" >&2; exit 1; }
	echo "$profile: guest kernel instructions per record ($n records), by function"
	exec python3 "$here/insn-profile.py" "$results/plugin-ours" \
		"$repo/build/kernel/System.map" "$n" 40
fi
run_vm ours "$kernel" "" bts-dump perf tracer intel_bts intel_bts_all
run_vm ours-nopti "$kernel" nopti intel_bts_all
run_vm stock "$stock" "" perf
run_vm stock-nopti "$stock" nopti intel_bts intel_bts_all

python3 - "$results" "$iters" "$((SECONDS - start))" <<'EOF' | tee "$results/report"
import re, sys

results, iters, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
PATTERNS = {
    "bts-dump": r"bts-dump (\d+) .*branches=(\d+)",
    "perf": r"perf (\d+) samples=(\d+)",
    "intel_bts": r"intel_bts (\d+) records=(\d+)",
    "intel_bts_all": r"intel_bts_all (\d+) records=(\d+)",
    "tracer": r"tracer (\d+) branches=(\d+) overrun=\d+",
}


def run(name, cases):
    """Kernel instructions and records per (case, iterations) of one VM."""
    plugin, out = f"{results}/plugin-{name}", f"{results}/out-{name}"
    regions = [int(m[1]) for m in
               re.finditer(r"region 1 insns=(\d+)", open(plugin).read())]
    cases = ("none",) + cases
    if len(regions) != 2 * len(cases):
        sys.exit(f"bench: {len(regions)} regions in {plugin}, "
                 f"want {2 * len(cases)}")
    kins = {}
    for i, n in enumerate((iters, 1)):
        for j, case in enumerate(cases):
            kins[case, n] = regions[len(cases) * i + j]
    text = open(out).read()
    m = re.search(r"tracer \d+ branches=\d+ overrun=([1-9]\d*)", text)
    if m:
        sys.exit(f"bench: the ftrace buffer overran: {m[0]}")
    recs = {}
    for case in cases[1:]:
        for m in re.finditer(PATTERNS[case], text):
            recs[case, int(m[1])] = int(m[2])
    if len(recs) != 2 * (len(cases) - 1):
        sys.exit(f"bench: record counts missing in {out}")
    return cases, kins, recs


print(f"guest kernel instructions per branch record delivered"
      f" (workload: {iters} iterations)")
print(f"{'kernel':<12} {'tracer':<10} {'records':>9} {'kernel insns':>14}"
      f" {'+ over none':>14} {'per record':>11} {'marginal':>9}")
per = {}
for name, cases in (("ours", ("bts-dump", "perf", "tracer", "intel_bts",
                             "intel_bts_all")),
                    ("ours-nopti", ("intel_bts_all",)),
                    ("stock", ("perf",)),
                    ("stock-nopti", ("intel_bts", "intel_bts_all"))):
    cases, kins, recs = run(name, cases)
    for case in cases[1:]:
        r = recs[case, iters]
        extra = kins[case, iters] - kins["none", iters]
        marg = ((kins[case, iters] - kins[case, 1]) -
                (kins["none", iters] - kins["none", 1])) / (r - recs[case, 1])
        per[name, case] = marg
        print(f"{name:<12} {case:<10} {r:>9} {kins[case, iters]:>14}"
              f" {extra:>14} {extra / r:>11.1f} {marg:>9.1f}")
    print(f"{name:<12} {'none':<10} {'':>9} {kins['none', iters]:>14}")
dump_perf = per["ours", "bts-dump"] / per["ours", "perf"]
perf = per["ours", "perf"] / per["stock", "perf"]
bts = per["ours", "intel_bts"] / per["stock-nopti", "intel_bts"]
all_direct = (per["ours-nopti", "intel_bts_all"] /
              per["stock-nopti", "intel_bts_all"])
all_copied = per["ours", "intel_bts_all"] / per["stock-nopti", "intel_bts_all"]
print(f"marginal: bts-dump / perf {dump_perf:.3f}; perf, ours / stock"
      f" {perf:.3f}; intel_bts//u, ours (PTI, copied) / stock (nopti,"
      f" zero-copy) {bts:.3f}; intel_bts//, ours / stock, both nopti and"
      f" zero-copy {all_direct:.3f}, ours with PTI (copied)"
      f" {all_copied:.3f} ({secs} s)")
print(f"bench: delivery_cost iters={iters}"
      f" bts_dump={per['ours', 'bts-dump']:.1f} perf={per['ours', 'perf']:.1f}"
      f" ratio={dump_perf:.3f} tracer={per['ours', 'tracer']:.1f}"
      f" perf_stock={per['stock', 'perf']:.1f} perf_vs_stock={perf:.3f}"
      f" intel_bts={per['ours', 'intel_bts']:.1f}"
      f" intel_bts_stock={per['stock-nopti', 'intel_bts']:.1f}"
      f" intel_bts_vs_stock={bts:.3f}"
      f" intel_bts_all_nopti={per['ours-nopti', 'intel_bts_all']:.1f}"
      f" intel_bts_all_pti={per['ours', 'intel_bts_all']:.1f}"
      f" intel_bts_all_stock={per['stock-nopti', 'intel_bts_all']:.1f}")
EOF
