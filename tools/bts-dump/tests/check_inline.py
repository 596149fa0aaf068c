# SPDX-License-Identifier: GPL-2.0
"""--inline (check.py runs these): the functions inlined at an address,
against binutils' addr2line -i (a DWARF reader of its own, not libdw);
and the hint where a file has no debug information at all."""

import os
import subprocess

import rawgen as rg
from checklib import SRC, WORK, jsonl, nm, run, run_memcheck, tap, write

INLINED = os.path.join(WORK, "inlined")


def addr2line(addr, path=INLINED, *opts):
    """[(func, "file:line")], innermost first, as addr2line -i says."""
    out = subprocess.run(["addr2line", "-i", "-f", *opts, "-e", path,
                          "%x" % addr], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    return [(out[i], os.path.basename(out[i + 1]))
            for i in range(0, len(out) - 1, 2)]


def test_inline():
    """--inline against addr2line -i"""
    syms = nm(INLINED)
    outer, size = syms["outer"]
    main_ = syms["main"][0]
    # main calls outer, whose first instruction is inner's code; outer's
    # last (its ret) is outer's own.
    f = write("inline.raw", rg.header() +
              rg.maps_chunk(97, "".join(rg.maps_lines(INLINED))) +
              rg.records_chunk([rg.thread(97, 97, rg.THREAD_NEW),
                                rg.branch(main_, outer),
                                rg.branch(outer + size - 1, main_ + 5)]))
    chain = addr2line(outer)
    want = " [inlined: " + " < ".join("%s (%s)" % c for c in chain) + "]"
    rc, out, err = run(f, "--inline")
    lines = [line for line in out.splitlines() if " -> " in line]
    tap(rc == 0 and len(chain) == 3 and len(lines) == 2 and
        lines[0].endswith(want) and "[inlined" not in lines[1],
        "--inline: the functions inlined at an address, innermost first, "
        "as addr2line -i has them; none where nothing is",
        "addr2line: %r\nwant the end: %s\n%s%s" % (chain, want, out, err))
    rc, out, err = run(f, "--inline", "--format=jsonl")
    br = [r for r in jsonl(out) if r["kind"] == "branch"] if rc == 0 else []
    tap(len(br) == 2 and
        br[0].get("to_inline") == [{"func": fn, "src": src}
                                   for fn, src in chain] and
        "from_inline" not in br[1] and "to_inline" not in br[1],
        "--inline --format=jsonl: to_inline lists them", out + err)
    rc, out, err = run(f)
    tap(rc == 0 and "[inlined" not in out,
        "without --inline, no inlined functions", out + err)
    rc, out, err = run_memcheck(f, "--inline")
    tap(rc == 0, "--inline under valgrind: no error, no leak", err)

    # C++: the inlined method named as its symbol would be, qualified and
    # with its parameters (addr2line -C), not its bare DW_AT_name.
    cc = os.path.join(WORK, "inlined-cc")
    syms = nm(cc)
    outer = syms["_Z5outeri"][0]
    f = write("inline-cc.raw", rg.header() +
              rg.maps_chunk(97, "".join(rg.maps_lines(cc))) +
              rg.records_chunk([rg.thread(97, 97, rg.THREAD_NEW),
                                rg.branch(syms["main"][0], outer)]))
    chain = addr2line(outer, cc, "-C")
    rc, out, err = run(f, "--inline", "--format=jsonl")
    br = [r for r in jsonl(out) if r["kind"] == "branch"] if rc == 0 else []
    tap(len(chain) == 2 and chain[0][0] == "shapes::Square::area(int)" and
        len(br) == 1 and br[0].get("to_inline") ==
        [{"func": fn, "src": src} for fn, src in chain],
        "--inline: C++ methods named as addr2line -C names them",
        "addr2line: %r\n%s%s" % (chain, out, err))


def plt_entry(path, name):
    out = subprocess.run(["objdump", "-d", path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if line.endswith(" <%s@plt>:" % name):
            return int(line.split()[0], 16)
    raise LookupError(name)


def test_plt_demangle():
    """A PLT entry of a C++ function named as the function is"""
    cc = os.path.join(WORK, "inlined-cc")
    plt = plt_entry(cc, "_ZSt9terminatev")
    f = write("plt-cc.raw", rg.header() +
              rg.maps_chunk(98, "".join(rg.maps_lines(cc))) +
              rg.records_chunk([rg.thread(98, 98, rg.THREAD_NEW),
                                rg.branch(nm(cc)["_Z7give_upv"][0], plt),
                                rg.branch(plt, plt + 6)]))
    rc, out, err = run_memcheck(f, "--format=jsonl")
    rc2, out2, err2 = run(f, "--format=jsonl", "--no-demangle")
    got = [r.get("to_sym") for r in jsonl(out) if r["kind"] == "branch"] \
        if rc == 0 else []
    got2 = [r.get("to_sym") for r in jsonl(out2) if r["kind"] == "branch"] \
        if rc2 == 0 else []
    tap(got == ["std::terminate()@plt", "std::terminate()@plt+0x6"] and
        got2 == ["_ZSt9terminatev@plt", "_ZSt9terminatev@plt+0x6"],
        "PLT entries of C++ functions demangled, --no-demangle keeps them; "
        "valgrind finds no error", "%r %r\n%s%s" % (got, got2, err, err2))


def test_debuginfo_hint():
    """A file without debug information: a hint on stderr, once, for the
    outputs that show source lines"""
    nodebug = os.path.join(WORK, "nodebug")
    syms = nm(nodebug)
    f = write("nodebug.raw", rg.header() +
              rg.maps_chunk(99, "".join(rg.maps_lines(nodebug))) +
              rg.records_chunk([rg.thread(99, 99, rg.THREAD_NEW),
                                rg.branch(syms["main"][0],
                                          syms["outer"][0])]))
    hint = "no source lines for nodebug: no debug information"
    rc, out, err = run(f)
    rc2, _, err2 = run(f, "--format=jsonl")
    rc3, _, err3 = run(f, "--format=perf", "-o", os.path.join(WORK, "nd.data"))
    rc4, _, err4 = run(write("withdebug.raw", rg.header() +
                             rg.maps_chunk(99, "".join(rg.maps_lines(INLINED))) +
                             rg.records_chunk([rg.thread(99, 99, rg.THREAD_NEW),
                                               rg.branch(nm(INLINED)["main"][0],
                                                         nm(INLINED)["outer"][0])])))
    tap(rc == 0 and err.count(hint) == 1 and "outer" in out and
        rc2 == 0 and err2.count(hint) == 1 and
        rc3 == 0 and hint not in err3 and rc4 == 0 and "no source" not in err4,
        "no debug information: text and jsonl say so once on stderr, perf "
        "does not (no lines), a file with it gets no hint",
        "\n".join((err, err2, err3, err4)))

    # Stripped: no function names, said instead of the lines (as perf's
    # "no symbols found"), in the picture formats too.
    stripped = os.path.join(WORK, "stripped")
    f = write("stripped.raw", rg.header() +
              rg.maps_chunk(99, "".join(rg.maps_lines(stripped))) +
              rg.records_chunk([rg.thread(99, 99, rg.THREAD_NEW),
                                rg.branch(syms["main"][0],
                                          syms["outer"][0])]))
    hint = "no function names in stripped: stripped"
    rc, out, err = run(f)
    rc2, _, err2 = run(f, "--format=folded")
    tap(rc == rc2 == 0 and err.count(hint) == 1 and
        err2.count(hint) == 1 and "no source lines" not in err + err2 and
        "stripped+0x" in out,
        "stripped: text and folded say there are no function names, once",
        err + err2 + out)

    # Not an ELF file at all (a text file mapped executable): said.
    text = os.path.join(SRC, "inlined.c")
    lines = "%x-%x r-xp 00000000 00:00 0 %s\n" % (0x10000, 0x11000, text)
    f = write("notelf.raw", rg.header() + rg.maps_chunk(99, lines) +
              rg.records_chunk([rg.thread(99, 99, rg.THREAD_NEW),
                                rg.branch(0x10010, 0x10020)]))
    rc, out, err = run(f)
    tap(rc == 0 and err.count("%s: not an x86 ELF program or library: its "
                              "addresses are not symbolized" % text) == 1,
        "a mapping of a file that is no ELF program: bts-dump says so once",
        err + out)
