#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare branch traces of one program run with the ptrace oracle's.

  compare.py oracle ORACLE --binary PROG [--expect SPEC ...]
  compare.py aux-marks PERF_DATA
  compare.py trace ORACLE TRACE --binary PROG [--kernel-to ok|zero|fail]
                    [--after-exec] [--tail MIN] [--flow]
  compare.py gdb GDB_OUTPUT ORACLE --binary PROG --start FUNC
                    --until FUNC [--errors GDB_ERRORS]
  compare.py calls ORACLE --binary PROG --start FUNC --until FUNC
  compare.py gdb-insn GDB_OUTPUT ORACLE --binary PROG --start FUNC
                    --until FUNC

oracle: ORACLE is oracle.txt ("FROM TO MNEMONIC" lines, '#' notes).  It
must have finished cleanly, and match the program's known structure:
each SPEC is "to:FUNC=N" (N branches land on FUNC's first instruction)
or "from:FUNC[:MNEMONIC]=N" (N branches, of that kind, leave from inside
FUNC).  This checks the oracle on its own, independently of BTS.

aux-marks: every AUX record (PERF_RECORD_AUX) of a perf.data file of
intel_bts covers data that ends with a record of zeros, which perf's
decoder needs (it stops one record short of the end of each piece of AUX
data perf record read, and perf reads up to the end of an AUX record).

trace: TRACE is `perf script -F ip,addr` output ("FROM => TO" lines).
Records with a kernel address at either end (>= 0x800000000000) are set
aside and counted, as are records to 0 (a branch into the kernel whose
kernel end was zeroed); a record *from* kernel space in a user-only trace
always fails (a branch executed at CPL 0 must never be recorded), but
with --both, for a trace of both modes.  The
user->user records must equal the oracle's, in order.  With --kernel-to
fail, a user->kernel record fails too (perf's software filter for
branches:u drops them); with --kernel-to zero, one with a kernel address
does (intel_bts on the DS layer zeroes the kernel end).  With --after-exec, the trace may begin with
branches the process ran before it executed PROG (a child that perf
followed from its fork; perf gives its samples the time they were
delivered, which may be after the exec): leading records from outside
PROG are left out, and counted.  With --tail MIN, the trace is the end of
a ring that wrapped (perf's snapshot mode): its user->user records must
be the oracle's last ones, at least MIN and fewer than the oracle has.
With --flow, TRACE is an instruction flow's branches (an Intel PT
decoder's): a conditional jump to the next instruction leaves the same
flow taken or not, so the oracle's such records are left out, and counted.

gdb: GDB_OUTPUT holds `record function-call-history /c` lines
("N<TAB><indent>FUNC") of a recording from a breakpoint in the --start
function to the return from the --until function.  The call tree must
be exactly the one the oracle's branches in that window imply, as gdb's
btrace builds it: a new segment at each call (but one to the next
instruction) and each jmp to a function's first byte (a tail call), a
level deeper; at each return, on the level of
the segment of the returned-to function in the back trace, or a level up
from the returning one if there is none; where any other branch, or the
flow, goes to another function, on the same level; levels counted from
the shallowest.

Where a user-only trace has no branch into the code that ran next (the
kernel entered a signal handler), gdb's decoder walks past its end and
prints a decode error (see gdb-insn): the call history is compared up to
that first gap, after which gdb guesses how the segments connect.

calls: print that call tree, one "<indent>FUNC" per line, two spaces a
level: what gdb's function-call-history /c and bts-dump --calls show.

gdb-insn: GDB_OUTPUT also holds `record instruction-history`
("N<TAB>   0xADDR <FUNC+OFF>:<TAB>..." lines, after the call history) of
the same window.  Its addresses, numbered 1, 2, 3, ..., must be the
instructions the oracle's branches imply, read from the program's code
(objdump): from where gdb's first one is (which must be in the --start
function, before its first branch) to the first branch's source, then
from each branch's target to the next one's source, to the return from
the --until function.  A walk that passes its end without landing on
it is a gap, which gdb shows as "[decode error (1): instruction
overflow]": gdb walks the code one instruction after the other, as BTS
records leave it to.

Prints TAP diagnostics ("# ...") and exits 0 on a match, 1 otherwise.
"""
import argparse
import bisect
import re
import struct
import subprocess
import sys

USER_TOP = 0x800000000000
CONTEXT = 6


def diag(msg=""):
    print("# " + msg if msg else "#")


class Symbols:
    """Address -> FUNC+OFF from the program's symbol table (nm)."""

    def __init__(self, binary):
        self.addrs, self.names, self.sizes = [], [], []
        out = subprocess.run(["nm", "-n", "-S", "--defined-only", binary],
                             capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3:
                # No size (an assembler label such as __restore_rt):
                # it extends to the next symbol.
                f.insert(1, None)
            if len(f) == 4 and f[2] in "tTwW":
                self.addrs.append(int(f[0], 16))
                self.sizes.append(int(f[1], 16) if f[1] else None)
                self.names.append(f[3])
        for i, size in enumerate(self.sizes):
            if size is None:
                nxt = [a for a in self.addrs[i + 1:] if a > self.addrs[i]]
                self.sizes[i] = nxt[0] - self.addrs[i] if nxt else 1

    def name(self, addr):
        if addr >= USER_TOP:
            return "[kernel]"
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0 or addr >= self.addrs[i] + max(self.sizes[i], 1):
            return "?"
        off = addr - self.addrs[i]
        return self.names[i] + (f"+{off:#x}" if off else "")

    def range(self, func):
        for a, s, n in zip(self.addrs, self.sizes, self.names):
            if n == func:
                return a, a + s
        raise KeyError(func)


def read_oracle(path):
    """The oracle's branches, of its first thread where it follows several
    ("TID B FROM TO MNEMONIC" lines, oracle -f; "K" lines are kernel
    entries, left out)."""
    recs, notes, tid = [], [], None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                notes.append(line[1:].strip())
                continue
            fields = line.split()
            if len(fields) == 5:
                tid = tid or fields[0]
                if fields[0] != tid or fields[1] != "B":
                    continue
                fields = fields[2:]
            frm, to, mnem = fields
            recs.append((int(frm, 16), int(to, 16), mnem))
    return recs, notes


TRACE_LINE = re.compile(r"^\s*([0-9a-f]+)\s+(?:=>\s+)?([0-9a-f]+)\s*$")


def read_trace(path):
    recs, bad = [], []
    with open(path) as f:
        for line in f:
            m = TRACE_LINE.match(line)
            if m:
                recs.append((int(m[1], 16), int(m[2], 16)))
            elif line.strip():
                bad.append(line.rstrip())
    return recs, bad


def show(sym, rec, mnem=""):
    frm, to = rec[0], rec[1]
    return (f"{frm:>12x} -> {to:<12x} {mnem:6} "
            f"{sym.name(frm)} -> {sym.name(to)}")


def cmd_oracle(args):
    sym = Symbols(args.binary)
    oracle, notes = read_oracle(args.oracle)
    ok = True

    summary = [n for n in notes if n.startswith("summary")]
    if not summary or not re.search(r"unexplained=0 status=0$",
                                    summary[-1]):
        diag("oracle did not finish cleanly: "
             + (summary[-1] if summary else "no summary line"))
        ok = False
    else:
        diag("oracle " + summary[-1])
    for spec in args.expect:
        what, n = spec.rsplit("=", 1)
        kind, func, *mnem = what.split(":")
        lo, hi = sym.range(func)
        if kind == "to":
            got = sum(1 for r in oracle if r[1] == lo)
        else:
            got = sum(1 for r in oracle if lo <= r[0] < hi
                      and (not mnem or r[2] == mnem[0]))
        if got != int(n):
            diag(f"oracle: {what}: {got} branches, expected {n}")
            ok = False
    if ok and args.expect:
        diag("known structure: " + " ".join(args.expect))
    return ok


def cmd_trace(args):
    sym = Symbols(args.binary)
    oracle, _ = read_oracle(args.oracle)
    trace, bad = read_trace(args.trace)
    ok = True

    if bad:
        diag(f"{len(bad)} unparsed trace lines, first: {bad[0]!r}")
        ok = False
    if args.flow:
        addrs = insn_addrs(args.binary)
        after = {a: b for a, b in zip(addrs, addrs[1:])}
        n = len(oracle)
        oracle = [r for r in oracle
                  if not (r[2].startswith(("j", "loop")) and
                          not r[2].startswith("jmp") and
                          after.get(r[0]) == r[1])]
        diag(f"{n - len(oracle)} conditional jumps to the next "
             "instruction left out")
    if args.after_exec:
        start = next((i for i, r in enumerate(trace)
                      if sym.name(r[0]) != "?"), len(trace))
        diag(f"{start} records before the exec left out")
        trace = trace[start:]

    user = [r for r in trace if r[0] < USER_TOP and r[1] < USER_TOP]
    kfrom = [r for r in trace if r[0] >= USER_TOP]
    kto = [r for r in trace if r[0] < USER_TOP and
           (r[1] >= USER_TOP or r[1] == 0)]
    user = [r for r in user if r[1] != 0]
    diag(f"oracle {len(oracle)} branches; trace {len(trace)} records: "
         f"{len(user)} user->user, {len(kto)} user->kernel, "
         f"{len(kfrom)} from kernel")
    if kfrom and not args.both:
        diag("records from kernel space (or non-canonical) in a "
             "user-only trace, first: " + show(sym, kfrom[0]))
        ok = False
    if kto:
        # Where did the user->kernel records leave user space?
        mnem = {r[0]: r[2] for r in oracle}
        srcs = {}
        for r in kto:
            srcs[sym.name(r[0])] = srcs.get(sym.name(r[0]), 0) + 1
        top = sorted(srcs.items(), key=lambda kv: -kv[1])[:4]
        diag("user->kernel records from: "
             + ", ".join(f"{k} x{v}" for k, v in top))
        if args.kernel_to == "fail":
            diag("user->kernel records must not be here, first: "
                 + show(sym, kto[0], mnem.get(kto[0][0], "")))
            ok = False
        kaddr = [r for r in kto if r[1] != 0]
        if args.kernel_to == "zero" and kaddr:
            diag(f"{len(kaddr)} user->kernel records with a kernel "
                 "address, first: " + show(sym, kaddr[0]))
            ok = False

    if args.tail is not None:
        diag(f"the ring's {len(user)} user->user records against the "
             f"oracle's last {len(user)} of {len(oracle)}")
        if not args.tail <= len(user) < len(oracle):
            diag(f"not a wrapped ring of at least {args.tail} records")
            ok = False
        oracle = oracle[len(oracle) - len(user):]
    n = min(len(oracle), len(user))
    first = next((i for i in range(n)
                  if oracle[i][:2] != user[i][:2]), None)
    if first is None and len(oracle) != len(user):
        first = n
    if first is not None:
        ok = False
        diag(f"first mismatch at branch #{first} "
             f"(oracle has {len(oracle)}, trace {len(user)}):")
        lo = max(0, first - CONTEXT)
        for i in range(lo, first + CONTEXT):
            o = show(sym, oracle[i], oracle[i][2]) if i < len(oracle) \
                else "(end)"
            t = show(sym, user[i]) if i < len(user) else "(end)"
            mark = "=" if i < first else ("!" if i == first else " ")
            diag(f"{mark}{i:6} oracle {o}")
            diag(f" {'':6} trace  {t}")
        # An extra or missing record shows as a shift: say which.
        if first < n:
            if oracle[first + 1:first + 9] and \
                    [r[:2] for r in oracle[first + 1:first + 9]] == \
                    user[first:first + 8]:
                diag("  the trace lacks the oracle's record #%d" % first)
            elif [r[:2] for r in oracle[first:first + 8]] == \
                    user[first + 1:first + 9]:
                diag("  the trace has an extra record at #%d" % first)
    return ok


GDB_LINE = re.compile(r"^(\d+)\t( *)([A-Za-z_][\w.]*)$")


def gdb_window(oracle, sym, start, until):
    """The oracle's branches gdb recorded, as indices [first, last]: from
    the first one leaving the @start function to the first return from the
    @until function."""
    lo, hi = sym.range(start)
    first = next(i for i, r in enumerate(oracle) if lo <= r[0] < hi)
    ulo, uhi = sym.range(until)
    last = next(i for i in range(first, len(oracle))
                if ulo <= oracle[i][0] < uhi and
                oracle[i][2].startswith("ret"))
    return first, last


class GdbCalls:
    """gdb's function segments of a branch trace, built as its btrace
    code builds them (gdb/btrace.c, ftrace_update_function()): a segment
    per stretch of one function, each with its level, the segment of its
    caller (up) and whether that was a tail call; segments of one function
    instance are linked (prev, next)."""

    def __init__(self, func):
        self.segs = [dict(func=func, level=0, up=None, tail=False,
                          prev=None, next=None, last="other")]

    def _new(self, func):
        self.segs.append(dict(func=func, level=self.segs[-1]["level"],
                              up=None, tail=False, prev=None, next=None,
                              last="other"))
        return self.segs[-1]

    def _up(self, seg):
        return None if seg is None or seg["up"] is None \
            else self.segs[seg["up"]]

    def call(self, func, tail=False):
        caller = len(self.segs) - 1
        seg = self._new(func)
        seg.update(up=caller, tail=tail, level=seg["level"] + 1)

    def switch(self, func):
        prev = self.segs[-1]
        seg = self._new(func)
        seg.update(up=prev["up"], tail=prev["tail"])

    def _fixup_caller(self, seg, caller):
        """seg and every segment of its function instance: called by
        caller, not through a tail call."""
        def chain(s, link):
            while s is not None:
                yield s
                s = None if s[link] is None else self.segs[s[link]]
        for s in list(chain(seg, "prev")) + list(chain(seg, "next")):
            s.update(up=caller, tail=False)

    def ret(self, func):
        prev = self.segs[-1]
        seg = self._new(func)
        me = len(self.segs) - 1
        caller = self._up(prev)
        while caller is not None and caller["func"] != func:
            caller = self._up(caller)
        if caller is not None:
            caller["next"] = me
            seg.update(prev=self.segs.index(caller), level=caller["level"],
                       up=caller["up"], tail=caller["tail"])
            return
        call = self._up(prev)
        while call is not None and call["last"] != "call":
            call = self._up(call)
        if call is None:
            # No call in the back trace: the trace began in a callee.
            top = prev
            while top["up"] is not None:
                top = self.segs[top["up"]]
            seg["level"] = top["level"] - 1
            self._fixup_caller(top, me)
        else:
            # A call it should have returned to: a new back trace.
            seg["level"] = prev["level"] - 1
            prev.update(up=me, tail=False)

    def branch(self, kind, to_func, to_start):
        """The current segment left by a branch of @kind ("call", "ret",
        "jmp" or "other") to @to_func (at its first byte: @to_start)."""
        cur = self.segs[-1]
        cur["last"] = kind
        if kind == "ret":
            self.ret(to_func)
        elif kind == "call":
            self.call(to_func)
        elif kind == "jmp" and to_start:
            # A jump to the start of a function: a tail call.
            self.call(to_func, tail=True)
        elif to_func != cur["func"]:
            self.switch(to_func)

    def history(self):
        low = min(s["level"] for s in self.segs)
        return [(s["level"] - low, s["func"]) for s in self.segs]


def branch_kind(mnem):
    """gdb's class of a branch instruction: its x86 code calls a jump
    only jmp, not a conditional one."""
    words = mnem.split()
    if any(w.startswith("call") for w in words):
        return "call"
    if any(w.startswith("ret") for w in words):
        return "ret"
    if any(w.startswith("jmp") for w in words):
        return "jmp"
    return "other"


def gdb_expected(oracle, binary, start, until):
    """The call history the oracle's branches imply, as (level, FUNC), up
    to gdb's first decode error (gdb_blocks()), if there is one: gdb then
    bridges the gap by guesses of its own (btrace_bridge_gaps()), which
    this does not model.  The branch into the walk that failed starts no
    segment: gdb starts one at an instruction.  And the index of the
    branch that ends that walk, None without a gap."""
    sym = Symbols(binary)
    first, last = gdb_window(oracle, sym, start, until)
    insns = insn_addrs(binary)
    _, gap = gdb_blocks(oracle, first, last, insns,
                        sym.range(start)[0])
    if gap is not None:
        last = gap - 1

    def func(addr):
        return sym.name(addr).split("+")[0]

    calls = GdbCalls(func(oracle[first][0]))
    for frm, to, mnem in oracle[first:last]:
        # Run into another function without a branch.
        if func(frm) != calls.segs[-1]["func"]:
            calls.segs[-1]["last"] = "other"
            calls.switch(func(frm))
        kind = branch_kind(mnem)
        nxt = bisect.bisect_right(insns, frm)
        if kind == "call" and nxt < len(insns) and insns[nxt] == to:
            # gdb ignores a call to the next instruction (for PIC), as a
            # call: the segment goes on.
            calls.segs[-1]["last"] = kind
            continue
        calls.branch(kind, func(to), "+" not in sym.name(to))
    return calls.history(), gap


def insn_addrs(binary):
    """The addresses of the program's instructions, in order (objdump)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                         capture_output=True, text=True, check=True).stdout
    return sorted(int(m[1], 16) for m in
                  re.finditer(r"^\s+([0-9a-f]+):\t", out, re.M))


GDB_INSN = re.compile(r"^(\d+)\t(?:=> )?\s*0x([0-9a-f]+)[ :]")
GDB_GAP = re.compile(r"^(\d+)\t\[decode error \(\d+\): [^]]*\]$")


def gdb_blocks(oracle, first, last, addrs, pc):
    """The instructions gdb's BTS decoder walks (gdb/btrace.c,
    btrace_compute_ftrace_bts()): from @pc to the source of the window's
    first branch, then from each branch's target to the next one's
    source, one instruction after the other.  A walk that passes its end
    without landing on it (a signal handler entered by the kernel, which
    a user-only trace shows no branch to) is a gap, None, where gdb says
    "decode error (1): instruction overflow".  Returns the addresses and
    gaps, and the index of the branch that ends the first walk with a
    gap (None without one)."""
    out, gap = [], None
    for i, (frm, to, _) in enumerate(oracle[first:last + 1], first):
        walk = addrs[bisect.bisect_left(addrs, pc):
                     bisect.bisect_right(addrs, frm)]
        out += walk
        if not walk or walk[-1] != frm:
            out.append(None)
            if gap is None:
                gap = i
        pc = to
    return out, gap


def cmd_gdb_insn(args):
    got = []
    with open(args.gdb) as f:
        lines = f.read().splitlines()
    start = next((i for i, x in enumerate(lines)
                  if x == "-- instruction-history"), None)
    for line in lines[start + 1:] if start is not None else []:
        m = GDB_INSN.match(line) or GDB_GAP.match(line)
        if not m or int(m[1]) != len(got) + 1:
            break
        got.append(int(m[2], 16) if m.re is GDB_INSN else None)
    if not got:
        diag("gdb printed no instruction history")
        return False
    oracle, _ = read_oracle(args.oracle)
    sym = Symbols(args.binary)
    first, last = gdb_window(oracle, sym, args.start, args.until)
    if got[0] is None or \
            not sym.range(args.start)[0] <= got[0] <= oracle[first][0]:
        diag(f"gdb's history starts at {got[0]}, not in {args.start} "
             f"before its first branch")
        return False
    want, _ = gdb_blocks(oracle, first, last, insn_addrs(args.binary),
                         got[0])
    if got == want:
        diag(f"gdb instruction history: {len(got)} instructions and gaps "
             f"({want.count(None)}) as the oracle's branches imply")
        return True
    n = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w),
             min(len(got), len(want)))
    diag(f"gdb instruction history ({len(got)}) differs from the oracle's "
         f"({len(want)}) at #{n + 1}:")
    def name(insns, i):
        if i >= len(insns):
            return "(end)"
        return "(gap)" if insns[i] is None else sym.name(insns[i])
    for i in range(max(0, n - 3), min(max(len(got), len(want)), n + 4)):
        g, w = name(got, i), name(want, i)
        diag(f"{'  ' if g == w else '! '}{i + 1:4} got {g:28} want {w}")
    return False


def cmd_calls(args):
    oracle, _ = read_oracle(args.oracle)
    for lv, name in gdb_expected(oracle, args.binary, args.start,
                                 args.until)[0]:
        print("  " * lv + name)
    return True


def cmd_gdb(args):
    # The history is the run of lines numbered 1, 2, 3, ...; gdb's other
    # output (source lines such as "54\t{") does not continue a run.
    got, gap_next = [], False
    with open(args.gdb) as f:
        for line in f:
            m = GDB_LINE.match(line.rstrip("\n"))
            if m and int(m[1]) == len(got) + 1:
                got.append((len(m[2]), m[3]))
            elif got:
                m = GDB_GAP.match(line.rstrip("\n"))
                gap_next = bool(m) and int(m[1]) == len(got) + 1
                break
    oracle, _ = read_oracle(args.oracle)
    history, gap = gdb_expected(oracle, args.binary, args.start,
                                args.until)
    want = [(2 * lv, name) for lv, name in history]
    if gap is not None and got:
        # gdb counts levels from the shallowest of the whole history,
        # after the gaps too: the prefix's own shallowest is its 0.
        low = min(ind for ind, _ in got)
        got = [(ind - low, name) for ind, name in got]
    if got == want and gap_next == (gap is not None):
        diag(f"gdb call history: {len(got)} segments as expected" +
             (", then its first decode error" if gap_next else ""))
        return True
    if got == want:
        diag("gdb's call history %s a decode error after its %d segments" %
             ("goes on without" if gap is not None else "ends in",
              len(got)))
        return False
    if not got:
        diag("gdb printed no call history; its errors:")
        if args.errors:
            with open(args.errors) as f:
                for line in f.read().splitlines()[-6:]:
                    diag("  " + line)
        return False
    diag(f"gdb call history ({len(got)} segments) differs from expected "
         f"({len(want)}):")
    for i in range(max(len(got), len(want))):
        g = " " * got[i][0] + got[i][1] if i < len(got) else "(end)"
        w = " " * want[i][0] + want[i][1] if i < len(want) else "(end)"
        diag(f"{'  ' if g == w else '! '}{i + 1:3} got {g:28} want {w}")
    return False


def cmd_aux_marks(args):
    """Every AUX record of a perf.data file (perf's file format) covers AUX
    data that ends with a 24-byte record of zeros."""
    with open(args.data, "rb") as f:
        d = f.read()
    data_at, data_size = struct.unpack_from("<QQ", d, 40)
    aux, pieces, at = [], {}, data_at
    while at < data_at + data_size:
        typ, _, size = struct.unpack_from("<IHH", d, at)
        if size < 8:
            diag(f"bad record at {at:#x}")
            return False
        if typ == 71:           # PERF_RECORD_AUXTRACE, its data after it
            n, off = struct.unpack_from("<QQ", d, at + 8)
            pieces[off] = d[at + size:at + size + n]
            at += n
        elif typ == 11:         # PERF_RECORD_AUX
            aux.append(struct.unpack_from("<QQQ", d, at + 8))
        at += size
    stream = bytearray()
    for off in sorted(pieces):
        if off != len(stream):
            diag(f"AUX data from {off:#x}, after {len(stream):#x}")
            return False
        stream += pieces[off]
    bad = [(off, n) for off, n, _ in aux
           if n and stream[off + n - 24:off + n] != bytes(24)]
    diag(f"{len(aux)} AUX records, {len(bad)} not ending with a record of "
         "zeros" + (", first at %#x size %#x" % bad[0] if bad else ""))
    return bool(aux) and not bad


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("oracle")
    o.add_argument("oracle")
    o.add_argument("--binary", required=True)
    o.add_argument("--expect", action="append", default=[])
    t = sub.add_parser("trace")
    t.add_argument("oracle")
    t.add_argument("trace")
    t.add_argument("--binary", required=True)
    t.add_argument("--kernel-to", choices=["ok", "zero", "fail"],
                   default="ok")
    t.add_argument("--after-exec", action="store_true")
    t.add_argument("--tail", type=int)
    t.add_argument("--flow", action="store_true")
    t.add_argument("--both", action="store_true")
    a = sub.add_parser("aux-marks")
    a.add_argument("data")
    # The commands on gdb's recording window.
    for name in ("gdb", "gdb-insn", "calls"):
        w = sub.add_parser(name)
        if name != "calls":
            w.add_argument("gdb")
        w.add_argument("oracle")
        w.add_argument("--binary", required=True)
        w.add_argument("--start", required=True)
        w.add_argument("--until", required=True)
        if name == "gdb":
            w.add_argument("--errors",
                           help="gdb's stderr, shown on failure")
    args = p.parse_args()
    ok = {"oracle": cmd_oracle, "trace": cmd_trace, "gdb": cmd_gdb,
          "gdb-insn": cmd_gdb_insn, "calls": cmd_calls,
          "aux-marks": cmd_aux_marks}[args.cmd](args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
