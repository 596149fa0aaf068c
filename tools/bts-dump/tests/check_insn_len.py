# SPDX-License-Identifier: GPL-2.0
"""insn_len.c, the lengths of the instructions capstone cannot decode,
against objdump's (insn-len-check.c compares; check.py runs these).

For every instruction objdump finds in the test programs and a few system
libraries (libc's AVX-512 string functions, libgcc's CET shadow stack
unwinding, a 32-bit libc), what insn_len() measures must be objdump's
length where capstone fails; and where capstone does not, unless it
refuses the instruction.
"""

import os
import re
import subprocess

import rawgen as rg
from checklib import PROG, PROG32, WORK, nm, run, tap, write

CHECK = os.path.join(WORK, "insn-len-check")
# objdump's lines for prefixes it found nothing to join to (in data)
LONE_PREFIXES = {"data16", "data32", "addr16", "addr32", "cs", "ds", "es",
                 "ss", "fs", "gs", "lock", "repz", "repnz", "rep", "bnd",
                 "notrack", "fwait"}


def objdump_insns(path, func):
    """@func's instructions as objdump decodes them: (address, bytes,
    mnemonic)."""
    out = subprocess.run(["objdump", "-d", "-w", "--insn-width=16",
                          "--disassemble=" + func, path],
                         capture_output=True, text=True, check=True).stdout
    return [(int(m.group(1), 16), bytes.fromhex(m.group(2)),
             m.group(3).split()[0])
            for m in re.finditer(
                r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{2} )+)\s*(.*)$", out,
                re.M)]


def vec_trace(insns, caller):
    """Records of a thread calling vec_scan (@insns, objdump's) from
    @caller: its jz not taken, jnz taken, ret; and the branches (from,
    to)."""
    at = {name: addr for addr, _, name in insns}
    ret = insns[-1][0]
    return [(caller, insns[0][0]), (at["jne"], ret), (ret, caller + 5)]


def objdump_lines(path):
    """insn-len-check's input: "LEN HEX NAME" for each instruction, HEX
    its bytes and up to 32 of the code after it, objdump's."""
    out = subprocess.run(["objdump", "-d", "-w", "--insn-width=16", path],
                         capture_output=True, text=True, check=True).stdout
    insns = []
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{2} )+)\s*(.*)$", line)
        if m:
            insns.append((int(m.group(1), 16), bytes.fromhex(m.group(2)),
                          m.group(3).split()))
    lines = []
    for k, (addr, code, words) in enumerate(insns):
        if (not words or "(bad)" in words or words[0].startswith("rex") or
                (len(words) == 1 and words[0] in LONE_PREFIXES)):
            continue
        more, j = code, k + 1
        while (len(more) < 32 and j < len(insns) and
               insns[j][0] == insns[j - 1][0] + len(insns[j - 1][1])):
            more += insns[j][1]
            j += 1
        lines.append("%d %s %s\n" % (len(code), more[:32].hex(), words[0]))
    return "".join(lines)


def test_insn_walk():
    """--insn through instructions capstone cannot decode"""
    insns = objdump_insns(PROG, "vec_scan")
    caller = nm(PROG)["vec_caller"][0]
    branches = vec_trace(insns, caller)
    f = write("vec.raw", rg.header() + rg.maps_chunk(60, rg.maps_lines(PROG)) +
              rg.records_chunk([rg.thread(60, 60, rg.THREAD_NEW)] +
                               [rg.branch(*b) for b in branches]))
    rc, out, err = run(f, "--insn")
    # Each instruction run through (the nop is jumped over) at objdump's
    # address; those capstone cannot decode (some, with capstone 4) as
    # objdump's bytes.
    want = [(addr, " ".join("%02x" % c for c in code))
            for addr, code, name in insns if name != "nop"]
    got, unknown = [], 0
    for m in re.finditer(r"^\d+\t0x([0-9a-f]+) vec_scan\+0x[0-9a-f]+: (.*)$",
                         out, re.M):
        addr, text = int(m.group(1), 16), m.group(2)
        if text.startswith("(unknown to capstone) "):
            unknown += 1
            got.append((addr, text.split(") ", 1)[1]))
        else:
            got.append((addr, dict(want).get(addr)))
    tap(rc == 0 and got == want and unknown > 0 and "no code" not in out,
        "--insn: instructions capstone cannot decode (AVX-512, CET) listed "
        "at objdump's addresses, with their bytes",
        "expected (address, bytes):\n  " +
        "\n  ".join("%x %s" % w for w in want) + "\ngot:\n" + out + err)


def check(lines, bits, plant=None):
    p = subprocess.run([CHECK, str(bits)] + ([str(plant)] if plant else []),
                       input=lines, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def test_insn_len():
    """insn_len() against objdump"""
    libc = os.path.realpath(subprocess.run(
        ["gcc", "-print-file-name=libc.so.6"], capture_output=True,
        text=True).stdout.strip())
    libgcc = os.path.realpath(subprocess.run(
        ["gcc", "-print-file-name=libgcc_s.so.1"], capture_output=True,
        text=True).stdout.strip())
    files = [(PROG, 64), (PROG32, 32), (libc, 64), (libgcc, 64)]
    if os.path.exists("/usr/lib32/libc.so.6"):
        files.append(("/usr/lib32/libc.so.6", 32))
    out, ok, unknown, lines = "", True, 0, {}
    for path, bits in files:
        lines[path] = objdump_lines(path)
        rc, o = check(lines[path], bits)
        out += "%s: %s" % (path, o)
        ok = ok and rc == 0
        m = re.search(r"(\d+) unknown to capstone", o)
        unknown += int(m.group(1)) if m else 0
    tap(ok and unknown > 1000,
        "insn_len: every instruction capstone cannot decode (AVX-512, CET) "
        "measured as objdump does, in the test programs, libc, libgcc",
        out)
    print("# %d instructions unknown to capstone" % unknown)

    # Self-test: every 100th answer a byte too long.
    rc, o = check(lines[libc], 64, 100)
    m = re.search(r"unknown to capstone, (\d+) of them measured wrong", o)
    tap(rc == 1 and m and int(m.group(1)) > 0,
        "self-test: with one length in 100 a byte off, the comparison fails",
        o[-2000:])
