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
import shlex
import subprocess

import rawgen as rg
from check_insn_len import objdump_insns, vec_trace
from checklib import (PROG, PROG32, PROG_PIE, WORK, nm, run, run_memcheck,
                      tap, write)

S = nm(PROG)
S32 = nm(PROG32)
SP = nm(PROG_PIE)
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


def ptxed_lines(path):
    """The command lines of @path's FILE.ptxed, each a list of words."""
    with open(path + ".ptxed") as f:
        return [shlex.split(line) for line in f
                if line.startswith("ptxed ")]


def decode(path):
    """What pt-branches finds in the PT stream at @path, running the lines
    of its FILE.ptxed in order, with the images they name."""
    rc, got, err = 0, [], ""
    try:
        lines = ptxed_lines(path)
    except OSError as e:
        return 1, [], str(e)
    for words in lines:
        p = subprocess.run([PT_BRANCHES] + words[1:], capture_output=True,
                           text=True)
        rc = rc or p.returncode
        got += p.stdout.splitlines()
        err += p.stderr
    return rc if lines else 1, got, err


def round_trip(raw, name, *args):
    """bts-dump --format=pt of @raw to WORK/@name under valgrind (exit 99
    on a memory error or leak), decoded: (bts-dump's exit, pt-branches',
    the branches found, both's messages)."""
    out = os.path.join(WORK, name)
    rc, _, err = run_memcheck(raw, "--format=pt", "-o", out, *args)
    drc, got, derr = decode(out) if rc == 0 else (1, [], "")
    return rc, drc, got, err + derr


def mismatch(want, got, err):
    return ("expected:\n  " + "\n  ".join(want) + "\ngot:\n  " +
            "\n  ".join(got) + "\n" + err)


def test_pt():
    """--format=pt decoded by libipt"""
    mine, want = records(95)
    other, _ = records(96)
    maps = "".join(rg.maps_lines(PROG))
    f = write("pt.raw", rg.header() + rg.maps_chunk(95, maps) +
              rg.maps_chunk(96, maps) + rg.records_chunk(mine + other))
    rc, drc, got, err = round_trip(f, "pt.pt")
    tap(rc == 0 and drc == 0 and got == want,
        "PT stream: libipt's decoder finds the trace's branches (the "
        "loop's taken jnz, returns, direct calls), the kernel stays where "
        "tracing stopped, the loss as an overflow",
        mismatch(want, got, err))
    # the thread's own record is framing, not one of its records
    tap("%d records of other threads than 95 left out" % (len(other) - 1)
        in err and
        "--tid" in err,
        "PT stream: one thread's; bts-dump says how many records of others "
        "it left out", err)

    rc, _, got, err = round_trip(f, "pt.pt", "--tid=96")
    tap(rc == 0 and got == want and "other threads" not in err,
        "PT stream: --tid chooses the thread", "\n".join(got) + err)

    # A branch the code does not lead to (a record missing from the
    # stream): the encoder says so with an overflow, goes on at it.
    bad = [r for r in mine if r != rg.branch(a("tramp", 10),
                                             a("raw_int80"))]
    f = write("pt-gap.raw", rg.header() + rg.maps_chunk(95, maps) +
              rg.records_chunk(bad))
    rc, _, got, err = round_trip(f, "pt.pt")
    tap(rc == 0 and "records the code does not lead to" in err and
        "# overflow" in got[:8] and got != want,
        "self-test: a record missing from the trace: an overflow where the "
        "code does not lead to the next, and the comparison fails",
        "\n".join(got) + err)


def test_pt_markers():
    """--format=pt: markers as PTWRITEs, decoded by libipt"""
    mine, want = records(95)
    at = mine.index(rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5),
                              a("raw_write", 7)))
    # bts_test_a, seq 3: written by raw_write's system call.
    recs = mine[:at] + rg.user_event(7, 2, a("raw_write", 5),
                                     b"\x03\0\0\0tag3\0\0\0\0") + mine[at:]
    f = write("pt-markers.raw", rg.header() +
              rg.maps_chunk(95, "".join(rg.maps_lines(PROG))) +
              rg.event_format_chunk(7, 2, "bts_test_a u32 seq; char[8] tag") +
              rg.records_chunk(recs))
    rc, drc, got, err = round_trip(f, "pt-markers.pt")
    cut = want.index("%x => 0" % a("raw_write", 5))
    want = want[:cut] + ["ptwrite 200000007 at %x" % a("raw_write", 5)] + \
        want[cut:]
    tap(rc == 0 and drc == 0 and got == want,
        "PT stream: a marker is a PTWRITE of its event's id and generation "
        "at the system call that wrote it, between the same branches",
        mismatch(want, got, err))
    with open(os.path.join(WORK, "pt-markers.pt.ptxed")) as fp:
        named = [x for x in fp if x.startswith("# ptwrite ")]
    line = '# ptwrite 1 0x200000007 at 0x%x: u:bts_test_a seq=3 tag="tag3"\n' \
        % a("raw_write", 5)
    tap(named == [line], "PT stream: FILE.ptxed names each PTWRITE's event, "
        "with its fields", "".join(named) or "no # ptwrite line")


def test_pt32():
    """--format=pt of 32-bit code, decoded by libipt"""
    recs, want = records32(97)
    f = write("pt32.raw", rg.header() +
              rg.maps_chunk(97, "".join(rg.maps_lines(PROG32))) +
              rg.records_chunk(recs))
    rc, drc, got, err = round_trip(f, "pt32.pt")
    tap(rc == 0 and drc == 0 and got == want,
        "PT stream of 32-bit code: its MODE.exec packets make libipt decode "
        "it as such (in 64-bit code inc32's inc would prefix its ret)",
        mismatch(want, got, err))


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
    rc, drc, got, err = round_trip(f, "pt-vec.pt")
    tap(rc == 0 and drc == 0 and got == want and "overflow" not in err,
        "PT stream: the code run through AVX-512 and CET instructions "
        "capstone cannot decode, the jz between not taken, no overflow",
        mismatch(want, got, err))


# Where test_pt_images's process has its code: the program (PIE), a copy
# of it as its vDSO (code the trace carries), and a library mapped at
# 0x400000, closed, then another (the static prog) mapped where it was.
MAIN_BIAS = 0x555555554000
VDSO_BIAS = 0x7ffff7fc1000
LIB_BIAS = 0x400000


def images_trace(pid):
    """The records, and the branches pt-branches must find running the
    FILE.ptxed lines in order, with the stretches' ends."""
    def main(name, off=0):
        return MAIN_BIAS + SP[name][0] + off

    def vdso(name, off=0):
        return VDSO_BIAS + SP[name][0] + off

    def lib(name, off=0):
        return LIB_BIAS + SP[name][0] + off

    def b32(name, off=0):
        return a(name, off, S32)
    main_ret = main("leaf") + SP["leaf"][1] - 1
    (lib_start, lib_end), = rg.exec_ranges(PROG_PIE, LIB_BIAS)
    recs = [
        rg.thread(pid, pid, rg.THREAD_NEW),
        rg.branch(main("tramp"), main("leaf")),
        rg.branch(main_ret, vdso("tramp", 5)),
        rg.branch(vdso("tramp", 5), vdso("raw_write")),
        rg.kernel(rg.ENTRY_SYSCALL, vdso("raw_write", 5),
                  vdso("raw_write", 7)),
        rg.branch(vdso("raw_write", 7), lib("tramp", 10)),
        rg.branch(lib("tramp", 10), lib("raw_int80")),
        rg.kernel(rg.ENTRY_SYSCALL, lib("raw_int80", 5), lib("raw_int80", 7)),
        rg.branch(lib("raw_int80", 7), main("tramp", 15)),
        # the library closed, another opened where it was
        rg.map_event(rg.MAP_MUNMAP, lib_start, lib_end),
        *rg.map_file(PROG),
        rg.branch(main("tramp", 15), a("tramp", 10)),
        rg.branch(a("tramp", 10), a("raw_int80")),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_int80", 5), a("raw_int80", 7)),
        rg.branch(a("raw_int80", 7), main("tramp", 15)),
        rg.branch(main("tramp", 15), main("raw_write")),
        # execve() of prog32, from the write's syscall instruction
        rg.map_event(rg.MAP_EXEC),
        *rg.map_file(PROG32),
        rg.kernel_detail(rg.ABI_X86_64, 59, 1000),
        rg.kernel(rg.ENTRY_SYSCALL, main("raw_write", 5), b32("tramp32")),
        rg.branch(b32("tramp32"), b32("raw_write32")),
        rg.kernel(rg.ENTRY_SYSCALL, b32("raw_write32", 5),
                  b32("raw_write32", 7)),
        rg.branch(b32("raw_write32", 7), b32("tramp32", 5)),
    ]
    stretches = [[
        (main("tramp"), main("leaf")),
        (main_ret, vdso("tramp", 5)),
        (vdso("tramp", 5), vdso("raw_write")),
        (vdso("raw_write", 5), 0),
        (vdso("raw_write", 7), lib("tramp", 10)),
        (lib("tramp", 10), lib("raw_int80")),
        (lib("raw_int80", 5), 0),
        (lib("raw_int80", 7), main("tramp", 15)),
        (main("tramp", 15), a("tramp", 10)),
        # other code where the library was: the stretch ends
        (a("tramp", 10), 0),
    ], [
        (a("tramp", 10), a("raw_int80")),
        (a("raw_int80", 5), 0),
        (a("raw_int80", 7), main("tramp", 15)),
        (main("tramp", 15), main("raw_write")),
        (main("raw_write", 5), 0),
    ], [
        (b32("tramp32"), b32("raw_write32")),
        (b32("raw_write32", 5), 0),
        (b32("raw_write32", 7), b32("tramp32", 5)),
        (b32("tramp32", 5), 0),
    ]]
    return recs, [["%x => %x" % w for w in st] for st in stretches]


def raw_args(words):
    """(file, from, to, address) of each --raw of a ptxed line."""
    out = []
    for k, w in enumerate(words[:-1]):
        if w == "--raw":
            path, rng, addr = words[k + 1].rsplit(":", 2)
            lo, hi = rng.split("-")
            out.append((path, int(lo, 16), int(hi, 16), int(addr, 16)))
    return out


def images_raw():
    """images_trace()'s raw file, the bytes of its vDSO, and the branches
    of its stretches."""
    pid = 99
    recs, stretches = images_trace(pid)
    with open(PROG_PIE, "rb") as f:
        pie = f.read()
    maps = (rg.maps_lines(PROG_PIE, MAIN_BIAS) +
            rg.special_line(VDSO_BIAS, VDSO_BIAS + 0x4000, "[vdso]") +
            rg.maps_lines(PROG_PIE, LIB_BIAS))
    f = write("pt-images.raw", rg.header() + rg.maps_chunk(pid, maps) +
              rg.memory_chunk(pid, VDSO_BIAS, pie) + rg.records_chunk(recs))
    return f, pie, stretches


def test_pt_images():
    """--format=pt: FILE.ptxed, the images of each stretch"""
    f, pie, stretches = images_raw()
    rc, drc, got, err = round_trip(f, "pt-images.pt")
    out = os.path.join(WORK, "pt-images.pt")
    lines = ptxed_lines(out) if rc == 0 else []
    want = sum(stretches, [])
    tap(rc == 0 and drc == 0 and got == want,
        "PT images: run in order, FILE.ptxed's lines decode the program "
        "mapped at a bias, its vDSO, a library and the one mapped where it "
        "was, and the program it executed",
        mismatch(want, got, err))

    size = os.path.getsize(out)
    ranges = [w[2].rsplit(":", 1)[1] for w in lines]
    bounds = [tuple(int(x, 16) for x in r.split("-")) for r in ranges]
    files = [sorted(set(r[0] for r in raw_args(w))) for w in lines]
    mem = out + ".mem1"
    mem_ok = os.path.exists(mem) and open(mem, "rb").read() == pie
    tap(len(lines) == 3 and bounds[0][0] == 0 and
        all(bounds[k][1] == bounds[k + 1][0] for k in range(2)) and
        bounds[2][1] == size and
        files == [sorted([PROG_PIE, mem]), sorted([PROG, PROG_PIE]),
                  [PROG32]] and mem_ok,
        "PT images: a stretch per exec and per library mapped over another, "
        "covering the stream; the vDSO's bytes from the trace in FILE.mem1",
        "\n".join(" ".join(w) for w in lines) + "\n%r %d %r" % (
            files, size, mem_ok))

    # The same stream decoded whole with the first stretch's images: the
    # library's code stands where the new one's is, and the comparison
    # fails (so the split into stretches is what makes it decode).
    p = subprocess.run([PT_BRANCHES, "--pt", out] + lines[0][4:]
                       if lines else ["false"], capture_output=True,
                       text=True)
    tap(p.stdout.splitlines() != want,
        "self-test: decoded with one stretch's images, the stream does not "
        "give the trace's branches", p.stdout + p.stderr)

