# SPDX-License-Identifier: GPL-2.0
"""Compare the bts tracer's ring with QEMU's view of execution.

    oracle.py RESULTS SYSTEM_MAP [--self-test]

RESULTS holds tests/trace-bts/guest-oracle.sh's output: oracle.trace (CPU
1's ring in raw form), oracle.ranges (the plugin's ranges, "LO-HI" a line)
and plugin.log (what discontinuities.c logged).  Every branch the plugin
saw vCPU 1 take from an instruction in the ranges must be in the ring, in
the same order, and the ring must hold no other branch from the ranges.

The plugin sees execution, not records: for an interrupt it logs the
instruction executed last, and BTS the one to execute next.  So where the
plugin's branch goes to an interrupt's entry point, the ring may instead
hold that branch from the instruction after (an interrupt between two
instructions); where it goes to an interrupt's or an exception's, the
branch executed last followed at once by the event from its target (an
interrupt before the target's first instruction, which TCG takes before
the target's block starts, or a page fault on fetching it, and maybe an
NMI before that fault's handler began, each event from where the last
went).  And an event
taken at the target of a branch from outside the ranges, before its first
instruction ran (a page fault on fetching it), is in the ring alone: the
plugin never saw that instruction.

Prints TAP.  With --self-test, drops, adds, reorders and changes records
of the ring and expects the comparison to fail each time.
"""

import re
import sys

from taplib import read_in, results, tap

RES, SYSTEM_MAP = sys.argv[1], sys.argv[2]
CPU = 1
RAW = re.compile(r"^\s*(\d+)\s+\S+\s+(?:\[user\] )?0x([0-9a-f]+) -> "
                 r"(?:\[user\] )?0x([0-9a-f]+)$")
DISC = re.compile(r"^disc (\d+) 0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+)$")


def read(name):
    return read_in(RES, name)


def entry_points():
    """The kernel's entry points of interrupts (the IDT's vectors for
    devices, the system vectors, NMI: BTS's source is the next instruction)
    and of exceptions, as two lists of (start, end) (System.map)."""
    interrupts, exceptions = [], []
    syms = []
    with open(SYSTEM_MAP) as f:
        for line in f:
            addr, _, name = line.split()[:3]
            syms.append((int(addr, 16), name))
    syms.sort()
    # A symbol's end: the next symbol at another address (aliases share).
    ends = {}
    for (addr, _), (nxt, _) in zip(reversed(syms[:-1]), reversed(syms[1:])):
        ends[addr] = nxt if nxt != addr else ends.get(nxt, 1 << 64)
    for addr, name in syms:
        span = (addr, ends.get(addr, 1 << 64))
        if name.startswith("asm_sysvec_") or \
                name in ("irq_entries_start", "spurious_entries_start",
                         "asm_exc_nmi", "asm_spurious_interrupt"):
            interrupts.append(span)
        elif name.startswith("asm_exc_"):
            exceptions.append(span)
    return interrupts, exceptions


def within(spans, addr):
    return any(lo <= addr < hi for lo, hi in spans)


def ranges():
    out = []
    for line in read("oracle.ranges").split():
        lo, hi = line.split("-")
        out.append((int(lo, 0), int(hi, 0)))
    return out


def in_ranges(rgs, addr):
    return any(lo <= addr < hi for lo, hi in rgs)


def ring():
    """CPU 1's records, (from, to) each, in order."""
    return [(int(m.group(2), 16), int(m.group(3), 16))
            for m in map(RAW.match, read("oracle.trace").splitlines())
            if m and int(m.group(1)) == CPU]


def plugin():
    """vCPU 1's discontinuities, (from, next, to) each."""
    return [(int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16))
            for m in map(DISC.match, read("plugin.log").splitlines())
            if m and int(m.group(1)) == CPU]


def compare(recs, discs, rgs, entries):
    """None if @recs' branches from @rgs are @discs, else what differs."""
    interrupts, exceptions = entries
    i = 0

    def unseen(k):
        """Record @k is an event taken before its source's first
        instruction ran, which a branch from outside the ranges reached."""
        return k > 0 and recs[k - 1][1] == recs[k][0] and \
            not in_ranges(rgs, recs[k - 1][0]) and \
            within(interrupts + exceptions, recs[k][1])

    def next_in_range(want=None):
        """The next record from the ranges, skipping those the plugin
        cannot have seen unless it is @want."""
        nonlocal i
        while i < len(recs) and (not in_ranges(rgs, recs[i][0]) or
                                 (recs[i] != want and unseen(i))):
            i += 1
        return recs[i] if i < len(recs) else None

    for k, (frm, nxt, to) in enumerate(discs):
        r = next_in_range((frm, to))
        where = "plugin's branch %d of %d, 0x%x -> 0x%x" % (k + 1, len(discs),
                                                           frm, to)
        if r is None:
            return "%s: not in the ring (it ends)" % where
        if r == (frm, to):
            i += 1
            continue
        if within(interrupts, to) and r == (nxt, to):
            i += 1
            continue
        if within(interrupts + exceptions, to) and r[0] == frm and \
                r[1] != nxt:
            # Events taken one after another at the branch's target before
            # anything ran (a page fault fetching it, an NMI before the
            # fault's handler began): each from where the last one went.
            k = i + 1
            while k < len(recs) and recs[k][0] == recs[k - 1][1] and \
                    recs[k][1] != to and \
                    within(interrupts + exceptions, recs[k][1]):
                k += 1
            if k < len(recs) and recs[k] == (recs[k - 1][1], to):
                i = k + 1
                continue
        return "%s: the ring has 0x%x -> 0x%x (record %d)" % (
            where, r[0], r[1], i + 1)
    r = next_in_range()
    if r is not None:
        return "the ring has 0x%x -> 0x%x (record %d) after the plugin's " \
            "last branch" % (r[0], r[1], i + 1)
    return None


def checks(recs, discs, rgs, entries):
    """(ok, description, diagnostics) of each check."""
    kernel = [d for d in discs if d[0] >= 1 << 63]
    user = [d for d in discs if d[0] < 1 << 63]
    diff = compare(recs, discs, rgs, entries)
    return [
        (len(kernel) >= 5 and len(user) >= 1000,
         "the plugin saw CPU 1 branch from module code and from chain's text",
         "%d branches from module code, %d from chain's text" % (
             len(kernel), len(user))),
        (diff is None,
         "CPU 1's ring holds exactly the branches the TCG plugin saw it take "
         "from module code and chain's text (%d), in order" % len(discs),
         diff),
    ]


def self_test_events(entries):
    """The rules for events, on made-up branches in [0x1000, 0x2000): each
    holds where it should and only there."""
    interrupts, exceptions = entries
    irq, fault = interrupts[0][0], exceptions[0][0]
    rgs = [(0x1000, 0x2000)]
    out = 0xffffffff81000000
    cases = [
        # (what, ring, plugin, the comparison holds)
        ("an interrupt between instructions",
         [(0x1010, irq)], [(0x100c, 0x1010, irq)], True),
        ("an interrupt from the instruction before",
         [(0x100c, irq)], [(0x100c, 0x1010, irq)], True),
        ("an interrupt from elsewhere",
         [(0x1020, irq)], [(0x100c, 0x1010, irq)], False),
        ("an interrupt at a branch's target",
         [(0x100c, 0x1800), (0x1800, irq)], [(0x100c, 0x1011, irq)], True),
        ("a fault on fetching a branch's target",
         [(0x100c, 0x1800), (0x1800, fault)], [(0x100c, 0x1011, fault)],
         True),
        ("a fault with its source the next instruction",
         [(0x1011, fault)], [(0x100c, 0x1011, fault)], False),
        ("a fault at a target reached from outside",
         [(out, 0x1800), (0x1800, fault)], [], True),
        ("a fault at a target reached from inside",
         [(0x1900, 0x1800), (0x1800, fault)], [(0x1900, 0x1905, 0x1800)],
         False),
        ("a branch at a target reached from outside",
         [(out, 0x1800), (0x1800, 0x1900)], [], False),
        ("a fault of the first instruction after a branch from outside",
         [(out, 0x1800), (0x1800, fault)], [(0x1800, 0x1803, fault)], True),
        ("an NMI before the handler of a fault fetching the target",
         [(0x100c, 0x1800), (0x1800, fault), (fault, irq)],
         [(0x100c, 0x1011, irq)], True),
        ("a branch, not an event, between the target and the NMI",
         [(0x100c, 0x1800), (0x1800, out), (out, irq)],
         [(0x100c, 0x1011, irq)], False),
        ("a not-taken jump made a branch before an interrupt",
         [(0x100c, 0x1011), (0x1011, irq)], [(0x100c, 0x1011, irq)],
         False),
    ]
    ok = True
    for what, recs, discs, holds in cases:
        good = (compare(recs, discs, rgs, entries) is None) == holds
        print("#   self-test, %s: %s (%s)" % (
            what, "holds" if holds == good else "fails",
            "right" if good else "wrong"))
        ok &= good
    return ok


def self_test(recs, discs, rgs, entries):
    """Each way of breaking the ring must fail the comparison."""
    picks = [i for i, r in enumerate(recs) if in_ranges(rgs, r[0])]
    mid = picks[len(picks) // 2] if picks else 0
    last = picks[-1] if picks else 0
    kernel = [i for i in picks if recs[i][0] >= 1 << 63]
    k = kernel[len(kernel) // 2] if kernel else 0
    # The next branch from the ranges after mid that differs from it.
    other = next((i for i in picks if i > mid and recs[i] != recs[mid]), mid)

    def swap(rs, a, b):
        rs = list(rs)
        rs[a], rs[b] = rs[b], rs[a]
        return rs
    broken = {
        "a branch dropped": recs[:mid] + recs[mid + 1:],
        "the last branch dropped": recs[:last] + recs[last + 1:],
        "a module branch dropped": recs[:k] + recs[k + 1:],
        "a branch doubled": recs[:mid + 1] + recs[mid:],
        "two branches swapped": swap(recs, mid, other),
        "a target changed": recs[:mid] + [(recs[mid][0], recs[mid][1] + 1)] +
        recs[mid + 1:] if recs else [],
        "a branch added after the last": recs + [recs[last]] if recs else [],
    }
    ok = True
    for what, bad in broken.items():
        fails = compare(bad, discs, rgs, entries) is not None
        print("#   self-test, %s: %s" % (what, "fails" if fails else "passes"))
        ok &= fails
    ok &= self_test_events(entries)
    tap(ok and bool(picks), "oracle.py --self-test: a ring with a branch "
        "dropped (anywhere, the last, of the module), doubled, swapped, "
        "retargeted or added fails the comparison; the rules for events "
        "hold where they should and only there")


def main():
    recs, discs, rgs = ring(), plugin(), ranges()
    entries = entry_points()
    if "--self-test" in sys.argv[3:]:
        self_test(recs, discs, rgs, entries)
    else:
        tap(read("oracle.rc").strip() == "0", "chain ran on CPU 1 (exit 0)",
            read("oracle.err"))
        for ok, desc, diag in checks(recs, discs, rgs, entries):
            tap(ok, desc, diag)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
