#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/qemu-bts-emu.sh: what the BTS emulation alone costs, without perf.
#
# 1. Speed.  bench/qemu-bts-emu/bts_bench.ko, loaded in the test VM (our
#    QEMU, the runner's CPU model), times a kernel-mode loop with 4 taken
#    branches and 13 other instructions per iteration, with interrupts
#    off, alternately with BTS off and with BTS on into a circular buffer
#    (BTINT clear, threshold beyond the absolute maximum, nothing
#    draining it).  Prints the median times, ns per record (the extra
#    time over the records written) and the slowdown of the loop.
# 2. Structure.  BTS off must leave translated code as stock QEMU makes
#    it.  A 64 KiB real-mode firmware (bench/qemu-bts-emu/tiny.S, a fixed
#    loop with interrupts off, so translation is deterministic) runs on
#    stock QEMU and on ours with the same -cpu, logging -d op,nochain; the
#    logs must be identical (but for exit_tb's host addresses, made
#    relative to the first).  As a control that the comparison can see a
#    difference, the firmware built with BTS_ON (it turns BTS on first;
#    stock QEMU ignores those MSRs) must give different logs.
#
# Figures, not pass/fail (but the structural comparison says which).
# Stock QEMU comes from build/bench/qemu-stock, built like bench/qemu-bts.sh
# does.  Environment: BENCH_EMU_ITERS (200000), BENCH_EMU_ROUNDS (9).
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/qemu-bts-emu"
ours="$repo/build/qemu/obj/qemu-system-x86_64"
stock="$repo/build/bench/qemu-stock/obj/qemu-system-x86_64"
iters=${BENCH_EMU_ITERS:-200000}
rounds=${BENCH_EMU_ROUNDS:-9}
# The runner's CPU model (tests/vm/run's default_cpu)
cpu="max,vendor=GenuineIntel,family=6,model=16,stepping=1"
cpu+=",+ds,+dtes64,+ds-cpl,+pdcm,pmu=on"

mkdir -p "$out" "$repo/build/bench/no-patches"
[ -e "$repo/build/bench/no-patches/series" ] || : >"$repo/build/bench/no-patches/series"
if ! nice "$repo/workbench/qemu.sh" "$repo/build/bench/qemu-stock" \
	"$repo/build/bench/no-patches" >"$out/qemu-stock.log" 2>&1; then
	cat "$out/qemu-stock.log" >&2
	exit 1
fi

echo "== BTS emulation alone: a kernel loop, BTS off and on (circular, BTINT clear)"
cp "$here/qemu-bts-emu/bts_bench.c" "$here/qemu-bts-emu/Kbuild" "$out/"
nice make -s -C "$repo/build/linux" O="$repo/build/kernel" M="$out" modules >"$out/build.log" 2>&1 || {
	cat "$out/build.log" >&2
	exit 1
}
res=$(mktemp -d "$repo/build/bench/qemu-bts-emu/vm.XXXXXX")
"$repo/tests/vm/run" --timeout 300 --results "$res" -- bash -c \
	"insmod $out/bts_bench.ko iters=$iters rounds=$rounds; dmesg | grep bts_bench:; exit 0" \
	>"$res/out.txt" 2>&1 || true
if ! grep -q 'bts_bench: ns/record' "$res/out.txt"; then
	echo "bench: no figures; output in ${res#"$repo"/}" >&2
	cat "$res/out.txt" >&2
	exit 1
fi
sed -E 's/^\[[ 0-9.]+\] //' "$res/out.txt" | grep '^bts_bench:'
rm -rf "$res"

echo "== BTS off: translated code (-d op) of a fixed firmware, stock QEMU vs ours"
for v in off on; do
	def=()
	[ $v = off ] || def=(-DBTS_ON)
	gcc -m32 -c "${def[@]}" -x assembler-with-cpp \
		"$here/qemu-bts-emu/tiny.S" -o "$out/tiny-$v.o"
	ld -m elf_i386 -Ttext 0 -e 0 --oformat=binary -o "$out/tiny-$v.bin" "$out/tiny-$v.o"
	for q in stock ours; do
		rc=0
		timeout 60 "${!q}" -accel tcg -cpu "$cpu" -bios "$out/tiny-$v.bin" \
			-L /usr/share/seabios -L /usr/share/qemu -nodefaults -display none \
			-device isa-debug-exit,iobase=0xf4,iosize=4 \
			-d op,nochain -D "$out/op-$q-$v.log" 2>"$out/stderr-$q-$v.log" || rc=$?
		if [ $rc -ne 1 ]; then
			echo "bench: $q QEMU on tiny-$v.bin exited $rc, not 1" >&2
			cat "$out/stderr-$q-$v.log" >&2
			exit 1
		fi
	done
	# exit_tb's operand is a host address in the code buffer, which is
	# mapped anywhere: make it relative to the first one
	for q in stock ours; do
		perl -pe 's/(exit_tb \$)0x([0-9a-f]{8,})/$b = hex($2) unless defined $b;
			$1 . "first" . sprintf("%+d", hex($2) - $b)/e' \
			"$out/op-$q-$v.log" >"$out/op-$q-$v.norm"
	done
	ops=$(grep -c '^ ' "$out/op-ours-$v.log" || true)
	tbs=$(grep -c '^OP:' "$out/op-ours-$v.log" || true)
	if cmp -s "$out/op-stock-$v.norm" "$out/op-ours-$v.norm"; then
		verdict=identical
	else
		verdict="different ($(diff "$out/op-stock-$v.norm" "$out/op-ours-$v.norm" |
			grep -c '^[<>]' || true) lines differ)"
	fi
	case $v in
	off) echo "BTS off: $tbs TBs, $ops ops: stock and ours $verdict" ;;
	on) echo "control, BTS on (stock ignores it): stock and ours $verdict;" \
		"ours calls bts_branch in $(grep -c 'call bts_branch' "$out/op-ours-on.log" ||
		true) places" ;;
	esac
done
