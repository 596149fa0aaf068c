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

# ir MODE N [user]: instructions in the measured function, per record
ir()
{
	local fn='ds_splay*' records total tag=$1.$2${3:+.$3}
	[ "$1" = splay ] || fn='bench_copy*'
	records=$(valgrind --tool=callgrind --toggle-collect="$fn" \
		--callgrind-out-file="$out/callgrind.$tag" \
		"$out/ds_bench" "$@" 2>"$out/valgrind.$tag" |
		awk '{ print $2 }')
	total=$(sed -n 's/^==[0-9]*== Collected : //p' "$out/valgrind.$tag")
	echo "$total $records" | awk '{ printf "%.1f", $1 / $2 }'
}

printf '%-6s %-10s %14s %14s %8s\n' mix streams 'splay Ir/rec' \
	'memcpy Ir/rec' ratio
for mix in both user; do
	for n in 1 2 5; do
		s=$(ir splay $n ${mix#both})
		m=$(ir memcpy $n ${mix#both})
		r=$(echo "$s $m" | awk '{ printf "%.1f", $1 / $2 }')
		printf '%-6s %-10s %14s %14s %8s\n' "$mix" "$n" "$s" "$m" "$r"
		echo "bench: ds_splay mix=$mix streams=$n ir_per_record=$s memcpy_ir_per_record=$m ratio=$r"
	done
done
echo "(streams: 1 = user-only; 2 = + kernel-only; 5 = + kernel+user, user ring, kernel+user ring)"
echo "(mix: both = the hardware records both privileges, the KERNEL records ds.c stages among them;"
echo " user = only user-only consumers on the CPU: BTS_OFF_OS, user branches, returns and staged records)"
