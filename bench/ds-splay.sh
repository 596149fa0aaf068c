#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Instructions per record to filter and splay branch records into 1, 2
# and 5 consumer streams (ds_splay() in arch/x86/kernel/ds_core.c),
# against a plain memcpy of the same records as many times.  Counted by
# callgrind on tools/testing/ds/bench.c, so the figures are exact and
# repeatable, not timings.
set -euo pipefail

repo=$(realpath "$(dirname "$0")/..")
out="$repo/build/bench/ds-splay"
mkdir -p "$out"
gcc -O2 -g -Wall -Wextra -Werror -I"$repo/tools/testing/ds" \
	-o "$out/ds_bench" "$repo/tools/testing/ds/bench.c"

# ir MODE N: instructions in the measured function, per record
ir()
{
	local fn='ds_splay*' records total
	[ "$1" = splay ] || fn='bench_copy*'
	records=$(valgrind --tool=callgrind --toggle-collect="$fn" \
		--callgrind-out-file="$out/callgrind.$1.$2" \
		"$out/ds_bench" "$1" "$2" 2>"$out/valgrind.$1.$2" |
		awk '{ print $2 }')
	total=$(sed -n 's/^==[0-9]*== Collected : //p' "$out/valgrind.$1.$2")
	echo "$total $records" | awk '{ printf "%.1f", $1 / $2 }'
}

printf '%-10s %14s %14s %8s\n' streams 'splay Ir/rec' 'memcpy Ir/rec' ratio
for n in 1 2 5; do
	s=$(ir splay $n)
	m=$(ir memcpy $n)
	r=$(echo "$s $m" | awk '{ printf "%.1f", $1 / $2 }')
	printf '%-10s %14s %14s %8s\n' "$n" "$s" "$m" "$r"
	echo "bench: ds_splay streams=$n ir_per_record=$s memcpy_ir_per_record=$m ratio=$r"
done
echo "(streams: 1 = user-only; 2 = + kernel-only; 5 = + kernel+user, user ring, kernel+user ring)"
