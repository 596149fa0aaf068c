#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/gdb-stop-cost.sh: what the gdb extension (tools/bts-dump/gdb/bts.py)
# adds to each stop of the program.  gdb records marker-cost
# (bench/marker-cost.c, 20,000 events) with `record btrace bts`, the
# extension subscribed to its event, and stops it in printf(), after its loop, with the
# thread's ring full (65,536 records, the default); then single-steps it
# (stepi) N times, each a stop at which the extension reads the ring
# (BTS_IOC_SNAPSHOT) and looks for new markers, then N times more with the
# subscription off.  Prints milliseconds per stop each way, and what one
# reading of the full ring took (the snapshot, then finding its markers).
#
# Guest wall clock under TCG, on a host that may be busy: read the
# figures against each other, not as a machine's.  Environment:
# BENCH_STEPS (200).  About a minute.
set -euo pipefail

here=$(dirname "$(realpath "$0")")
repo=$(realpath "$here/..")
out="$repo/build/bench/gdb-stop-cost"
kernel="$repo/build/kernel/arch/x86/boot/bzImage"
steps=${BENCH_STEPS:-200}

if [ ! -e "$kernel" ]; then
	echo "bench: $kernel missing (run 'make kernel qemu' first)" >&2
	exit 1
fi
mkdir -p "$out/include/linux"
cp "$repo/build/linux/include/uapi/linux/user_events.h" "$out/include/linux/"
gcc -static -O2 -Wall -I"$out/include" -o "$out/marker-cost" \
	"$here/marker-cost.c"
rm -rf "$out/results"
mkdir -p "$out/results"

cat >"$out/stops.py" <<EOF
import time

import gdb


def per_stop(n):
    start = time.perf_counter()
    for _ in range(n):
        gdb.execute("stepi", to_string=True)
    return (time.perf_counter() - start) / n * 1e3


def ring_read():
    s = _session()
    lwp = gdb.selected_thread().ptid[1]
    start = time.perf_counter()
    data = s._snapshot(lwp)
    mid = time.perf_counter()
    markers = len(Stream(lwp, data).markers)
    end = time.perf_counter()
    return len(data) // RECORD.size, markers, (mid - start) * 1e3, \\
        (end - mid) * 1e3


records, markers, snap, parse = ring_read()
on = per_stop($steps)
gdb.execute("bts markers off")
off = per_stop($steps)
print("bench: gdb_stop_cost steps=%d ms_per_stop_subscribed=%.2f "
      "ms_per_stop_off=%.2f ring_records=%d ring_markers=%d "
      "snapshot_ms=%.2f parse_ms=%.2f" % ($steps, on, off, records,
                                          markers, snap, parse))
EOF

cat >"$out/results/guest.sh" <<EOF
set -eu
mountpoint -q /sys/kernel/tracing ||
	mount -t tracefs nodev /sys/kernel/tracing
gdb -nx -batch -ex "source $repo/tools/bts-dump/gdb/bts.py" \
	-ex "break main" -ex run -ex "record btrace bts" \
	-ex "bts markers bench_ev" -ex "break printf" -ex continue \
	-ex "source $out/stops.py" -ex kill --args "$out/marker-cost" 20000
EOF

if ! "$repo/tests/vm/run" --kernel "$kernel" --smp 1 --timeout 900 \
	--results "$out/results/vm" -- bash "$out/results/guest.sh" \
	>"$out/results/out" 2>"$out/results/err"; then
	echo "bench: the VM failed; see $out/results/err" >&2
	cat "$out/results/err" >&2
	exit 1
fi
line=$(grep '^bench: gdb_stop_cost' "$out/results/out") || {
	echo "bench: no figures; see $out/results/out" >&2
	exit 1
}
echo "$line"
python3 - "$line" <<'EOF'
import sys

f = dict(w.split("=") for w in sys.argv[1].split()[2:])
on, off = float(f["ms_per_stop_subscribed"]), float(f["ms_per_stop_off"])
print(f"per stop: {on:.2f} ms subscribed, {off:.2f} ms not "
      f"(+{on - off:.2f} ms); one full ring ({f['ring_records']} records, "
      f"{f['ring_markers']} markers): snapshot {f['snapshot_ms']} ms, "
      f"markers found in {f['parse_ms']} ms")
EOF
