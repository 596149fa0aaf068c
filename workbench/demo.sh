#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: show what the project does today.  It grows with each
# capability; for now it boots the test kernel on the emulated Intel CPU
# with BTS and shows upstream perf and gdb tracing a program's branches.
set -euo pipefail

repo=$(realpath "$(dirname "$0")/..")
out="$repo/build/demo"
mkdir -p "$out"
# The calls test program: recursion and calls through function pointers.
gcc -static -no-pie -O1 -g -o "$out/calls" "$repo/tests/bts/progs/calls.c"

"$repo/tests/vm/run" --results "$out" -- bash -c '
	set -e
	cd /tmp
	echo "== The test VM: our kernel on an emulated Intel CPU with BTS =="
	echo "kernel:   $(uname -r), $(nproc) CPUs"
	echo "ds flags: $(grep -m1 ^flags /proc/cpuinfo | tr " " "\n" |
		grep -E -x "dts|dtes64|ds_cpl|bts|pebs|pdcm|arch_perfmon" | xargs)"
	dmesg | grep -m1 "Performance Events"
	echo
	echo "== perf record -e branches:u -c 1: every user-mode branch of a program =="
	perf record -q -N -B -d -e branches:u -c 1 -m 256 -o /tmp/p.data -- '"$out"'/calls
	echo "$(perf script -i /tmp/p.data -F ip | wc -l) branches recorded; the first calls of the program'"'"'s own functions:"
	perf script -i /tmp/p.data -F ip,addr,sym 2>/dev/null |
		grep -E " (main|rec|leaf|op_[a-z]+|stop_here)$" | head -12
	echo
	echo "== gdb: record btrace bts, then the call history of main() =="
	gdb -nx -batch -ex "set record function-call-history-size unlimited" \
		-ex "break main" -ex run -ex "record btrace bts" \
		-ex "break stop_here" -ex continue -ex finish \
		-ex "record function-call-history /c" -ex kill \
		--args '"$out"'/calls 2>&1 | sed -n "/^1\t/,/^Kill/p" | grep -v ^Kill
'
