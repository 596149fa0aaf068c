#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/detach-cost.sh: how long a /dev/bts file takes to let go of a
# process of BENCH_THREADS (128) running threads, as bts-dump -p does when
# it is stopped: BTS_IOC_DETACH then close(), and close() alone.
# detach-cost.c in the guest (our QEMU, TCG, 2 vCPUs).  Figures, never
# pass/fail: the host's load moves them.  About 40 s.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/detach-cost"
mkdir -p "$out"
cc -O2 -Wall -pthread -I"$repo/include/uapi" -o "$out/detach-cost" \
	"$here/detach-cost.c"
threads=${BENCH_THREADS:-128}
"$repo/tests/vm/run" -- "$out/detach-cost" "$threads" >"$out/result" \
	2>"$out/stderr" || {
	cat "$out/stderr" >&2
	exit 1
}
awk -v n="$threads" '
	{ ms[$1] = $2 }
	END {
		printf "%d threads: BTS_IOC_DETACH %8.1f ms\n", n, ms["detach"]
		printf "%d threads: close after it %8.1f ms\n", n, ms["close-after-detach"]
		printf "%d threads: close alone    %8.1f ms\n", n, ms["close"]
	}' "$out/result"
