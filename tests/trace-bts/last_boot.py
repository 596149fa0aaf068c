#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/trace-bts/last_boot.py: /sys/kernel/tracing/bts_last_boot as the
boot after a reset shows it (tests/trace-bts/last-boot).

  last_boot.py check HOW KALLSYMS LAST_BOOT RELEASE
  last_boot.py self-test HOW KALLSYMS LAST_BOOT RELEASE
  last_boot.py name KALLSYMS LAST_BOOT

KALLSYMS: the modules' symbols in the first boot (/proc/kallsyms lines:
the next boot has no module to name them), LAST_BOOT: the file, RELEASE:
the kernel's.  HOW the first boot ended, and what the file must show:

triple   bts_chain.ko triple-faulted CPU 1: CPU 1's last branches end in
         the chain, in order (the calls into bts_chain_a, bts_chain_b,
         bts_chain_c three times, and last bts_chain_triple_fault), after
         which only branches inside it: nothing ran after the instruction
         that reset the machine.
traced   the same from a shell bts-dump traced (the CPU out of the
         hardware's ring): CPU 1's records are those since the layer's last
         drain, fewer than a full ring, and end as triple's: the chain's
         calls, as many as reach into them, and last the call into
         bts_chain_triple_fault, after which only branches inside it.
lockup   CPU 1 spun with interrupts off in bts_chain_lockup_spin() until
         QEMU's system_reset: all of CPU 1's records (a full ring) are
         branches between it and bts_chain_step().
sysrq    sysrq-b (an immediate reboot, no panic path) on one CPU: every
         CPU's ring present, every kernel address named; one CPU called
         sysrq_handle_reboot(), and after that no task switch and no
         user-mode branch.
panic    an oops on CPU 1 with panic_on_oops, panic=1: CPU 1's last
         branches are the chain, the call into bts_chain_crash() and its
         fault, and end with the freeze in oops_begin() (what the panic
         printed and the reboot are not there); CPU 0's last branches hold
         the call into stop_this_cpu() (the panic stopped it).
header   the region's header torn: that line, and nothing else.
random   the region random bytes (a cold boot's DRAM): that line, and
         nothing else.
build    another build's header, CPU 1's slice header torn: the previous
         boot named as another kernel, CPU 0's records without a name,
         CPU 1 said to be damaged.
area     CPU 1's save area pointing past its buffer (the recorder stopped
         first, the layer's buffers let go: the save areas cleared): CPU 1
         said so, CPU 0 said not to have traced.

Each but the planted ones also needs the previous boot named as this
kernel and every CPU's section ("CPU N: its last branches, ...").

name: the file with the modules' addresses named, as the first boot's
symbols place them ("bts_chain_a+0x0 [bts_chain]").

self-test: for triple, lockup, sysrq and panic, the file with what the
check is about damaged (a record dropped, moved or added, a CPU missing)
fails; for the planted ones, the file of another planting fails.
"""
import re
import sys

CPU = re.compile(r"^CPU (\d+): (.*)$")
RECORD = re.compile(r"^  (?!-- )(.+?) -> (.+)$")
SWITCH = re.compile(r"^  -- switch to (\d+)/(\d+)$")
NAMED = re.compile(r"^([A-Za-z_.][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+$")
RAW = re.compile(r"^(\[user\] )?0x[0-9a-f]+$")

CHAIN = ["bts_chain_a", "bts_chain_b", "bts_chain_c", "bts_chain_c",
         "bts_chain_c"]
REGION = "bts_persist=bts: "
PLANTED = {
    "header": REGION + "the region's header does not check (torn, or not ours)",
    "random": REGION + "no previous boot's branches (a cold boot, or never written)",
}
# The freeze's own branches, from the call into ds_freeze_local() to its
# DEBUGCTL write (through the state machine's ops: an indirect call, and
# the mitigations' thunks).
FREEZE = ("ds_freeze_local", "ds_state_freeze", "ds_hw_write")


class Trace:
    """The file, parsed: the header line, and per CPU its line and its
    records, each (from, to) as printed or ("switch", tid)."""

    def __init__(self, text, modfuncs):
        lines = text.splitlines()
        self.lines = lines
        self.header = lines[0] if lines else ""
        self.cpus, cur = {}, None
        for line in lines[1:]:
            m = CPU.match(line)
            if m:
                cur = int(m[1])
                self.cpus[cur] = (m[2], [])
                continue
            if cur is None:
                continue
            m = RECORD.match(line)
            if m:
                self.cpus[cur][1].append((m[1], m[2]))
            m = SWITCH.match(line)
            if m:
                self.cpus[cur][1].append(("switch", m[2]))
        self.modfuncs = modfuncs

    def records(self, cpu):
        return self.cpus.get(cpu, ("", []))[1]

    def branches(self, cpu):
        return [r for r in self.records(cpu) if r[0] != "switch"]

    def func(self, text):
        """The function of a printed address: the kernel's name, a
        module's function by the first boot's symbols, "[user]", or None
        (an address nothing names)."""
        m = NAMED.match(text)
        if m:
            return m[1]
        if text.startswith("[user] "):
            return "[user]"
        if text.startswith("0x"):
            return function_of(self.modfuncs, int(text, 16))
        return None

    def calls(self, cpu):
        """Branches of @cpu to a function's first instruction: (index
        among its records, from's function, callee)."""
        starts = {start for start, _ in self.modfuncs}
        out = []
        for i, (frm, to) in enumerate(self.records(cpu)):
            m = NAMED.match(to)
            if m and "+0x0/" in to:
                out.append((i, self.func(frm), m[1]))
            elif to.startswith("0x") and int(to, 16) in starts:
                out.append((i, self.func(frm), self.func(to)))
        return out


def module_functions(path):
    """[(start, name)] of the modules' text symbols, sorted."""
    out = []
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and f[1] in "tT":
            out.append((int(f[0], 16), f[2]))
    return sorted(out)


def function_of(funcs, addr):
    """The module function holding @addr (up to the next symbol)."""
    name = None
    if not funcs or addr < funcs[0][0] or addr > funcs[-1][0] + 0x1000:
        return None
    for start, n in funcs:
        if start > addr:
            break
        name = n
    return name


def this_kernel(t, release):
    """Why the header and the CPU sections are not this kernel's previous
    boot with every CPU's records, or ""."""
    if not t.header.startswith("previous boot: %s " % release) or \
            "another kernel" in t.header:
        return "header: %r" % t.header
    if sorted(t.cpus) != [0, 1] or \
            any(not what.startswith("its last branches") or not recs
                for what, recs in t.cpus.values()):
        return "CPU sections: %r" % {c: w for c, (w, _) in t.cpus.items()}
    return ""


def module_calls(t, cpu):
    """@cpu's calls from the module into the module: (index, caller,
    callee) (a return through the kernel's return thunk is not one)."""
    names = {name for _, name in t.modfuncs}
    return [(i, caller, callee) for i, caller, callee in t.calls(cpu)
            if caller in names and callee in names]


def check_triple(t, drained=False):
    entered = [callee for _, _, callee in module_calls(t, 1)]
    want = CHAIN + ["bts_chain_triple_fault"]
    if drained:
        # The records since the last drain: a suffix of the chain, at
        # least its last call, and not a full ring.
        n = min(len(entered), len(want))
        if not n or len(t.records(1)) >= 2729:
            return "CPU 1: %d records, calls into %s" % (
                len(t.records(1)), entered[-8:])
        want = want[-n:]
    if entered[-len(want):] != want:
        return "CPU 1 entered %s last, not %s" % (entered[-8:], want)
    last = [i for i, caller, callee in t.calls(1)
            if callee == "bts_chain_triple_fault"][-1]
    # Not a switch either (its "from" names no function).
    after = [r for r in t.records(1)[last + 1:]
             if t.func(r[0]) != "bts_chain_triple_fault"]
    if after:
        return "CPU 1 branched elsewhere after entering " \
               "bts_chain_triple_fault: %s" % (after or "a switch")[:4]
    return ""


def check_lockup(t):
    spin = {"bts_chain_lockup_spin", "bts_chain_step"}
    recs = t.records(1)
    out = [r for r in recs if t.func(r[0]) not in spin or
           t.func(r[1]) not in spin]
    if len(recs) < 2000 or out:
        return "CPU 1's %d records are not all the spin's: %s" % (
            len(recs), out[:3])
    return ""


def unnamed(t, cpu):
    """@cpu's records with an address nothing names."""
    return [r for r in t.branches(cpu) if None in (t.func(r[0]), t.func(r[1]))]


def check_sysrq(t):
    why = ["CPU %d: an address nothing names: %s" % (c, unnamed(t, c)[:2])
           for c in sorted(t.cpus) if unnamed(t, c)]
    rebooted = [(c, i) for c in sorted(t.cpus) for i, _, callee in t.calls(c)
                if callee == "sysrq_handle_reboot"]
    if len({c for c, _ in rebooted}) != 1:
        why.append("CPUs that called sysrq_handle_reboot: %s" % rebooted)
    else:
        cpu, into = rebooted[-1]
        late = [r for r in t.records(cpu)[into:] if r[0] == "switch" or
                "[user]" in (t.func(r[0]), t.func(r[1]))]
        if late:
            why.append("CPU %d after sysrq_handle_reboot: %s" % (cpu, late[:2]))
    return "; ".join(why)


def check_panic(t):
    why = []
    calls = [(caller, callee) for _, caller, callee in module_calls(t, 1)]
    want = list(zip(["bts_chain_oops_write", "bts_chain_a", "bts_chain_b",
                     "bts_chain_b", "bts_chain_b", "bts_chain_oops_write"],
                    CHAIN + ["bts_chain_crash"]))
    if calls[-len(want):] != want:
        why.append("CPU 1's last calls from the module: %s" % calls[-7:])
    funcs = [(t.func(a), t.func(b)) for a, b in t.records(1)]
    if ("bts_chain_crash", "asm_exc_page_fault") not in funcs:
        why.append("no fault from bts_chain_crash")
    into = [i for i, _, callee in t.calls(1) if callee == "ds_freeze_local"]

    def in_freeze(f):
        return f in FREEZE or f.startswith("__x86_indirect_thunk") or \
            f.endswith("_return_thunk")
    after = funcs[into[-1] + 1:] if into else []
    if not into or len(after) > 10 or \
            any(not in_freeze(a) or not in_freeze(b) for a, b in after):
        why.append("CPU 1's ring does not end with the freeze in "
                   "oops_begin(): %s" % funcs[-4:])
    if not any(callee == "stop_this_cpu" for _, _, callee in t.calls(0)[-64:]):
        why.append("no call into stop_this_cpu among CPU 0's last branches")
    return "; ".join(why)


def check_planted(how, t, release):
    if how in PLANTED:
        want = [PLANTED[how]]
        return "" if t.lines == want else "the file: %r" % t.lines[:3]
    good = "its last branches"
    if how == "build":
        if not t.header.startswith("previous boot: %s #1 SMP a build that "
                                   "is not this one, " % release) or \
                not t.header.endswith(" (another kernel: its addresses "
                                      "are not named)"):
            return "header: %r" % t.header
        named = [r for r in t.branches(0) if not RAW.match(r[0]) or
                 not RAW.match(r[1])]
        want = {0: good, 1: "its slice's header does not check"}
        if named:
            return "CPU 0's records of another kernel named: %s" % named[:2]
    else:
        if not t.header.startswith("previous boot: %s " % release) or \
                "another kernel" in t.header:
            return "header: %r" % t.header
        want = {0: "it did not trace", 1: "its DS save area does not "
                                          "point into its staging buffer"}
        if unnamed(t, 0):
            return "CPU 0: an address nothing names: %s" % unnamed(t, 0)[:2]
    got = {c: w for c, (w, _) in t.cpus.items()}
    # The build planting leaves the recorder on: CPU 0 has records.  The
    # area one stops it first: the layer then clears the save areas.
    if sorted(got) != [0, 1] or not got[0].startswith(want[0]) or \
            got[1] != want[1] or t.records(1) or \
            (how == "build" and not t.branches(0)):
        return "CPU sections: %r, %d and %d records" % (
            got, len(t.records(0)), len(t.records(1)))
    return ""


def check(how, t, release):
    if how in ("header", "random", "build", "area"):
        return check_planted(how, t, release)
    return this_kernel(t, release) or {
        "triple": check_triple, "lockup": check_lockup,
        "traced": lambda t: check_triple(t, drained=True),
        "sysrq": check_sysrq, "panic": check_panic}[how](t)


def damaged(how, t):
    """Copies of the file's lines, each damaged where @how's check looks."""
    lines = t.lines
    recs = [i for i, line in enumerate(lines) if RECORD.match(line)]
    cpu1 = next(i for i, line in enumerate(lines) if line.startswith("CPU 1:"))
    out = {"CPU 1 missing": lines[:cpu1]}
    last = recs[-1]
    if how in ("triple", "traced"):
        out["CPU 1's last record dropped"] = lines[:last] + lines[last + 1:]
    if how == "panic":
        out["the panic's printing after the freeze"] = lines + [
            "  vprintk_emit+0x0/0x10 -> vprintk_emit+0x8/0x10"]
        out["the call into ds_freeze_local dropped"] = [
            line for line in lines if "-> ds_freeze_local+0x0/" not in line]
    if how in ("triple", "traced", "panic"):
        into = [i for i in recs if i > cpu1 and
                re.search(r"-> 0x|\+0x0/", lines[i]) and
                "bts_chain" in str(t.func(RECORD.match(lines[i])[2]))]
        if len(into) >= 2:
            swapped = lines[:]
            swapped[into[0]], swapped[into[-1]] = lines[into[-1]], lines[into[0]]
            out["the first and last calls into the module swapped"] = swapped
    if how == "lockup":
        out["a branch out of the spin last"] = lines + [
            "  0xffffffff81000000 -> 0xffffffff81000010"]
    if how == "sysrq":
        reboot = [i for i in recs if "-> sysrq_handle_reboot+0x0/" in lines[i]]
        out["the call into sysrq_handle_reboot dropped"] = \
            [line for i, line in enumerate(lines) if i not in reboot]
        if reboot:
            user = lines[:reboot[-1] + 1] + \
                ["  native_irq_return_iret+0x0/0x9 -> [user] 0x401000"] + \
                lines[reboot[-1] + 1:]
            out["a return to user mode after it"] = user
        out["an address nothing names"] = lines[:last] + \
            ["  0xffffffff81000000 -> 0xffffffff81000010"] + lines[last:]
    if how == "panic":
        out["the fault dropped"] = [
            line for line in lines
            if "asm_exc_page_fault+0x0/" not in line or
            not line.startswith("  0x")]
    return out


def name(path, text):
    """@text with each module address named by the symbols in @path."""
    funcs = module_functions(path)
    module = {n: f[3] for f in (line.split() for line in open(path))
              if len(f) >= 4 for n in [f[2]]}

    def one(m):
        addr = int(m[0], 16)
        func = function_of(funcs, addr)
        if not func:
            return m[0]
        start = max(s for s, n in funcs if n == func and s <= addr)
        return "%s+0x%x %s" % (func, addr - start, module.get(func, ""))
    return re.sub(r"(?<!\[user\] )0x[0-9a-f]{16}", one, text)


def main():
    if sys.argv[1] == "name":
        sys.stdout.write(name(sys.argv[2], open(sys.argv[3]).read()))
        return
    mode, how, kallsyms, path, release = sys.argv[1:6]
    funcs = module_functions(kallsyms)
    t = Trace(open(path).read(), funcs)
    why = check(how, t, release)
    if mode == "check":
        print("# " + (why or "%s: as it must be (%s)" % (how, ", ".join(
            "CPU %d %d records" % (c, len(r)) for c, (_, r) in
            sorted(t.cpus.items())))))
        sys.exit(1 if why else 0)
    if why:
        print("# the undamaged file fails: %s" % why)
        sys.exit(1)
    if how in ("header", "random", "build", "area"):
        # The other plantings' files, as this one would be: fakes of
        # them from this file (a different first line, other CPU lines).
        others = {k: PLANTED[k] for k in PLANTED if k != how}
        fakes = {"%s's line" % k: [line] for k, line in others.items()}
        fakes["no planting"] = ["previous boot: %s #2 SMP, kernel offset 0x0"
                                % release, "CPU 0: its last branches, 1 "
                                "records, oldest first",
                                "  do_idle+0x0/0x10 -> do_idle+0x8/0x10",
                                "CPU 1: its last branches, 1 records, "
                                "oldest first",
                                "  do_idle+0x0/0x10 -> do_idle+0x8/0x10"]
    else:
        fakes = damaged(how, t)
    caught = {k: bool(check(how, Trace("\n".join(v), funcs), release))
              for k, v in fakes.items()}
    print("# " + "; ".join("%s: %s" % (k, "fails" if c else "PASSES")
                           for k, c in caught.items()))
    sys.exit(0 if all(caught.values()) else 1)


if __name__ == "__main__":
    main()
