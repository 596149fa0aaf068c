#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest runs the host's own tools that the later suites drive, against
# our kernel: perf (perf_event_open), gdb (ptrace), python3, and the
# user_events ABI in tracefs.
set -eux

perf --version
perf stat -e task-clock -x, -- true
gdb -q -batch -ex run -ex 'info inferiors' --args /bin/true
python3 -c 'import os; assert os.uname().release.endswith("-bts") or "-bts-" in os.uname().release'
test -e /sys/kernel/tracing/user_events_data
test -e /sys/kernel/tracing/user_events_status
