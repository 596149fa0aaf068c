# SPDX-License-Identifier: GPL-2.0
"""--format=pt read back by libipt's instruction flow decoder
(pt-branches.c; check.py runs these).

A thread's trace through the test program's code (calls, returns, a
counted loop, system calls, an interrupt, lost records) goes to a PT
stream; the branches the decoder finds in it with the program's image
must be the trace's, the stays in the kernel where tracing stopped and
the loss an overflow.  The expected lines are written down from the
trace, not from bts-dump.
"""

import os
import subprocess

import rawgen as rg
from check_insn_len import objdump_insns, vec_trace
from checklib import PROG, PROG32, WORK, nm, run, tap, write

S = nm(PROG)
S32 = nm(PROG32)
PT_BRANCHES = os.path.join(WORK, "pt-branches")


def a(name, off=0, syms=None):
    return (syms or S)[name][0] + off


def leaf_ret():
    return S["leaf"][0] + S["leaf"][1] - 1


def records(tid):
    """tid's records, and what the decoder must print of them."""
    recs = [
        rg.thread(tid, tid, rg.THREAD_NEW),
        rg.branch(a("tramp"), a("leaf")),
        rg.branch(leaf_ret(), a("tramp", 5)),
        rg.branch(a("tramp", 5), a("raw_write")),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
        rg.branch(a("raw_write", 7), a("tramp", 10)),
        rg.branch(a("tramp", 10), a("raw_int80")),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_int80", 5), a("raw_int80", 7)),
        rg.branch(a("raw_int80", 7), a("tramp", 15)),
        rg.branch(a("tramp", 15), a("countdown")),
        rg.branch(a("countdown", 7), a("countdown", 5)),
        rg.branch(a("countdown", 7), a("countdown", 5)),
        rg.branch(a("countdown", 9), a("raw_split")),
        rg.branch(a("raw_split", 5), a("raw_split", 7)),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_split", 7), a("raw_split", 9)),
        rg.lost(5),
        rg.branch(a("raw_write", 7), a("tramp", 10)),
        rg.kernel(rg.ENTRY_INTERRUPT, a("tramp", 10), a("tramp", 10), 236),
        rg.branch(a("tramp", 10), a("raw_int80")),
    ]
    want = [
        (a("tramp"), a("leaf")),
        (leaf_ret(), a("tramp", 5)),
        (a("tramp", 5), a("raw_write")),
        (a("raw_write", 5), 0),
        (a("raw_write", 7), a("tramp", 10)),
        (a("tramp", 10), a("raw_int80")),
        (a("raw_int80", 5), 0),
        (a("raw_int80", 7), a("tramp", 15)),
        (a("tramp", 15), a("countdown")),
        (a("countdown", 7), a("countdown", 5)),
        (a("countdown", 7), a("countdown", 5)),
        (a("countdown", 9), a("raw_split")),
        (a("raw_split", 5), a("raw_split", 7)),
        (a("raw_split", 7), 0),
        "# overflow",
        (a("raw_write", 7), a("tramp", 10)),
        (a("tramp", 10), 0),
        (a("tramp", 10), a("raw_int80")),
        # the trace's end: tracing stops where the thread was
        (a("raw_int80"), 0),
    ]
    return recs, ["%x => %x" % w if isinstance(w, tuple) else w
                  for w in want]


def records32(tid):
    """A 32-bit thread's records through prog32's tramp32, and what the
    decoder must print of them."""
    def b(name, off=0):
        return a(name, off, S32)
    loop = [rg.branch(b("tramp32", 5), b("inc32")),
            rg.branch(b("inc32", 1), b("tramp32", 10)),
            rg.branch(b("tramp32", 10), b("tramp32", 5))]
    recs = [
        rg.thread(tid, tid, rg.THREAD_NEW),
        rg.branch(b("tramp32"), b("raw_write32")),
        rg.kernel(rg.ENTRY_SYSCALL, b("raw_write32", 5), b("raw_write32", 7)),
        rg.branch(b("raw_write32", 7), b("tramp32", 5)),
    ] + loop + loop[:2]
    want = [
        (b("tramp32"), b("raw_write32")),
        (b("raw_write32", 5), 0),
        (b("raw_write32", 7), b("tramp32", 5)),
        (b("tramp32", 5), b("inc32")),
        (b("inc32", 1), b("tramp32", 10)),
        (b("tramp32", 10), b("tramp32", 5)),
        (b("tramp32", 5), b("inc32")),
        (b("inc32", 1), b("tramp32", 10)),
        (b("tramp32", 10), 0),
    ]
    return recs, ["%x => %x" % w for w in want]


def decode(path, prog=PROG):
    p = subprocess.run([PT_BRANCHES, path, prog], capture_output=True,
                       text=True)
    return p.returncode, p.stdout.splitlines(), p.stderr


def test_pt():
    """--format=pt decoded by libipt"""
    mine, want = records(95)
    other, _ = records(96)
    maps = "".join(rg.maps_lines(PROG))
    f = write("pt.raw", rg.header() + rg.maps_chunk(95, maps) +
              rg.maps_chunk(96, maps) + rg.records_chunk(mine + other))
    out = os.path.join(WORK, "pt.pt")
    rc, _, err = run(f, "--format=pt", "-o", out)
    drc, got, derr = decode(out) if rc == 0 else (1, [], "")
    tap(rc == 0 and drc == 0 and got == want,
        "PT stream: libipt's decoder finds the trace's branches (the "
        "loop's taken jnz, returns, direct calls), the kernel stays where "
        "tracing stopped, the loss as an overflow",
        "expected:\n  " + "\n  ".join(want) + "\ngot:\n  " +
        "\n  ".join(got) + "\n" + err + derr)
    # the thread's own record is framing, not one of its records
    tap("%d records of other threads than 95 left out" % (len(other) - 1)
        in err and
        "--tid" in err,
        "PT stream: one thread's; bts-dump says how many records of others "
        "it left out", err)

    rc, _, err = run(f, "--format=pt", "--tid=96", "-o", out)
    drc, got, derr = decode(out) if rc == 0 else (1, [], "")
    tap(rc == 0 and got == want and "other threads" not in err,
        "PT stream: --tid chooses the thread", "\n".join(got) + err + derr)

    # A branch the code does not lead to (a record missing from the
    # stream): the encoder says so with an overflow, goes on at it.
    bad = [r for r in mine if r != rg.branch(a("tramp", 10),
                                             a("raw_int80"))]
    f = write("pt-gap.raw", rg.header() + rg.maps_chunk(95, maps) +
              rg.records_chunk(bad))
    rc, _, err = run(f, "--format=pt", "-o", out)
    drc, got, derr = decode(out) if rc == 0 else (1, [], "")
    tap(rc == 0 and "records the code does not lead to" in err and
        "# overflow" in got[:8] and got != want,
        "self-test: a record missing from the trace: an overflow where the "
        "code does not lead to the next, and the comparison fails",
        "\n".join(got) + err + derr)


def test_pt32():
    """--format=pt of 32-bit code, decoded by libipt"""
    recs, want = records32(97)
    f = write("pt32.raw", rg.header() +
              rg.maps_chunk(97, "".join(rg.maps_lines(PROG32))) +
              rg.records_chunk(recs))
    out = os.path.join(WORK, "pt32.pt")
    rc, _, err = run(f, "--format=pt", "-o", out)
    drc, got, derr = decode(out, PROG32) if rc == 0 else (1, [], "")
    tap(rc == 0 and drc == 0 and got == want,
        "PT stream of 32-bit code: its MODE.exec packets make libipt decode "
        "it as such (in 64-bit code inc32's inc would prefix its ret)",
        "expected:\n  " + "\n  ".join(want) + "\ngot:\n  " +
        "\n  ".join(got) + "\n" + err + derr)


def test_pt_unknown():
    """--format=pt through instructions capstone cannot decode"""
    insns = objdump_insns(PROG, "vec_scan")
    branches = vec_trace(insns, a("vec_caller"))
    f = write("pt-vec.raw", rg.header() +
              rg.maps_chunk(98, "".join(rg.maps_lines(PROG))) +
              rg.records_chunk([rg.thread(98, 98, rg.THREAD_NEW)] +
                               [rg.branch(*b) for b in branches]))
    # the trace's end: tracing stops where the thread was
    want = ["%x => %x" % b for b in branches + [(branches[-1][1], 0)]]
    out = os.path.join(WORK, "pt-vec.pt")
    rc, _, err = run(f, "--format=pt", "-o", out)
    drc, got, derr = decode(out) if rc == 0 else (1, [], "")
    tap(rc == 0 and drc == 0 and got == want and "overflow" not in err,
        "PT stream: the code run through AVX-512 and CET instructions "
        "capstone cannot decode, the jz between not taken, no overflow",
        "expected:\n  " + "\n  ".join(want) + "\ngot:\n  " +
        "\n  ".join(got) + "\n" + err + derr)
