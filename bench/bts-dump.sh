#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/bts-dump.sh [ITERATIONS]: how fast bts-dump decodes and symbolizes
# a branch trace, against perf script on the same program's branches.
#
# In the test VM, the same run of bench/workload.c (ITERATIONS loop
# iterations, default 100000: about 0.9 M user branches) is recorded twice:
# by `bts-dump --format=raw` through /dev/bts, and by `perf record -e
# branches:u -c 1` (one sample per branch).  On the host, each tool then
# turns its file into symbolized text, best of three runs:
#
#   bts-dump -i FILE                  function+offset of both ends, and
#                                     file:line where DWARF exists
#   bts-dump -i FILE --format=jsonl   the same, as JSON
#   perf script -F ip,sym,symoff,addr the source symbolized, the target
#                                     as an address (perf script has no
#                                     field for the target's symbol)
#
# and the figures are records per second.  They compare decoders, not
# tracing methods: the recording costs are bench/qemu-bts.sh's business.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/bts-dump"
iters=${1:-100000}
dump="$repo/tools/bts-dump/bts-dump"

mkdir -p "$out"
make -s -C "$repo/tools/bts-dump" >&2
gcc -O1 -g -static -no-pie -o "$out/workload" "$here/workload.c"
res="$out/results"
rm -rf "$res"
mkdir -p "$res/vm"

# One VM: both recordings, without ASLR so both see the same addresses,
# into the results folder (the only one the guest may write).
cat >"$res/record.sh" <<EOF
set -e
cd "$res/vm"
# perf throttles an event whose PMIs take long, which under TCG they do,
# and drops samples: let it keep every branch.
echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent
setarch x86_64 -R "$dump" -q --format=raw -o trace.raw -- \\
	"$out/workload" $iters 64 1 >bts-dump.out
setarch x86_64 -R perf record -q -N -B -d -m 1024 -e branches:u -c 1 \\
	-o perf.data -- "$out/workload" $iters 64 1 >perf.out 2>perf.err
EOF
"$repo/tests/vm/run" --append nopti --results "$res/vm" --timeout 900 -- \
	bash "$res/record.sh" >"$res/vm.log" 2>&1 || {
	echo "bench/bts-dump.sh: recording in the VM failed:" >&2
	tail -20 "$res/vm.log" >&2
	exit 1
}

# best NAME CMD...: the fastest of three runs of CMD, in seconds, output
# to $res/NAME.txt.
best()
{
	local name=$1 i t0 t min=
	shift
	for i in 1 2 3; do
		t0=$EPOCHREALTIME
		"$@" >"$res/$name.txt" 2>"$res/$name.err"
		t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
		min=$(awk -v t="$t" -v m="${min:-$t}" 'BEGIN { print (t < m ? t : m) }')
	done
	echo "$min"
}

branches=$("$dump" -i "$res/vm/trace.raw" --format=jsonl |
	grep -c '"kind":"branch"')
samples=$(perf script -i "$res/vm/perf.data" -F ip 2>/dev/null | wc -l)
t_text=$(best text "$dump" -i "$res/vm/trace.raw")
t_json=$(best jsonl "$dump" -i "$res/vm/trace.raw" --format=jsonl)
t_perf=$(best perf perf script -i "$res/vm/perf.data" -F ip,sym,symoff,addr)

echo "bts-dump vs perf script: workload $iters iterations"
echo "  bts-dump: $branches branches in $(stat -c %s "$res/vm/trace.raw") bytes raw"
lost=$(perf report --stats -i "$res/vm/perf.data" 2>/dev/null |
	awk '/LOST(_SAMPLES)? events/ { n += $3 } END { print n + 0 }')
echo "  perf:     $samples samples ($lost LOST reports: perf fell behind) in $(stat -c %s "$res/vm/perf.data") bytes"
awk -v n="$branches" -v s="$samples" -v a="$t_text" -v b="$t_json" \
	-v c="$t_perf" 'BEGIN {
	printf "  bts-dump -i (text, sym+line both ends): %7.3f s  %6.2f M records/s\n", a, n / a / 1e6
	printf "  bts-dump -i --format=jsonl:             %7.3f s  %6.2f M records/s\n", b, n / b / 1e6
	printf "  perf script -F ip,sym,symoff,addr:      %7.3f s  %6.2f M records/s\n", c, s / c / 1e6
	printf "  bts-dump text / perf script speed:      %7.2fx\n", (n / a) / (s / c)
}'
