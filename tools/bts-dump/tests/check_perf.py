# SPDX-License-Identifier: GPL-2.0
"""--format=perf read by Debian's perf script (check.py runs these).

A trace of two threads of one process, with system calls, lost records
and an exec of another program, goes to a perf.data file; what perf
script prints of it must be the trace's branches, each symbolized in the
program that ran it, with the records perf's intel_bts PMU gets for a stay
in the kernel (the entry, its kernel end zeroed) and the loss reported.
Expected lines come from the test programs' symbols (nm), not from
bts-dump.
"""

import os
import re
import shutil
import struct
import subprocess

import rawgen as rg
from checklib import (BTS_DUMP, PROG, PROG_PIE, WORK, nm, run, run_memcheck,
                      tap, write)

S = nm(PROG)
SP = nm(PROG_PIE)
PIE_BIAS = 0x555555554000
FIELDS = "comm,tid,ip,sym,symoff,addr"


def sym(syms, addr, bias=0):
    """perf script's sym+symoff of @addr."""
    if not addr:
        return "[unknown]"
    for name, (start, size) in syms.items():
        if size and start + bias <= addr < start + bias + size:
            return "%s+0x%x" % (name, addr - start - bias)
    return "[unknown]"


def a(name, off=0):
    return S[name][0] + off


def p(name, off=0):
    return PIE_BIAS + SP[name][0] + off


def trace():
    """The raw trace, and per thread the (comm, from, to, syms, bias) perf
    must show, in order."""
    before = [
        rg.thread(90, 90, rg.THREAD_NEW),
        rg.branch(a("tramp"), a("leaf")),
        rg.thread(91, 90, rg.THREAD_NEW),
        rg.branch(a("tramp", 5), a("raw_write")),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
        rg.branch(a("raw_write", 7), a("tramp", 10)),
        rg.thread(91, 90, rg.THREAD_EXIT),
        rg.thread(90, 90),
        rg.branch(a("leaf", 1), a("tramp", 5)),
        rg.lost(3),
        rg.branch(a("tramp", 10), a("raw_int80")),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_int80", 5), 0),
        rg.map_event(rg.MAP_EXEC),
        *rg.map_file(PROG_PIE, PIE_BIAS),
    ]
    after = [
        rg.thread(90, 90),
        rg.branch(p("tramp", 5), p("raw_write")),
        rg.kernel(rg.ENTRY_SYSCALL, p("raw_write", 5), p("raw_write", 7)),
        rg.branch(p("raw_write", 7), p("tramp", 10)),
        rg.thread(90, 90, rg.THREAD_EXIT),
    ]
    data = (rg.header() +
            rg.maps_chunk(90, "".join(rg.maps_lines(PROG))) +
            rg.comm_chunk(90, "first") +
            rg.records_chunk(before) +
            rg.comm_chunk(90, "second") +
            rg.records_chunk(after))
    want = {
        90: [("first", a("tramp"), a("leaf"), S, 0),
             ("first", a("leaf", 1), a("tramp", 5), S, 0),
             ("first", a("tramp", 10), a("raw_int80"), S, 0),
             ("first", a("raw_int80", 5), 0, S, 0),
             ("second", p("tramp", 5), p("raw_write"), SP, PIE_BIAS),
             ("second", p("raw_write", 5), 0, SP, PIE_BIAS),
             ("second", p("raw_write", 7), p("tramp", 10), SP, PIE_BIAS)],
        91: [("first", a("tramp", 5), a("raw_write"), S, 0),
             ("first", a("raw_write", 5), 0, S, 0),
             ("first", a("raw_write", 7), a("tramp", 10), S, 0)],
    }
    return data, want


def expected(want):
    return {tid: ["%s %x %s => %x %s" % (comm, f, sym(syms, f, bias), t,
                                         sym(syms, t, bias))
                  for comm, f, t, syms, bias in recs]
            for tid, recs in want.items()}


def perf_script(path, *args, stdin=None, env=None):
    """perf script's branches of the file at @path ('-': @stdin), per
    thread, and its error lines."""
    p = subprocess.run(["perf", "script", "-f", "-i", path, "-F", FIELDS,
                        "--itrace=be"] + list(args), input=stdin,
                       capture_output=True, env=env)
    got, errors = {}, []
    for line in p.stdout.decode(errors="replace").splitlines():
        f = line.split()
        if "error" in line:
            errors.append(line.strip())
        elif len(f) == 7 and f[4] == "=>":
            got.setdefault(int(f[1]), []).append(
                "%s %s %s => %s %s" % tuple([f[0]] + f[2:4] + f[5:7]))
    return got, errors, p.stdout.decode(errors="replace") + \
        p.stderr.decode(errors="replace")


def diff(want, got):
    lines = []
    for tid in sorted(set(want) | set(got)):
        lines.append("thread %d: expected" % tid)
        lines += ["  " + w for w in want.get(tid, [])]
        lines.append("thread %d: perf script" % tid)
        lines += ["  " + g for g in got.get(tid, [])]
    return "\n".join(lines)


def drop_end_marks(path):
    """The file as bts-dump would write it without the zero record that
    ends each AUX buffer (perf's decoder stops one record short)."""
    with open(path, "rb") as f:
        data = f.read()
    out, at = bytearray(data[:256]), 256
    size = struct.unpack_from("<Q", data, 64)[0]
    while at < 256 + size:
        typ, _, length = struct.unpack_from("<IHH", data, at)
        ev = bytearray(data[at:at + length])
        at += length
        if typ == 71:
            n = struct.unpack_from("<Q", ev, 8)[0]
            struct.pack_into("<Q", ev, 8, n - 24)
            out += ev + data[at:at + n - 24]
            at += n
        else:
            out += ev
    struct.pack_into("<Q", out, 64, len(out) - 256)
    out += data[256 + size:]
    # the feature section moved back by what was dropped
    feat = len(out) - (len(data) - 256 - size)
    struct.pack_into("<Q", out, feat, feat + 16)
    return write("perf-nomark.data", bytes(out))


def test_perf():
    """--format=perf: a file and a pipe, read by perf script"""
    data, recs = trace()
    want = expected(recs)
    raw = write("perf.raw", data)
    path = os.path.join(WORK, "perf.data")
    rc, out, err = run(raw, "--format=perf", "-o", path)
    got, errors, text = perf_script(path) if rc == 0 else ({}, [], err)
    tap(rc == 0 and got == want,
        "perf.data file: perf script shows each thread's branches, "
        "symbolized in the program of their time (exec), kernel stays as "
        "branches to 0", diff(want, got) + "\n" + text)
    tap(len(errors) == 1 and "Lost trace data" in errors[0] and
        " 90 " in " %s " % errors[0].replace(":", " "),
        "perf.data file: the records lost are perf's 'Lost trace data' "
        "error, of thread 90", "\n".join(errors) + "\n" + text)

    piped = subprocess.run(
        ["bash", "-c", '"$0" -i "$1" --format=perf | cat', BTS_DUMP, raw],
        capture_output=True)
    got, _, text = perf_script("-", stdin=piped.stdout)
    tap(piped.returncode == 0 and got == want,
        "perf pipe format (output not a file): perf script -i - shows the "
        "same", diff(want, got) + "\n" + text)

    got, _, text = perf_script(drop_end_marks(path))
    tap(got != want and all(len(got.get(t, [])) < len(w)
                            for t, w in want.items()),
        "self-test: without the record that ends each AUX buffer, perf "
        "loses a branch per buffer and the comparison fails",
        diff(want, got))

    rc, out, err = run_memcheck(raw, "--format=perf", "-o",
                                os.path.join(WORK, "perf-vg.data"))
    tap(rc == 0, "--format=perf under valgrind: no uninitialised byte "
        "written, no bad access, no leak", err)

    p = subprocess.run(["perf", "report", "-f", "-i", path, "--stdio",
                        "--sort", "sym"], capture_output=True, text=True)
    tap(p.returncode == 0 and "[.] tramp" in p.stdout and
        "[.] raw_write" in p.stdout,
        "perf report reads the file: samples in tramp and raw_write",
        p.stdout + p.stderr)


def marker_trace(moved=False):
    """A thread that writes three events (one longer than a marker holds)
    and one whose format the trace lacks; what perf script must show:
    each event, its fields decoded, between the branches around it."""
    big = struct.pack("<I", 5) + b"x" * 60
    first = rg.user_event(7, 2, a("raw_write", 5), b"\x03\0\0\0tag3\0\0\0\0")
    syscall = rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7))
    recs = [
        rg.thread(92, 92, rg.THREAD_NEW),
        rg.branch(a("tramp"), a("leaf")),
        rg.branch(a("leaf", 1), a("tramp", 5)),
        rg.branch(a("tramp", 5), a("raw_write")),
        # moved: the first event one branch later, after its system call
        *([syscall] + first if moved else first + [syscall]),
        rg.branch(a("raw_write", 7), a("tramp", 10)),
        rg.branch(a("tramp", 10), a("raw_int80")),
        *rg.user_event(8, 1, a("raw_int80", 5),
                       struct.pack("<IQ", 11 << 16 | 8, 3000) +
                       b"message 03\0"),
        *rg.user_event(9, 1, a("raw_int80", 5), big, rg.MARKER_TRUNCATED),
        *rg.user_event(10, 1, a("raw_int80", 5), b"\1\0\0\0"),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_int80", 5), a("raw_int80", 7)),
        rg.branch(a("raw_int80", 7), a("tramp", 15)),
    ]
    data = (rg.header() +
            rg.maps_chunk(92, "".join(rg.maps_lines(PROG))) +
            rg.event_format_chunk(7, 2, "bts_test_a u32 seq; char[8] tag") +
            rg.event_format_chunk(8, 1,
                                  "bts_test_b __rel_loc char[] msg; u64 val") +
            rg.event_format_chunk(9, 1, "bts_test_big u32 seq; char[100] blob") +
            rg.records_chunk(recs))

    def br(f, t):
        return "B %s => %s" % (sym(S, f), sym(S, t))
    want = [br(a("tramp"), a("leaf")), br(a("leaf", 1), a("tramp", 5)),
            br(a("tramp", 5), a("raw_write")),
            "E bts_test_a: seq=3 tag=tag3",
            br(a("raw_write", 5), 0),
            br(a("raw_write", 7), a("tramp", 10)),
            br(a("tramp", 10), a("raw_int80")),
            "E bts_test_b: msg=message 03 val=3000",
            "E bts_test_big: seq=5 blob=" + "x" * 60,
            br(a("raw_int80", 5), 0),
            br(a("raw_int80", 7), a("tramp", 15))]
    return data, want


def script_lines(path, stdin=None):
    """perf script's default output, as branches ("B FROM => TO") and
    events ("E NAME: FIELDS"), in order."""
    p = subprocess.run(["perf", "script", "-f", "-i", path, "--itrace=be"],
                       input=stdin, capture_output=True)
    out = []
    for line in p.stdout.decode(errors="replace").splitlines():
        if "user_events:" in line:
            out.append("E " + line.split("user_events:", 1)[1].strip())
        elif "branches:u:" in line:
            f = line.split("branches:u:", 1)[1].split()
            out.append("B %s => %s" % (f[1], f[f.index("=>") + 2]))
    return out, p.stdout.decode(errors="replace") + \
        p.stderr.decode(errors="replace")


def test_perf_markers():
    """--format=perf: markers as samples of their events' tracepoints"""
    data, want = marker_trace()
    raw = write("perf-markers.raw", data)
    path = os.path.join(WORK, "perf-markers.data")
    rc, _, err = run_memcheck(raw, "--format=perf", "-o", path)
    got, text = script_lines(path) if rc == 0 else ([], err)
    tap(rc == 0 and got == want,
        "perf.data file with markers: perf script shows each event, its "
        "fields decoded (a long one as far as the marker holds it), "
        "between the branches around it; under valgrind",
        "expected:\n  " + "\n  ".join(want) + "\ngot:\n  " +
        "\n  ".join(got) + "\n" + text)
    tap("1 markers left out" in err,
        "an event whose format the trace lacks: left out, and said", err)
    piped = subprocess.run(
        ["bash", "-c", '"$0" -i "$1" --format=perf | cat', BTS_DUMP, raw],
        capture_output=True)
    got, text = script_lines("-", stdin=piped.stdout)
    tap(piped.returncode == 0 and got == want,
        "perf pipe format with markers: the same",
        "got:\n  " + "\n  ".join(got) + "\n" + text)
    p = subprocess.run(["perf", "report", "-f", "-i", path, "--stdio",
                        "--sort", "sym"], capture_output=True, text=True)
    tap(p.returncode == 0 and
        "of event 'user_events:bts_test_a'" in p.stdout and
        "of event 'branches:u'" in p.stdout,
        "perf report reads it: the branches and each event's samples",
        p.stdout + p.stderr)
    moved, _ = marker_trace(moved=True)
    path = os.path.join(WORK, "perf-moved.data")
    rc, _, err = run(write("perf-moved.raw", moved), "--format=perf", "-o",
                     path)
    got, _ = script_lines(path)
    tap(rc == 0 and got != want and "E bts_test_a: seq=3 tag=tag3" in got,
        "self-test: a marker one branch later fails the comparison",
        "\n".join(got))


def test_perf_build_id():
    """--format=perf: the build IDs the trace gives are the file's"""
    bid = rg.build_id(PROG)
    path = os.path.join(WORK, "perf-rebuilt")
    shutil.copy(PROG, path)
    raw = write("perf-bid.raw", rg.header() + rg.records_chunk([
        rg.thread(120, 120, rg.THREAD_NEW), rg.map_event(rg.MAP_EXEC),
        *rg.map_file(path, 0, build_id=bid),
        rg.branch(a("tramp"), a("leaf"))]))
    data = os.path.join(WORK, "perf-bid.data")
    rc, out, err = run(raw, "--format=perf", "-o", data)
    # perf looks in the build-id cache in $HOME first: an empty one
    home = os.path.join(WORK, "perf-home")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    env = dict(os.environ, HOME=home)

    def names(want):
        got, _, text = perf_script(data, env=env)
        want = {120: [":120 %x %s => %x %s" % (
            a("tramp"), want[0], a("leaf"), want[1])]}
        return rc == 0 and got == want, diff(want, got) + "\n" + text + err

    ok, text = names(("tramp+0x0", "leaf+0x0"))
    tap(ok, "perf.data file with the trace's build ID: the file it names "
        "is symbolized", text)
    q = subprocess.run(["perf", "buildid-list", "-i", data], env=env,
                       capture_output=True, text=True)
    tap(q.returncode == 0 and
        q.stdout.splitlines() == ["%s %s" % (bid.hex(), path)],
        "perf.data file: its header lists the file and its build ID "
        "(perf buildid-list, perf archive)", q.stdout + q.stderr)

    with open(PROG, "rb") as f:
        elf = f.read()
    with open(path, "wb") as f:
        f.write(elf.replace(bid, bytes(b ^ 0x5a for b in bid)))
    ok, text = names(("[unknown]", "[unknown]"))
    tap(ok, "perf.data file: the file at the path rebuilt since (another "
        "build ID): perf names nothing from it", text)

    # The file at the path stripped: names can only come from the cache.
    p = subprocess.run(["strip", path], capture_output=True, text=True)
    q = subprocess.run(["perf", "buildid-cache", "-a", PROG], env=env,
                       capture_output=True, text=True)
    ok, text = names(("tramp+0x0", "leaf+0x0"))
    tap(p.returncode == 0 and q.returncode == 0 and ok,
        "perf.data file: rebuilt since, but the mapped build is in perf's "
        "build-id cache: symbolized from there",
        p.stderr + q.stdout + q.stderr + text)


def test_perf_tasks():
    """--format=perf: FORK and EXIT records as the kernel's"""
    lines = "".join(rg.maps_lines(PROG))
    data = (rg.header() +
            rg.maps_chunk(130, lines, ppid=129) + rg.comm_chunk(130, "tasks") +
            rg.maps_chunk(140, lines) + rg.comm_chunk(140, "orphan") +
            rg.records_chunk([
                rg.thread(130, 130, rg.THREAD_NEW),
                rg.branch(a("tramp"), a("leaf")),
                rg.thread(131, 130, rg.THREAD_NEW),
                rg.branch(a("tramp", 5), a("raw_write")),
                rg.thread(131, 130, rg.THREAD_EXIT),
                rg.thread(140, 140, rg.THREAD_NEW),
                rg.branch(a("leaf", 1), a("tramp", 5)),
                rg.thread(140, 140, rg.THREAD_EXIT),
                rg.thread(130, 130),
                rg.branch(a("leaf", 1), a("tramp", 5)),
                rg.thread(130, 130, rg.THREAD_EXIT)]))
    rc, err, _, p = side_events("perf-tasks", data, "--show-task-events")
    got = [line.split(None, 1)[1] for line in p.stdout.splitlines()
           if "PERF_RECORD_" in line]
    # the parent's (pid:tid) after the thread's; a thread's parent is
    # its process, its process's parent is the one the snapshot names
    want = ["PERF_RECORD_FORK(130:130):(129:129)",
            "PERF_RECORD_COMM: tasks:130/130",
            "PERF_RECORD_FORK(130:131):(130:130)",
            "PERF_RECORD_COMM: tasks:130/131",
            "PERF_RECORD_EXIT(130:131):(129:129)",
            "PERF_RECORD_COMM: orphan:140/140",
            "PERF_RECORD_EXIT(140:140):(0:0)",
            "PERF_RECORD_EXIT(130:130):(129:129)"]
    tap(rc == 0 and got == want,
        "perf.data file: a FORK record for a new process from the parent "
        "the trace names and for a new thread from its process, none for a "
        "process of unknown parent; EXIT records name the parent process",
        "expected:\n  %s\nperf script --show-task-events:\n  %s\n%s%s" % (
            "\n  ".join(want), "\n  ".join(got), err, p.stderr))


def side_events(name, data, show):
    """bts-dump's perf.data of the raw trace @data, and perf script's
    run on it that shows the side-band records @show asks for."""
    path = os.path.join(WORK, name + ".data")
    rc, out, err = run(write(name + ".raw", data), "--format=perf", "-o",
                       path)
    p = subprocess.run(["perf", "script", "-f", "-i", path, "-F", "tid",
                        "--itrace=be", show], capture_output=True, text=True)
    return rc, err, path, p


def test_perf_mmaps():
    """--format=perf: each mapping said once, for its process"""
    data = (rg.header() +
            rg.maps_chunk(150, rg.maps_lines(PROG)) +
            rg.comm_chunk(150, "maps") +
            rg.records_chunk([
                rg.thread(150, 150, rg.THREAD_NEW),
                rg.branch(a("tramp"), a("leaf")),
                rg.thread(151, 150, rg.THREAD_NEW),
                rg.branch(a("tramp", 5), a("raw_write")),
                rg.thread(150, 150),
                *rg.map_file(PROG_PIE, PIE_BIAS),
                rg.branch(p("tramp", 5), p("raw_write")),
                rg.thread(151, 150),
                rg.branch(a("leaf", 1), a("tramp", 5)),
                rg.branch(p("raw_write", 7), p("tramp", 10))]))
    rc, err, path, q = side_events("perf-mmaps", data, "--show-mmap-events")
    got = sorted((int(m[1]), int(m[2], 16), m[3]) for m in (
        re.search(r"PERF_RECORD_MMAP2 (\d+)/\d+: \[(0x[0-9a-f]+)\(.* (\S+)$",
                  line) for line in q.stdout.splitlines()
        if "PERF_RECORD_MMAP2" in line))
    want = sorted([(150, s, PROG) for s, _ in rg.exec_ranges(PROG)] +
                  [(150, s, PROG_PIE)
                   for s, _ in rg.exec_ranges(PROG_PIE, PIE_BIAS)])
    tap(rc == 0 and got == want,
        "perf.data file: each code mapping in one MMAP2 record, for its "
        "process, whichever of its threads runs it, and when mappings "
        "change only the new ones",
        "expected (pid, start, path):\n  %s\nperf script "
        "--show-mmap-events:\n  %s\n%s%s" % (
            "\n  ".join(map(str, want)), "\n  ".join(map(str, got)), err,
            q.stderr))
    got, _, text = perf_script(path)
    want = expected({
        150: [("maps", a("tramp"), a("leaf"), S, 0),
              ("maps", p("tramp", 5), p("raw_write"), SP, PIE_BIAS)],
        151: [("maps", a("tramp", 5), a("raw_write"), S, 0),
              ("maps", a("leaf", 1), a("tramp", 5), S, 0),
              ("maps", p("raw_write", 7), p("tramp", 10), SP, PIE_BIAS)]})
    tap(got == want, "perf.data file: so each thread's branches are "
        "symbolized in the mappings of their time", diff(want, got) + text)
