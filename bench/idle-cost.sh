#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/idle-cost.sh: what the DS layer costs when nobody uses it.
#
# Guest instructions per getpid() and per context switch, on the stock
# kernel (Debian's 6.12 source, no overlay, no patches, the same config
# fragments: `workbench/kernel.sh REPO BUILD stock`, built into
# build/kernel-stock the first time) and on ours (build/kernel), with no
# DS consumer.  Counted, not timed: the TCG plugin insn-marks.c counts
# every instruction the guest executes, user and kernel, between marker
# instructions that the guest program idle-cost.c executes around
# each loop:
#   getpid   GETPIDS calls of getpid()
#   switch   two processes pinned to CPU 0 taking turns with sched_yield():
#            each iteration of the measuring process is two context
#            switches (to the other process and back); the figure is the
#            region's instructions over the switches /proc/stat counted
#            (one sched_yield() syscall per switch included)
# A third case, busy, is ours with the layer active for someone else: a
# /dev/bts consumer of a process that sleeps all the while (the program's
# "consumer" argument), so that the measured tasks have no consumer.  A
# fourth, recorder, is ours with the bts ftrace tracer on as it comes
# (both sides, N = 2048): the flight recorder the hardware writes as a
# ring, what it costs the CPU it records.  A fifth, partner, is the
# recorder with a /dev/bts ring consumer of the process the measuring one
# switches to and from (the program's "partner" argument): each switch to
# it takes the CPU out of the hardware ring, each switch back returns.
# A sixth, persist, is the recorder with its rings in memory a reset keeps
# (reserve_mem=4M:4096:bts bts_persist=bts): the same code, its save area
# and staging buffer mapped from that region; it must cost what the
# recorder does.
# Both kernels boot on our QEMU with the runner's CPU model (DS, BTS),
# one vCPU (the plugin's counter is not atomic), and -icount shift=0,
# sleep=off, so that timer interrupts come at fixed instruction counts
# rather than with the host's load.  Each VM repeats both loops REPS
# times (after a short sleep that lets pending RCU and workqueue work run
# first) and the figure is the median; the whole is done RUNS times to
# show run-to-run repeatability.
#
# The kernels boot without running the KUnit suites built in
# (kunit.enable=0), which would only make each boot longer.
# Each kernel boots twice per run: as it comes, and with
# indirect_target_selection=off.  The emulated CPU is subject to ITS, so
# the kernel sends every return and indirect branch that sits in the lower
# half of a cache line through a thunk, one more instruction: the count
# then depends on where the linker put each function, which any change to
# the kernel moves.  With ITS off it does not, so that figure is what the
# code itself costs.  Figures, never pass/fail: see README.md.
#
# Environment: BENCH_GETPIDS (100000), BENCH_SWITCHES (20000),
# BENCH_REPS (3), BENCH_RUNS (2), BENCH_KINDS (all six; a subset, e.g.
# "recorder partner", skips the others, the stock kernel's build among
# them, and prints each kind's figures alone).  About 3 minutes once the stock kernel
# is built; building it takes about 8 minutes the first time (and after a
# change to configs/), seconds when it is up to date.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/idle-cost"
vm="$repo/tests/vm/run"

getpids=${BENCH_GETPIDS:-100000}
switches=${BENCH_SWITCHES:-20000}
reps=${BENCH_REPS:-3}
runs=${BENCH_RUNS:-2}
all_kinds="stock ours busy recorder partner persist"
kinds=${BENCH_KINDS:-$all_kinds}
for k in $kinds; do
	case " $all_kinds " in
	*" $k "*) ;;
	*) echo "bench: BENCH_KINDS: no kind $k (of $all_kinds)" >&2; exit 2 ;;
	esac
done

ours="$repo/build/kernel/arch/x86/boot/bzImage"
stock="$repo/build/kernel-stock/arch/x86/boot/bzImage"

mkdir -p "$out"
start=$SECONDS

if [[ " $kinds " == *" stock "* ]]; then
	[ -e "$stock" ] ||
		echo "bench: building the stock kernel in build/kernel-stock (first run only)" >&2
	if ! nice "$repo/workbench/kernel.sh" "$repo" "$repo/build" stock \
		>"$out/kernel-stock.log" 2>&1; then
		cat "$out/kernel-stock.log" >&2
		exit 1
	fi
fi
if [ ! -e "$ours" ]; then
	echo "bench: $ours missing (run 'make kernel qemu' first)" >&2
	exit 1
fi

if [ "$out/idle-cost" -ot "$here/idle-cost.c" ]; then
	gcc -static -O2 -Wall -I"$repo/include/uapi" -o "$out/idle-cost" \
		"$here/idle-cost.c"
fi
"$here/build-plugin.sh" "$here/insn-marks.c" "$out/libinsn-marks.so" \
	"$repo/build/qemu/src/include/qemu"

results="$out/results"
rm -rf "$results"
mkdir -p "$results"

# guest KERNEL ITS RUN APPEND: boot the stock kernel or ours (KERNEL
# stock, ours, busy: ours with a consumer of another task, recorder:
# ours with the bts tracer on, partner: the recorder and a consumer of
# the measured switches' other task, or persist: the recorder in the
# region a reset keeps), with APPEND
# on its command line, and run the program under the plugin: the kernel's
# release and the program's lines go to $dir.out, the plugin's to
# $dir.plugin.
guest()
{
	local kernel=$ours dir="$results/$1.its-$2.$3" extra=() setup=
	[ "$1" != stock ] || kernel=$stock
	[ "$1" != busy ] || extra=(consumer)
	[ "$1" != partner ] || extra=(partner)
	local boot=
	[ "$1" != persist ] || boot="reserve_mem=4M:4096:bts bts_persist=bts"
	[ "$1" != recorder ] && [ "$1" != partner ] && [ "$1" != persist ] ||
		setup="echo 1 >/proc/sys/kernel/bts_kernel_recording &&
			echo bts >/sys/kernel/tracing/current_tracer &&"
	if ! "$vm" --kernel "$kernel" --smp 1 --results "$dir" --timeout 300 \
		--append "kunit.enable=0 $boot $4" \
		--qemu-arg -icount --qemu-arg shift=0,sleep=off \
		--qemu-arg -plugin --qemu-arg "$out/libinsn-marks.so" \
		--qemu-arg -d --qemu-arg plugin \
		--qemu-arg -D --qemu-arg "$dir.plugin" \
		-- bash -c "$setup"' uname -r; exec "$@"' - \
		"$out/idle-cost" "$getpids" "$switches" "$reps" "${extra[@]}" \
		>"$dir.out" 2>"$dir.err"; then
		echo "bench: VM for $1 failed; see $dir.err and $dir/" >&2
		cat "$dir.err" >&2
		exit 1
	fi
}

for ((r = 1; r <= runs; r++)); do
	for its in on off; do
		append=
		[ $its = on ] || append=indirect_target_selection=off
		for k in $kinds; do
			echo "bench: run $r of $runs, ITS $its, $k kernel" >&2
			guest "$k" "$its" "$r" "$append"
		done
	done
done

python3 - "$results" "$runs" "$((SECONDS - start))" "$kinds" <<'EOF' | tee "$results/report"
import re, statistics, sys

results, runs, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
chosen = sys.argv[4].split()
names = {1: "getpid", 2: "switch"}

def measure(base):
    """The kernel's release, and per region the list, one per repetition,
    of instructions per getpid() or per context switch."""
    lines = open(base + ".out").read().splitlines()
    release = lines[0]
    prog = {1: [], 2: []}
    for l in lines[1:]:
        m = re.match(r"region (\d) \S+ iters=(\d+) ctxt=(\d+) ticks=(\d+)", l)
        if m:
            prog[int(m[1])].append((int(m[2]), int(m[3])))
    insns = {1: [], 2: []}
    msrs = {1: [], 2: []}
    for l in open(base + ".plugin"):
        m = re.match(r"region (\d) insns=(\d+) rdmsr=(\d+) wrmsr=(\d+)", l)
        if m:
            insns[int(m[1])].append(int(m[2]))
            msrs[int(m[1])].append((int(m[3]), int(m[4])))
        elif l.startswith("region"):
            sys.exit(f"bench: {base}.plugin: {l.strip()}")
    per, msr = {}, {}
    for id in (1, 2):
        if len(prog[id]) != len(insns[id]) or not insns[id]:
            sys.exit(f"bench: {base}: program and plugin disagree on region {id}")
        # getpid: per call; switch: per switch the kernel counted.
        per[id] = [n / (iters if id == 1 else ctxt)
                   for (iters, ctxt), n in zip(prog[id], insns[id])]
        msr[id] = [(rd / (iters if id == 1 else ctxt),
                    wr / (iters if id == 1 else ctxt))
                   for (iters, ctxt), (rd, wr) in zip(prog[id], msrs[id])]
    return release, per, msr

kinds = ("stock", "ours", "busy", "recorder", "partner", "persist")
fig = {(k, its, r): measure(f"{results}/{k}.its-{its}.{r}")
       for k in chosen for its in ("on", "off")
       for r in range(1, runs + 1)}
reps = len(fig[chosen[0], "on", 1][1][1])
lines = []

def msr_table():
    """RDMSRs and WRMSRs of each kind chosen, run 1."""
    print("\nRDMSR and WRMSR (any MSR) per getpid() and per context switch,"
          " median of the repetitions, run 1")
    print(f"{'':<7} {'ITS':<4}" + "".join(f" {k + ' rd/wr':>17}" for k in chosen))
    for id in (1, 2):
        for its in ("on", "off"):
            cols = []
            for k in chosen:
                v = fig[k, its, 1][2][id]
                rd = statistics.median(x[0] for x in v)
                wr = statistics.median(x[1] for x in v)
                cols.append(f" {rd:>8.2f}/{wr:<8.2f}")
                lines.append(f"bench: idle_msr_{names[id]} its={its} kind={k}"
                             f" rdmsr={rd:.2f} wrmsr={wr:.2f}")
            print(f"{names[id]:<7} {its:<4}" + "".join(cols))

if set(chosen) != set(kinds):
    # A subset (BENCH_KINDS): each kind's figures alone.
    print("guest instructions (user + kernel) per getpid() and per context"
          f" switch, median of {reps} repetitions per VM")
    print(f"{'':<7} {'ITS':<4} {'run':>3}" + "".join(f" {k:>10}" for k in chosen))
    for id in (1, 2):
        for its in ("on", "off"):
            for r in range(1, runs + 1):
                m = {k: statistics.median(fig[k, its, r][1][id]) for k in chosen}
                print(f"{names[id]:<7} {its:<4} {r:>3}"
                      + "".join(f" {m[k]:>10.2f}" for k in chosen))
                lines.append(f"bench: idle_{names[id]} its={its} run={r} "
                             + " ".join(f"{k}={m[k]:.2f}" for k in chosen))
    msr_table()
    print(f"(kernel: ours {fig[chosen[0], 'on', 1][0]}; ITS off:"
          f" indirect_target_selection=off; {secs} s)")
    print("\n".join(lines))
    sys.exit(0)

print("guest instructions (user + kernel) per getpid() and per context switch,"
      f" median of {reps} repetitions\nper VM; spread: (max - min) / median"
      " of the repetitions")
print(f"{'':<7} {'ITS':<4} {'run':>3} {'stock':>9} {'spread':>7}"
      f" {'ours':>9} {'spread':>7} {'ours-stock':>10} {'ratio':>7}"
      f" {'busy':>9} {'busy-stock':>10} {'ratio':>7}"
      f" {'recorder':>9} {'rec-stock':>10} {'ratio':>7}"
      f" {'partner':>9} {'part-rec':>10}"
      f" {'persist':>9} {'pers-rec':>10}")
for id in (1, 2):
    for its in ("on", "off"):
        for r in range(1, runs + 1):
            m, sp = {}, {}
            for k in kinds:
                v = fig[k, its, r][1][id]
                m[k] = statistics.median(v)
                sp[k] = (max(v) - min(v)) / m[k]
            ratio = m["ours"] / m["stock"]
            busy = m["busy"] / m["stock"]
            rec = m["recorder"] / m["stock"]
            print(f"{names[id]:<7} {its:<4} {r:>3} {m['stock']:>9.2f} {sp['stock']:>7.0e}"
                  f" {m['ours']:>9.2f} {sp['ours']:>7.0e}"
                  f" {m['ours'] - m['stock']:>+10.2f} {ratio:>7.4f}"
                  f" {m['busy']:>9.2f} {m['busy'] - m['stock']:>+10.2f}"
                  f" {busy:>7.4f}"
                  f" {m['recorder']:>9.2f} {m['recorder'] - m['stock']:>+10.2f}"
                  f" {rec:>7.4f}"
                  f" {m['partner']:>9.2f}"
                  f" {m['partner'] - m['recorder']:>+10.2f}"
                  f" {m['persist']:>9.2f}"
                  f" {m['persist'] - m['recorder']:>+10.2f}")
            lines.append(f"bench: idle_{names[id]} its={its} run={r}"
                         f" stock={m['stock']:.2f} ours={m['ours']:.2f}"
                         f" ratio={ratio:.4f} busy={m['busy']:.2f}"
                         f" busy_ratio={busy:.4f} recorder={m['recorder']:.2f}"
                         f" recorder_ratio={rec:.4f}"
                         f" partner={m['partner']:.2f}"
                         f" persist={m['persist']:.2f}")
msr_table()
print(f"(kernels: stock {fig['stock', 'on', 1][0]}, ours {fig['ours', 'on', 1][0]};"
      f" ITS off: indirect_target_selection=off; {secs} s)")
print("\n".join(lines))
EOF
