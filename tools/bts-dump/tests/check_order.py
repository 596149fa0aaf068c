# SPDX-License-Identifier: GPL-2.0
"""Threads in time order (check.py runs these): the text outputs put the
runs of each thread's records, from one return to user mode to the next,
in the order of the times the kernel stamped on the returns."""

import rawgen as rg
from checklib import PROG, diag, jsonl, nm, run, tap, write

T0 = 1_000_000_000
S = nm(PROG)


def br(tid, n):
    """Branch @n of thread @tid: its source tells it from the others."""
    return rg.branch(S["tramp"][0] + tid % 10 * 8 + n, S["leaf"][0])


def stamp(ns):
    """A system call, the thread back in user mode at T0 + @ns."""
    return [rg.kernel_detail(rg.ABI_X86_64, 1, T0 + ns),
            rg.kernel(rg.ENTRY_SYSCALL, S["raw_write"][0] + 5,
                      S["raw_write"][0] + 7)]


def which(r):
    """(tid, n) of a jsonl branch br() made."""
    off = int(r["from"], 16) - S["tramp"][0]
    return (r["tid"], off % 8)


def branches(out):
    return [which(r) for r in jsonl(out) if r["kind"] == "branch"]


def headers(out):
    return [int(line.split()[1]) for line in out.splitlines()
            if line.startswith("[tid ")]


def trace(name, chunks):
    return write(name, rg.header() +
                 rg.maps_chunk(90, "".join(rg.maps_lines(PROG))) +
                 b"".join(rg.records_chunk(recs, stream)
                          for stream, recs in chunks))


def test_order():
    """Threads' runs merged by the kernel's stamps"""
    # Read in this order: threads 90 and 92 on stream 0, 91 on stream 1,
    # then more of 90 and 92.  By time: 91 before its stamp at 5 and from
    # it; 90 before 10 and from it; 92 before 15 and from it, with the
    # part of that run read last; 90 from 20; 91 from 30; 92 from 40.
    f = trace("order.raw", [
        (0, [rg.thread(90, 90, rg.THREAD_NEW), br(90, 1), *stamp(10),
             br(90, 2), rg.thread(92, 90, rg.THREAD_NEW), br(92, 1),
             *stamp(15), br(92, 2)]),
        (1, [rg.thread(91, 90, rg.THREAD_NEW), br(91, 1), *stamp(5),
             br(91, 2), *stamp(30), br(91, 3)]),
        (0, [rg.thread(90, 90), *stamp(20), br(90, 3), rg.thread(92, 90),
             br(92, 3), *stamp(40), br(92, 4)])])
    want = [(91, 1), (91, 2), (90, 1), (90, 2), (92, 1), (92, 2), (92, 3),
            (90, 3), (91, 3), (92, 4)]
    read = [(90, 1), (90, 2), (92, 1), (92, 2), (91, 1), (91, 2), (91, 3),
            (90, 3), (92, 3), (92, 4)]
    rc, out, err = run(f, "--format=jsonl")
    got = branches(out) if rc == 0 else []
    tap(rc == 0 and got == want and "unordered" not in out,
        "time order: each thread's runs by the stamps of their returns to "
        "user mode, across streams, a thread's records before its first "
        "stamp just before it, a run read in two parts kept whole",
        "got  %r\nwant %r\n" % (got, want) + out + err)
    tap(read != want and sorted(read) == sorted(want),
        "self-test: the order the records were read in fails that check",
        "read %r" % read)

    rc, out, err = run(f)
    tap(rc == 0 and headers(out) == [91, 90, 92, 90, 91, 92] and
        not out.startswith("--") and out.count("-- syscall write") == 6,
        "time order: text gives each run of another thread a header; the "
        "system calls stay in their threads' runs", out + err)
    rc, out, err = run(f, "--calls")
    tap(rc == 0 and [line.split()[1] for line in out.splitlines()
                     if line.startswith("[tid ")] ==
        ["91", "90", "92", "90", "91", "92"],
        "time order: --calls too", out + err)


def test_held_calls():
    """A process's name changes before the first of its runs that came
    after the change, not before a run of another process that sorts first"""
    f = write("order-comm.raw", rg.header() +
              rg.maps_chunk(90, "".join(rg.maps_lines(PROG))) +
              rg.comm_chunk(90, "old") + rg.comm_chunk(91, "other") +
              rg.records_chunk([rg.thread(90, 90, rg.THREAD_NEW),
                                *stamp(100), br(90, 1)], 0) +
              rg.comm_chunk(90, "new") +
              rg.records_chunk([rg.thread(91, 91, rg.THREAD_NEW),
                                *stamp(50), br(91, 1)], 1) +
              rg.records_chunk([rg.thread(90, 90), *stamp(200),
                                br(90, 2)], 0))
    rc, out, err = run(f, "--format=jsonl")
    want = [(91, "other"), (90, "old"), (90, "new")]
    got = [(r["tid"], r.get("comm")) for r in jsonl(out)
           if r["kind"] == "branch"] if rc == 0 else []
    tap(got == want, "time order: a process's new name comes with its "
        "first run read after it, though another process's run read later "
        "comes first", "got  %r\nwant %r\n" % (got, want) + out + err)


def test_unordered():
    """Where the trace has no stamps, the outputs say the order is the
    order read"""
    f = trace("unordered.raw", [
        (0, [rg.thread(90, 90, rg.THREAD_NEW), br(90, 1),
             rg.thread(92, 90, rg.THREAD_NEW), br(92, 1),
             rg.thread(90, 90), br(90, 2)])])
    rc, out, err = run(f)
    note = ("-- threads in the order their records were read: the trace "
            "has no times to order them by")
    want = [note, "[tid 90 pid 90]", "[tid 92 pid 90]", "[tid 90 pid 90]"]
    got = [line for line in out.splitlines()
           if line.startswith(("[", "-- threads"))]
    tap(rc == 0 and got == want, "no stamps: text says the threads are in "
        "the order read, first; and are", diag(out, want) + err)
    rc, out, err = run(f, "--format=jsonl")
    recs = jsonl(out) if rc == 0 else []
    tap(recs[:1] == [{"kind": "unordered"}] and
        branches(out) == [(90, 1), (92, 1), (90, 2)],
        "no stamps: jsonl's first object is {\"kind\":\"unordered\"}",
        out + err)
    rc, out, err = run(f, "--calls")
    tap(rc == 0 and out.startswith("\t" + note + "\n"),
        "no stamps: --calls says so too", out + err)

    f = trace("unordered1.raw", [
        (0, [br(90, 0), rg.thread(90, 90, rg.THREAD_NEW), br(90, 1)]),
        (0, [rg.thread(90, 90), br(90, 2)])])
    rc, out, err = run(f)
    tap(rc == 0 and "-- threads" not in out and "[tid 90" in out,
        "no stamps, one thread (records before any THREAD record too): "
        "nothing to say", out + err)


def test_unstamped():
    """A thread without stamps among threads with them: said, once, before
    its records, which stay where they were read"""
    f = trace("unstamped.raw", [
        (0, [rg.thread(90, 90, rg.THREAD_NEW), br(90, 1), *stamp(10),
             br(90, 2), rg.thread(92, 90, rg.THREAD_NEW), br(92, 1),
             rg.thread(90, 90), *stamp(20), br(90, 3),
             rg.thread(92, 90), br(92, 2)])])
    rc, out, err = run(f)
    note = ("-- tid 92 pid 90 has no time stamps: its records are where "
            "they were read among the others'")
    want = ["[tid 90 pid 90]", note, "[tid 92 pid 90]", "[tid 90 pid 90]",
            "[tid 92 pid 90]"]
    got = [line for line in out.splitlines() if line.startswith(("[", "--"))
           and "syscall" not in line and "thread" not in line]
    tap(rc == 0 and got == want, "a thread without stamps among stamped "
        "ones: said once, before its first records", diag(out, want) + err)
    rc, out, err = run(f, "--format=jsonl")
    recs = jsonl(out) if rc == 0 else []
    tap([r for r in recs if r["kind"] == "unordered"] ==
        [{"tid": 92, "pid": 90, "kind": "unordered"}] and
        branches(out) == [(90, 1), (90, 2), (92, 1), (90, 3), (92, 2)],
        "a thread without stamps: jsonl's unordered object names it",
        out + err)


def test_late():
    """Records that come more than the window late are counted"""
    n = 1 << 20
    big = [rg.thread(90, 90, rg.THREAD_NEW), *stamp(100)] + \
        [br(90, 1)] * n
    late = [rg.thread(91, 90, rg.THREAD_NEW), *stamp(50), br(91, 1)]
    f = trace("late.raw", [(0, big), (1, late)])
    rc, out, err = run(f, "-o", "/dev/null")
    tap(rc == 0 and "bts-dump: 4 records came too late to be put in time order "
        "(more than 1048576 records" in err,
        "a thread's records read more than 2^20 records after later ones: "
        "passed on out of order, and counted on stderr", err)
    f = trace("early.raw", [(1, late), (0, big)])
    rc, out, err = run(f, "-o", "/dev/null")
    tap(rc == 0 and "late" not in err,
        "records in time order already: none late", err)


