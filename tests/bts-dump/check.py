#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check bts-dump's traces against the ptrace oracle (oracle -t).

  check.py oracle ORACLE --binary PROG [--expect SPEC ...] [--status S]
  check.py trace ORACLE JSONL --binary PROG [--main-only]
  check.py ring ORACLE JSONL N --binary PROG
  check.py symbols JSONL --binary PROG
  check.py text TEXT JSONL --binary PROG --from FUNC --to FUNC
  check.py calls CALLS EXPECTED --from FUNC --until FUNC
  check.py user-only JSONL...
  check.py pid JSONL PID
  check.py tap OUTPUT [--require REGEX ...]
  check.py slow ORACLE RECORDS SUMMARY --binary PROG
  check.py self-test ORACLE --binary PROG

oracle: the oracle's trace alone must have finished with status S
(default 0) and match the program's known structure.  SPEC is
"[T:]to:FUNC=N" (N branches of thread T land on FUNC's entry) or
"[T:]from:FUNC[:MNEMONIC]=N" (N branches, of that kind, leave FUNC);
threads are numbered by creation, main = 0, as everywhere here.

trace: JSONL is bts-dump --format=jsonl output.  The threads belong to
the processes the oracle's do (-f follows forks).  Per thread, its records
must be the oracle's: every branch, in order, and a kernel record for
each stretch in the kernel the oracle saw, with the same addresses (where
user mode entered the kernel, "from", and where it came back, "to") and
entry kind: the thread's birth (no "from"; "to" its first instruction),
system calls, faults that raised a signal, and the stretch that never
came back (no "to"), framed by one thread_new and one thread_exit.  Kernel
records the oracle cannot see, interrupts (NMI, external) and page faults
after which user mode went on where it was, are set aside, if they are
where the thread ran; a record of any other kind is a difference.
Threads are matched by creation order, which is the order of their tids.
--main-only: the trace must have the main thread alone (bts-dump
--no-inherit).  No LOST record.

ring: JSONL is bts-dump --ring N output: per thread, exactly the last N
records of the thread's full trace, i.e. the end of the oracle's.

symbols: from_sym/to_sym of every address in a function of the test
program's own sources must be FUNC or FUNC+0xOFF as nm says; from_src
must be addr2line's file (base name) and line.

text: TEXT (bts-dump's text format) must show the first branch from FUNC
to FUNC of JSONL with both symbols and the source line.

calls: CALLS (bts-dump --calls) from the first line naming FUNC to the
first naming the --until FUNC must be the call tree EXPECTED has, one
"<indent>FUNC" per line (as tests/bts/compare.py calls prints it); the
lines of CALLS are numbered per thread, 1, 2, 3, ..., as gdb's.

user-only: no record of any JSONL has an address of the kernel half.

pid: JSONL (bts-dump -p PID of a single-threaded process that then
exits) has branches, all of thread PID, framed by its thread_new and
thread_exit, each branch leaving from where the last record left the
thread, and ends with the exit_group that never came back.

tap: OUTPUT (a helper's TAP, abi.c's) has one plan and as many tests,
numbered in order, all "ok" without SKIP or TODO, no "Bail out!", and a
passing test matching each REGEX (those only some runs have).

slow: RECORDS (what slowread read from /dev/bts) equals the oracle as in
trace, and SUMMARY's last line (slowread's counts) says the threads
waited for the reader, nothing was lost, and everything was read.

self-test: the checks above must pass the jsonl a correct bts-dump would
print for ORACLE's run (a program with threads), and reject it broken in
each way they look for.

Prints TAP diagnostics ("# ...") and exits 0 when the check passes.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "..", "bts"))
from compare import Symbols  # noqa: E402

USER_TOP = 0x800000000000
CONTEXT = 5

# The signal a fault raises, by exception vector, for matching the
# oracle's "exception:SIG" with a kernel record's vector.
SIGNAL_OF_VECTOR = {0: 8, 1: 5, 3: 5, 4: 11, 5: 11, 6: 4, 13: 11, 14: 11,
                    16: 8, 17: 7, 19: 8}


class Diag:
    """Diagnostics, printed as TAP comments or kept (for the self-test)."""

    def __init__(self, quiet=False):
        self.quiet = quiet
        self.lines = []

    def __call__(self, msg=""):
        self.lines.append(msg)
        if not self.quiet:
            print("# " + msg if msg else "#")


def num(v):
    """An address or count in JSON: a "0x..." string or a number."""
    return int(v, 0) if isinstance(v, str) else int(v)


# --- the oracle ------------------------------------------------------------

class Oracle:
    """oracle -t output: per thread, ("B", from, to, mnemonic) and
    ("K", from, to, entry) events, in order."""

    def __init__(self, path):
        self.threads, self.summary, self.process = {}, "", {}
        with open(path) as f:
            for line in f:
                if line.startswith("# summary"):
                    self.summary = line[1:].strip()
                # "# TID process PID": the thread's process (-t, -f).
                m = re.match(r"^# (\d+) process (\d+)$", line)
                if m:
                    self.process[int(m[1])] = int(m[2])
                if line.startswith("#"):
                    continue
                tid, kind, frm, to, what = line.split()
                self.threads.setdefault(int(tid), []).append(
                    (kind, int(frm, 16), int(to, 16), what))

    def ranked(self):
        return [self.threads[t] for t in sorted(self.threads)]


# --- bts-dump's jsonl ------------------------------------------------------

class Dump:
    """bts-dump --format=jsonl: per thread, its records (dicts), in order."""

    def __init__(self, path=None, records=None):
        self.threads, self.bad = {}, []
        if path:
            records = []
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        self.bad.append(f"line {n}: {e}: {line[:80]!r}")
        self.records = records
        for r in records:
            self.threads.setdefault(r.get("tid"), []).append(r)

    def ranked(self):
        return [self.threads[t] for t in sorted(self.threads)]


# Where an interrupt or page fault set aside may be: an NMI (vector 2:
# the PMI that drains BTS), an external interrupt (32 and up), a page fault.
NMI_VECTOR, FIRST_EXTERNAL, PF_VECTOR = 2, 32, 14


def is_aside(r):
    """A kernel record the oracle cannot see: an interrupt or a page fault
    after which user mode went on where it was.  trace_keys() checks that
    it sits where the thread was running."""
    return (r.get("kind") == "kernel" and not r.get("signal") and
            ((r.get("entry") == "interrupt" and
              (r.get("vector") == NMI_VECTOR or
               (r.get("vector") or 0) >= FIRST_EXTERNAL)) or
             (r.get("entry") == "exception" and
              r.get("vector") == PF_VECTOR)) and
            "from" in r and num(r.get("to", 0)) == num(r["from"]))


# bts-dump's record kinds that carry no trace of their own: thread framing.
FRAMING = ("thread_new", "thread_exit")


def dump_key(r):
    """A record as the comparison sees it; None for thread events.  A
    record of a kind the comparison does not know (a marker, a raw
    pseudo-record, anything new) gets a key no oracle record has, so it
    shows up as a difference rather than vanish."""
    kind = r.get("kind")
    if kind == "branch":
        return ("B", num(r["from"]), num(r["to"]))
    if kind == "kernel":
        entry = r.get("entry")
        if entry == "exception":
            entry = f"exception:{SIGNAL_OF_VECTOR.get(r.get('vector'), -1)}"
        elif entry == "syscall":
            entry = f"syscall:{r.get('syscall_nr', '?')}"
        return ("K", num(r.get("from", 0)), entry, num(r.get("to", 0)))
    if kind == "lost":
        return ("L", num(r.get("count", 0)))
    if kind in FRAMING:
        return None
    return ("?", json.dumps(r, sort_keys=True))


def oracle_key(e):
    kind, frm, to, what = e
    return ("B", frm, to) if kind == "B" else ("K", frm, what, to)


def trace_keys(records, misplaced=None):
    """The comparable records of one thread of a dump, and how many
    kernel records were set aside.  An interrupt or page fault set aside
    must be where the thread ran at the time: at or after where the last
    record left it (a branch's target, a return to user mode) and at or
    before where the next one leaves (a straight run of code between two
    branches goes up in address).  Those that are not are appended to
    @misplaced."""
    keys, aside = [], 0
    at = 0
    for i, r in enumerate(records):
        if is_aside(r):
            aside += 1
            addr = num(r["from"])
            nxt = next((x for x in records[i + 1:]
                        if dump_key(x) and not is_aside(x)), None)
            nfrom = num(nxt["from"]) if nxt and "from" in nxt else None
            if (at and addr < at) or (nfrom is not None and addr > nfrom):
                if misplaced is not None:
                    misplaced.append((at, r, nfrom))
            at = addr
            continue
        k = dump_key(r)
        if k:
            keys.append(k)
            if k[0] == "B":
                at = k[2]
            elif k[0] == "K":
                at = k[3]
            else:
                at = 0
    return keys, aside


def show(sym, k):
    if k is None:
        return "(end)"
    if k[0] == "B":
        return (f"branch {k[1]:>12x} -> {k[2]:<12x} "
                f"{sym.name(k[1])} -> {sym.name(k[2])}")
    if k[0] == "K":
        return (f"kernel {k[1]:>12x} -> {k[3]:<12x} {k[2]} "
                f"({sym.name(k[1]) if k[1] else '-'} -> "
                f"{sym.name(k[3]) if k[3] else '-'})")
    if k[0] == "L":
        return f"lost {k[1]}"
    return f"unknown record {k[1]}"


def first_diff(want, got):
    n = min(len(want), len(got))
    first = next((i for i in range(n) if want[i] != got[i]), None)
    if first is None and len(want) != len(got):
        first = n
    return first


def show_diff(diag, sym, want, got, first, off=0):
    """Context around the first difference; @off: index of want[0] in the
    oracle's trace."""
    for i in range(max(0, first - CONTEXT), first + CONTEXT):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if w is None and g is None:
            break
        mark = "=" if i < first else ("!" if i == first else " ")
        diag(f"{mark}{i + off:6} oracle {show(sym, w)}")
        diag(f" {'':6} dump   {show(sym, g)}")
    # An extra or missing record shows as a shift: say which.
    if want[first + 1:first + 9] and want[first + 1:first + 9] == \
            got[first:first + 8]:
        diag(f"  the dump lacks the oracle's record #{first + off}")
    elif got[first + 1:first + 9] and want[first:first + 8] == \
            got[first + 1:first + 9]:
        diag(f"  the dump has an extra record at #{first + off}")


def process_ranks(tids, process):
    """Each thread's process, as the rank of its main thread among @tids
    (None where the process is not one of them): comparable between two
    runs, whose ids differ."""
    rank = {t: i for i, t in enumerate(sorted(tids))}
    return [rank.get(process.get(t)) for t in sorted(tids)]


def compare_processes(oracle, dump, diag, main_only):
    """The dump's threads belong to the processes the oracle's do: every
    record of a thread has its process's id ("pid"), which is the id of
    the process's first thread, and the oracle says ("# TID process PID")
    which thread is in which process."""
    want_tids = sorted(oracle.threads)[:1] if main_only \
        else sorted(oracle.threads)
    if not oracle.process or any(t not in oracle.process for t in want_tids):
        diag("the oracle did not say which process each thread is in")
        return False
    pids = {}
    for tid, recs in dump.threads.items():
        ps = {r.get("pid") for r in recs}
        if len(ps) != 1:
            diag(f"thread {tid}: records of processes {sorted(map(str, ps))}")
            return False
        pids[tid] = ps.pop()
    want = process_ranks(want_tids, oracle.process)
    got = process_ranks(pids, pids)
    if want != got:
        diag(f"threads' processes (as thread ranks): dump {got}, oracle "
             f"{want}")
        return False
    diag(f"{len(set(want))} processes of {len(want)} threads, as the "
         "oracle's")
    return True


def framing_check(t, records, diag):
    """A thread's whole trace starts with its thread_new and ends with its
    thread_exit, with neither anywhere else."""
    kinds = [r.get("kind") for r in records]
    if kinds[:1] == ["thread_new"] and kinds[-1:] == ["thread_exit"] and \
            kinds.count("thread_new") == 1 and \
            kinds.count("thread_exit") == 1:
        return True
    diag(f"thread {t}: not one thread_new first and one thread_exit last "
         f"({kinds.count('thread_new')} and "
         f"{kinds.count('thread_exit')}; first {kinds[:1]}, last "
         f"{kinds[-1:]})")
    return False


def compare_trace(oracle, dump, sym, diag, main_only=False, framing=True):
    ok = True
    if dump.bad:
        diag(f"{len(dump.bad)} lines are not JSON, first: {dump.bad[0]}")
        ok = False
    want_threads = oracle.ranked()[:1] if main_only else oracle.ranked()
    got_threads = dump.ranked()
    if len(got_threads) != len(want_threads):
        diag(f"{len(got_threads)} threads in the dump (tids "
             f"{sorted(dump.threads)}), the oracle has {len(want_threads)}")
        ok = False
    elif not compare_processes(oracle, dump, diag, main_only):
        ok = False
    for t, (w, g) in enumerate(zip(want_threads, got_threads)):
        want = [oracle_key(e) for e in w]
        misplaced = []
        got, aside = trace_keys(g, misplaced)
        lost = [k for k in got if k[0] == "L"]
        nb = sum(1 for k in want if k[0] == "B")
        diag(f"thread {t}: oracle {nb} branches, {len(want) - nb} kernel; "
             f"dump {sum(1 for k in got if k[0] == 'B')} branches, "
             f"{sum(1 for k in got if k[0] == 'K')} kernel "
             f"(+{aside} interrupts/page faults set aside)")
        if framing and not framing_check(t, g, diag):
            ok = False
        for at, r, nfrom in misplaced[:3]:
            diag(f"thread {t}: an {r.get('entry')} set aside at "
                 f"{r.get('from')}, not between {at:#x} and "
                 f"{'?' if nfrom is None else hex(nfrom)}, where the "
                 "thread ran")
        if misplaced:
            ok = False
        if lost:
            diag(f"thread {t}: {len(lost)} LOST records, "
                 f"{sum(k[1] for k in lost)} records lost")
            ok = False
            got = [k for k in got if k[0] != "L"]
        first = first_diff(want, got)
        if first is not None:
            diag(f"thread {t}: first mismatch at record #{first} "
                 f"(oracle has {len(want)}, dump {len(got)}):")
            show_diff(diag, sym, want, got, first)
            ok = False
    return ok


def compare_ring(oracle, dump, n, sym, diag):
    """Each thread's ring: the last @n records of its full trace, which
    ends like the oracle's."""
    ok = True
    if dump.bad:
        diag(f"{len(dump.bad)} lines are not JSON, first: {dump.bad[0]}")
        ok = False
    want_threads, got_threads = oracle.ranked(), dump.ranked()
    if len(got_threads) != len(want_threads):
        diag(f"{len(got_threads)} threads in the ring dump, the oracle has "
             f"{len(want_threads)}")
        ok = False
    for t, (w, g) in enumerate(zip(want_threads, got_threads)):
        want = [oracle_key(e) for e in w]
        records = [r for r in g if dump_key(r)]
        got, aside = trace_keys(g)
        # The ring's records include the kernel's detail before each
        # kernel record (its "time"), which the dump shows in that record.
        details = sum(1 for r in g if r.get("kind") == "kernel" and
                      "time" in r)
        held = len(records) + details
        diag(f"thread {t}: ring of {held} records ({details} details), "
             f"{aside} set aside; the oracle's trace has {len(want)}")
        # Not more than N, and N unless the whole trace was shorter.
        if held != n and not (held < n and len(got) == len(want)):
            diag(f"thread {t}: {held} records in a ring of {n}")
            ok = False
        tail = want[len(want) - len(got):] if len(got) <= len(want) \
            else [None] * (len(got) - len(want)) + want
        first = first_diff(tail, got)
        if not got or first is not None:
            diag(f"thread {t}: the ring is not the end of the oracle's "
                 "trace" + (":" if got else " (empty)"))
            if got:
                show_diff(diag, sym, tail, got, first,
                          len(want) - len(got))
            ok = False
    return ok


def oracle_check(oracle, sym, specs, status, diag):
    ok = True
    if not re.search(rf"unexplained=0 status={status}$", oracle.summary):
        diag("oracle did not finish as expected (status "
             f"{status}): {oracle.summary or 'no summary line'}")
        ok = False
    else:
        diag("oracle " + oracle.summary)
    threads = oracle.ranked()
    for spec in specs:
        what, n = spec.rsplit("=", 1)
        t = 0
        if what[0].isdigit():
            t, what = what.split(":", 1)
            t = int(t)
        kind, func, *mnem = what.split(":")
        lo, hi = sym.range(func)
        ev = [e for e in threads[t] if e[0] == "B"] if t < len(threads) \
            else []
        if kind == "to":
            got = sum(1 for e in ev if e[2] == lo)
        else:
            got = sum(1 for e in ev if lo <= e[1] < hi
                      and (not mnem or e[3] == mnem[0]))
        if got != int(n):
            diag(f"oracle: thread {t}: {what}: {got} branches, expected {n}")
            ok = False
    if ok and specs:
        diag("known structure: " + " ".join(specs))
    return ok


# --- symbols -----------------------------------------------------------------

class Own:
    """The test program's own functions (those nm -l places in a source
    file of tests/), and addr2line's file:line for addresses in them."""

    def __init__(self, binary):
        self.binary = binary
        self.ranges = []
        out = subprocess.run(["nm", "-l", "-S", "--defined-only", binary],
                             capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            m = re.match(r"^([0-9a-f]+) ([0-9a-f]+) [tT] (\S+)\s+(\S+):\d+$",
                         line)
            if m and "/tests/" in m[4]:
                lo = int(m[1], 16)
                self.ranges.append((lo, lo + int(m[2], 16), m[3]))

    def has(self, addr):
        return any(lo <= addr < hi for lo, hi, _ in self.ranges)

    def lines(self, addrs):
        addrs = sorted(addrs)
        out = subprocess.run(["addr2line", "-e", self.binary],
                             input="".join(f"{a:x}\n" for a in addrs),
                             capture_output=True, text=True,
                             check=True).stdout.splitlines()
        res = {}
        for a, line in zip(addrs, out):
            path, _, rest = line.partition(":")
            res[a] = f"{os.path.basename(path)}:{rest.split()[0]}"
        return res


def src_norm(s):
    """file:line, of a from_src such as "/path/file.c:12"."""
    if not isinstance(s, str) or ":" not in s:
        return s
    path, _, line = s.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


def symbols_check(dump, sym, own, diag, minimum=20):
    ok = True
    checked, bad, srcs = 0, [], {}
    for r in dump.records:
        if r.get("kind") != "branch":
            continue
        for end in ("from", "to"):
            a = num(r[end])
            if not own.has(a):
                continue
            checked += 1
            if r.get(end + "_sym") != sym.name(a):
                bad.append(f"{end} {a:#x}: {r.get(end + '_sym')!r}, "
                           f"nm says {sym.name(a)!r}")
        a = num(r["from"])
        if own.has(a):
            srcs.setdefault(a, set()).add(src_norm(r.get("from_src")))
    want = own.lines(srcs)
    for a, got in sorted(srcs.items()):
        if got != {want[a]}:
            bad.append(f"from {a:#x} ({sym.name(a)}): from_src "
                       f"{sorted(map(str, got))}, addr2line says {want[a]}")
    diag(f"{checked} addresses in the program's own functions, "
         f"{len(srcs)} source lines checked")
    if bad:
        diag(f"{len(bad)} wrong, first ones:")
        for b in bad[:6]:
            diag("  " + b)
        ok = False
    if checked < minimum:
        diag(f"fewer than {minimum} addresses checked")
        ok = False
    return ok


def text_check(text, dump, func_from, func_to, sym, diag):
    lo, hi = sym.range(func_from)
    to = sym.range(func_to)[0]
    r = next((r for r in dump.records if r.get("kind") == "branch" and
              lo <= num(r["from"]) < hi and num(r["to"]) == to), None)
    if r is None:
        diag(f"no branch {func_from} -> {func_to} in the jsonl trace")
        return False
    want = [r.get("from_sym"), r.get("to_sym"), src_norm(r.get("from_src"))]
    if None in want:
        diag(f"the jsonl record lacks a symbol or source: {r}")
        return False
    diag(f"looking for a line with {' '.join(want)}")
    with open(text) as f:
        for line in f:
            if all(re.search(rf"(?<![\w+]){re.escape(w)}(?![\w+])", line)
                   for w in want):
                diag("found: " + line.rstrip())
                return True
    diag("no such line in the text trace")
    return False


def tree(lines):
    """(depth, name) of "<indent>NAME" lines, the first one at depth 0."""
    out = [(len(x) - len(x.lstrip()), x.strip()) for x in lines]
    return [(d - out[0][0], n) for d, n in out] if out else []


def calls_segments(lines, diag):
    """The "<indent>FUNC" of --calls' numbered lines ("N<TAB><indent>FUNC",
    as gdb numbers its call history's segments), or None unless each
    thread's are numbered 1, 2, 3, ...; the other lines (headers, "-- "
    notes after a tab) are left out."""
    out, seen = [], {}
    thread = None
    for line in lines:
        if line.startswith("["):
            thread = line
            continue
        m = re.match(r"^(\d+)\t(.*)$", line)
        if not m:
            continue
        seen[thread] = seen.get(thread, 0) + 1
        if int(m[1]) != seen[thread]:
            diag(f"segment numbered {m[1]}, not {seen[thread]}: {line!r}")
            return None
        out.append(m[2])
    return out


def calls_check(lines, want, func_from, func_until, diag):
    start = next((i for i, x in enumerate(lines)
                  if x.strip() == func_from), None)
    end = next((i for i, x in enumerate(lines)
                if start is not None and i > start and
                x.strip() == func_until), None)
    if end is None:
        diag(f"no {func_from} ... {func_until} in the call tree")
        return False
    got, want = tree(lines[start:end + 1]), tree(want)
    if got == want:
        diag(f"call tree of {len(got)} lines as expected")
        return True
    diag(f"call tree ({len(got)} lines) differs from the expected "
         f"({len(want)}):")
    for i in range(max(len(got), len(want))):
        g = " " * got[i][0] + got[i][1] if i < len(got) else "(end)"
        w = " " * want[i][0] + want[i][1] if i < len(want) else "(end)"
        diag(f"{'  ' if g == w else '! '}{i + 1:3} got {g:28} want {w}")
    return False


# The longest straight run of code between two branches pid_check()
# believes: far more than any function of the programs traced has.
MAX_RUN = 0x10000


def pid_check(dump, pid, diag):
    """bts-dump -p PID of a single-threaded process, until it exits: one
    thread, PID's, framed by thread_new and thread_exit, with branches, no
    LOST or unknown record, and consistent: each branch leaves from at or
    after where the last record left the thread (a straight run of code
    goes up in address), and the trace ends with the system call that
    never came back (exit_group)."""
    ok = True
    branches = sum(1 for r in dump.records if r.get("kind") == "branch")
    tids = sorted(dump.threads)
    pids = sorted({str(r.get("pid")) for r in dump.records})
    diag(f"{branches} branches, of threads {tids}, processes {pids} "
         f"(traced: {pid})")
    if dump.bad or branches == 0 or tids != [pid] or pids != [str(pid)]:
        return False
    recs = dump.threads[pid]
    ok = framing_check(0, recs, diag)
    keys = [dump_key(r) for r in recs]
    odd = [k for k in keys if k and k[0] not in "BK"]
    if odd:
        diag(f"{len(odd)} LOST or unknown records, first: {odd[0]}")
        ok = False
    kernel = [r for r in recs if r.get("kind") == "kernel"]
    end = kernel[-1] if kernel else {}
    if end.get("entry") != "syscall" or "to" in end or \
            end.get("syscall", "exit_group") != "exit_group" or \
            [k for k in keys if k][-1][0] != "K":
        diag(f"the trace does not end with the exit: last kernel record {end}")
        ok = False
    at, bad = 0, []
    for r in recs:
        k = dump_key(r)
        if not k or k[0] not in "BK":
            continue
        frm = k[1]
        if at and frm and not at <= frm < at + MAX_RUN:
            bad.append(f"{r.get('kind')} from {frm:#x} after the thread "
                       f"was left at {at:#x}")
        at = k[2] if k[0] == "B" else (frm if is_aside(r) else k[3])
    if bad:
        diag(f"{len(bad)} records not where the thread was, first ones:")
        for b in bad[:3]:
            diag("  " + b)
        ok = False
    return ok


def user_only_check(dumps, diag):
    ok, n = True, 0
    for d in dumps:
        for r in d.records:
            for k, v in r.items():
                if not isinstance(v, str) or not v.startswith("0x"):
                    continue
                n += 1
                if int(v, 16) >= USER_TOP:
                    diag(f"kernel-half address: {k}={v} in {r}")
                    ok = False
    diag(f"{n} addresses in {len(dumps)} traces")
    return ok and n > 0


def filtered_check(full, filtered, diag):
    """A trace taken with kernel-mode recording refused against one of the
    same program traced with it allowed: /dev/bts never has the hardware
    record the kernel, so per thread the same branches and the same system
    calls, entered and resumed at the same places.  (Interrupts and page
    faults differ from run to run.)"""
    if full.bad or filtered.bad:
        diag(f"unreadable output: {(full.bad + filtered.bad)[:2]}")
        return False
    a, b = full.ranked(), filtered.ranked()
    if len(a) != len(b):
        diag(f"{len(a)} threads allowed, {len(b)} refused")
        return False

    def pick(r):
        if r.get("kind") == "branch":
            return ("branch", num(r["from"]), num(r["to"]))
        if r.get("kind") == "kernel" and r.get("entry") == "syscall":
            return ("syscall", num(r.get("from", 0)), num(r.get("to", 0)),
                    r.get("syscall"))
        return None

    ok, nb, ns = True, 0, 0
    for t, (x, y) in enumerate(zip(a, b)):
        want = [k for k in map(pick, x) if k]
        got = [k for k in map(pick, y) if k]
        if want != got:
            first = first_diff(want, got)
            diag(f"thread {t}: records differ at {first} of "
                 f"{len(want)} / {len(got)}: "
                 f"{want[first:first + 1]} / {got[first:first + 1]}")
            ok = False
        nb += sum(k[0] == "branch" for k in got)
        ns += sum(k[0] == "syscall" and k[2] != 0 for k in got)
    diag(f"{len(b)} threads, {nb} branches, {ns} system calls with their "
         "resume address alike")
    return ok and nb > 0 and ns > 0


# IA32_DEBUGCTL bits (SDM vol. 3, 18.4.9): TR, BTS, BTS_OFF_OS.
DEBUGCTL_TR, DEBUGCTL_BTS, DEBUGCTL_BTS_OFF_OS = 1 << 6, 1 << 7, 1 << 9


def debugctl_check(off, on, diag):
    """DEBUGCTL read now and then while a /dev/bts trace runs (lists of
    values; those without TR and BTS were read while the traced thread
    was not running), with kernel-mode recording refused (@off) and
    allowed (@on): the hardware records user mode only (BTS_OFF_OS)
    either way, since an unprivileged consumer never makes it write a
    kernel branch."""
    tracing = DEBUGCTL_TR | DEBUGCTL_BTS
    off_t = [v for v in off if v & tracing == tracing]
    on_t = [v for v in on if v & tracing == tracing]
    diag(f"DEBUGCTL refused: {sorted(set(hex(v) for v in off))} "
         f"({len(off_t)} of {len(off)} reads tracing), allowed: "
         f"{sorted(set(hex(v) for v in on))} "
         f"({len(on_t)} of {len(on)} reads tracing)")
    return (bool(off_t) and all(v & DEBUGCTL_BTS_OFF_OS for v in off_t) and
            bool(on_t) and all(v & DEBUGCTL_BTS_OFF_OS for v in on_t))


def released_check(samples, attached, rounds, diag):
    """IA32_DEBUGCTL of every CPU, read after a tracer let go of running
    threads while another trace kept the layer active (guest.sh's
    released/): @samples, (round, cpu, value) tuples.  Nobody traces the
    threads then, so no read may find TR and BTS set; and each of the
    @rounds must have been read, on more than one CPU, most of them
    after a tracer that traced every thread (@attached, round numbers)."""
    tracing = DEBUGCTL_TR | DEBUGCTL_BTS
    bad = [(r, c, v) for r, c, v in samples if v & tracing == tracing]
    cpus = {c for _, c, _ in samples}
    read = {r for r, _, _ in samples}
    diag(f"{len(samples)} reads of {len(cpus)} CPUs in {len(read)} of "
         f"{rounds} rounds, {len(attached)} rounds traced every thread; "
         f"{len(bad)} reads found BTS on")
    for r, c, v in bad[:5]:
        diag(f"round {r}: CPU {c} records for nobody: DEBUGCTL {v:#x}")
    return (not bad and len(cpus) > 1 and read == set(range(rounds)) and
            2 * len(attached) > rounds)


def order_check(path, diag, grouped=False):
    """bts-dump's jsonl of several threads is in time order: the kernel's
    stamps of the returns to user mode never go back from one line to the
    next, whatever thread each is of, and the threads' runs interleave.
    @grouped: each thread's lines together first, in the order the
    threads appear, as a bts-dump that prints them as read would (the
    self-test: it must fail)."""
    with open(path) as f:
        recs = [json.loads(x) for x in f if x.strip()]
    recs = [r for r in recs if "tid" in r]
    if grouped:
        first = {}
        for i, r in enumerate(recs):
            first.setdefault(r["tid"], i)
        recs.sort(key=lambda r: first[r["tid"]])
    tids = {r["tid"] for r in recs}
    last, runs, prev = None, 0, None
    for i, r in enumerate(recs):
        runs += r["tid"] != prev
        prev = r["tid"]
        if r["kind"] != "kernel" or "time" not in r:
            continue
        if last and r["time"] < last[1]:
            diag(f"line {i + 1}: tid {r['tid']} returned to user mode at "
                 f"{r['time']}, before tid {last[0]}'s return at {last[1]} "
                 f"on an earlier line")
            return False
        last = (r["tid"], r["time"])
    if len(tids) < 2 or runs <= len(tids):
        diag(f"{len(tids)} threads in {runs} runs: nothing was interleaved")
        return False
    return True


def jit_check(path, diag, unnamed=False, ns_pid=None):
    """bts-dump's jsonl of progs/jit: the loop it ran in an anonymous
    mapping has the name the program wrote into /tmp/perf-PID.map, the
    file's name its dso: 3 calls from main, 4 taken jnz each, 3 returns.
    @unnamed: the names dropped first, as a bts-dump that does not read
    the file would print (the self-test: it must fail).  The file is
    named by the program's pid: @ns_pid, its pid in its container, or
    that of the trace's first process."""
    with open(path) as f:
        recs = [json.loads(x) for x in f if x.strip()]
    brs = [r for r in recs if r["kind"] == "branch"]
    if unnamed:
        brs = [{k: v for k, v in r.items()
                if not (isinstance(v, str) and "jit_" in v)} for r in brs]
    if ns_pid is None:
        ns_pid = recs[0]["pid"] if recs else 0
    dso = "perf-%d.map" % ns_pid
    ends = [(r.get("from_sym") or "", r.get("to_sym") or "",
             r.get("to_dso")) for r in brs]
    loops = ends.count(("jit_countdown+0x4", "jit_countdown+0x2", dso))
    calls = sum(f.startswith("main+") and t == "jit_countdown" and d == dso
                for f, t, d in ends)
    rets = sum(f == "jit_countdown+0xb" and t.startswith("main+")
               for f, t, d in ends)
    if (loops, calls, rets) != (12, 3, 3):
        diag(f"{loops} loop branches, {calls} calls, {rets} returns named "
             f"by {dso}; expected 12, 3, 3")
        return False
    return True


def tap_check(lines, require, diag):
    """TAP output of a helper (abi.c): a plan, tests numbered 1..N, every
    one "ok" without a SKIP or TODO directive, no "Bail out!", and an ok
    test whose description matches each of the @require regexes."""
    ok, plan, tests = True, [], []
    for line in lines:
        m = re.match(r"^1\.\.(\d+)\s*$", line)
        if m:
            plan.append(int(m[1]))
            continue
        m = re.match(r"^(not )?ok (\d+)\b\s*(?:- )?(.*)$", line)
        if m:
            tests.append((not m[1], int(m[2]), m[3]))
        elif line.startswith("Bail out!"):
            diag(line)
            ok = False
    if len(plan) != 1:
        diag(f"{len(plan)} plan lines, expected one")
        ok = False
    elif plan[0] != len(tests) or plan[0] == 0:
        diag(f"plan 1..{plan[0]}, but {len(tests)} tests ran")
        ok = False
    if [n for _, n, _ in tests] != list(range(1, len(tests) + 1)):
        diag("tests not numbered 1..N in order")
        ok = False
    passed = 0
    for good, n, desc in tests:
        if re.search(r"#\s*(SKIP|TODO)", desc, re.I):
            diag(f"not run, or not required to pass: ok {n} - {desc}")
            ok = False
        elif not good:
            diag(f"not ok {n} - {desc}")
            ok = False
        else:
            passed += 1
    for r in require:
        if not any(good and re.search(r, desc) and
                   not re.search(r"#\s*(SKIP|TODO)", desc, re.I)
                   for good, _, desc in tests):
            diag(f"no passing test matches {r!r}")
            ok = False
    diag(f"{passed} of {len(tests)} tests passed, plan "
         f"{plan[0] if len(plan) == 1 else '?'}")
    return ok


# --- the slow reader (slowread.c) -------------------------------------------

PSEUDO_TAG = 0x80000000


def pseudo(typ, arg=0):
    """A pseudo-record's from (BTS_PSEUDO())."""
    return PSEUDO_TAG << 32 | (arg & 0xffffff) << 8 | typ

ENTRY_NAMES = {0: "unknown", 1: "syscall", 2: "exception", 3: "interrupt"}
P_KERNEL, P_LOST, P_THREAD, P_DETAIL = 1, 3, 6, 7
ABI_NONE, ABI_X86_64, ABI_X32, X32_SYSCALL_BIT = 0, 1, 2, 1 << 30
THREAD_NEW, THREAD_EXIT = 1, 2


def records_to_dicts(data):
    """/dev/bts's records as read() returns them (struct bts_record, 24
    bytes each, THREAD records saying whose the next ones are) as the
    dicts of bts-dump's jsonl, without symbols."""
    out, tid, pid = [], None, None
    detail = {}     # per thread: the KERNEL_ENTRY detail (abi, orig_ax)
    if len(data) % 24:
        raise ValueError(f"{len(data)} bytes: not whole records")
    for off in range(0, len(data), 24):
        frm, to, flags = struct.unpack_from("<QQQ", data, off)
        if frm >> 32 != PSEUDO_TAG:
            detail.pop(tid, None)
            out.append({"tid": tid, "pid": pid, "kind": "branch",
                        "from": hex(frm), "to": hex(to)})
            continue
        typ, arg = frm & 0xff, (frm >> 8) & 0xffffff
        r = {"tid": tid, "pid": pid}
        if typ == P_THREAD:
            tid, pid = to, flags
            if arg in (THREAD_NEW, THREAD_EXIT):
                out.append({"tid": tid, "pid": pid, "kind":
                            "thread_new" if arg == THREAD_NEW
                            else "thread_exit"})
            continue
        if typ == P_DETAIL:
            # Layout 0 of a KERNEL record's detail; THREAD framing may
            # come between them.
            if arg & 0xffff == P_KERNEL:
                detail[tid] = (arg >> 16, to)
            continue
        abi, ax = detail.pop(tid, (ABI_NONE, None))
        if typ == P_KERNEL:
            entry = ENTRY_NAMES.get(arg & 0xff, "unknown")
            r.update(kind="kernel", entry=entry)
            if entry == "syscall" and abi != ABI_NONE:
                r["syscall_nr"] = ax & ~X32_SYSCALL_BIT \
                    if abi == ABI_X32 else ax
            if entry in ("exception", "interrupt"):
                r["vector"] = arg >> 8
            r.update({k: hex(v) for k, v in (("from", flags), ("to", to))
                      if v})
        elif typ == P_LOST:
            r.update(kind="lost", count=to)
        else:
            r.update(kind="pseudo", type=typ, arg=arg, to=hex(to),
                     flags=hex(flags))
        out.append(r)
    return out


def raw_file_records(path):
    """The records of a bts-dump raw file (bts-dump(1), RAW FORMAT), as
    (stream, from, to, flags)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"BTSDUMP\n":
        raise ValueError(f"{path}: not a bts-dump raw file")
    off = struct.unpack_from("<I", data, 12)[0]
    out = []
    while off + 8 <= len(data):
        typ, size = struct.unpack_from("<II", data, off)
        off += 8
        if typ == 1:
            stream = struct.unpack_from("<I", data, off)[0]
            for o in range(off + 8, off + size - 23, 24):
                out.append((stream,) + struct.unpack_from("<QQQ", data, o))
        off += size
    return out


PF_VECTOR, PF_USER = 14, 4


def error_code_check(records, diag):
    """Every page fault from user mode in a user-only stream carries its
    error code, the user bit (4) set, in its BTS_DETAIL_KERNEL_ENTRY
    (bts.h): the entry code moves it out of orig_ax before any C code
    runs, which left ~0 there.  @records: raw_file_records()'s."""
    detail, codes = {}, []
    for stream, frm, to, _ in records:
        if frm >> 32 != PSEUDO_TAG:
            detail.pop(stream, None)
            continue
        typ, arg = frm & 0xff, (frm >> 8) & 0xffffff
        if typ == P_THREAD:
            continue
        if typ == P_DETAIL:
            if arg & 0xffff == P_KERNEL:
                detail[stream] = to
            continue
        ax = detail.pop(stream, None)
        if typ == P_KERNEL and ENTRY_NAMES.get(arg & 0xff) == "exception" \
                and (arg >> 8) & 0xff == PF_VECTOR:
            codes.append(ax)
    bad = [c for c in codes if c is None or c == (1 << 64) - 1 or
           not c & PF_USER]
    diag(f"{len(codes)} page faults, error codes "
         f"{sorted(set(hex(c) for c in codes if c is not None))[:8]}, "
         f"{len(bad)} without one")
    return bool(codes) and not bad


def slow_status_check(line, threads, data, diag):
    """slowread's summary: the traced threads waited for the reader
    (throttled > 0, and slowread read after such waits), nothing was lost,
    every thread was traced, it read every record the file put into the
    threads' buffers (those of @data but the THREAD records read() adds),
    and @data holds all it read."""
    diag("slowread: " + line.strip())
    n = len(data) // 24
    framing = sum(1 for off in range(0, n * 24, 24)
                  if struct.unpack_from("<Q", data, off)[0] >> 32 ==
                  PSEUDO_TAG and data[off] == P_THREAD)
    try:
        st = {k: int(v) for k, v in (kv.split("=", 1)
                                     for kv in line.split())}
        ok = (st["throttled"] > 0 and st["slow_reads"] > 0 and
              st["lost"] == 0 and st["untraced"] == 0 and
              st["threads"] == threads and st["read"] == n and
              st["records"] == n - framing)
    except (KeyError, ValueError) as e:
        diag(f"slowread's summary is incomplete: {e}")
        return False
    if not ok:
        diag(f"expected throttled > 0, slow_reads > 0, lost 0, untraced 0, "
             f"{threads} threads, read={n} (the records saved) and "
             f"records={n - framing} (those but {framing} THREAD records)")
    return ok


def slow_check(oracle, data, line, sym, diag):
    try:
        recs = records_to_dicts(data)
    except ValueError as e:
        diag(str(e))
        return False
    ok = slow_status_check(line, len(oracle.threads), data, diag)
    return compare_trace(oracle, Dump(records=recs), sym, diag) and ok


# --- self-test ---------------------------------------------------------------

VECTOR_OF_SIGNAL = {4: 6, 5: 3, 7: 17, 8: 0, 11: 14}


def synthesize(oracle, sym, own):
    """The jsonl a correct bts-dump would print for the oracle's run."""
    recs = []
    lines = own.lines({e[1] for t in oracle.threads.values() for e in t
                       if e[0] == "B" and own.has(e[1])})
    for tid in sorted(oracle.threads):
        pid = oracle.process.get(tid)
        recs.append({"tid": tid, "pid": pid, "kind": "thread_new"})
        for kind, frm, to, what in oracle.threads[tid]:
            # A kernel record has no "from" or "to" where it is unknown.
            r = {"tid": tid, "pid": pid}
            r.update({k: hex(v) for k, v in (("from", frm), ("to", to))
                      if v or kind == "B"})
            if kind == "B":
                r.update(kind="branch", from_sym=sym.name(frm),
                         to_sym=sym.name(to))
                if frm in lines:
                    r["from_src"] = lines[frm]
            else:
                entry, _, n = what.partition(":")
                # time: the kernel's detail came before it
                r.update(kind="kernel", entry=entry, time=len(recs))
                if entry == "syscall":
                    r["syscall_nr"] = int(n)
                elif n:
                    r["vector"] = VECTOR_OF_SIGNAL[int(n)]
            recs.append(r)
        recs.append({"tid": tid, "pid": pid, "kind": "thread_exit"})
    return recs


def self_test(oracle, sym, own, diag):
    """Each check must pass the trace a correct bts-dump would print and
    reject it broken in each way the check looks for."""
    ok = True
    q = Diag(quiet=True)

    def expect_fn(name, good, thunk):
        nonlocal ok
        q.lines.clear()
        if thunk() != good:
            diag(f"self-test: {name}: check {'failed' if good else 'passed'}")
            for line in q.lines[-8:]:
                diag("  " + line)
            ok = False

    def expect(name, good, fn, records):
        expect_fn(name, good, lambda: fn(Dump(records=records)))

    recs = synthesize(oracle, sym, own)
    tids = sorted(oracle.threads)
    if len(tids) < 2:
        diag("self-test: needs the oracle trace of a program with threads")
        return False
    main = tids[0]
    ix = [i for i, r in enumerate(recs) if r["tid"] == main and
          r["kind"] not in FRAMING]
    br = [i for i in ix if recs[i]["kind"] == "branch"]
    sc = [i for i in ix if recs[i]["kind"] == "kernel" and
          recs[i]["entry"] == "syscall"]
    mid, scall = br[len(br) // 2], sc[len(sc) // 2]

    def edit(i, **kw):
        return recs[:i] + [dict(recs[i], **kw)] + recs[i + 1:]

    def kernel(entry, vector, frm, to):
        return {"tid": main, "pid": main, "kind": "kernel", "entry": entry,
                "vector": vector, "from": frm, "to": to}

    trace = lambda d: compare_trace(oracle, d, sym, q)  # noqa: E731
    start = ix[0]
    expect("the trace itself", True, trace, recs)
    expect("a branch dropped", False, trace, recs[:mid] + recs[mid + 1:])
    expect("a branch target changed", False, trace,
           edit(mid, to=hex(num(recs[mid]["to"]) + 1)))
    expect("two branches swapped", False, trace,
           recs[:mid] + [recs[mid + 1], recs[mid]] + recs[mid + 2:])
    expect("a system call's kernel record dropped", False, trace,
           recs[:scall] + recs[scall + 1:])
    expect("a system call's kernel record moved", False, trace,
           recs[:scall] + recs[scall + 1:scall + 2] + [recs[scall]] +
           recs[scall + 2:])
    expect("a system call made an exception", False, trace,
           edit(scall, entry="exception", vector=6))
    expect("a system call's number changed", False, trace,
           edit(scall, syscall_nr=recs[scall]["syscall_nr"] + 1))
    expect("a system call without its number", False, trace,
           recs[:scall] + [{k: v for k, v in recs[scall].items()
                            if k != "syscall_nr"}] + recs[scall + 1:])
    expect("a return to user mode elsewhere", False, trace,
           edit(scall, to=hex(num(recs[scall]["to"]) + 2)))
    expect("a return to user mode unknown", False, trace,
           recs[:scall] + [{k: v for k, v in recs[scall].items()
                            if k != "to"}] + recs[scall + 1:])
    expect("no first return to user mode", False, trace,
           recs[:start] + recs[start + 1:])
    expect("no last stretch in the kernel", False, trace,
           recs[:ix[-1]] + recs[ix[-1] + 1:])
    expect("a LOST record", False, trace,
           recs[:mid] + [{"tid": main, "pid": main, "kind": "lost",
                          "count": 1}] +
           recs[mid:])
    expect("a page fault that moved user mode", False, trace,
           recs[:mid] + [kernel("exception", 14, recs[mid]["from"],
                                recs[mid]["to"])] + recs[mid:])
    expect("a thread missing", False, trace,
           [r for r in recs if r["tid"] != tids[-1]])
    expect("two threads' traces swapped", False, trace,
           [dict(r, tid=tids[1] + tids[2] - r["tid"])
            if r["tid"] in tids[1:3] else r for r in recs])
    # Set aside, as page faults and interrupts are: still a pass.
    expect("a page fault and an interrupt added", True, trace,
           recs[:mid] + [kernel(e, v, recs[mid]["from"], recs[mid]["from"])
                         for e, v in (("exception", 14), ("interrupt", 236))]
           + recs[mid:])

    at = hex(num(recs[mid]["from"]) + 1)
    expect("an interrupt set aside where the thread was not", False, trace,
           recs[:mid] + [kernel("interrupt", 236, at, at)] + recs[mid:])
    expect("a page fault set aside before where the thread was", False,
           trace, recs[:mid + 1] + [kernel("exception", 14, recs[mid]["from"],
                                           recs[mid]["from"])] +
           recs[mid + 1:])
    expect("an 'interrupt' of an exception's vector set aside", False, trace,
           recs[:mid] + [kernel("interrupt", 6, recs[mid]["from"],
                                recs[mid]["from"])] + recs[mid:])
    expect("a record of an unknown kind", False, trace,
           recs[:mid] + [{"tid": main, "pid": main, "kind": "pseudo",
                          "type": 9, "arg": 0, "to": "0x0",
                          "flags": "0x0"}] + recs[mid:])
    expect("a marker", False, trace,
           recs[:mid] + [{"tid": main, "pid": main, "kind": "marker",
                          "source": "user_event", "id": 1, "gen": 0}] +
           recs[mid:])
    expect("no thread_new", False, trace,
           [r for r in recs if r["tid"] != main or r["kind"] != "thread_new"])
    expect("no thread_exit", False, trace,
           [r for r in recs if r["tid"] != tids[-1] or
            r["kind"] != "thread_exit"])
    expect("a thread of another process", False, trace,
           [dict(r, pid=tids[-1]) if r["tid"] == tids[-1] else r
            for r in recs])
    expect("a thread with records of two processes", False, trace,
           edit(mid, pid=tids[-1]))

    n = 50
    def body(t):
        return [x for x in recs if x["tid"] == t and x["kind"] not in FRAMING]

    def framed(t, rs):
        pid = oracle.process.get(t)
        return ([{"tid": t, "pid": pid, "kind": "thread_new"}] + rs +
                [{"tid": t, "pid": pid, "kind": "thread_exit"}])

    def ring_of(rs, n):
        """The last @n records of a ring: a kernel record with its detail
        takes two, and loses the detail where the ring begins."""
        out, held = [], 0
        for r in reversed(rs):
            if held == n:
                break
            if "time" in r and held + 2 > n:
                r = {k: v for k, v in r.items() if k != "time"}
            out.append(r)
            held += 1 + ("time" in r)
        return out[::-1]

    ring = [r for t in tids for r in framed(t, ring_of(body(t), n))]
    rng = lambda d: compare_ring(oracle, d, n, sym, q)  # noqa: E731
    last = max(i for i, r in enumerate(ring) if r["tid"] == main and
               r["kind"] == "branch")
    expect("the ring itself", True, rng, ring)
    expect("a ring one record short", False, rng,
           ring[:last] + ring[last + 1:])
    expect("a ring with its last branch changed", False, rng,
           ring[:last] + [dict(ring[last], to=hex(num(ring[last]["to"]) ^
                                                  0x10))] + ring[last + 1:])
    expect("a ring one record too early", False, rng,
           [r for r in ring if r["tid"] != main] +
           framed(main, ring_of(body(main)[:-1], n)))

    first = next(i for i in br if own.has(num(recs[i]["from"])) and
                 own.has(num(recs[i]["to"])))
    syms = lambda d: symbols_check(d, sym, own, q)  # noqa: E731
    expect("the symbols themselves", True, syms, recs)
    expect("a wrong from_sym", False, syms,
           edit(first, from_sym="main+0x1"))
    expect("a wrong to_sym offset", False, syms,
           edit(first, to_sym=recs[first]["to_sym"] + "+0x4"))
    expect("a wrong from_src line", False, syms,
           edit(first, from_src=re.sub(r"\d+$", lambda m: str(int(m[0]) + 1),
                                       recs[first]["from_src"])))

    # The oracle's structure, the text format, the call tree.
    for specs, status, good in ((["to:spawn=4", "1:to:leaf=50"], "0", True),
                                (["to:spawn=3"], "0", False),
                                (["1:to:leaf=51"], "0", False),
                                (["to:spawn=4"], "0xb", False)):
        expect_fn(f"oracle structure {specs} status {status}", good,
                  lambda: oracle_check(oracle, sym, specs, status, q))
    (lo, hi), to = sym.range("main"), sym.range("spawn")[0]
    r = next(r for r in recs if r["kind"] == "branch" and
             lo <= num(r["from"]) < hi and num(r["to"]) == to)
    line = (f"{r['from']} {r['from_sym']} ({r['from_src']}) -> {r['to']} "
            f"{r['to_sym']}\n")
    with tempfile.NamedTemporaryFile("w+") as f:
        for name, text, good in (
                ("the text line", line, True),
                ("a text line of another source line",
                 line.replace(r["from_src"], r["from_src"] + "0"), False),
                ("a text line to another function",
                 line.replace(r["to_sym"], r["to_sym"] + "x"), False)):
            f.seek(0)
            f.truncate()
            f.write(text)
            f.flush()
            expect_fn(name, good, lambda: text_check(
                f.name, Dump(records=recs), "main", "spawn", sym, q))
    want = ["main", "  spawn", "    pthread_create", "main", "  reap"]
    for name, got, good in (
            ("the call tree", [" " * 4 + x for x in want], True),
            ("a call tree one level off",
             [" " * 4 + x for x in want[:-1]] + ["        reap"], False),
            ("a call tree without its end", want[:-1], False)):
        expect_fn(name, good,
                  lambda: calls_check(got, want, "main", "reap", q))

    one = [r for r in recs if r["tid"] == main]
    expect("one thread's trace, of -p", True,
           lambda d: pid_check(d, main, q), one)
    expect("another thread's trace, of -p", False,
           lambda d: pid_check(d, main + 1, q), one)
    expect("two threads' traces, of -p", False,
           lambda d: pid_check(d, main, q), recs)
    pid1 = lambda d: pid_check(d, main, q)  # noqa: E731
    one_br = [i for i, r in enumerate(one) if r["kind"] == "branch"]
    j = one_br[len(one_br) // 2]
    expect("a -p trace with a branch from before where the thread was",
           False, pid1, one[:j] + [dict(one[j], **{"from": hex(
               num(one[j - 1]["to"]) - 1)})] + one[j + 1:])
    exit_rec = [r for r in one if r["kind"] == "kernel"][-1]
    expect("a -p trace without its exit", False, pid1,
           [r for r in one if r is not exit_rec])
    expect("a -p trace with a LOST record", False, pid1,
           one[:j] + [{"tid": main, "pid": main, "kind": "lost",
                       "count": 3}] + one[j:])
    expect("a -p trace without thread_exit", False, pid1, one[:-1])

    # The slow reader's records and summary.
    def encode(rs):
        kinds = {v: k for k, v in ENTRY_NAMES.items()}
        out = bytearray()
        for r in rs:
            tag = PSEUDO_TAG << 32
            if r["kind"] in FRAMING:
                ev = THREAD_NEW if r["kind"] == "thread_new" else THREAD_EXIT
                vals = (tag | ev << 8 | P_THREAD, r["tid"], r["pid"])
            elif r["kind"] == "branch":
                vals = (num(r["from"]), num(r["to"]), 0)
            elif r["kind"] == "kernel":
                # The detail first (layout 0; the x86-64 ABI's number).
                nr = r.get("syscall_nr")
                out += struct.pack("<QQQ", tag | (P_KERNEL | (
                    ABI_NONE if nr is None else ABI_X86_64) << 16) << 8 |
                    P_DETAIL, (1 << 64) - 1 if nr is None else nr, 0)
                arg = kinds[r["entry"]] | (r.get("vector") or 0) << 8
                vals = (tag | arg << 8 | P_KERNEL, num(r.get("to", 0)),
                        num(r.get("from", 0)))
            else:
                vals = (tag | P_LOST, r["count"], 0)
            out += struct.pack("<QQQ", *vals)
        return bytes(out)

    saved = len(encode(recs)) // 24
    good = ("records=%d lost=0 throttled=7 threads=%d untraced=0 read=%d "
            "slow_reads=7" % (saved - 2 * len(tids), len(tids), saved))
    for name, data, line, want in (
            ("the slow reader's trace", encode(recs), good, True),
            ("a slow reader's trace with a record dropped",
             encode(recs[:mid] + recs[mid + 1:]), good, False),
            ("a slow reader's trace with a LOST record",
             encode(recs[:mid] + [{"tid": main, "pid": main, "kind": "lost",
                                   "count": 2}] + recs[mid:]), good, False),
            ("a slow reader's trace cut short", encode(recs)[:-30], good,
             False),
            ("a slow reader's trace without its last record",
             encode(recs[:-1]), good, False),
            ("a slow reader never throttled", encode(recs),
             good.replace("throttled=7", "throttled=0"), False),
            ("a slow reader that never read after a wait", encode(recs),
             good.replace("slow_reads=7", "slow_reads=0"), False),
            ("a slow reader with records lost", encode(recs),
             good.replace("lost=0", "lost=1"), False),
            ("a slow reader that read less than was put", encode(recs),
             good.replace(f"read={saved}", "read=5"), False),
            ("a slow reader's summary without its counts", encode(recs),
             "records=5 lost=0", False)):
        expect_fn(name, want,
                  lambda: slow_check(oracle, data, line, sym, q))

    # A helper's TAP (abi.c).
    good_tap = ["ok 1 - attach: a thing", "ok 2 - another user's process "
                "is EPERM", "1..2"]
    req = [r"another user's process is EPERM"]
    for name, lines, good in (
            ("a TAP run", good_tap, True),
            ("a TAP run with a SKIP", good_tap[:1] +
             ["ok 2 - another user's process is EPERM # SKIP no user"] +
             good_tap[2:], False),
            ("a TAP run with a TODO", ["ok 1 - x # TODO later"] +
             good_tap[1:], False),
            ("a TAP run with a test failed", ["not ok 1 - attach"] +
             good_tap[1:], False),
            ("a TAP run without its plan", good_tap[:2], False),
            ("a TAP run that bailed out", good_tap[:1] +
             ["Bail out! open /dev/bts"], False),
            ("a TAP run one test short", good_tap[:1] + ["1..1"], False),
            ("a TAP run with a test renumbered", good_tap[:1] +
             ["ok 3 - another user's process is EPERM", "1..2"], False),
            ("an empty TAP run", ["1..0"], False),
            ("a TAP run without a required test",
             ["ok 1 - attach: a thing", "1..1"], False)):
        expect_fn(name, good, lambda: tap_check(lines, req, q))

    # Kernel-mode recording refused: the very same trace.
    filt = lambda rs: filtered_check(Dump(records=recs),  # noqa: E731
                                     Dump(records=rs), q)
    for name, rs, good in (
            ("a trace refused kernel recording, alike", recs, True),
            ("a refused trace with a system call's resume unseen",
             recs[:scall] + [{k: v for k, v in recs[scall].items()
                              if k != "to"}] + recs[scall + 1:], False),
            ("a refused trace with a branch dropped",
             recs[:mid] + recs[mid + 1:], False),
            ("a refused trace with a system call from elsewhere",
             recs[:scall] + [dict(recs[scall], **{"from": "0x1234"})] +
             recs[scall + 1:], False),
            ("a refused trace of the main thread only",
             [r for r in recs if r["tid"] == main], False)):
        expect_fn(name, good, lambda: filt(rs))
    on = [0, DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTS_OFF_OS]
    off = list(on)
    for name, o, good in (
            ("DEBUGCTL with BTS_OFF_OS, refused or allowed", on, True),
            ("DEBUGCTL once without BTS_OFF_OS when allowed",
             on + [DEBUGCTL_TR | DEBUGCTL_BTS], False),
            ("DEBUGCTL never tracing when allowed", [0, DEBUGCTL_BTS_OFF_OS],
             False)):
        expect_fn(name, good, lambda: debugctl_check(off, o, q))
    expect_fn("DEBUGCTL without BTS_OFF_OS when refused", False,
              lambda: debugctl_check([DEBUGCTL_TR | DEBUGCTL_BTS], on, q))

    def pf(code):
        return [(1, pseudo(P_DETAIL, P_KERNEL), code, 0),
                (1, pseudo(P_KERNEL, 2 | PF_VECTOR << 8), 0x401000, 0)]
    for name, faults, good in (
            ("page faults with their error codes",
             pf(6) + [(1, 0x401000, 0x401010, 0)] + pf(0x14), True),
            ("a page fault whose error code was ~0", pf(6) + pf((1 << 64) - 1),
             False),
            ("a page fault without its detail", pf(6) + pf(4)[1:], False),
            ("no page fault at all", [(1, 0x401000, 0x401010, 0)], False)):
        expect_fn(name, good, lambda: error_code_check(faults, q))

    quiet = [(r, c, 0) for r in range(4) for c in range(2)]
    for name, samples, attached, good in (
            ("DEBUGCTL clear on every CPU after each release", quiet,
             range(4), True),
            ("a CPU recording for nobody after a release",
             quiet[:5] + [(2, 1, DEBUGCTL_TR | DEBUGCTL_BTS | 0x300)] +
             quiet[6:], range(4), False),
            ("a round never read", quiet[2:], range(4), False),
            ("tracers that never traced every thread", quiet, [1], False)):
        expect_fn(name, good,
                  lambda: released_check(samples, list(attached), 4, q))

    user = lambda d: user_only_check([d], q)  # noqa: E731
    expect("user addresses only", True, user, recs)
    expect("a kernel address", False, user,
           edit(mid, to="0xffffffff81000000"))
    if ok:
        diag("self-test: every broken trace was rejected, the intact "
             "ones passed")
    return ok


# --- main --------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("oracle")
    o.add_argument("oracle")
    o.add_argument("--binary", required=True)
    o.add_argument("--expect", action="append", default=[])
    o.add_argument("--status", default="0")
    t = sub.add_parser("trace")
    t.add_argument("oracle")
    t.add_argument("jsonl")
    t.add_argument("--binary", required=True)
    t.add_argument("--main-only", action="store_true")
    r = sub.add_parser("ring")
    r.add_argument("oracle")
    r.add_argument("jsonl")
    r.add_argument("n", type=int)
    r.add_argument("--binary", required=True)
    s = sub.add_parser("symbols")
    s.add_argument("jsonl")
    s.add_argument("--binary", required=True)
    x = sub.add_parser("text")
    x.add_argument("text")
    x.add_argument("jsonl")
    x.add_argument("--binary", required=True)
    x.add_argument("--from", dest="func_from", required=True)
    x.add_argument("--to", dest="func_to", required=True)
    c = sub.add_parser("calls")
    c.add_argument("calls")
    c.add_argument("expected")
    c.add_argument("--from", dest="func_from", required=True)
    c.add_argument("--until", dest="func_until", required=True)
    u = sub.add_parser("user-only")
    u.add_argument("jsonl", nargs="+")
    tp = sub.add_parser("tap")
    tp.add_argument("tap")
    tp.add_argument("--require", action="append", default=[])
    sl = sub.add_parser("slow")
    sl.add_argument("oracle")
    sl.add_argument("records")
    sl.add_argument("summary")
    sl.add_argument("--binary", required=True)
    d = sub.add_parser("pid")
    d.add_argument("jsonl")
    d.add_argument("pid", type=int)
    fl = sub.add_parser("filtered")
    fl.add_argument("full")
    fl.add_argument("filtered")
    ec = sub.add_parser("error-code")
    ec.add_argument("raw")
    rl = sub.add_parser("released")
    rl.add_argument("samples")
    rl.add_argument("attached")
    rl.add_argument("rounds", type=int)
    dc = sub.add_parser("debugctl")
    dc.add_argument("off")
    dc.add_argument("on")
    jt = sub.add_parser("jit")
    jt.add_argument("jsonl")
    jt.add_argument("--unnamed", action="store_true")
    jt.add_argument("--ns-pid", type=int)
    od = sub.add_parser("order")
    od.add_argument("jsonl")
    od.add_argument("--grouped", action="store_true")
    st = sub.add_parser("self-test")
    st.add_argument("oracle")
    st.add_argument("--binary", required=True)
    a = p.parse_args()

    diag = Diag()
    if a.cmd == "user-only":
        ok = user_only_check([Dump(f) for f in a.jsonl], diag)
        sys.exit(0 if ok else 1)
    if a.cmd == "tap":
        with open(a.tap) as f:
            lines = f.read().splitlines()
        sys.exit(0 if tap_check(lines, a.require, diag) else 1)
    if a.cmd == "filtered":
        ok = filtered_check(Dump(a.full), Dump(a.filtered), diag)
        sys.exit(0 if ok else 1)
    if a.cmd == "debugctl":
        vals = []
        for path in (a.off, a.on):
            with open(path) as f:
                lines = f.read().split()
            if not lines or not all(x.isdigit() for x in lines):
                diag(f"{path}: not MSR values ({lines[:3]!r})")
                sys.exit(1)
            vals.append([int(x) for x in lines])
        sys.exit(0 if debugctl_check(*vals, diag) else 1)
    if a.cmd == "error-code":
        sys.exit(0 if error_code_check(raw_file_records(a.raw), diag)
                 else 1)
    if a.cmd == "released":
        with open(a.samples) as f:
            rows = [x.split() for x in f if x.strip()]
        if not all(len(x) == 3 and all(y.isdigit() for y in x)
                   for x in rows):
            diag(f"{a.samples}: not ROUND CPU VALUE lines")
            sys.exit(1)
        with open(a.attached) as f:
            attached = [int(x) for x in f.read().split()]
        samples = [tuple(int(y) for y in x) for x in rows]
        sys.exit(0 if released_check(samples, attached, a.rounds, diag)
                 else 1)
    if a.cmd == "jit":
        sys.exit(0 if jit_check(a.jsonl, diag, a.unnamed, a.ns_pid)
                 else 1)
    if a.cmd == "order":
        sys.exit(0 if order_check(a.jsonl, diag, a.grouped) else 1)
    if a.cmd == "pid":
        sys.exit(0 if pid_check(Dump(a.jsonl), a.pid, diag) else 1)
    if a.cmd == "calls":
        with open(a.calls) as f:
            lines = calls_segments(f.read().splitlines(), diag)
        if lines is None:
            sys.exit(1)
        with open(a.expected) as f:
            want = [x for x in f.read().splitlines()
                    if x.strip() and not x.startswith("#")]
        ok = calls_check(lines, want, a.func_from, a.func_until, diag)
        sys.exit(0 if ok else 1)
    sym = Symbols(a.binary)
    if a.cmd == "oracle":
        ok = oracle_check(Oracle(a.oracle), sym, a.expect, a.status, diag)
    elif a.cmd == "trace":
        ok = compare_trace(Oracle(a.oracle), Dump(a.jsonl), sym, diag,
                           a.main_only)
    elif a.cmd == "ring":
        ok = compare_ring(Oracle(a.oracle), Dump(a.jsonl), a.n, sym, diag)
    elif a.cmd == "slow":
        with open(a.records, "rb") as f:
            data = f.read()
        with open(a.summary) as f:
            lines = [x for x in f.read().splitlines() if x.startswith(
                "records=")]
        ok = bool(lines) and slow_check(Oracle(a.oracle), data, lines[-1],
                                        sym, diag)
        if not lines:
            diag("no summary line from slowread")
    elif a.cmd == "symbols":
        ok = symbols_check(Dump(a.jsonl), sym, Own(a.binary), diag)
    elif a.cmd == "text":
        ok = text_check(a.text, Dump(a.jsonl), a.func_from, a.func_to,
                        sym, diag)
    else:
        ok = self_test(Oracle(a.oracle), sym, Own(a.binary), diag)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
