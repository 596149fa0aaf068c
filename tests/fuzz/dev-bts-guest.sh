#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/fuzz/dev-bts-guest.sh FUZZER SECONDS SEED OUTDIR: in the test VM,
# fuzz /dev/bts as root and as nobody, then once more with EINVAL counted
# as unexpected (the checker's self-test).  Each run's output and exit
# status go to OUTDIR/NAME.out and NAME.rc.
set -u
fuzzer=$1 secs=$2 seed=$3 out=$4

run()		# run NAME CMD...
{
	local name=$1
	shift
	"$@" >"$out/$name.out" 2>&1
	echo $? >"$out/$name.rc"
}

run root "$fuzzer" "$secs" "$seed"
run nobody setpriv --reuid=nobody --regid="$(id -g nobody)" \
	--clear-groups "$fuzzer" "$secs" "$((seed + 1))"
run strict "$fuzzer" 5 "$seed" --strict-einval
