# SPDX-License-Identifier: GPL-2.0
"""JIT code (check.py runs these): functions named by perf's
/tmp/perf-PID.map, for code in no file."""

import os
import subprocess
import time

import rawgen as rg
from check_perf import diff, perf_script
from checklib import (BTS_DUMP, PROG, jsonl, nm, run, run_memcheck, tap,
                      write)

S = nm(PROG)
# A pid no test machine is near, one per run: its map file is the run's own.
PID = 4000000 + os.getpid() % 190000
MAP = "/tmp/perf-%d.map" % PID
JIT = 0x7f1000000000


def trace(name, anon=True):
    """tramp calls jit_a, which jumps to jit_b, which returns to tramp;
    the JIT's code in an anonymous mapping, or in none the trace shows."""
    maps = "".join(rg.maps_lines(PROG))
    if anon:
        maps += rg.special_line(JIT, JIT + 0x10000, "")
    return write(name, rg.header() + rg.maps_chunk(PID, maps) +
                 rg.records_chunk([rg.thread(PID, PID, rg.THREAD_NEW),
                                   rg.branch(S["tramp"][0], JIT + 0x100),
                                   rg.branch(JIT + 0x130, JIT + 0x200),
                                   rg.branch(JIT + 0x208,
                                             S["tramp"][0] + 5)]))


def ends(out):
    return [(r.get("from_sym"), r.get("from_dso"), r.get("to_sym"),
             r.get("to_dso")) for r in jsonl(out) if r["kind"] == "branch"]


def write_map(text, uid=0):
    with open(MAP, "w") as f:
        f.write(text)
    os.chown(MAP, uid, -1)


def test_jit():
    """perf's /tmp/perf-PID.map names JIT code"""
    f = trace("jit.raw")
    dso = os.path.basename(MAP)
    want = [("tramp", "prog", "jit_a", dso),
            ("jit_a+0x30", dso, "Lfoo::bar(int)", dso),
            ("Lfoo::bar(int)+0x8", dso, "tramp+0x5", "prog")]
    try:
        # Two functions, an entry with no name and one of size 0
        # (skipped), and one compiled again at jit_a's address.
        write_map("%x 40 jit_old\n%x 20 Lfoo::bar(int)\n%x 10 \n"
                  "%x 0 nothing\n%x 40 jit_a\n" % (
                      JIT + 0x100, JIT + 0x200, JIT + 0x300, JIT + 0x130,
                      JIT + 0x100))
        rc, out, err = run(f, "--format=jsonl")
        got = ends(out) if rc == 0 else []
        tap(rc == 0 and got == want,
            "JIT: functions from /tmp/perf-PID.map, the last compiled at an "
            "address winning, in an anonymous mapping",
            "got  %r\nwant %r\n" % (got, want) + err)
        rc, out, err = run(trace("jit-unmapped.raw", anon=False),
                           "--format=jsonl")
        got = ends(out) if rc == 0 else []
        tap(rc == 0 and got == want,
            "JIT: and where the trace shows no mapping at all",
            "got  %r\nwant %r\n" % (got, want) + err)
        rc, out, err = run(f)
        tap(rc == 0 and "0x%x jit_a+0x30 -> 0x%x Lfoo::bar(int)" % (
            JIT + 0x130, JIT + 0x200) in out,
            "JIT: text shows the names", out + err)
        rc, out, err = run_memcheck(f, "--calls")
        tap(rc == 0 and "2\t  jit_a\n3\t  Lfoo::bar(int)\n" in out,
            "JIT: --calls names them; valgrind finds no error",
            out + err)

        write_map("%x 40 jit_a\n" % (JIT + 0x100), uid=65534)
        rc, out, err = run(f, "--format=jsonl")
        got = ends(out) if rc == 0 else []
        tap(rc == 0 and got[0][2] is None and
            "%s: not used: owned by someone else than you or root" % MAP
            in err,
            "JIT: a map file someone else owns is not used, and bts-dump "
            "says so", "%r\n" % got + err)

        # Not a regular file, not a link: /tmp is everyone's.
        os.unlink(MAP)
        os.mkfifo(MAP)
        p = subprocess.run([BTS_DUMP, "-i", f, "--format=jsonl"],
                           capture_output=True, text=True, timeout=60)
        os.unlink(MAP)
        os.symlink("/dev/zero", MAP)
        p2 = subprocess.run([BTS_DUMP, "-i", f, "--format=jsonl"],
                            capture_output=True, text=True, timeout=60)
        tap(p.returncode == p2.returncode == 0 and
            "%s: not used: not a regular file" % MAP in p.stderr and
            "%s: not used: a symbolic link" % MAP in p2.stderr,
            "JIT: a FIFO or a link there is not read", p.stderr + p2.stderr)
        os.unlink(MAP)

        # Live: code named after bts-dump read the file is found when it
        # comes (folded prints each record as it comes).
        write_map("%x 40 jit_a\n" % (JIT + 0x100))
        p = subprocess.Popen([BTS_DUMP, "-i", "-", "--format=folded"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        p.stdin.write(rg.header() + rg.maps_chunk(PID, "".join(
            rg.maps_lines(PROG)) + rg.special_line(JIT, JIT + 0x10000, "")) +
            rg.records_chunk([rg.thread(PID, PID, rg.THREAD_NEW),
                              rg.branch(S["tramp"][0], JIT + 0x100)]))
        p.stdin.flush()
        time.sleep(1.5)
        with open(MAP, "a") as m:
            m.write("%x 20 jit_b\n" % (JIT + 0x200))
        p.stdin.write(rg.records_chunk([rg.thread(PID, PID),
                                        rg.branch(JIT + 0x130, JIT + 0x200)]))
        out, err = p.communicate(timeout=60)
        tap(p.returncode == 0 and b";tramp;jit_b 1" in out,
            "JIT: a function the map got after bts-dump first read it is "
            "found (the appended part read)", (out + err).decode())
    finally:
        if os.path.lexists(MAP):
            os.unlink(MAP)
    rc, out, err = run(f, "--format=jsonl")
    got = ends(out) if rc == 0 else []
    tap(rc == 0 and got[0] == ("tramp", "prog", None, None) and
        got[1] == (None, None, None, None),
        "JIT: no map file, no names", "%r\n" % got + err)
    test_jit_carried()
    test_jit_folded_names()
    test_jit_returns()


def carried(name, chunks):
    """tramp calls into the JIT's code three times, each call after the
    JIT map chunk CHUNKS[i] (None: none)."""
    maps = "".join(rg.maps_lines(PROG)) + rg.special_line(JIT, JIT + 0x10000,
                                                          "")
    data = rg.header() + rg.maps_chunk(PID, maps)
    for i, c in enumerate(chunks):
        if c is not None:
            data += c
        data += rg.records_chunk(([rg.thread(PID, PID, rg.THREAD_NEW)]
                                  if not i else []) +
                                 [rg.branch(S["tramp"][0], JIT + 0x100)])
    return write(name, data)


def test_jit_perf():
    """--format=perf: JIT code is perf's "//anon", which perf names from
    /tmp/perf-PID.map as in its own recordings"""
    data = os.path.join(os.path.dirname(trace("jit-perf.raw")), "jit.data")
    rc, out, err = run(trace("jit-perf.raw"), "--format=perf", "-o", data)
    try:
        write_map("%x 40 jit_a\n%x 20 jit_b\n" % (JIT + 0x100, JIT + 0x200))
        got, _, text = perf_script(data)
    finally:
        os.unlink(MAP)
    want = {PID: [":%d %x tramp+0x0 => %x jit_a+0x0" % (
                      PID, S["tramp"][0], JIT + 0x100),
                  ":%d %x jit_a+0x30 => %x jit_b+0x0" % (
                      PID, JIT + 0x130, JIT + 0x200),
                  ":%d %x jit_b+0x8 => %x tramp+0x5" % (
                      PID, JIT + 0x208, S["tramp"][0] + 5)]}
    tap(rc == 0 and got == want, "JIT in perf.data: an //anon mapping, "
        "named by perf from /tmp/perf-PID.map", diff(want, got) + "\n" +
        text + err)


def test_jit_carried():
    """the JIT map a trace carries: what bts-dump read while the process
    lived, in its own namespaces (a container's pid 7 here)"""
    dso = "perf-7.map"
    try:
        # A file at the host's path, as a process that has the pid now
        # would leave it: not the traced one's, never read.
        write_map("%x 40 not_this\n" % (JIT + 0x100))
        f = carried("jit-carried.raw", [
            rg.jit_chunk(PID, 7, "%x 40 jit_a\n" % (JIT + 0x100)),
            rg.jit_chunk(PID, 7, "%x 40 jit_b\n" % (JIT + 0x100),
                         whole=False),
            rg.jit_chunk(PID, 7, "%x 20 jit_c\n" % (JIT + 0x100))])
        rc, out, err = run_memcheck(f, "--format=jsonl")
        got = [e[2:] for e in ends(out)] if rc == 0 else []
        tap(rc == 0 and got == [("jit_a", dso), ("jit_b", dso),
                                ("jit_c", dso)],
            "JIT: the map the trace carries names the code, its lines "
            "added, then replaced, never the file at the host's path; "
            "valgrind finds no error", "%r\n" % got + err)
        f = carried("jit-carried-empty.raw", [rg.jit_chunk(PID, 7, ""),
                                              None, None])
        rc, out, err = run(f, "--format=jsonl")
        got = [e[2:] for e in ends(out)] if rc == 0 else []
        tap(rc == 0 and got == [(None, None)] * 3,
            "JIT: a trace that carries an empty map names nothing, the "
            "file notwithstanding", "%r\n" % got + err)
    finally:
        if os.path.lexists(MAP):
            os.unlink(MAP)


def test_jit_folded_names():
    """names with a folded stack's separators in them: a JVM's method,
    a process's name"""
    f = carried("jit-semicolon.raw", [
        rg.comm_chunk(PID, "we;ird\nname") +
        rg.jit_chunk(PID, 7, "%x 40 Ljava/lang/String;::hashCode\n" %
                     (JIT + 0x100))])
    rc, out, err = run(f, "--format=folded")
    want = ["[tid %d pid %d we:ird?name];tramp;Ljava/lang/String:::hashCode 1"
            % (PID, PID)]
    tap(rc == 0 and out.splitlines() == want,
        "JIT: folded stacks keep a ';' in a name from splitting the frame "
        "and a newline from splitting the line",
        "got  %r\nwant %r\n" % (out, want) + err)


def test_jit_returns():
    """a return out of JIT code, whose instructions bts-dump cannot read:
    a branch from it to a return address on the stack returns there"""
    maps = "".join(rg.maps_lines(PROG)) + rg.special_line(JIT, JIT + 0x10000,
                                                          "")
    tramp = S["tramp"][0]
    raw_write = S["raw_write"][0]
    f = write("jit-returns.raw", rg.header() + rg.maps_chunk(PID, maps) +
              rg.jit_chunk(PID, 7, "%x 40 jit_a\n%x 20 jit_b\n" % (
                  JIT + 0x100, JIT + 0x200)) +
              rg.records_chunk([rg.thread(PID, PID, rg.THREAD_NEW),
                                rg.branch(tramp, JIT + 0x100),
                                rg.branch(JIT + 0x130, JIT + 0x200),
                                rg.branch(JIT + 0x208, tramp + 5),
                                rg.branch(tramp + 5, raw_write),
                                rg.branch(raw_write + 7, tramp + 10)]))
    rc, out, err = run(f, "--calls")
    want = ["1\ttramp", "2\t  jit_a", "3\t  jit_b", "4\ttramp",
            "5\t  raw_write", "6\ttramp"]
    tap(rc == 0 and out.splitlines()[2:] == want,
        "JIT: --calls: a jump out of JIT code to a return address on the "
        "stack is a return, one within it is not",
        "got  %r\nwant %r\n" % (out.splitlines(), want) + err)
