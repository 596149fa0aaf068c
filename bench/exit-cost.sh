#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/exit-cost.sh: what tracing with /dev/bts costs a process that
# starts many short children, as a build does.  exit-cost.c in the guest
# (our QEMU, TCG, 2 vCPUs) times fork, exit and wait of a child, one at a
# time, median of BENCH_ROUNDS (5) rounds of BENCH_CHILDREN (100)
# children, untraced and traced with BTS_ATTACH_INHERIT while the trace
# is read.  Figures, never pass/fail: the host's load moves them.  About
# 30 s.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/exit-cost"
mkdir -p "$out"
cc -O2 -Wall -I"$repo/include/uapi" -o "$out/exit-cost" "$here/exit-cost.c"
"$repo/tests/vm/run" -- "$out/exit-cost" "${BENCH_CHILDREN:-100}" \
	"${BENCH_ROUNDS:-5}" >"$out/result" 2>"$out/stderr" || {
	cat "$out/stderr" >&2
	exit 1
}
awk '/^untraced/ { u = $2 } /^traced/ { t = $2 }
	END { printf "fork+exit+wait untraced: %8.1f us\nfork+exit+wait traced:   %8.1f us\nratio:                   %8.2f\n", u, t, t / u }' "$out/result"
