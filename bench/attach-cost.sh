#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/attach-cost.sh: what a /dev/bts attach and close cost, when the
# consumer is the layer's only one (the first request sets the layer up,
# the last release takes it down) and when another consumer stays
# attached (the attach and release alone).  Wall time per cycle in the
# guest (our QEMU, TCG, 2 vCPUs), median of BENCH_ROUNDS (5) rounds of
# BENCH_CYCLES (100) cycles, and what the cycles cost every CPU: the
# function-call IPIs and TLB shootdowns per cycle that /proc/interrupts
# counts on all CPUs.  The difference between the two cases is what
# setting the layer up and taking it down cost.  Figures, never
# pass/fail: a loaded host moves the times.  About 30 s.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/attach-cost"
mkdir -p "$out"
cc -O2 -Wall -I"$repo/include/uapi" -o "$out/attach-cost" "$here/attach-cost.c"
"$repo/tests/vm/run" -- "$out/attach-cost" "${BENCH_CYCLES:-100}" \
	"${BENCH_ROUNDS:-5}" >"$out/result" 2>"$out/stderr" || {
	cat "$out/stderr" >&2
	exit 1
}
awk 'BEGIN { print "per attach+close cycle     us   IPIs  TLB shootdowns" }
	/^(alone|beside) / {
		printf "%-20s %8.1f %6.2f %6.2f\n",
			$1 == "alone" ? "the only consumer" : "beside another", $2, $3, $4
	}' "$out/result"
