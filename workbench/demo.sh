#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: show what the project does today.  It grows with each
# capability; for now it boots the test kernel on the emulated Intel CPU
# and shows the pieces the branch tracer builds on.
set -euo pipefail

repo=$(realpath "$(dirname "$0")/..")

echo "== Booting the bts test kernel under QEMU TCG and looking around =="
"$repo/tests/vm/run" -- bash -c '
	echo "kernel:   $(uname -r)"
	echo "cpu:      $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2-)"
	echo "ds flags: $(grep -m1 ^flags /proc/cpuinfo | tr " " "\n" |
		grep -E -x "dts|dtes64|ds_cpl|bts|pebs|pdcm|arch_perfmon" | xargs)"
	echo "perf pmu: $(ls /sys/bus/event_source/devices | xargs)"
	echo
	echo "== perf counts a command in the guest =="
	perf stat -e task-clock,context-switches -- ls / >/dev/null
'
