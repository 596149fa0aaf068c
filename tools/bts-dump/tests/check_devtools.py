# SPDX-License-Identifier: GPL-2.0
"""--format=chrome in the viewer people open it in (check.py runs this):
Chromium's DevTools, headless (devtools.py), reads bts-dump's timelines
of calls without an error, every event and every call nested as the
file means it; screenshots are kept for a person to look at."""

import json
import os
import re
import shutil
import subprocess
import sys

import devtools
import rawgen as rg
from checklib import PROG, WORK, nm, run, tap, write

S = nm(PROG)
# Times that are no whole number of microseconds.
T0 = 1_000_000_007
SHOTS = os.environ.get("BTS_DUMP_SHOTS") or os.path.join(WORK, "shots")


def a(name, off=0):
    return S[name][0] + off


def stamped(ns):
    """A system call from raw_write, back in user mode at T0 + @ns."""
    return [rg.kernel_detail(rg.ABI_X86_64, 1, T0 + ns),
            rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7))]


def two_processes(stamps):
    """Processes 60 and 61, their calls overlapping in time: each calls
    raw_write from tramp, makes a system call (stamped if @stamps),
    returns from both, and ends in leaf, called from tramp: calls that
    end together."""
    maps = rg.maps_chunk(60, rg.maps_lines(PROG)) + \
        rg.maps_chunk(61, rg.maps_lines(PROG))

    def calls(tid, ns):
        return [rg.thread(tid, tid),
                rg.branch(a("tramp"), a("raw_write")),
                *(stamped(ns) if stamps else stamped(ns)[1:])]

    def returns(tid):
        return [rg.thread(tid, tid),
                rg.branch(a("raw_write", 7), a("tramp", 10)),
                rg.branch(a("tramp", 12), a("leaf")),
                rg.branch(a("leaf") + S["leaf"][1] - 1, a("tramp", 17))]
    return rg.header() + maps + rg.records_chunk(
        [rg.thread(60, 60, rg.THREAD_NEW), rg.thread(61, 61, rg.THREAD_NEW),
         *calls(60, 0), *calls(61, 2_345), *returns(60), *calls(60, 5_678),
         *returns(61), *returns(60), *calls(61, 7_891),
         rg.branch(a("tramp"), a("leaf")),
         rg.thread(60, 60), rg.branch(a("tramp"), a("leaf")),
         rg.thread(60, 60, rg.THREAD_EXIT), rg.thread(61, 61, rg.THREAD_EXIT)])


def viewer(files):
    """devtools.py on @files: rc, output, and per file whether it passed."""
    p = subprocess.run([sys.executable, devtools.__file__, "--shots", SHOTS,
                        *files], capture_output=True, text=True)
    ok = {}
    for line in p.stdout.splitlines():
        m = re.match(r"(not )?ok (\d+) - ", line)
        if m:
            ok[files[int(m.group(2)) - 1]] = not m.group(1)
    return p.returncode, p.stdout + p.stderr, ok


def chrome(name, raw):
    """bts-dump's --format=chrome of @raw, in WORK/@name."""
    out = os.path.join(WORK, name)
    rc, _, err = run(write(name + ".raw", raw), "--format=chrome", "-o", out)
    if rc:
        raise RuntimeError("bts-dump: " + err)
    return out


def test_devtools():
    if not shutil.which("chromium"):
        tap(True, "chrome: DevTools reads the timelines # SKIP no chromium "
            "(Debian's package chromium; make deps installs it)")
        return
    files = [chrome("devtools-time.json", two_processes(True)),
             chrome("devtools-records.json", two_processes(False))]
    axes = [json.load(open(f))["otherData"]["x-axis"] for f in files]
    rc, out, ok = viewer(files)
    tap(rc == 0 and all(ok.get(f) for f in files) and
        axes[0].startswith("time") and "not time" in axes[1],
        "chrome: Chromium's DevTools reads two processes' overlapping "
        "calls, on a time axis and on the record axis, without an error, "
        "every event and call nested as in the file; screenshots in " +
        SHOTS, out)

    # Planted: the same calls as B/E pairs, as bts-dump wrote them before:
    # DevTools pairs the two processes' events with each other.
    doc = json.load(open(files[0]))
    events = []
    for e in doc["traceEvents"]:
        if e["ph"] != "X":
            events.append(e)
            continue
        b = dict(e, ph="B")
        del b["dur"]
        events += [b, dict(b, ph="E", ts=e["ts"] + e["dur"])]
    events.sort(key=lambda e: (e["ts"], "iEBM".find(e["ph"])))
    planted = os.path.join(WORK, "devtools-pairs.json")
    with open(planted, "w") as f:
        json.dump({"traceEvents": events}, f)
    rc, out, ok = viewer([planted])
    tap(rc == 1 and ok.get(planted) is False and
        "Begin/End events mismatch" in out,
        "self-test: the same calls as B/E pairs fail in DevTools (it pairs "
        "one process's B with another's E)", out)

    # Planted: the times in decimal nanoseconds, as bts-dump wrote them
    # before: where a call ends, in the viewer's floating point, misses
    # where the call around it ends, and the viewer drops the call.
    dec = {"traceEvents": []}
    for e in doc["traceEvents"]:
        e = dict(e)
        if e["ph"] == "X":
            ts, end = round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)
            e["ts"], e["dur"] = ts / 1000, (end - ts) / 1000
        elif "ts" in e:
            e["ts"] = round(e["ts"] * 1000) / 1000
        dec["traceEvents"].append(e)
    planted = os.path.join(WORK, "devtools-decimal.json")
    with open(planted, "w") as f:
        json.dump(dec, f)
    rc, out, ok = viewer([planted])
    tap(rc == 1 and ok.get(planted) is False and "the viewer has" in out,
        "self-test: the same calls at decimal nanoseconds lose calls in "
        "DevTools", out)

    # Planted: what the viewer parsed, one call a level off and an event
    # short, is told from the file.
    parsed = {"events": len(doc["traceEvents"]) - 1,
              "threads": {"%d/%d" % k: [[n, t, d, depth + (i == 0)]
                                        for i, (n, t, d, depth)
                                        in enumerate(v)]
                          for k, v in devtools.chrome_calls(doc).items()}}
    bad = devtools.compare(doc, parsed)
    tap(len(bad) == 3, "self-test: a viewer that read an event less and "
        "nested a call otherwise fails the comparison", "\n".join(bad))
