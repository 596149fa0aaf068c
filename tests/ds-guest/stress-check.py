#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The content checks of tests/ds-guest/stress, on the host.

  stress-check.py RESULTS BUILD [--self-test]

RESULTS is the folder stress-guest.sh left its records in, BUILD the one
with stress-progs/busy.  Prints a plan and one unnumbered TAP line per
check, with "# " diagnostics, and exits 1 if any failed; --self-test feeds
each check data broken the way it must notice, as check.py does.

busy's loop is known from its code (objdump): main() calls step(), step()
returns, main() jumps back, STEPS times.  A stream of busy must show that
cycle record by record, with nothing lost, doubled or reordered; its
stretches in the kernel (interrupts, throttling) must come back to where
they left.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import (BRANCH, KERNEL, LOST, SWITCH, disassemble,  # noqa: E402
                   is_pseudo, is_type, kaddr, load_records, load_status,
                   parg, pseudo, ptype, read)


class Loop:
    """busy's loop: the cycle of its three branches, and its code."""

    def __init__(self, binary):
        main = disassemble(binary, "main")
        step = disassemble(binary, "step")
        self.step = step[0][0]
        rets = [i for i in step if BRANCH.match(i[2])]
        if len(rets) != 1 or not rets[0][2].startswith("ret"):
            raise ValueError(f"step() has branches {rets}, not one ret")
        calls = [i for i in main if i[2].startswith("call") and
                 i[3] == self.step]
        if len(calls) != 1:
            raise ValueError(f"main() calls step() {len(calls)} times")
        a, a_next = calls[0][0], calls[0][1]
        # The jump back over the call, with no other branch in between.
        back = [i for i in main if i[2].startswith("j") and i[0] > a and
                i[3] is not None and i[3] <= a and
                not [k for k in main if i[3] <= k[0] < i[0] and
                     k[0] != a and BRANCH.match(k[2])]]
        if len(back) != 1:
            raise ValueError(f"main(): {len(back)} loops around the call")
        j, j_next, _, t = back[0]
        self.cycle = [(a, self.step), (rets[0][0], a_next), (j, t)]
        self.code = [(t, j_next), (self.step, step[-1][1])]
        # Where the last step's jump back, not taken, goes on to.
        self.after = j_next

    def inside(self, addr):
        return any(lo <= addr < hi for lo, hi in self.code)


class StressChecks:
    CHECKS = ("c_lossless", "c_flight_rings", "c_busy_rings")

    def __init__(self, res, build):
        self.res = res
        self.loop = Loop(os.path.join(build, "stress-progs", "busy"))
        self.s, self.st = {}, {}
        for n in ("ll", "fr0", "fr1", "fb0", "fb1"):
            f = os.path.join(res, n + ".bin")
            self.s[n] = load_records(f) if os.path.exists(f) else None
        self.st["ll"] = load_status(os.path.join(res, "ll.status")) \
            if os.path.exists(os.path.join(res, "ll.status")) else {}
        self.steps = int(read(os.path.join(res, "ll.steps"), "0"))
        self.pid = {c: int(read(os.path.join(res, f"fb{c}.pid"), "-1"))
                    for c in (0, 1)}
        self.diags = []

    def diag(self, msg):
        self.diags.append(msg)

    def c_lossless(self):
        """lossless under stress: busy's stream is its loop, record by record, nothing lost"""
        s, st, lp = self.s["ll"], self.st["ll"], self.loop
        if s is None or not self.steps:
            self.diag("no ll.bin or ll.steps")
            return False
        ok = True
        calls = sum(1 for r in s if not is_pseudo(r[0]) and r[1] == lp.step)
        want = lp.cycle * (self.steps - 1) + lp.cycle[:2]
        start = next((i for i, r in enumerate(s) if r == lp.cycle[0] + (0,)),
                     None)
        self.diag(f"ll: {len(s)} records, {calls} calls of step() for "
                  f"{self.steps} steps, status lost {st.get('lost')}, "
                  f"throttled {st.get('throttled')}")
        # A hardware overrun (a PMI later than the slack) drops records
        # of unknown number and privilege, and every stream of that drain
        # hears of it: busy's loop may go on at any point of its cycle
        # after one, and only there.  Without one, the stream holds every
        # record of the loop, in order.
        reported = any(is_overrun(r) for r in s)
        if start is None or calls > self.steps or \
                (calls != self.steps and not reported):
            return False
        period, phase, matched = len(lp.cycle), 0, 0
        stretches, overruns, resync, last = 0, 0, False, None
        for i in range(start, len(s)):
            r = s[i]
            if is_overrun(r):
                overruns += 1
                resync = True
            elif is_type(r, KERNEL) and not lp.inside(r[2]) and \
                    phase == len(lp.cycle) - 1:
                # Interrupted after the last step's return, past the jump
                # back it did not take: the loop is over.  Whether this
                # was the last step is for the count below to say.
                break
            elif is_type(r, KERNEL):
                # Interrupted in the loop, resumed where it stopped, or
                # resumed unseen (only user-only consumers on the CPU then:
                # the hardware filter); the loop's next record follows.
                # After an overrun, resumed anywhere in the loop: what it
                # ran in between was lost.
                stretches += 1
                back = r[1] in (r[2], 0) or (resync and lp.inside(r[1]))
                if not back or not lp.inside(r[2]):
                    self.diag(f"ll #{i}: KERNEL to={r[1]:#x} from="
                              f"{r[2]:#x}: not back where it left the loop")
                    return False
            elif is_pseudo(r[0]):
                self.diag(f"ll #{i}: pseudo-record {r[0]:#x} in the loop")
                return False
            elif r == lp.cycle[phase] + (0,):
                phase, matched, last = (phase + 1) % period, matched + 1, i
                resync = False
            elif resync and r[:2] in lp.cycle:
                phase = (lp.cycle.index(r[:2]) + 1) % period
                matched, last, resync = matched + 1, i, False
            elif r[:2] in lp.cycle:
                self.diag(f"ll #{i}: {r[0]:#x} {r[1]:#x}, expected "
                          f"{lp.cycle[phase][0]:#x} {lp.cycle[phase][1]:#x}"
                          " (a record of the loop missing, no overrun)")
                return False
            else:
                # The loop is over: its last record was step()'s return.
                break
        lost = len(want) - matched
        self.diag(f"ll: {matched} of the loop's {len(want)} records in order "
                  f"from #{start}, with {stretches} stretches in the kernel, "
                  f"{overruns} hardware overruns reported, {lost} records "
                  "lost in them")
        if phase != len(want) % period or (lost and not overruns) or \
                lost < 0:
            self.diag(f"ll: the loop's records end at #{last}, "
                      f"not after a whole last step")
            ok = False
        if st.get("lost") != 0 or any(is_type(r, LOST) and not is_overrun(r)
                                      for r in s):
            ok = False
        return ok

    def _well_formed(self, name, recs, pid=None):
        """A per-CPU ring of both sides: no LOST or unknown pseudo-record;
        each record starts at the privilege the one before ended at; in
        @pid's segments, user mode is busy's loop, record by record.
        Returns (ok, user records of @pid checked)."""
        lp, priv, seg, phase, left, checked = self.loop, None, None, None, \
            None, 0
        # Without a SWITCH to @pid in the ring, the task pinned to the CPU
        # ran when it starts: what comes before its first SWITCH is @pid's.
        if pid is not None and not any(is_type(r, SWITCH) and r[1] == pid
                                       for r in recs):
            seg = pid
        for i, r in enumerate(recs):
            frm, to, _ = r
            if is_pseudo(frm):
                if ptype(frm) != SWITCH:
                    self.diag(f"{name} #{i}: pseudo-record {frm:#x}")
                    return False, checked
                seg, phase, left = to, None, None
                continue
            if not frm or not to:
                self.diag(f"{name} #{i}: {frm:#x} -> {to:#x}")
                return False, checked
            if priv is not None and kaddr(frm) != priv:
                self.diag(f"{name} #{i}: {frm:#x} -> {to:#x} starts in "
                          f"{'kernel' if kaddr(frm) else 'user'} mode, the "
                          f"record before ended in the other")
                return False, checked
            priv = kaddr(to)
            if pid is None or seg != pid:
                continue
            if not kaddr(frm) and not kaddr(to):
                if phase is None:
                    phase = next((k for k, c in enumerate(lp.cycle)
                                  if c == (frm, to)), None)
                if phase is None or lp.cycle[phase] != (frm, to):
                    self.diag(f"{name} #{i}: {frm:#x} -> {to:#x} is not "
                              f"the loop's next branch {lp.cycle[phase or 0]}")
                    return False, checked
                phase = (phase + 1) % len(lp.cycle)
                checked += 1
            elif not kaddr(frm):
                if not lp.inside(frm):
                    self.diag(f"{name} #{i}: busy left user mode at "
                              f"{frm:#x}, outside its loop")
                    return False, checked
                left = frm
            elif not kaddr(to):
                if to != left if left is not None else not lp.inside(to):
                    self.diag(f"{name} #{i}: busy back in user mode at "
                              f"{to:#x}, left at {left}")
                    return False, checked
                left = None
        return True, checked

    def c_flight_rings(self):
        """flight recorders of busy CPUs: full, well formed, each record starting at the privilege the previous ended at"""
        ok = True
        for n, size in (("fr0", 1000), ("fr1", 2700)):
            s = self.s[n]
            if s is None or len(s) != size:
                self.diag(f"{n}: {None if s is None else len(s)} records, "
                          f"size {size}")
                ok = False
                continue
            good, _ = self._well_formed(n, s)
            switches = sum(1 for r in s if is_type(r, SWITCH))
            self.diag(f"{n}: {len(s)} records, {switches} switches")
            ok &= good
        return ok

    def c_busy_rings(self):
        """flight recorders of CPUs running busy: its segments are its loop, record by record"""
        ok, most = True, 0
        for c in (0, 1):
            n, s = f"fb{c}", self.s[f"fb{c}"]
            if s is None or len(s) != 3000:
                self.diag(f"{n}: {None if s is None else len(s)} records")
                ok = False
                continue
            good, checked = self._well_formed(n, s, self.pid[c])
            self.diag(f"{n}: {checked} user-mode records of busy "
                      f"{self.pid[c]} checked against its loop")
            ok &= good
            most = max(most, checked)
        # The suspend comes from the other CPU by IPI: on the debug kernel
        # its own kernel path may fill a whole ring after busy's loop.
        # One of the two rings must show the loop, in either order.
        if most < 300:
            self.diag("neither ring holds 300 records of busy's loop")
            ok = False
        return ok

    def run(self, name):
        self.diags = []
        try:
            ok = bool(getattr(self, name)())
        except Exception as e:  # a crash is a failure, not the end
            self.diag(f"{type(e).__name__}: {e}")
            ok = False
        return ok, getattr(self, name).__doc__.strip(), self.diags


def is_overrun(r):
    """BTS_PSEUDO_LOST with BTS_LOST_OVERRUN: the hardware, not the
    consumer, dropped records (its interrupt came too late)."""
    return is_type(r, LOST) and parg(r[0]) == 1


def _middle(recs, pred):
    """The index of the first record matching @pred from the middle on."""
    return next(i for i in range(len(recs) // 2, len(recs)) if pred(recs[i]))


def _drop(c, n, pred):
    s = list(c.s[n])
    del s[_middle(s, pred)]
    c.s[n] = s


def _busy_loop_inside(recs, pid):
    """The indices of the user-mode records of @pid's segments of a busy
    ring that have one such record right before and right after them:
    dropping one breaks the loop, wherever in the ring the loop is."""
    seg = None
    if not any(is_type(r, SWITCH) and r[1] == pid for r in recs):
        seg = pid
    mine = []
    for r in recs:
        if is_type(r, SWITCH):
            seg = r[1]
        mine.append(seg == pid and _user(r))
    return [i for i in range(1, len(recs) - 1)
            if mine[i - 1] and mine[i] and mine[i + 1]]


def _drop_user_busiest(c):
    """A record of busy's loop dropped from the middle of its run in the
    busy ring that holds the most of it: the other may be all kernel after
    busy's loop (c_busy_rings()), and the loop may end before the ring's
    middle."""
    n, inside = max(((f"fb{k}", _busy_loop_inside(c.s[f"fb{k}"] or [],
                                                  c.pid[k]))
                     for k in (0, 1)), key=lambda t: len(t[1]))
    s = list(c.s[n])
    del s[inside[len(inside) // 2]]
    c.s[n] = s


def _user(r):
    return not is_pseudo(r[0]) and not kaddr(r[0]) and not kaddr(r[1])


def _kernel(r):
    return not is_pseudo(r[0]) and kaddr(r[0]) and kaddr(r[1])


def _to_user(c, n):
    """A kernel branch made to end in user mode."""
    s = list(c.s[n])
    i = _middle(s, _kernel)
    s[i] = (s[i][0], 0x401000, 0)
    c.s[n] = s


def _interrupt_ll(c, at, where):
    """A stretch in the kernel (an interrupt) planted in busy's stream
    right after the record @at picks, leaving and coming back at @where."""
    s = list(c.s["ll"])
    i = at(s, c.loop)
    s.insert(i + 1, (pseudo(KERNEL, 0x0e02), where, where))
    c.s["ll"] = s


def _last_return(s, lp):
    """The last step's return: the loop's last record."""
    return max(i for i, r in enumerate(s) if r == lp.cycle[1] + (0,))


def _middle_return(s, lp):
    return _middle(s, lambda r: r == lp.cycle[1] + (0,))


# Each check's data broken the way it must notice; a self-test fails if
# the check passes on it.
MUTATIONS = {
    "c_lossless": lambda c: _drop(c, "ll", _user),
    "c_flight_rings": lambda c: _to_user(c, "fr1"),
    "c_busy_rings": lambda c: _drop_user_busiest(c),
}

# Data the check must still pass: what the hardware may well show.
VARIANTS = {
    "c_lossless": [
        ("an interrupt right after the loop's last jump, not taken",
         lambda c: _interrupt_ll(c, _last_return, c.loop.after), True),
        ("an interrupt leaving from outside the loop in its middle",
         lambda c: _interrupt_ll(c, _middle_return, c.loop.after), False),
    ],
}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    self_test = "--self-test" in sys.argv
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    plan = len(StressChecks.CHECKS)
    if self_test:
        plan += sum(len(VARIANTS.get(n, [])) for n in StressChecks.CHECKS)
    print(f"1..{plan}", flush=True)
    base = StressChecks(*args)
    failed = 0
    for name in StressChecks.CHECKS:
        ok, desc, diags = base.run(name)
        if self_test:
            if not ok:
                print(f"ok - self-test: {desc} # SKIP fails on the real data")
                continue
            mutant = StressChecks.__new__(StressChecks)
            mutant.__dict__.update(base.__dict__)
            mutant.s = dict(base.s)
            try:
                MUTATIONS[name](mutant)
            except (KeyError, StopIteration, IndexError) as e:
                print(f"not ok - self-test: {desc}: cannot break the data "
                      f"({type(e).__name__} {e})")
                failed += 1
                continue
            mok, _, _ = mutant.run(name)
            print(f"{'not ok' if mok else 'ok'} - self-test: {desc}: "
                  "fails on broken data")
            failed += mok
            for what, plant, passes in VARIANTS.get(name, []):
                variant = StressChecks.__new__(StressChecks)
                variant.__dict__.update(base.__dict__)
                variant.s = dict(base.s)
                plant(variant)
                vok, _, _ = variant.run(name)
                good = vok == passes
                print(f"{'ok' if good else 'not ok'} - self-test: {desc}: "
                      f"{'passes' if passes else 'fails'} with {what}")
                failed += not good
            continue
        print(f"{'ok' if ok else 'not ok'} - {desc}")
        for d in diags:
            print(f"#   {d}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
