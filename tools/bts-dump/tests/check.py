#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bts-dump's -i path on synthetic raw files (see run): prints TAP.

Every trace is built here from the test programs' symbols (nm), their
marked source lines and the instruction lengths written down in the
assembly; the expected output is derived from those, not from bts-dump.
"""

import json
import os
import re
import struct
import subprocess
import sys
import time

import rawgen as rg

from checklib import (BTS_DUMP, WORK, PROG, PROG_PIE, PROG32, SRC, results,
                      tap, nm, marked_line, write, run, run_memcheck, jsonl,
                      has_lines, diag)
import check_devtools
import check_files
import check_gdb_ext
import check_inline
import check_insn_len
import check_jit
import check_order
import check_perf
import check_pt
from trace_events import chrome_check, chrome_events

S = nm(PROG)
S32 = nm(PROG32)
PROG_C = os.path.join(SRC, "prog.c")
PROG32_C = os.path.join(SRC, "prog32.c")
LEAF_LINE = marked_line(PROG_C, "leaf")
SIG_LINE = marked_line(PROG_C, "on_signal")
LEAF32_LINE = marked_line(PROG32_C, "leaf32")


def a(name, off=0, syms=S):
    return syms[name][0] + off


def leaf_ret(syms=S, name="leaf"):
    """gcc -O0 ends a function with a one-byte ret."""
    return syms[name][0] + syms[name][1] - 1


# A thread of process 10 runs tramp: call leaf, ret, call raw_write
# (write(2)), ret, call raw_int80 (the i386 write(2)), then raw_split
# (getpid(2) set a block earlier) and raw_indirect (unknown number); a
# page fault in leaf goes to on_signal; records are lost; a marker.
TRACE = [
    rg.thread(10, 10, rg.THREAD_NEW),
    rg.branch(a("tramp"), a("leaf")),
    rg.branch(leaf_ret(), a("tramp", 5)),
    rg.branch(a("tramp", 5), a("raw_write")),
    rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
    rg.branch(a("raw_write", 7), a("tramp", 10)),
    rg.branch(a("tramp", 10), a("raw_int80")),
    rg.kernel(rg.ENTRY_SYSCALL, a("raw_int80", 5), a("raw_int80", 7)),
    rg.branch(a("raw_int80", 7), a("raw_split")),
    rg.branch(a("raw_split", 5), a("raw_split", 7)),
    rg.kernel(rg.ENTRY_SYSCALL, a("raw_split", 7), a("raw_split", 9)),
    rg.branch(a("raw_split", 9), a("raw_indirect")),
    rg.kernel(rg.ENTRY_SYSCALL, a("raw_indirect", 3), a("raw_indirect", 5)),
    rg.branch(a("raw_indirect", 5), a("leaf")),
    rg.kernel(rg.ENTRY_EXCEPTION, a("leaf", 1), a("on_signal"), 14),
    rg.lost(7),
    *rg.user_event(42, 7, a("leaf", 1), bytes(range(20))),
    rg.kernel(rg.ENTRY_INTERRUPT, a("leaf", 1), a("leaf", 1), 236),
    rg.thread(10, 10, rg.THREAD_EXIT),
]


def x(addr):
    return "0x%x" % addr


def test_text_json():
    f = write("static.raw", rg.header() +
              rg.maps_chunk(10, rg.maps_lines(PROG)) +
              rg.records_chunk(TRACE))
    rc, out, err = run(f)
    leaf_src = "(prog.c:%d)" % LEAF_LINE
    want = [
        "[tid 10 pid 10]",
        "-- new thread",
        "%s tramp -> %s leaf %s" % (x(a("tramp")), x(a("leaf")), leaf_src),
        "%s leaf+0x%x %s -> %s tramp+0x5" % (
            x(leaf_ret()), leaf_ret() - a("leaf"), leaf_src,
            x(a("tramp", 5))),
        "%s tramp+0x5 -> %s raw_write" % (x(a("tramp", 5)),
                                          x(a("raw_write"))),
        "-- syscall write at %s raw_write+0x5" % x(a("raw_write", 5)),
        "-- syscall write at %s raw_int80+0x5" % x(a("raw_int80", 5)),
        "-- syscall getpid at %s raw_split+0x7" % x(a("raw_split", 7)),
        "-- syscall ? at %s raw_indirect+0x3" % x(a("raw_indirect", 3)),
        "-- exception #PF page fault at %s leaf+0x1 %s" % (
            x(a("leaf", 1)), leaf_src),
        "-- signal handler entry -> %s on_signal (prog.c:%d)" % (
            x(a("on_signal")), SIG_LINE),
        "-- lost 7 records",
        "-- event 42 (generation 7): %s at %s leaf+0x1 %s" % (
            " ".join("%02x" % i for i in range(20)),
            x(a("leaf", 1)), leaf_src),
        "-- interrupt vector 236 at %s leaf+0x1 %s" % (x(a("leaf", 1)),
                                                       leaf_src),
        "-- thread exited",
    ]
    tap(rc == 0 and has_lines(out, want),
        "text: symbols, source lines, system calls, signal, pseudo-records",
        diag(out, want) + err)

    rc, out, err = run(f, "--format=jsonl")
    try:
        recs = jsonl(out)
    except ValueError as e:
        tap(False, "jsonl: one JSON object per line", str(e) + out)
        return
    # Details make no line of their own.
    shown = [r for r in TRACE if (r[0] & 0xff) != rg.PSEUDO_DETAIL]
    tap(rc == 0 and len(recs) == len(shown) and
        all(r["tid"] == 10 and r["pid"] == 10 for r in recs),
        "jsonl: one JSON object per record", out + err)
    b = recs[1]
    tap(b["kind"] == "branch" and b["from"] == x(a("tramp")) and
        b["from_sym"] == "tramp" and "from_src" not in b and
        b["to_sym"] == "leaf" and b["to_src"] == "prog.c:%d" % LEAF_LINE,
        "jsonl: branch with symbols, source only where DWARF has it",
        json.dumps(b))
    k = [r for r in recs if r["kind"] == "kernel"]
    tap([r.get("syscall") for r in k[:4]] ==
        ["write", "write", "getpid", None] and
        k[0]["entry"] == "syscall" and k[0]["syscall_nr"] == 1 and
        k[1]["syscall_nr"] == 4 and k[0]["from_sym"] == "raw_write+0x5" and
        k[0]["to"] == x(a("raw_write", 7)) and "signal" not in k[0],
        "jsonl: system calls by ABI (syscall: x86-64, int $0x80: i386)",
        "\n".join(json.dumps(r) for r in k))
    pf = k[4]
    tap(pf["entry"] == "exception" and pf["vector"] == 14 and
        pf.get("signal") is True and pf["to_sym"] == "on_signal" and
        k[5]["entry"] == "interrupt" and k[5]["vector"] == 236 and
        "signal" not in k[5],
        "jsonl: page fault into a signal handler, interrupt",
        json.dumps(pf) + json.dumps(k[5]))
    kinds = [r["kind"] for r in recs]
    tap(kinds[0] == "thread_new" and kinds[-1] == "thread_exit" and
        recs[15] == {"tid": 10, "pid": 10, "kind": "lost", "count": 7} and
        recs[16] == {"tid": 10, "pid": 10, "kind": "marker",
                     "source": "user_event", "id": 42, "gen": 7,
                     "at": x(a("leaf", 1)), "at_sym": "leaf+0x1",
                     "at_src": "prog.c:%d" % LEAF_LINE, "at_dso": "prog",
                     "payload": bytes(range(20)).hex()},
        "jsonl: thread_new, lost, marker, thread_exit", out)


def test_calls_insn():
    f = os.path.join(WORK, "static.raw")
    rc, out, err = run(f, "--calls")
    # gdb's numbered segments; the other lines are not numbered.
    want = [
        "[tid 10 pid 10]",
        "\t-- new thread",
        "1\ttramp",
        "2\t  leaf",
        "3\ttramp",
        "4\t  raw_write",
        "\t    -- syscall write",
        "5\ttramp",
        "6\t  raw_int80",
        "\t    -- syscall write",
        "7\traw_split",
        "\t  -- syscall getpid",
        "8\traw_indirect",
        "\t  -- syscall ?",
        "9\tleaf",
        "\t  -- signal handler entry",
        "10\t  on_signal",
        "\t    -- lost 7 records",
    ]
    tap(rc == 0 and has_lines(out, want), "--calls: call tree from call/ret",
        diag(out, want) + err)

    rc, out, err = run(f, "--insn")
    want = [
        "%s tramp+0x5 -> %s raw_write" % (x(a("tramp", 5)),
                                          x(a("raw_write"))),
        "N\t%s raw_write+0x0: movl $1, %%eax" % x(a("raw_write")),
        "N\t%s raw_write+0x5: syscall" % x(a("raw_write", 5)),
        "-- syscall write at %s raw_write+0x5" % x(a("raw_write", 5)),
        "N\t%s raw_write+0x7: retq" % x(a("raw_write", 7)),
        "%s raw_write+0x7 -> %s tramp+0xa" % (x(a("raw_write", 7)),
                                              x(a("tramp", 10))),
    ]
    # Numbered as gdb's instruction history: 1, 2, 3, ... in the thread.
    nums = [int(m) for m in re.findall(r"^(\d+)\t", out, re.M)]
    tap(rc == 0 and has_lines(re.sub(r"^\d+\t", "N\t", out, flags=re.M),
                              want) and
        nums == list(range(1, len(nums) + 1)) and len(nums) > 10,
        "--insn: the instructions between branches, syscall included, "
        "numbered", diag(out, want) + err)


def test_calls_jump_out():
    """A return backs out of every call it returns past (longjmp)."""
    f = write("jump.raw", rg.header() +
              rg.maps_chunk(50, rg.maps_lines(PROG)) +
              rg.records_chunk([
                  rg.thread(50, 50, rg.THREAD_NEW),
                  rg.branch(a("jump_caller"), a("jump_outer")),
                  rg.branch(a("jump_outer"), a("jump_middle")),
                  rg.branch(a("jump_middle"), a("jump_inner")),
                  rg.branch(a("jump_inner"), a("jump_back")),
                  rg.branch(a("jump_back"), a("jump_caller", 5)),
                  rg.branch(a("jump_caller", 5), a("tramp")),
              ]))
    rc, out, err = run(f, "--calls")
    want = [
        "1\tjump_caller",
        "2\t  jump_outer",
        "3\t    jump_middle",
        "4\t      jump_inner",
        "5\t      jump_outer",
        "6\tjump_caller",
        "7\ttramp",
    ]
    # The last return has no call on the stack: it leaves the depth 0.
    tap(rc == 0 and out.splitlines()[2:] == want,
        "--calls: a return after a jump out of calls (longjmp) goes back "
        "to the depth of the call it returns to", diag(out, want) + err)


def test_calls_call_next():
    """A call to the next instruction is no call: gdb's btrace and perf's
    thread stacks leave it out."""
    f = write("call-next.raw", rg.header() +
              rg.maps_chunk(51, rg.maps_lines(PROG)) +
              rg.records_chunk([
                  rg.thread(51, 51, rg.THREAD_NEW),
                  rg.branch(a("call_next"), a("call_next", 5)),
                  rg.branch(a("call_next", 6), a("leaf")),
                  rg.branch(leaf_ret(), a("call_next", 11)),
                  rg.branch(a("call_next", 11), a("tramp", 5)),
              ]))
    rc, out, err = run(f, "--calls")
    want = [
        "1\tcall_next",
        "2\t  leaf",
        "3\tcall_next",
        "4\ttramp",
    ]
    tap(rc == 0 and out.splitlines()[2:] == want,
        "--calls: a call to the next instruction (call 1f; 1: pop) is no "
        "call", diag(out, want) + err)
    rc, out, err = run(f, "--format=folded")
    tap(rc == 0 and "call_next;leaf" in out and
        "call_next;call_next" not in out,
        "folded: a call to the next instruction pushes no frame", out + err)


def test_calls_nested_signals():
    """A signal handler's return to the restorer leaves its signal's
    level for the sigreturn to pop: with signals nested, each sigreturn
    goes back to the depth its signal interrupted."""
    ns = [1000]

    def interrupt(entry, handler):
        ns[0] += 10
        return [rg.kernel_detail(rg.ABI_NONE, 2**64 - 1, ns[0]),
                rg.kernel(rg.ENTRY_INTERRUPT, entry, handler, 236)]

    def sigreturn(resume):
        ns[0] += 10
        return [rg.kernel_detail(rg.ABI_X86_64, 15, ns[0]),
                rg.kernel(rg.ENTRY_SYSCALL, a("sig_restore", 5), resume)]

    # tramp calls leaf; a signal's handler, tramp, calls leaf; a second
    # signal's handler is leaf; each handler returns to sig_restore.
    f = write("signals.raw", rg.header() +
              rg.maps_chunk(52, rg.maps_lines(PROG)) +
              rg.records_chunk([
                  rg.thread(52, 52, rg.THREAD_NEW),
                  rg.branch(a("tramp"), a("leaf")),
                  *interrupt(a("leaf", 1), a("tramp")),
                  rg.branch(a("tramp"), a("leaf")),
                  *interrupt(a("leaf", 1), a("leaf")),
                  rg.branch(leaf_ret(), a("sig_restore")),
                  *sigreturn(a("leaf", 1)),
                  rg.branch(leaf_ret(), a("tramp", 5)),
                  rg.branch(a("tramp", 15), a("sig_restore")),
                  *sigreturn(a("leaf", 1)),
                  rg.branch(leaf_ret(), a("tramp", 5)),
              ]))
    rc, out, err = run(f, "--calls")
    want = [
        "1\ttramp",
        "2\t  leaf",
        "\t    -- signal handler entry",
        "3\t    tramp",
        "4\t      leaf",
        "\t        -- signal handler entry",
        "5\t        leaf",
        "6\t        sig_restore",
        "\t          -- syscall rt_sigreturn",
        "7\t      leaf",
        "8\t    tramp",
        "9\t    sig_restore",
        "\t      -- syscall rt_sigreturn",
        "10\t  leaf",
        "11\ttramp",
    ]
    tap(rc == 0 and out.splitlines()[2:] == want,
        "--calls: nested signals: a handler's return to the restorer pops "
        "no signal's level, each sigreturn its own", diag(out, want) + err)


def test_calls_smashed_return():
    """A return to address 1 (a smashed stack) is no signal's sigreturn:
    the handler's level stays for the fault it leads to."""
    f = write("smashed.raw", rg.header() +
              rg.maps_chunk(53, rg.maps_lines(PROG)) +
              rg.records_chunk([
                  rg.thread(53, 53, rg.THREAD_NEW),
                  rg.branch(a("tramp"), a("leaf")),
                  rg.kernel_detail(rg.ABI_NONE, 2**64 - 1, 1000),
                  rg.kernel(rg.ENTRY_INTERRUPT, a("leaf", 1), a("tramp"), 236),
                  rg.branch(a("tramp"), a("leaf")),
                  rg.branch(leaf_ret(), 1),
                  rg.kernel_detail(rg.ABI_NONE, 2**64 - 1, 1010),
                  rg.kernel(rg.ENTRY_EXCEPTION, 1, a("on_signal"), 14),
              ]))
    rc, out, err = run(f, "--calls")
    want = [
        "1\ttramp",
        "2\t  leaf",
        "\t    -- signal handler entry",
        "3\t    tramp",
        "4\t      leaf",
        "5\t    0x1",
        "\t      -- signal handler entry",
        "6\t      on_signal",
    ]
    tap(rc == 0 and out.splitlines()[2:] == want,
        "--calls: a return to address 1 leaves the handler's level",
        diag(out, want) + err)


def test_calls_landing_pad():
    """A return to no return address on the stack, into a function that
    made a call on it (a C++ exception's landing pad): back to that call's
    level, as gdb's btrace matches a return's function."""
    f = write("landing.raw", rg.header() +
              rg.maps_chunk(53, rg.maps_lines(PROG)) +
              rg.records_chunk([
                  rg.thread(53, 53, rg.THREAD_NEW),
                  rg.branch(a("throw_catch"), a("throw_mid")),
                  rg.branch(a("throw_mid"), a("throw_raise")),
                  rg.branch(a("throw_raise", 5), a("throw_catch", 6)),
                  rg.branch(a("throw_catch", 6), a("leaf")),
                  rg.branch(leaf_ret(), a("throw_catch", 11)),
                  rg.branch(a("throw_catch", 11), a("tramp", 5)),
              ]))
    rc, out, err = run(f, "--calls")
    want = [
        "1\tthrow_catch",
        "2\t  throw_mid",
        "3\t    throw_raise",
        "4\tthrow_catch",
        "5\t  leaf",
        "6\tthrow_catch",
        "7\ttramp",
    ]
    tap(rc == 0 and out.splitlines()[2:] == want,
        "--calls: a return to a landing pad goes back to the level of "
        "the call its function made", diag(out, want) + err)


def plt_entry(path, name):
    """Where objdump says @name's PLT entry is."""
    out = subprocess.check_output(["objdump", "-d", path], text=True)
    m = re.search(r"^([0-9a-f]+) <%s@plt>:" % re.escape(name), out, re.M)
    return int(m.group(1), 16)


def test_pie():
    bias = 0x555555554000
    sp = nm(PROG_PIE)
    plt = plt_entry(PROG_PIE, "getpid")
    f = write("pie.raw", rg.header() +
              rg.maps_chunk(20, rg.maps_lines(PROG_PIE, bias)) +
              rg.records_chunk([
                  rg.thread(21, 20, rg.THREAD_NEW),
                  rg.branch(bias + sp["tramp"][0] + 5,
                            bias + sp["raw_write"][0]),
                  rg.kernel(rg.ENTRY_SYSCALL, bias + sp["raw_write"][0] + 5,
                            bias + sp["raw_write"][0] + 7),
                  rg.branch(bias + sp["main"][0], bias + sp["leaf"][0]),
                  rg.branch(bias + sp["main"][0] + 1, bias + plt),
              ]))
    rc, out, err = run(f)
    want = [
        "[tid 21 pid 20]",
        "%s tramp+0x5 -> %s raw_write" % (x(bias + sp["tramp"][0] + 5),
                                          x(bias + sp["raw_write"][0])),
        "-- syscall write at %s raw_write+0x5" % x(bias + sp["raw_write"][0]
                                                   + 5),
        "%s main (prog.c:%d) -> %s leaf (prog.c:%d)" % (
            x(bias + sp["main"][0]), marked_line(PROG_C, "main"),
            x(bias + sp["leaf"][0]), LEAF_LINE),
        "%s main+0x1 (prog.c:%d) -> %s getpid@plt" % (
            x(bias + sp["main"][0] + 1), marked_line(PROG_C, "main"),
            x(bias + plt)),
    ]
    tap(rc == 0 and has_lines(out, want),
        "PIE loaded at a bias: symbols, lines, code, PLT entries",
        diag(out, want) + err)


def test_demangle():
    sp = nm(PROG)
    cxx, legacy, v0 = (sp[n][0] for n in (
        "_ZN3foo3barEi", "_ZN4core3fmt5write17h0123456789abcdefE",
        "_RNvNtCs1234_7mycrate3foo3bar"))
    f = write("demangle.raw", rg.header() +
              rg.maps_chunk(40, rg.maps_lines(PROG)) +
              rg.records_chunk([
                  rg.thread(40, 40, rg.THREAD_NEW),
                  rg.branch(cxx, legacy),
                  rg.branch(legacy, v0),
              ]))
    # Under valgrind: the names are found in tables that grow, and
    # remembered on first use.
    rc, out, err = run_memcheck(f)
    want = [
        "%s foo::bar(int) (prog.c:%d) -> %s core::fmt::write (prog.c:%d)" % (
            x(cxx), marked_line(PROG_C, "cxx_fn"), x(legacy),
            marked_line(PROG_C, "cxx_fn") + 3),
        "%s core::fmt::write (prog.c:%d) -> %s mycrate::foo::bar (prog.c:%d)"
        % (x(legacy), marked_line(PROG_C, "cxx_fn") + 3, x(v0),
           marked_line(PROG_C, "cxx_fn") + 6),
    ]
    rc2, out2, err2 = run_memcheck(f, "--no-demangle")
    want2 = ["%s _ZN3foo3barEi (prog.c:%d) -> %s "
             "_ZN4core3fmt5write17h0123456789abcdefE (prog.c:%d)" % (
                 x(cxx), marked_line(PROG_C, "cxx_fn"), x(legacy),
                 marked_line(PROG_C, "cxx_fn") + 3)]
    tap(rc == 0 and has_lines(out, want) and rc2 == 0 and
        has_lines(out2, want2),
        "C++ and Rust (legacy, v0) names demangled; --no-demangle keeps "
        "them; valgrind finds no error",
        diag(out, want) + err + diag(out2, want2) + err2)


def test_elf32():
    f = write("elf32.raw", rg.header() +
              rg.maps_chunk(30, rg.maps_lines(PROG32)) +
              rg.records_chunk([
                  rg.thread(30, 30, rg.THREAD_NEW),
                  rg.branch(a("_start", 0, S32), a("raw_write32", 0, S32)),
                  rg.kernel(rg.ENTRY_SYSCALL, a("raw_write32", 5, S32),
                            a("raw_write32", 7, S32)),
                  rg.branch(a("raw_write32", 7, S32), a("leaf32", 0, S32)),
                  rg.branch(a("raw_sysenter32", 0, S32) - 1,
                            a("raw_sysenter32", 0, S32)),
                  rg.kernel(rg.ENTRY_SYSCALL, a("raw_sysenter32", 5, S32),
                            a("raw_sysenter32", 9, S32)),
              ]))
    rc, out, err = run(f, "--format=jsonl")
    recs = jsonl(out) if rc == 0 else []
    k = [r for r in recs if r["kind"] == "kernel"]
    ok = len(recs) == 6 and \
        recs[3]["to_sym"] == "leaf32" and \
        recs[3]["to_src"] == "prog32.c:%d" % LEAF32_LINE and \
        [r.get("syscall") for r in k] == ["write", "write"] and \
        not any(r.get("signal") for r in k)
    tap(ok, "ELF32: symbols, lines, i386 system calls, sysenter's return",
        out + err)


def test_vdso():
    """The vDSO of this very process, as a memory image."""
    start = end = None
    with open("/proc/self/maps") as f:
        for line in f:
            if line.rstrip().endswith("[vdso]"):
                start, end = (int(v, 16) for v in line.split()[0].split("-"))
    if start is None:
        tap(True, "vDSO image # SKIP no vDSO here")
        return
    with open("/proc/self/mem", "rb") as f:
        f.seek(start)
        image = f.read(end - start)
    vdso = write("vdso.so", image)
    names = {}
    for line in subprocess.check_output(["nm", "-D", "--defined-only", vdso],
                                        text=True).splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "Tt":
            names.setdefault(int(p[0], 16), []).append(p[2].split("@")[0])
    # A function with one name: aliases could show as either.
    value, name = min((v, n[0]) for v, n in names.items() if len(n) == 1)
    base = start   # the vDSO is linked at 0
    maps = rg.special_line(start, end, "[vdso]")
    recs = [rg.thread(40, 40), rg.branch(base + value + 1, base + value)]
    with_image = write("vdso.raw", rg.header() + rg.maps_chunk(40, maps) +
                       rg.memory_chunk(40, start, image) +
                       rg.records_chunk(recs))
    without = write("novdso.raw", rg.header() + rg.maps_chunk(40, maps) +
                    rg.records_chunk(recs))
    rc, out, err = run(with_image)
    want = ["%s %s+0x1 -> %s %s" % (x(base + value + 1), name,
                                    x(base + value), name)]
    rc2, out2, err2 = run(without)
    want2 = ["%s [vdso]+0x%x -> %s [vdso]+0x%x" % (
        x(base + value + 1), value + 1, x(base + value), value)]
    tap(rc == 0 and has_lines(out, want) and rc2 == 0 and
        has_lines(out2, want2),
        "vDSO: symbols from its memory image, [vdso]+off without",
        diag(out, want) + err + diag(out2, want2) + err2)


def test_maps():
    """Mappings stay known after a snapshot without them, children get
    their parent's, unknown addresses stay bare."""
    other = rg.special_line(0x7ffff000, 0x80000000, "[stack]")
    f = write("maps.raw", rg.header() +
              rg.maps_chunk(50, rg.maps_lines(PROG)) +
              rg.maps_chunk(50, other) +
              rg.maps_chunk(51, other, ppid=50) +
              rg.records_chunk([
                  rg.thread(50, 50),
                  rg.branch(a("tramp"), a("leaf")),
                  rg.thread(51, 51, rg.THREAD_NEW),
                  rg.branch(a("tramp"), a("leaf")),
                  rg.thread(52, 52),
                  rg.branch(a("tramp"), a("leaf")),
              ]))
    rc, out, err = run(f, "--format=jsonl")
    recs = jsonl(out) if rc == 0 else []
    br = [r for r in recs if r["kind"] == "branch"]
    tap(len(br) == 3 and br[0].get("to_sym") == "leaf" and
        br[1].get("to_sym") == "leaf" and br[1]["pid"] == 51 and
        set(br[2]) == {"tid", "pid", "kind", "from", "to"},
        "maps: every mapping kept, inherited by children, none for strangers",
        out + err)


def test_streams():
    """Two /dev/bts files interleaved: each keeps its own thread."""
    f = write("streams.raw", rg.header() +
              rg.maps_chunk(60, rg.maps_lines(PROG)) +
              rg.records_chunk([rg.thread(61, 60),
                                rg.branch(a("tramp"), a("leaf"))], 0) +
              rg.records_chunk([rg.thread(62, 60),
                                rg.branch(a("tramp", 5), a("raw_write"))], 1) +
              rg.records_chunk([rg.branch(leaf_ret(), a("tramp", 5))], 0) +
              rg.chunk(99, b"a chunk of a later version") +
              rg.exit_chunk(60, 139, "prog"))
    rc, out, err = run(f)
    want = ["[tid 61 pid 60]",
            "%s tramp -> %s leaf (prog.c:%d)" % (x(a("tramp")), x(a("leaf")),
                                                  LEAF_LINE),
            "[tid 62 pid 60]",
            "%s tramp+0x5 -> %s raw_write" % (x(a("tramp", 5)),
                                              x(a("raw_write"))),
            "[tid 61 pid 60]"]
    tap(rc == 0 and has_lines(out, want),
        "streams: headers when the thread changes; unknown chunks skipped",
        diag(out, want) + err)
    tap(err.strip() == "bts-dump: prog killed by signal SIGSEGV",
        "exit chunk: the command's end is reported", err)


def test_filters():
    """--tid, --sym, --dso and --range choose what prints, not what decodes"""
    f = os.path.join(WORK, "streams.raw")
    rc, out, err = run(f, "--tid=62")
    rc2, out2, err2 = run(f, "--tid=60")
    rc3, out3, err3 = run(f, "--tid=061,9")
    tap(rc == rc2 == rc3 and "tid 61" not in out and
        "raw_write" in out and out2.count("->") == 3 and
        out3.count("->") == 2 and "tid 62" not in out3,
        "--tid: a thread, or every thread of a process; ids in decimal "
        "(061 is 61, as ps says it)",
        "%d %d %d\n" % (rc, rc2, rc3) + out + out2 + out3)

    f = os.path.join(WORK, "static.raw")
    rc, out, err = run(f, "--sym=raw_w*")
    want = ["%s tramp+0x5 -> %s raw_write" % (x(a("tramp", 5)),
                                              x(a("raw_write"))),
            "-- syscall write at %s raw_write+0x5" % x(a("raw_write", 5)),
            "%s raw_write+0x7 -> %s tramp+0xa" % (x(a("raw_write", 7)),
                                                  x(a("tramp", 10)))]
    lines = [ln for ln in out.splitlines()
             if "->" in ln or ln.startswith("-- syscall")]
    tap(rc == 0 and lines == want,
        "--sym: only the branches and system calls with an end in a "
        "function a glob matches", diag(out, want) + err)

    # The system call numbers come from decoding what was filtered out.
    rc, out, err = run(f, "--range=%x-%x" % (a("raw_split"),
                                             a("raw_split", 8)),
                       "--format=jsonl")
    recs = jsonl(out) if rc == 0 else []
    recs = [r for r in recs if r["kind"] in ("branch", "kernel")]
    tap(rc == 0 and [r["kind"] for r in recs] ==
        ["branch", "branch", "kernel"] and recs[2]["syscall"] == "getpid",
        "--range: only what has an end in it; decoding still sees all",
        out + err)

    rc, out, err = run(f, "--dso=libc*")
    rc2, out2, err2 = run(f, "--dso=prog", "--tid=10")
    branches = re.findall(r"^0x", out2, re.M)
    tap(rc == 0 and "->" not in out and "-- syscall" not in out and
        "-- lost 7 records" in out and len(branches) == 9,
        "--dso: by file name; losses still show", out + out2 + err + err2)
    here = os.path.dirname(PROG)
    rc, out, err = run(f, "--dso=%s/*" % here, "--tid=10")
    rc2, out2, err2 = run(f, "--dso=/nowhere/*", "--tid=10")
    rc3, out3, err3 = run(f, "--dso=*/prog", "--tid=10")
    tap(rc == rc2 == rc3 == 0 and
        len(re.findall(r"^0x", out, re.M)) == 9 and
        not re.findall(r"^0x", out2, re.M) and
        len(re.findall(r"^0x", out3, re.M)) == 9,
        "--dso: a glob with a slash by the file's path",
        out + out2 + out3 + err + err2 + err3)

    p = subprocess.run([BTS_DUMP, "-i", f, "--calls", "--sym=leaf"],
                       capture_output=True, text=True)
    p2 = subprocess.run([BTS_DUMP, "-i", f, "--range=20-10"],
                        capture_output=True, text=True)
    tap(p.returncode == 2 and "--sym" in p.stderr and p2.returncode == 2 and
        "bad --range '20-10'" in p2.stderr,
        "--sym with --calls, an empty --range: usage errors",
        p.stderr + p2.stderr)


def test_comm():
    """The process's name, where the trace gives it, from there on"""
    f = write("comm.raw", rg.header() +
              rg.maps_chunk(80, rg.maps_lines(PROG)) +
              rg.comm_chunk(80, 'sh "x"') +
              rg.records_chunk([rg.thread(81, 80, rg.THREAD_NEW),
                                rg.branch(a("tramp"), a("leaf"))]) +
              rg.comm_chunk(80, "prog") +
              rg.records_chunk([rg.thread(82, 80, rg.THREAD_NEW),
                                rg.branch(a("tramp"), a("leaf"))]))
    rc, out, err = run(f)
    want = ['[tid 81 pid 80 sh "x"]', "[tid 82 pid 80 prog]"]
    tap(rc == 0 and has_lines(out, want),
        "comm: text headers name the process as it was named then",
        diag(out, want) + err)
    rc, out, err = run(f, "--format=jsonl")
    recs = [r for r in jsonl(out) if r["kind"] != "unordered"] \
        if rc == 0 else []
    rc2, out2, err2 = run(f, "--format=chrome")
    names = [e["args"]["name"] for e in json.loads(out2)["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"] \
        if rc2 == 0 else []
    rc3, out3, err3 = run(f, "--format=folded")
    tap(rc == rc2 == rc3 == 0 and
        [r.get("comm") for r in recs] == ['sh "x"'] * 2 + ["prog"] * 2 and
        names[0].startswith('sh "x" tid 81') and
        out3.startswith('[tid 81 pid 80 sh "x"];'),
        "comm: in jsonl, in chrome's track names, in folded stacks' roots",
        out + out2 + out3 + err + err2 + err3)
    f = write("badcomm.raw", rg.header() + rg.comm_chunk(80, "x" * 64))
    rc, out, err = run(f)
    tap(rc == 1 and "bad comm chunk size" in err,
        "comm: a name too long for any kernel is a malformed file", err)

    f = write("threadcomm.raw", rg.header() +
              rg.maps_chunk(80, rg.maps_lines(PROG)) +
              rg.comm_chunk(80, "prog") +
              rg.thread_comm_chunk(80, 81, "worker") +
              rg.records_chunk([rg.thread(81, 80, rg.THREAD_NEW),
                                rg.branch(a("tramp"), a("leaf")),
                                rg.thread(82, 80, rg.THREAD_NEW),
                                rg.branch(a("tramp"), a("leaf")),
                                rg.thread(81, 80, rg.THREAD_EXIT),
                                rg.thread(81, 80, rg.THREAD_NEW),
                                rg.branch(a("tramp"), a("leaf"))]))
    rc, out, err = run(f)
    want = ["[tid 81 pid 80 worker]", "[tid 82 pid 80 prog]",
            "[tid 81 pid 80 worker]", "-- thread exited",
            "[tid 81 pid 80 prog]", "-- new thread"]
    tap(rc == 0 and has_lines(out, want),
        "thread comm: a thread's own name; others, and a new thread of "
        "its id, go by the process's", diag(out, want) + err)
    # The kernel's own word (BTS_MAP_COMM), where the name changed: over
    # what /proc said when the records were read.
    f = write("mapcomm.raw", rg.header() +
              rg.maps_chunk(80, rg.maps_lines(PROG)) +
              rg.comm_chunk(80, "late") +
              rg.thread_comm_chunk(80, 81, "late-worker") +
              rg.records_chunk([rg.thread(80, 80, rg.THREAD_NEW),
                                *rg.map_comm("early"),
                                rg.branch(a("tramp"), a("leaf")),
                                rg.thread(81, 80, rg.THREAD_NEW),
                                *rg.map_comm("early"),
                                rg.branch(a("tramp"), a("leaf")),
                                *rg.map_comm("worker"),
                                rg.branch(a("tramp"), a("leaf")),
                                rg.thread(80, 80),
                                rg.branch(a("tramp"), a("leaf")),
                                *rg.map_comm("main"),
                                rg.branch(a("tramp"), a("leaf"))]))
    rc, out, err = run(f)
    want = ["[tid 80 pid 80 early]", "[tid 81 pid 80 early]",
            "[tid 81 pid 80 worker]", "[tid 80 pid 80 early]",
            "[tid 80 pid 80 main]"]
    rc2, out2, err2 = run(f, "--show-maps")
    want2 = ["[tid 81 pid 80 early]", "-- comm early",
             "[tid 81 pid 80 worker]", "-- comm worker"]
    rc3, out3, err3 = run(f, "--format=jsonl", "--show-maps")
    got3 = [(r["tid"], r["kind"], r.get("comm")) for r in jsonl(out3)
            if r["kind"] in ("comm", "branch")] if rc3 == 0 else []
    want3 = [(80, "comm", "early"), (80, "branch", "early"),
             (81, "comm", "early"), (81, "branch", "early"),
             (81, "comm", "worker"), (81, "branch", "worker"),
             (80, "branch", "early"), (80, "comm", "main"),
             (80, "branch", "main")]
    # /proc's later names head no branch.
    lines = out.splitlines()
    late = [h for h, n in zip(lines, lines[1:] + [""])
            if h.startswith("[tid") and n.startswith("0x") and "late" in h]
    tap(rc == rc2 == rc3 == 0 and has_lines(out, want) and not late and
        has_lines(out2, want2) and got3 == want3,
        "thread comm: the trace's BTS_MAP_COMM names each thread from "
        "where it was renamed (text headers, --show-maps, jsonl)",
        diag(out, want) + diag(out2, want2) + "%s\n" % got3 + err + err2 +
        err3)
    f = write("badthreadcomm.raw", rg.header() +
              rg.thread_comm_chunk(80, 0, "worker"))
    rc, out, err = run(f)
    tap(rc == 1 and "thread comm chunk without a thread" in err,
        "thread comm: a name for thread 0 is a malformed file", err)


def test_progress():
    """--progress: the same output, a count on stderr, whatever chunks"""
    pid = 85
    start = int(rg.maps_lines(PROG)[0].split("-")[0], 16)
    first = (rg.header() + rg.maps_chunk(pid, "".join(rg.maps_lines(PROG))) +
             rg.comm_chunk(pid, "prog") +
             rg.memory_chunk(pid, 0x7fff0000, b"\0" * 64) +
             rg.event_format_chunk(42, 7, "name: app_err") +
             rg.jit_chunk(pid, pid, "7f1000000100 40 jit_a\n") +
             rg.file_chunk(pid, start, PROG) +
             rg.records_chunk([rg.thread(pid, pid, rg.THREAD_NEW),
                               rg.branch(a("tramp"), a("leaf"))]))
    rest = (rg.records_chunk([rg.branch(leaf_ret(), a("tramp", 5))]) +
            rg.exit_chunk(pid, 0, "prog"))
    f = write("progress.raw", first + rest)
    rc, want, err = run(f)
    # From a pipe that stalls past a second, so a report is due.
    p = subprocess.Popen([BTS_DUMP, "-i", "-", "--progress"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdin.write(first)
    p.stdin.flush()
    time.sleep(1.2)
    p.stdin.write(rest)
    out, err2 = (b.decode() for b in p.communicate(timeout=60))
    tap(rc == 0 and p.returncode == 0 and out == want and want and
        "bts-dump: 3 records" in err2,
        "progress: -i --progress prints what -i does, with a count of "
        "the records on stderr, on a file of every kind of chunk",
        "rc %d %d\n%s\n%s" % (rc, p.returncode, err, err2))


def test_fields():
    """-F: perf script's fields, on every line"""
    f = os.path.join(WORK, "static.raw")
    rc, out, err = run(f, "-F", "tid,ip,sym,symoff,addr")
    want = ["10 %s tramp => %s leaf" % (x(a("tramp")), x(a("leaf"))),
            "10 %s leaf+0x%x => %s tramp+0x5" % (
                x(leaf_ret()), leaf_ret() - a("leaf"), x(a("tramp", 5))),
            "10 -- syscall write at %s raw_write+0x5" % x(a("raw_write", 5)),
            "10 -- signal handler entry -> %s on_signal (prog.c:%d)" % (
                x(a("on_signal")), SIG_LINE)]
    tap(rc == 0 and has_lines(out, want) and "[tid" not in out,
        "-F tid,ip,sym,symoff,addr: each line says whose it is, branches "
        "as perf script prints them", diag(out, want) + err)

    f = os.path.join(WORK, "comm.raw")
    rc, out, err = run(f, "--fields=comm,pid,tid,sym,dso,srcline,addr")
    want = ['sh "x" 80/81 tramp (prog) => %s leaf (prog) prog.c:%d' % (
                x(a("leaf")), LEAF_LINE),
            'prog 80/82 tramp (prog) => %s leaf (prog) prog.c:%d' % (
                x(a("leaf")), LEAF_LINE)]
    tap(rc == 0 and has_lines(out, want),
        "-F comm,pid,tid,sym,dso,srcline,addr: names without addresses "
        "where ip is left out", diag(out, want) + err)

    bad = [(["-F", "tid,bogus"], "unknown field 'bogus'"),
           (["-F", "comm,tid"], "no field of a branch"),
           (["-F", "ip", "--calls"], "-F chooses"),
           (["-F", "ip", "--format=jsonl"], "-F chooses")]
    msgs, ok = "", True
    for args, msg in bad:
        p = subprocess.run([BTS_DUMP, "-i", f] + args, capture_output=True,
                           text=True)
        ok = ok and p.returncode == 2 and msg in p.stderr
        msgs += p.stderr
    tap(ok, "-F: unknown fields, no branch field, with --calls or jsonl: "
        "usage errors", msgs)


def test_bad_input():
    good = rg.header() + rg.records_chunk([rg.branch(1, 2)])
    cases = [
        ("empty", b"", "bad magic"),
        ("bad magic", b"NOTBTS!\n" + good[8:], "bad magic"),
        ("version", rg.header(version=2), "unsupported version 2"),
        ("header size", rg.MAGIC + b"\x01\0\0\0\x08\0\0\0",
         "bad header size"),
        ("truncated header", good[:12], "truncated header"),
        ("truncated chunk", good[:-5], "truncated"),
        ("truncated chunk header", good + b"\x01\0\0", "truncated chunk"),
        ("huge chunk", rg.header() + b"\x01\0\0\0\xff\xff\xff\xff",
         "too large"),
        ("records size", rg.header() + rg.chunk(rg.RECORDS, bytes(8 + 23)),
         "bad records chunk size"),
        ("reserved", rg.header() + rg.chunk(rg.RECORDS, b"\0\0\0\0\1\0\0\0"),
         "reserved field not zero"),
        ("memory size", rg.header() + rg.chunk(rg.MEMORY, bytes(15)),
         "bad memory chunk size"),
    ]
    bad = []
    for name, data, msg in cases:
        rc, out, err = run(write("bad.raw", data))
        if rc != 1 or msg not in err or "bad.raw" not in err:
            bad.append("%s: rc %d, stderr %r" % (name, rc, err))
    tap(not bad, "malformed raw files: exit 1 with a message naming the file",
        "\n".join(bad))

    # An output that fails: said with the file and why, for every format,
    # and reading stops there.  Enough records to fill stdio's buffer.
    many = rg.header() + rg.maps_chunk(10, rg.maps_lines(PROG)) + b"".join(
        rg.records_chunk(([rg.thread(10, 10, rg.THREAD_NEW)] if not i
                          else []) + [rg.branch(a("tramp"), a("leaf")),
                                      rg.branch(leaf_ret(), a("tramp", 5))]
                         * 1000) for i in range(100))
    f = write("many.raw", many)
    bad = []
    for fmt in ("text", "jsonl", "folded", "chrome", "perf", "pt"):
        rc, out, err = run(f, "--format=" + fmt, "-q", "-o", "/dev/full")
        if rc != 1 or "/dev/full: write error: No space left on " \
                "device" not in err or err.count("/dev/full") != 1:
            bad.append("%s: rc %d, stderr %r" % (fmt, rc, err))
    tap(not bad, "a full disk: exit 1, said once with the file and the "
        "errno, in every format", "\n".join(bad))
    kept = write("kept.txt", b"not to be emptied")
    rc, out, err = run(os.path.join(WORK, "missing.raw"), "-o", kept)
    with open(kept, "rb") as k:
        left = k.read()
    tap(rc == 1 and "missing.raw: No such file or directory" in err and
        left == b"not to be emptied",
        "-i of a file that is not there leaves -o's file alone", err)


def test_resume_unseen():
    """KERNEL records without the resume address, as the hardware filter
    leaves them (kernel recording refused on a Meltdown-affected CPU):
    the next system call's number is still found in the straight-line
    code from past the last one, but not through code that does not lead
    there."""
    trace = [
        rg.thread(10, 10, rg.THREAD_NEW),
        rg.branch(a("tramp"), a("raw_twice")),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_twice", 5), 0),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_twice", 12), 0),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), 0),
        rg.thread(10, 10, rg.THREAD_EXIT),
    ]
    f = write("unseen.raw", rg.header() +
              rg.maps_chunk(10, rg.maps_lines(PROG)) +
              rg.records_chunk(trace))
    rc, out, err = run(f, "--format=jsonl")
    k = [r for r in jsonl(out) if r["kind"] == "kernel"] if rc == 0 else []
    tap([r.get("syscall") for r in k] == ["getpid", "write", None] and
        not any("to" in r for r in k),
        "jsonl: system calls named with their resume unseen, only where "
        "the code leads", out + err)


def test_kernel_detail():
    """KERNEL records with the kernel's detail: its system call number
    and ABI win over the code's (raw_write's eax says write), x32's flag
    bit, x32's own numbers and the i386 table are honoured, names come
    from the kernel's tables (mseal, 462, is newer than Debian 12's
    headers), an exception's error code and
    the time come out in JSONL; a detail survives THREAD framing between
    it and its record, and one of an unknown layout, or not followed by
    its record, is skipped, also after the known one, whose place it does
    not take."""
    t0 = 1_000_000_000
    trace = [
        rg.thread(10, 10, rg.THREAD_NEW),
        rg.branch(a("tramp", 5), a("raw_write")),
        rg.kernel_detail(rg.ABI_X86_64, 39, t0),
        rg.thread(10, 10),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
        rg.branch(a("raw_write", 7), a("tramp", 10)),
        rg.kernel_detail(rg.ABI_X32, 0x40000000 | 1, t0 + 1),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
        rg.kernel_detail(rg.ABI_I386, 20, t0 + 2),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_indirect", 3),
                  a("raw_indirect", 5)),
        rg.kernel_detail(rg.ABI_X86_64, 462, t0 + 5),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
        rg.kernel_detail(rg.ABI_X32, 0x40000000 | 512, t0 + 6),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
        rg.kernel_detail(rg.ABI_I386, 462, t0 + 7),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_indirect", 3),
                  a("raw_indirect", 5)),
        rg.kernel_detail(rg.ABI_NONE, 6, t0 + 3),
        rg.kernel(rg.ENTRY_EXCEPTION, a("leaf", 1), a("leaf", 1), 14),
        rg.detail(rg.PSEUDO_KERNEL, 9, 0, 0x1234, 0x5678),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
        rg.kernel_detail(rg.ABI_X86_64, 60, t0 + 4),
        rg.branch(a("raw_write", 7), a("tramp", 10)),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
        rg.kernel_detail(rg.ABI_X86_64, 39, t0 + 8),
        rg.detail(rg.PSEUDO_KERNEL, 9, 0, 0x1234, 0x5678),
        rg.detail(0x7e, rg.DETAIL_KERNEL_ENTRY, rg.ABI_I386, 4, 1),
        rg.kernel(rg.ENTRY_SYSCALL, a("raw_indirect", 3),
                  a("raw_indirect", 5)),
        rg.lost_unknown(rg.LOST_OVERRUN),
        rg.lost_unknown(rg.LOST_UNTRACED),
        rg.thread(10, 10, rg.THREAD_EXIT),
    ]
    f = write("detail.raw", rg.header() +
              rg.maps_chunk(10, rg.maps_lines(PROG)) +
              rg.records_chunk(trace))
    rc, out, err = run(f, "--format=jsonl")
    recs = jsonl(out) if rc == 0 else []
    k = [r for r in recs if r["kind"] == "kernel"]
    got = [(r.get("syscall"), r.get("syscall_nr"), r.get("abi"),
            r.get("error_code"), r.get("time")) for r in k]
    want = [("getpid", 39, "x86_64", None, t0),
            ("write", 1, "x32", None, t0 + 1),
            ("getpid", 20, "i386", None, t0 + 2),
            ("mseal", 462, "x86_64", None, t0 + 5),
            ("rt_sigaction", 512, "x32", None, t0 + 6),
            ("mseal", 462, "i386", None, t0 + 7),
            (None, None, None, 6, t0 + 3),
            ("write", 1, None, None, None),
            ("write", 1, None, None, None),
            ("getpid", 39, "x86_64", None, t0 + 8)]
    tap(rc == 0 and got == want and
        not any(r["kind"] == "pseudo" for r in recs),
        "jsonl: the kernel's system call number, ABI, error code and "
        "time; unknown and stray details skipped",
        "got  %r\nwant %r\n" % (got, want) + out + err)
    lost = [r for r in recs if r["kind"] == "lost"]
    tap([r.get("reason") for r in lost] == ["overrun", "untraced"] and
        not any("count" in r for r in lost),
        "jsonl: losses of an unknown number say why", out)
    rc, out, err = run(f)
    want = ["-- syscall getpid at %s raw_write+0x5" % x(a("raw_write", 5)),
            "-- lost records: the hardware's buffer overran",
            "-- lost records: ran on a CPU that could not trace"]
    tap(rc == 0 and has_lines(out, want) and "pseudo-record" not in out,
        "text: the kernel's system call number, losses of unknown size",
        diag(out, want) + err)


def test_unknown_pseudo():
    """A later kernel's records (bts.h's extension rule): a pseudo-record
    of a type this bts-dump does not know, inside a call, shows as one line
    and changes nothing else; a detail of that type, of the layout a
    KERNEL detail has, right before a KERNEL record, is not taken for
    that record's.  The output is the one without them, calls, depths and
    system calls included."""
    base = [rg.thread(70, 70, rg.THREAD_NEW),
            rg.branch(a("tramp"), a("leaf")),
            rg.branch(leaf_ret(), a("tramp", 5)),
            rg.branch(a("tramp", 5), a("raw_write")),
            rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5), a("raw_write", 7)),
            rg.branch(a("raw_write", 7), a("tramp", 10)),
            rg.thread(70, 70, rg.THREAD_EXIT)]
    later = base[:2] + [(rg.pseudo(0x7e, 5), 0x1111, 0x2222)] + \
        base[2:4] + [rg.detail(0x7e, rg.DETAIL_KERNEL_ENTRY, rg.ABI_X86_64,
                               39, 1)] + base[4:]
    files = {}
    for name, trace in (("known", base), ("later", later)):
        files[name] = write("unknown-%s.raw" % name, rg.header() +
                            rg.maps_chunk(70, rg.maps_lines(PROG)) +
                            rg.records_chunk(trace))
    ok, diags = True, ""
    for args in ([], ["--calls"], ["--format=jsonl"]):
        rc, known, err = run(files["known"], *args)
        rc2, got, err2 = run(files["later"], *args)
        extra = [line for line in got.splitlines()
                 if line not in known.splitlines()]
        rest = [line for line in got.splitlines() if line not in extra]
        good = (rc == rc2 == 0 and rest == known.splitlines() and
                len(extra) == 1 and
                all("126" in line for line in extra))
        ok &= good
        if not good:
            diags += "%s: extra %r\n%s---\n%s%s%s" % (
                args, extra, known, got, err, err2)
    tap(ok, "an unknown pseudo-record type and its detail: one line, "
        "nothing else changes (text, --calls, jsonl)", diags)


def test_event_formats():
    """Markers decoded with their event's format (a raw file's event
    format chunk, as --markers writes it): integers of each size and
    sign, char arrays, __data_loc and __rel_loc strings; a field past the
    captured payload unknown, a format with a type bts-dump does not know
    decoded up to it with the payload in hex, and a marker of another
    generation of the same id left undecoded."""
    a_payload = struct.pack("<IhbB8s", 42, -2, -3, 200, b"tag")
    # rel_loc: 5 bytes right after the field's end; data_loc: after the
    # entry's 8 common bytes, 4 (rel) + 4 (data) + 5 (rel's) = 21.
    s_payload = struct.pack("<II", 5 << 16 | 4, 6 << 16 | 21) + \
        b"rel!\0" + b"data!\0"
    at = "at %s tramp+0x5" % x(a("tramp", 5))
    trace = [
        rg.thread(10, 10, rg.THREAD_NEW),
        *rg.user_event(7, 3, a("tramp", 5), a_payload),
        *rg.user_event(8, 1, a("tramp", 5), s_payload),
        *rg.user_event(9, 1, a("tramp", 5), bytes(64), rg.MARKER_TRUNCATED),
        *rg.user_event(10, 1, a("tramp", 5), b"\x01\0\0\0\xff"),
        *rg.user_event(7, 4, a("tramp", 5), a_payload),
        rg.thread(10, 10, rg.THREAD_EXIT),
    ]
    f = write("formats.raw", rg.header() +
              rg.maps_chunk(10, rg.maps_lines(PROG)) +
              rg.event_format_chunk(7, 3, "ev_a u32 n; short s; s8 c; "
                                    "unsigned char u; char[8] tag") +
              rg.event_format_chunk(8, 1, "ev_s __rel_loc char[] r; "
                                    "__data_loc char[] d") +
              rg.event_format_chunk(9, 1, "ev_big char[60] x; u64 past") +
              rg.event_format_chunk(10, 1, "ev_odd u32 n; float f") +
              rg.records_chunk(trace))
    rc, out, err = run(f)
    want = [
        '-- event u:ev_a n=42 s=-2 c=-3 u=200 tag="tag" ' + at,
        '-- event u:ev_s r="rel!" d="data!" ' + at,
        '-- event u:ev_big x="" past=? (truncated) ' + at,
        '-- event u:ev_odd n=1 payload="01000000ff" ' + at,
        "-- event 7 (generation 4): %s %s"
        % (" ".join("%02x" % b for b in a_payload), at),
    ]
    tap(rc == 0 and has_lines(out, want),
        "text: markers decoded with their event's format",
        diag(out, want) + err)
    rc, out, err = run(f, "--format=jsonl")
    recs = [r for r in jsonl(out) if r["kind"] == "marker"] if rc == 0 else []
    got = [(r.get("event"), r.get("fields")) for r in recs]
    want = [("ev_a", {"n": 42, "s": -2, "c": -3, "u": 200, "tag": "tag"}),
            ("ev_s", {"r": "rel!", "d": "data!"}),
            ("ev_big", {"x": "", "past": None}),
            ("ev_odd", {"n": 1}),
            (None, None)]
    tap(got == want, "jsonl: markers' fields as JSON",
        "got  %r\nwant %r\n" % (got, want) + out + err)


def test_trigger():
    """-i --trigger=GLOB --ring N: at each marker of an event GLOB matches,
    the thread's last N lines before it, then the marker; other markers,
    and markers whose format is unknown, trigger nothing."""
    ev = struct.pack("<I", 7)
    trace = [
        rg.thread(10, 10, rg.THREAD_NEW),
        rg.branch(a("tramp"), a("leaf")),
        rg.branch(a("leaf", 1), a("tramp", 5)),
        *rg.user_event(20, 1, a("tramp", 5), ev),
        rg.branch(a("tramp", 5), a("leaf")),
        *rg.user_event(21, 1, a("tramp", 5), ev),
        *rg.user_event(22, 1, a("tramp", 5), ev),
        rg.branch(a("leaf", 1), a("tramp", 5)),
        *rg.user_event(20, 1, a("tramp", 5), ev),
        rg.thread(10, 10, rg.THREAD_EXIT),
    ]
    f = write("trigger.raw", rg.header() +
              rg.maps_chunk(10, rg.maps_lines(PROG)) +
              rg.event_format_chunk(20, 1, "app_error u32 code") +
              rg.event_format_chunk(21, 1, "app_other u32 code") +
              rg.records_chunk(trace))
    rc, out, err = run(f, "--trigger=app_e*", "--ring", "2")
    full_rc, full, _ = run(f)
    body = [ln for ln in full.splitlines() if not ln.startswith("[tid ")]
    events = [i for i, ln in enumerate(body)
              if ln.startswith("-- event u:app_error")]
    want = []
    for i in events:
        want += ["[tid 10 pid 10] the last 2 lines before:"] + \
            body[i - 2:i + 1]
    got = out.splitlines()
    tap(rc == 0 and full_rc == 0 and len(events) == 2 and got == want,
        "text: --trigger windows at the matching events only",
        "got  %r\nwant %r\n" % (got, want) + err)
    rc, out, err = run(f, "--trigger=app_e*", "--ring", "2", "--size", "9")
    tap(rc == 2 and "tracing" in err,
        "usage: -i --trigger takes no other tracing option", err)


def test_markers():
    """Markers: a payload cut at the kernel's bound, one not captured,
    one whose details the front of a ring cut off, one without payload;
    details of an unknown layout skipped, and details that no marker
    follows forgotten."""
    trace = [
        rg.thread(10, 10, rg.THREAD_NEW),
        *rg.user_event(1, 0, a("tramp", 5), bytes(range(64)),
                       rg.MARKER_TRUNCATED),
        rg.marker(2, 1, 0, 0, rg.MARKER_NOT_CAPTURED),
        rg.marker_payload(1, b"tail"),
        rg.marker(3, 1, 0, 20),
        rg.detail(rg.PSEUDO_MARKER, 9, 0, 0x1234, 0x5678),
        rg.marker(4, 2, 0, 0),
        rg.marker_payload(0, b"stray"),
        rg.branch(a("tramp", 5), a("leaf")),
        rg.marker(5, 2, 0, 5),
        rg.thread(10, 10, rg.THREAD_EXIT),
    ]
    f = write("markers.raw", rg.header() +
              rg.maps_chunk(10, rg.maps_lines(PROG)) +
              rg.records_chunk(trace))
    rc, out, err = run(f)
    want = [
        "-- event 1 (generation 0): %s (truncated) at %s tramp+0x5" % (
            " ".join("%02x" % i for i in range(64)), x(a("tramp", 5))),
        "-- event 2 (generation 1): payload not captured",
        "-- event 3 (generation 1): payload not in the trace",
        "-- event 4 (generation 2)",
        "-- event 5 (generation 2): payload not in the trace in tramp",
    ]
    tap(rc == 0 and has_lines(out, want) and "pseudo-record" not in out,
        "text: markers cut, not captured, cut off by a ring's front",
        diag(out, want) + err)
    rc, out, err = run(f, "--format=jsonl")
    recs = [r for r in jsonl(out) if r["kind"] == "marker"] if rc == 0 else []
    got = [(r["id"], r["gen"], r.get("payload"), r.get("truncated"),
            r.get("captured")) for r in recs]
    want = [(1, 0, bytes(range(64)).hex(), True, None),
            (2, 1, None, None, False), (3, 1, None, None, None),
            (4, 2, "", None, None), (5, 2, None, None, None)]
    tap(got == want, "jsonl: markers' ids, generations and payloads",
        "got  %r\nwant %r\n" % (got, want) + out + err)


def test_map_records():
    """The trace's own mapping changes symbolize each branch with what was
    mapped when it ran: a range unmapped leaves its branches bare, and a
    /proc snapshot taken later does not blur what the trace announced."""
    b1, b2 = 0x555555554000, 0x7f0000000000
    sp = nm(PROG_PIE)
    build_id = rg.build_id(PROG_PIE)

    def br(bias):
        return rg.branch(bias + sp["tramp"][0] + 5, bias + sp["raw_write"][0])

    (start, end), = rg.exec_ranges(PROG_PIE, b1)
    later = rg.special_line(b2, b2 + 0x100000, "[heap]")
    f = write("maprecs.raw", rg.header() +
              rg.maps_chunk(70, rg.special_line(b1, b1 + 0x100000, "[stack]")) +
              rg.records_chunk([
                  rg.thread(70, 70, rg.THREAD_NEW),
                  rg.map_event(rg.MAP_EXEC),
                  *rg.map_file(PROG_PIE, b1, build_id),
                  br(b1),
                  rg.map_event(rg.MAP_MUNMAP, start, end),
                  br(b1),
                  *rg.map_file(PROG_PIE, b2),
              ]) +
              rg.maps_chunk(70, later) +
              rg.records_chunk([rg.thread(70, 70), br(b2), rg.lost(5)]) +
              rg.maps_chunk(70, later) +
              rg.records_chunk([rg.thread(70, 70), br(b2)]))
    rc, out, err = run(f, "--format=jsonl")
    br_ = [r for r in jsonl(out) if r["kind"] == "branch"] if rc == 0 else []
    tap(len(br_) == 4 and br_[0].get("to_sym") == "raw_write" and
        set(br_[1]) == {"tid", "pid", "kind", "from", "to"} and
        br_[2].get("from_sym") == "tramp+0x5" and
        br_[2].get("to_sym") == "raw_write" and
        br_[3].get("to_dso") == "[heap]" and
        not any(r["kind"] in ("exec", "mmap", "munmap")
                for r in jsonl(out)),
        "map records: mapped, unmapped, mapped elsewhere; a later snapshot "
        "ignored, until records were lost",
        out + err)

    rc, out, err = run(f, "--show-maps")
    want = [
        "[tid 70 pid 70]",
        "-- exec",
        "-- mmap %s-%s %s at offset 0x%x build-id %s" % (
            x(start), x(end), PROG_PIE, start - b1, build_id.hex()),
        "%s tramp+0x5 -> %s raw_write" % (x(b1 + sp["tramp"][0] + 5),
                                          x(b1 + sp["raw_write"][0])),
        "-- munmap %s-%s" % (x(start), x(end)),
        "%s -> %s" % (x(b1 + sp["tramp"][0] + 5), x(b1 + sp["raw_write"][0])),
        "-- mmap %s-%s %s at offset 0x%x" % (
            x(start - b1 + b2), x(end - b1 + b2), PROG_PIE, start - b1),
    ]
    tap(rc == 0 and has_lines(out, want),
        "text --show-maps: exec, mmap with offset and build ID, munmap",
        diag(out, want) + err)
    rc, out, err = run(f, "--format=jsonl", "--show-maps")
    maps = [r for r in jsonl(out) if r["kind"] in ("exec", "mmap", "munmap")] \
        if rc == 0 else []
    st = os.stat(PROG_PIE)
    tap([r["kind"] for r in maps] == ["exec", "mmap", "munmap", "mmap"] and
        maps[1] == {"tid": 70, "pid": 70, "kind": "mmap", "start": x(start),
                    "end": x(end), "path": PROG_PIE,
                    "offset": x(start - b1), "inode": st.st_ino,
                    "dev": "%d:%d" % (os.major(st.st_dev),
                                      os.minor(st.st_dev)),
                    "build_id": build_id.hex()} and
        maps[2] == {"tid": 70, "pid": 70, "kind": "munmap",
                    "start": x(start), "end": x(end)},
        "jsonl --show-maps: exec, mmap, munmap objects", out + err)


def test_exec_entry():
    """The execve's stay in the kernel, which the trace gives after the new
    program's mappings: entered in the old program, left to the new."""
    b = 0x555555554000
    sp = nm(PROG_PIE)
    f = write("exec-entry.raw", rg.header() +
              rg.maps_chunk(96, rg.maps_lines(PROG)) +
              rg.records_chunk([
                  rg.thread(96, 96, rg.THREAD_NEW),
                  rg.branch(a("tramp", 5), a("raw_write")),
                  rg.map_event(rg.MAP_EXEC),
                  *rg.map_file(PROG_PIE, b),
                  rg.kernel_detail(rg.ABI_X86_64, 59, 1000),
                  rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5),
                            b + sp["tramp"][0]),
                  rg.branch(b + sp["tramp"][0] + 5, b + sp["raw_write"][0]),
                  rg.kernel_detail(rg.ABI_X86_64, 1, 1010),
                  rg.kernel(rg.ENTRY_SYSCALL, b + sp["raw_write"][0] + 5,
                            b + sp["raw_write"][0] + 7),
              ]))
    rc, out, err = run(f, "--format=jsonl")
    k = [r for r in jsonl(out) if r["kind"] == "kernel"] if rc == 0 else []
    tap(len(k) == 2 and k[0].get("syscall") == "execve" and
        k[0].get("from_sym") == "raw_write+0x5" and
        k[0].get("from_dso") == "prog" and
        k[0].get("to_sym") == "tramp" and
        k[0].get("to_dso") == "prog-pie" and
        k[1].get("from_sym") == "raw_write+0x5" and
        k[1].get("from_dso") == "prog-pie",
        "exec: its system call named in the program that made it, its "
        "return in the new one, the next in the new one", out + err)

    rc, out, err = run(f, "--insn")
    want = ["%s raw_write+0x0: movl $1, %%eax" % x(a("raw_write")),
            "%s raw_write+0x5: syscall" % x(a("raw_write", 5)),
            "-- syscall execve at %s raw_write+0x5 -> %s tramp" % (
                x(a("raw_write", 5)), x(b + sp["tramp"][0]))]
    lines = "\n".join(ln.split("\t", 1)[-1] for ln in out.splitlines())
    tap(rc == 0 and has_lines(lines, want) and "no code at" not in out,
        "--insn: the code up to an exec's system call from the program "
        "that made it too", diag(out, want) + err)


def test_pid_reuse():
    """A pid given to a new process after the old one's last thread exited
    names the new one: its own mappings and name.  A thread outliving the
    main one keeps the old process."""
    b1, b2 = 0x555555554000, 0x7f0000000000
    sp = nm(PROG_PIE)

    def br(bias):
        return rg.branch(bias + sp["tramp"][0] + 5, bias + sp["raw_write"][0])

    f = write("reuse.raw", rg.header() +
              rg.maps_chunk(90, rg.maps_lines(PROG_PIE, b1), ppid=1) +
              rg.comm_chunk(90, "first") +
              rg.records_chunk([
                  rg.thread(90, 90, rg.THREAD_NEW),
                  rg.map_event(rg.MAP_EXEC),
                  *rg.map_file(PROG_PIE, b1),
                  br(b1),
                  rg.thread(92, 90, rg.THREAD_NEW),
                  br(b1),
                  rg.thread(90, 90, rg.THREAD_EXIT),
                  rg.thread(92, 90),
                  br(b1),
                  rg.thread(92, 90, rg.THREAD_EXIT),
              ]) +
              rg.maps_chunk(90, rg.maps_lines(PROG_PIE, b2), ppid=1) +
              rg.comm_chunk(90, "second") +
              rg.records_chunk([
                  rg.thread(90, 90, rg.THREAD_NEW),
                  br(b2),
                  rg.thread(92, 90, rg.THREAD_NEW),
                  br(b2),
              ]))
    rc, out, err = run(f, "--format=jsonl")
    br_ = [r for r in jsonl(out) if r["kind"] == "branch"] if rc == 0 else []
    tap(len(br_) == 5 and
        all(r.get("to_sym") == "raw_write" for r in br_) and
        [r.get("comm") for r in br_] == ["first"] * 3 + ["second"] * 2 and
        [r["from"] for r in br_] == [x(b + sp["tramp"][0] + 5)
                                     for b in (b1, b1, b1, b2, b2)],
        "pid reuse: the new process's own mappings and name; a thread "
        "outliving the main one keeps the old process", out + err)


def test_folded_chrome():
    """The call-tree pictures of a trace that jumps out of calls"""
    f = os.path.join(WORK, "jump.raw")
    root = "[tid 50 pid 50]"
    # The stack each branch lands in, outermost first: the functions of
    # the call sites on the stack, then the one the thread is in.
    landed = ["jump_caller;jump_outer",
              "jump_caller;jump_outer;jump_middle",
              "jump_caller;jump_outer;jump_middle;jump_inner",
              "jump_caller;jump_outer;jump_middle;jump_outer",
              "jump_caller",
              "tramp"]
    rc, out, err = run(f, "--format=folded")
    want = sorted("%s;%s 1" % (root, s) for s in landed)
    tap(rc == 0 and out.splitlines() == want,
        "folded: one line per stack a branch landed in, counted",
        diag(out, want) + err)

    rc, out, err = run(f, "--format=chrome")
    try:
        doc = json.loads(out)
    except ValueError as e:
        tap(False, "chrome: the output is one JSON document", str(e) + out)
        return
    bad, stacks = chrome_check(doc)
    # After each record's events, the calls open are where it landed;
    # after the last, none.
    seen = [st for (ts, st), nxt in
            zip(stacks.get((50, 50), []), stacks.get((50, 50), [])[1:] +
                [(None, None)]) if nxt[0] != ts]
    names = [e for e in doc.get("traceEvents", []) if e.get("ph") == "M"]
    tap(rc == 0 and not bad and seen == landed + [""] and
        [e["name"] for e in names] == ["process_name", "thread_name"] and
        all("not time" in e["args"]["name"] for e in names),
        "chrome: valid trace events; complete events follow the calls, the "
        "track and its process say the x-axis is not time",
        "\n".join(bad) + "\n" + "\n".join(seen) + "\n" + out + err)

    # The static trace: a system call and a signal handler.
    f = os.path.join(WORK, "static.raw")
    rc, out, err = run_memcheck(f, "--format=folded")
    want = ["[tid 10 pid 10];tramp;raw_write;[syscall write] 1",
            "[tid 10 pid 10];tramp;raw_int80;[syscall write] 1",
            "[tid 10 pid 10];leaf;[exception #PF page fault] 1"]
    tap(rc == 0 and set(want) <= set(out.splitlines()),
        "folded: system calls and exceptions above the stack they came from",
        diag(out, want) + err)
    rc, out, err = run_memcheck(f, "--format=chrome")
    bad, stacks = chrome_check(json.loads(out))
    st = [s for ts, s in stacks.get((10, 10), [])]
    inst = [e["name"] for e in json.loads(out)["traceEvents"]
            if e["ph"] == "i"]
    tap(rc == 0 and not bad and "leaf;on_signal" in st and
        inst[:2] == ["syscall write", "syscall write"] and
        "lost 7 records" in inst and "marker 42" in inst,
        "chrome: a signal handler a call deeper; system calls, losses, "
        "markers as instant events", "\n".join(bad + st + inst) + err)

    # A thread id reused by another process: the old thread's calls end
    # on its own track.
    f = write("reuse.raw", rg.header() +
              rg.maps_chunk(70, rg.maps_lines(PROG)) +
              rg.maps_chunk(71, rg.maps_lines(PROG)) +
              rg.records_chunk([rg.thread(70, 70, rg.THREAD_NEW),
                                rg.branch(a("tramp"), a("leaf")),
                                rg.thread(70, 71),
                                rg.branch(a("tramp"), a("leaf"))]))
    rc, out, err = run(f, "--format=chrome")
    bad, stacks = chrome_check(json.loads(out)) if rc == 0 else (["rc"], {})
    tap(rc == 0 and not bad and set(stacks) == {(70, 70), (71, 70)} and
        stacks[(70, 70)][-1][1] == "",
        "chrome: a thread id reused by another process ends the old "
        "thread's calls on its track", "\n".join(bad) + out + err)

    # Planted: a document whose calls are not nested is caught.
    bad, _ = chrome_check({"traceEvents": [
        {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "name": "a"},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": 10, "name": "b"},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 20, "dur": -1, "name": "c"},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 30, "name": "d"},
        {"ph": "i", "pid": 1, "tid": 1, "ts": 3, "name": "e", "s": "t"},
        {"ph": "i", "pid": 1, "tid": 1, "ts": 2, "name": "f", "s": "t"},
        {"ph": "B", "pid": 1, "tid": 1, "ts": 40, "name": "g"}]})
    tap(len(bad) == 6, "self-test: the trace-event check catches calls "
        "that overlap (one ends inside the other and stays open), a "
        "negative duration, a call without one, time going back, a phase "
        "bts-dump does not write", "\n".join(bad))


def test_chrome_time():
    """chrome's x-axis where the kernel stamps the returns to user mode"""
    t0 = 1_000_000_000

    def stamped(ns):
        return [rg.kernel_detail(rg.ABI_X86_64, 1, ns),
                rg.kernel(rg.ENTRY_SYSCALL, a("raw_write", 5),
                          a("raw_write", 7))]
    # Thread 90's records 2 and 5 are stamped 30 us apart: 10 us a record,
    # before, between and after them.  Thread 91 (its records between 90's)
    # has one stamp: the rate of all intervals, 90's.
    f = write("timed.raw", rg.header() +
              rg.maps_chunk(90, rg.maps_lines(PROG)) +
              rg.records_chunk([rg.thread(90, 90, rg.THREAD_NEW),
                                rg.branch(a("tramp"), a("leaf")),
                                rg.branch(leaf_ret(), a("tramp", 5)),
                                *stamped(t0),
                                rg.branch(a("raw_write", 7), a("tramp", 10)),
                                rg.thread(91, 90, rg.THREAD_NEW),
                                rg.branch(a("tramp"), a("leaf")),
                                *stamped(t0 + 5_000),
                                rg.thread(90, 90),
                                rg.branch(a("tramp", 5), a("raw_write")),
                                *stamped(t0 + 30_000),
                                rg.branch(a("raw_write", 7), a("tramp", 10))]))
    rc, out, err = run(f, "--format=chrome")
    try:
        doc = json.loads(out)
    except ValueError as e:
        tap(False, "chrome: time on the x-axis", str(e) + out + err)
        return
    bad, _ = chrome_check(doc)
    us = t0 / 1000
    ts = {}
    for (pid, tid), events in chrome_events(doc)[1].items():
        ts[tid] = [(e["ph"], e["name"], round(e["ts"] - us, 3))
                   for e in events]
    # 90's records 0..6 at t0 + (record - 2) * 10 us; its calls end after
    # the last, at 7.  91's at t0 + 5 us + (record - 1) * 10 us.
    want90 = [("B", "tramp", -20.0), ("B", "leaf", -20.0),
              ("E", "leaf", -10.0), ("i", "syscall write", 0.0),
              ("E", "tramp", 0.0), ("B", "raw_write", 0.0),
              ("E", "raw_write", 10.0), ("B", "tramp", 10.0),
              ("B", "raw_write", 20.0), ("i", "syscall write", 30.0),
              ("E", "raw_write", 40.0), ("E", "tramp", 50.0)]
    want91 = [("B", "tramp", -5.0), ("B", "leaf", -5.0),
              ("i", "syscall write", 5.0), ("E", "leaf", 5.0),
              ("B", "raw_write", 5.0), ("E", "raw_write", 15.0),
              ("E", "tramp", 15.0)]
    got90, got91 = ts.get(90, []), ts.get(91, [])
    names = [e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"]
    axis = doc.get("otherData", {}).get("x-axis", "")
    ok = rc == 0 and not bad and got90 == want90 and got91 == want91 and \
        len(names) == 2 and all(n.endswith("(x-axis: time)") for n in names) \
        and axis.startswith("time")
    tap(ok, "chrome: where the kernel stamps returns to user mode, the "
        "x-axis is time, each record's events in between by its place "
        "among its thread's records, before the first and after the last "
        "at the nearest interval's rate (all threads' for a thread with "
        "one stamp); the tracks and otherData say time",
        "\n".join(bad) + "\n%s\n%s\n%s\n%s" % (got90, got91, names, axis) +
        err)
    # A thread that goes 70,000 records without a stamp has its events
    # written at a guessed rate (its last interval's, 1 us a record) once
    # 65,536 wait; the next stamp, 10 us later, says it was faster: the
    # events after it must not go back on the track.
    loop = [rg.branch(a("tramp"), a("leaf")),
            rg.branch(leaf_ret(), a("tramp", 5))] * 35000
    f = write("guessed.raw", rg.header() +
              rg.maps_chunk(90, rg.maps_lines(PROG)) +
              rg.records_chunk([rg.thread(90, 90, rg.THREAD_NEW),
                                *stamped(t0), *stamped(t0 + 1_000),
                                *loop, *stamped(t0 + 11_000),
                                rg.branch(a("raw_write", 7),
                                          a("tramp", 10))]))
    rc, out, err = run(f, "--format=chrome")
    doc = json.loads(out) if rc == 0 else {}
    bad, stacks = chrome_check(doc)
    times = [ts for ts, _ in stacks.get((90, 90), [])]
    tap(rc == 0 and not bad and len(times) > 70000 and
        max(times) - us >= 60_000,
        "chrome: a thread's events held past 65,536 without a stamp are "
        "written at a guessed rate, and the track never goes back when "
        "the next stamp says otherwise",
        "\n".join(bad[:5]) + "\n%d events, last at %s" % (
            len(times), max(times) - us if times else None) + err)
    # Planted: the same trace without its stamps has the record axis.
    f = write("untimed.raw", rg.header() +
              rg.maps_chunk(90, rg.maps_lines(PROG)) +
              rg.records_chunk([r for r in [rg.thread(90, 90, rg.THREAD_NEW),
                                            rg.branch(a("tramp"), a("leaf")),
                                            *stamped(t0)[1:]]]))
    rc, out, err = run(f, "--format=chrome")
    doc = json.loads(out) if rc == 0 else {}
    names = [e["args"]["name"] for e in doc.get("traceEvents", [])
             if e["ph"] == "M"]
    tap(rc == 0 and names and "not time" in names[0] and
        "not time" in doc["otherData"]["x-axis"],
        "chrome: a trace without the kernel's stamps keeps the record "
        "index as its x-axis, and says so", out + err)


def test_usage():
    p = subprocess.run([BTS_DUMP, "--format=nope", "-i", "x"],
                       capture_output=True, text=True)
    p2 = subprocess.run([BTS_DUMP], capture_output=True, text=True)
    p3 = subprocess.run([BTS_DUMP, "-i", "x", "--format=raw"],
                        capture_output=True, text=True)
    # The pictures have no place for mappings or --trigger's windows.
    p4 = subprocess.run([BTS_DUMP, "-i", "x", "--format=folded",
                         "--show-maps"], capture_output=True, text=True)
    p5 = subprocess.run([BTS_DUMP, "--format=chrome", "--ring", "9",
                         "--trigger=e", "--", "true"],
                        capture_output=True, text=True)
    tap(p.returncode == 2 and "unknown format" in p.stderr and
        p2.returncode == 2 and "--help" in p2.stderr and
        p3.returncode == 2 and p4.returncode == 2 and
        "--show-maps" in p4.stderr and p5.returncode == 2 and
        "--trigger" in p5.stderr,
        "bad options: usage error, exit 2",
        p.stderr + p2.stderr + p3.stderr + p4.stderr + p5.stderr)


def help_man_options(help_text, man_text):
    """The long options --help lists, and those the man page's OPTIONS
    section describes (each .TP entry's first line)."""
    helped = set(re.findall(r"^\s+(?:-\w, )?--([a-z][a-z-]*)", help_text,
                            re.M))
    section = man_text.split("\n.SH OPTIONS\n", 1)[-1].split("\n.SH ", 1)[0]
    heads = re.findall(r"^\.TP\n(.*)$", section, re.M)
    described = {m.replace("\\-", "-") for h in heads
                 for m in re.findall(r"\\-\\-((?:[a-z]|\\-)+)", h)}
    return helped, described


def test_help_man():
    """--help and the man page list the same options"""
    man = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..",
                       "bts-dump.1")
    with open(man) as f:
        man_text = f.read()
    p = subprocess.run([BTS_DUMP, "--help"], capture_output=True, text=True)
    helped, described = help_man_options(p.stdout, man_text)
    tap(p.returncode == 0 and len(helped) > 20 and helped == described,
        "--help and the man page's OPTIONS describe the same options",
        "only in --help: %s\nonly in the man page: %s" % (
            sorted(helped - described), sorted(described - helped)))
    # Self-test: an option the man page lost, one --help lost.
    gone = man_text.replace(".TP\n.B \\-\\-lossy\n", "")
    h2, d2 = help_man_options(p.stdout.replace("--inline", "--x"), gone)
    tap(gone != man_text and "lossy" in h2 - d2 and "inline" in d2 - h2,
        "self-test: an option left out of either is found", "")


def test_symtab():
    """symtab.c against libdwfl's dwfl_module_addrinfo(), address by address"""
    check = os.path.join(WORK, "symtab-check")
    libc = subprocess.run(["gcc", "-print-file-name=libc.so.6"],
                          capture_output=True, text=True).stdout.strip()
    ldso = "/lib64/ld-linux-x86-64.so.2"
    # Every address of the small files; every 61st of libc, whose every
    # address libdwfl takes minutes to look up (a scan each).
    files = [(PROG, 1), (PROG_PIE, 1), (PROG32, 1), (BTS_DUMP, 1),
             (os.path.realpath(ldso), 1), (os.path.realpath(libc), 61)]
    out, ok = "", True
    for path, step in files:
        p = subprocess.run([check, path, str(step)], capture_output=True,
                           text=True)
        out += p.stdout + p.stderr
        ok = ok and p.returncode == 0 and " 0 disagree" in p.stdout
    tap(ok, "symbols: the sorted table names every address as libdwfl "
        "does (test programs, bts-dump, ld.so, libc)", out)
    p = subprocess.run([check, PROG, "1", "1"], capture_output=True,
                       text=True)
    tap(p.returncode == 1 and " 0 disagree" not in p.stdout,
        "self-test: with one answer in 1000 off by a byte, the comparison "
        "fails", p.stdout)


for t in (test_symtab, check_insn_len.test_insn_len,
          check_insn_len.test_insn_walk, test_text_json, test_calls_insn, test_calls_jump_out,
          test_calls_call_next,
          test_calls_nested_signals, test_calls_smashed_return,
          test_calls_landing_pad,
          test_folded_chrome, test_chrome_time,
          check_devtools.test_devtools, test_pie,
          test_demangle, test_elf32, test_vdso,
          test_maps, test_streams, test_resume_unseen, test_kernel_detail,
          test_unknown_pseudo,
          test_markers, test_event_formats, test_trigger,
          test_map_records, test_exec_entry, test_pid_reuse, test_filters, test_comm, test_progress,
          test_fields,
          check_order.test_order, check_order.test_held_calls,
          check_order.test_unordered, check_order.test_unstamped,
          check_order.test_late, check_jit.test_jit, check_jit.test_jit_perf,
          check_files.test_files, check_files.test_by_build_id,
          test_bad_input, check_perf.test_perf,
          check_perf.test_perf_build_id, check_perf.test_perf_tasks,
          check_perf.test_perf_mmaps, check_perf.test_perf_markers,
          check_pt.test_pt, check_pt.test_pt_markers, check_pt.test_pt32,
          check_pt.test_pt_unknown,
          check_pt.test_pt_images,
          check_inline.test_inline, check_inline.test_plt_demangle,
          check_inline.test_debuginfo_hint,
          check_gdb_ext.test_gdb_ext_markers,
          check_gdb_ext.test_gdb_ext_attach_errors,
          test_help_man, test_usage):
    try:
        t()
    except Exception as e:  # a broken test is a failed one
        tap(False, "%s raised %r" % (t.__name__, e))
print("1..%d" % len(results))
sys.exit(0 if all(results) else 1)
