#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/bts-dump.sh [CASE...]: how fast, and in how much memory, bts-dump
# decodes and symbolizes a branch trace, against perf script printing the
# same fields for the same program's branches.
#
# Cases (all by default; bench/README.md defines them exactly):
#   shell      a shell starting 120 short dynamically linked processes
#   library    100,000 distinct branches through a shared library with
#              symbols and debuginfo (bench/gen-wide.py), 10 passes
#   processes  a shell starting 1,000 short processes
#
# In the test VM each case is recorded twice: by `bts-dump --format=raw`
# through /dev/bts, and by `perf record -e branches:u -c 1` (a sample a
# branch).  On the host, each tool turns its file into text with both ends
# symbolized and the source's file:line, output to /dev/null, one fresh
# process a run: elapsed seconds and peak resident memory (GNU time), and
# records per second.  BTS_DUMP=PATH measures another bts-dump binary on
# the same recordings (an older build, say); the recordings are kept in
# build/bench/bts-dump/ and made again only when missing.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/bts-dump"
built="$repo/tools/bts-dump/bts-dump"
dump=${BTS_DUMP:-$built}
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(shell library processes)

mkdir -p "$out/vm"
make -s -C "$repo/tools/bts-dump" >&2
if [ ! -e "$out/wide" ]; then
	python3 "$here/gen-wide.py" 5000 "$out/wide.c"
	gcc -O1 -g -shared -fPIC -o "$out/libwide.so" "$out/wide.c"
	printf '%s\n' '#include <stdlib.h>' 'void wide_run(int passes);' \
		'int main(int argc, char **argv)' \
		'{ wide_run(argc > 1 ? atoi(argv[1]) : 1); return 0; }' \
		>"$out/wide-main.c"
	gcc -O1 -g -o "$out/wide" "$out/wide-main.c" -L"$out" -lwide \
		-Wl,-rpath,"$out"
fi

command_of()
{
	case $1 in
	shell)		echo "sh -c 'for i in \$(seq 120); do /bin/true; done'" ;;
	library)	echo "'$out/wide' 10" ;;
	processes)	echo "sh -c 'for i in \$(seq 1000); do /bin/true; done'" ;;
	*)		echo "bench/bts-dump.sh: no case '$1'" >&2; exit 2 ;;
	esac
}

# One VM records what is missing, into the results folder (the only one
# the guest may write).  perf throttles an event whose PMIs take long,
# which under TCG they do, and drops samples: let it keep every branch.
record="$out/vm/record.sh"
echo 'set -e; echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent' >"$record"
need=0
for c in "${cases[@]}"; do
	cmd=$(command_of "$c")
	[ -s "$out/vm/$c.raw" ] && [ -s "$out/vm/$c.data" ] && continue
	need=1
	cat >>"$record" <<EOF
cd "$out/vm"
"$built" -q --format=raw -o $c.raw -- $cmd
perf record -q -N -B -d -m 4096 -e branches:u -c 1 -o $c.data -- $cmd \\
	>$c.perf.out 2>$c.perf.err
EOF
done
if [ $need = 1 ]; then
	"$repo/tests/vm/run" --results "$out/vm" --timeout 1800 -- \
		bash "$record" >"$out/vm.log" 2>&1 || {
		echo "bench/bts-dump.sh: recording in the VM failed:" >&2
		tail -20 "$out/vm.log" >&2
		exit 1
	}
fi

# measure NAME CMD...: one run of CMD, output to /dev/null; prints
# "seconds peak-KiB", or "failed" with CMD's status.
measure()
{
	local name=$1 rc=0
	shift
	/usr/bin/time -f '%e %M' -o "$out/$name.time" "$@" >/dev/null \
		2>"$out/$name.err" || rc=$?
	if [ $rc != 0 ]; then
		echo "failed (exit $rc)"
	else
		cat "$out/$name.time"
	fi
}

printf '%-10s %-34s %10s %9s %11s %10s\n' case tool records seconds \
	records/s "peak MiB"
for c in "${cases[@]}"; do
	branches=$("$built" -i "$out/vm/$c.raw" --format=jsonl |
		grep -c '"kind":"branch"' || true)
	samples=$(perf script -i "$out/vm/$c.data" -F ip 2>/dev/null | wc -l)
	lost=$(perf report --stats -i "$out/vm/$c.data" 2>/dev/null |
		awk '/LOST(_SAMPLES)? events/ { n += $3 } END { print n + 0 }')
	b=$(measure "$c.bts-dump" "$dump" -i "$out/vm/$c.raw")
	p=$(measure "$c.perf" perf script -i "$out/vm/$c.data" \
		-F ip,sym,symoff,addr,srcline)
	for row in "bts-dump -i (text)|$branches|$b" \
		"perf script -F ...,addr,srcline|$samples|$p"; do
		IFS='|' read -r tool n t <<<"$row"
		awk -v c="$c" -v tool="$tool" -v n="$n" -v t="$t" 'BEGIN {
			if (t ~ /failed/) {
				printf "%-10s %-34s %10d %s\n", c, tool, n, t
				exit
			}
			split(t, f, " ")
			printf "%-10s %-34s %10d %9.2f %11.0f %10.0f\n", c, tool,
				n, f[1], n / (f[1] > 0 ? f[1] : 0.01), f[2] / 1024
		}'
	done
	[ "$lost" = 0 ] || echo "           (perf: $lost LOST reports, its ring overflowed)"
done
