#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The checks of tests/ds-guest, on the host, of what guest.sh left.

  check.py RESULTS BUILD LINUX [--self-test]

RESULTS is guest.sh's folder, BUILD the one with the test programs and
the oracle, LINUX the kernel source tree (for the entry vectors).  Prints
a plan ("1..N", printed first) and one TAP line per check ("ok - ..." /
"not ok - ...", unnumbered: the run script numbers them) with "# "
diagnostics, and exits 1 if any failed.

--self-test: feed every check a copy of the data broken the way that check
must notice, and report (as TAP) whether each one failed as it should.

The reference filters below implement the documented semantics of the
user-only and kernel-only streams (include/uapi/linux/bts.h,
Documentation/arch/x86/ds.rst), independently of ds_core.c: a stretch on
the other side of the privilege boundary becomes one pseudo-record, with 0
for a crossing the trace did not show; markers pass through; switch
records exist only in per-CPU streams of both sides.
"""
import bisect
import copy
import os
import re
import struct
import subprocess
import sys

REC = struct.Struct("<QQQ")
TAG = 0x80000000
KERNEL, USER, LOST, MARKER, SWITCH, DETAIL = 1, 2, 3, 4, 5, 7
PNAMES = {KERNEL: "KERNEL", USER: "USER", LOST: "LOST", MARKER: "MARKER",
          SWITCH: "SWITCH"}
E_UNKNOWN, E_SYSCALL, E_EXCEPTION, E_INTERRUPT = 0, 1, 2, 3
ABI_X86_64 = 1
NR_EXIT_GROUP = 231     # x86-64

# What the workloads do (progs/*.c)
WORK_STEPS = 1200 + 400
WORK_MARKERS = [(0x111, 0x1111, 0x11111), (0x222, 0x2222, 0x22222),
                (0x333, 0x3333, 0x33333)]
FENCE = (0x999, 0x9999, 0x99999)
SLEEPY_STEPS = 10 * 150
# inherit.c: 2 threads and 3 processes, each runs loop() once: 1000 rounds,
# so its one jump back is taken 999 times.
INHERIT_THREADS, INHERIT_FORKS, INHERIT_ROUNDS = 2, 3, 1000
BRANCH = re.compile(r"^(j\w*|call\w*|ret\w*|loop\w*)$")


def pseudo(t, arg=0):
    return (TAG << 32) | ((arg & 0xffffff) << 8) | (t & 0xff)


def is_pseudo(frm):
    return frm >> 32 == TAG


def ptype(frm):
    return frm & 0xff


def parg(frm):
    return (frm >> 8) & 0xffffff


def kaddr(a):
    return a >= 1 << 63


def is_marker(r):
    return is_pseudo(r[0]) and ptype(r[0]) == MARKER


def is_type(r, t):
    return is_pseudo(r[0]) and ptype(r[0]) == t


def real(recs):
    return [r for r in recs if not is_pseudo(r[0])]


def marker_of(r):
    """A marker record as the module's marker file takes it: (ID, ADDR,
    GEN)."""
    return (r[2] & 0xffffffff, r[1], r[2] >> 32)


def markers(recs):
    return [marker_of(r) for r in recs if is_marker(r)]


class Syms:
    """Kernel or program symbols: address -> name, name -> address."""

    def __init__(self, pairs):
        pairs = sorted(pairs)
        self.addrs = [a for a, _ in pairs]
        self.names = [n for _, n in pairs]
        self.by_name = {}
        for a, n in pairs:
            self.by_name.setdefault(n, a)

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return hex(addr)
        off = addr - self.addrs[i]
        return self.names[i] + (f"+{off:#x}" if off else "")

    def exact(self, addr):
        i = bisect.bisect_left(self.addrs, addr)
        if i < len(self.addrs) and self.addrs[i] == addr:
            return self.names[i]
        return None

    def range(self, name):
        """[start, end) of a function: up to the next symbol."""
        a = self.by_name[name]
        i = bisect.bisect_right(self.addrs, a)
        return a, self.addrs[i] if i < len(self.addrs) else a + 1


def kernel_syms(path):
    pairs = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3:
                pairs.append((int(p[0], 16), p[2]))
    return Syms(pairs)


def prog_syms(binary):
    out = subprocess.run(["nm", "-n", "--defined-only", binary],
                         capture_output=True, text=True, check=True).stdout
    pairs = []
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "tTwW":
            pairs.append((int(p[0], 16), p[2]))
    return Syms(pairs)


class Classifier:
    """How user mode entered the kernel, from the kernel address it landed
    on: the documented enum bts_entry_kind (a system call instruction; an
    exception with its vector; an external interrupt or NMI with its
    vector).  Entry points and vectors come from the kernel's symbols and
    its idtentry.h, not from the layer."""

    def __init__(self, ksyms, linux, ibt):
        self.ksyms = ksyms
        consts = {}
        for h in ("arch/x86/include/asm/trapnr.h",
                  "arch/x86/include/asm/irq_vectors.h"):
            with open(os.path.join(linux, h)) as f:
                for m in re.finditer(r"#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)\b",
                                     f.read()):
                    consts.setdefault(m.group(1), int(m.group(2), 0))
        self.vec = {}
        with open(os.path.join(linux, "arch/x86/include/asm/idtentry.h")) as f:
            for m in re.finditer(r"^DECLARE_IDTENTRY\w*\((\w+),\s*(\w+)\)",
                                 f.read(), re.M):
                if m.group(1) in consts:
                    self.vec.setdefault("asm_" + m.group(2),
                                        consts[m.group(1)])
        self.first_system = consts.get("POSTED_MSI_NOTIFICATION_VECTOR", 0xeb)
        self.align = 16 if ibt else 8
        self.irq = ksyms.by_name.get("irq_entries_start")
        self.spurious = ksyms.by_name.get("spurious_entries_start")
        self.syscall = {ksyms.by_name.get(n) for n in
                        ("entry_SYSCALL_64", "entry_SYSCALL_compat",
                         "entry_SYSENTER_compat")} - {None}
        self.unknown = set()

    @staticmethod
    def of_vector(v):
        if v == 0x80:
            return E_SYSCALL
        if v < 32 and v != 2:
            return E_EXCEPTION | v << 8
        return E_INTERRUPT | v << 8

    def __call__(self, to):
        if to in self.syscall:
            return E_SYSCALL
        name = self.ksyms.exact(to)
        if name in self.vec:
            return self.of_vector(self.vec[name])
        if self.irq is not None and self.irq <= to < self.irq + \
                (self.first_system - 32) * self.align:
            if (to - self.irq) % self.align == 0:
                return self.of_vector(32 + (to - self.irq) // self.align)
        if self.spurious is not None and self.spurious <= to < \
                self.spurious + (256 - self.first_system) * self.align:
            if (to - self.spurious) % self.align == 0:
                return self.of_vector(self.first_system +
                                      (to - self.spurious) // self.align)
        self.unknown.add(to)
        return E_UNKNOWN


def is_nmi(kind):
    return kind >> 8 == 2


# In a per-CPU reference, a KERNEL record whose kind and entry address the
# CPU's trace cannot tell (see ref_user()); fill_wild() takes them from the
# stream compared.
WILD = -1


def ref_user(recs, classify, ended=False, per_cpu=False):
    """The user-only stream of a both-sides stream; @ended: of a task that
    exited, whose stream reports a last stretch in the kernel at its end.
    An NMI from user mode leaves no record (ds.rst, User-only tracing): it
    runs untraced and never passes the exit code that stages them.
    @per_cpu: a CPU's stream, its tasks told apart by SWITCH records; each
    KERNEL record is its task's stretch, so one whose entry the CPU did not
    see, or that spans a switch away (the task may have run and come back
    to the kernel elsewhere meanwhile), has the kind and entry address of
    the task's last entry, wherever that was, or none: WILD."""
    out = []
    away = {}           # task -> (where it entered, how)
    cur = None

    def back(to, tid):
        frm, kind = away.pop(tid, (WILD if per_cpu else 0,
                                   WILD if per_cpu else E_UNKNOWN))
        if kind == WILD:
            out.append((pseudo(KERNEL, 0), to, WILD))
        elif not is_nmi(kind):
            out.append((pseudo(KERNEL, kind), to, frm))

    for r in recs:
        frm, to, _ = r
        if is_pseudo(frm):
            if ptype(frm) == SWITCH:
                if cur in away:
                    away[cur] = (WILD, WILD)
                cur = to
            out.append(r)
            continue
        if not kaddr(frm):
            if cur in away:
                # The return to user mode went unseen.
                back(0, cur)
            if not kaddr(to):
                out.append(r)
            else:
                away[cur] = (frm, classify(to))
        elif not kaddr(to):
            back(to, cur)
        elif cur not in away and not per_cpu:
            away[cur] = (0, E_UNKNOWN)
    if ended and cur in away:
        back(0, cur)
    return out


def fill_wild(ref, got):
    """@ref with each WILD KERNEL record as @got has it at that place, if
    @got has a KERNEL record there that resumed at the same address."""
    out = list(ref)
    for i, r in enumerate(ref):
        if r[2] == WILD and i < len(got) and is_type(got[i], KERNEL) and \
                got[i][1] == r[1]:
            out[i] = got[i]
    return out


def ref_kernel(recs, state=None):
    """The kernel-only stream of a both-sides stream."""
    out = []
    away, away_from = state or (False, 0)
    for r in recs:
        frm, to, _ = r
        if is_pseudo(frm):
            out.append(r)
            continue
        if kaddr(frm):
            if away:
                out.append((pseudo(USER), 0, away_from))
                away = False
            if kaddr(to):
                out.append(r)
            else:
                away, away_from = True, frm
        elif kaddr(to):
            if not away:
                away_from = 0
            out.append((pseudo(USER), to, away_from))
            away = False
        elif not away:
            away, away_from = True, 0
    return out


class Stream(list):
    """A stream's records without its BTS_PSEUDO_DETAIL records, which
    @details holds: for each record, the detail right before it, or None;
    @stray counts the details no record of the type they name followed;
    @raw is every record, details included, as the stream held them (what
    a ring's size and the produced count are in).  From strip_details()."""

    def __init__(self, recs=(), details=None, stray=0, raw=None):
        super().__init__(recs)
        self.details = details if details is not None else [None] * len(self)
        self.stray = stray
        self.raw = raw if raw is not None else list(recs)


def strip_details(raw):
    out, details, stray, pending = [], [], 0, None
    for r in raw:
        if pending and not is_type(r, parg(pending[0]) & 0xff):
            stray, pending = stray + 1, None
        if is_type(r, DETAIL):
            pending = r
            continue
        out.append(r)
        details.append(pending)
        pending = None
    return Stream(out, details, stray + (pending is not None), list(raw))


def load_raw(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % REC.size:
        raise ValueError(f"{path}: {len(data)} bytes, not whole records")
    return [REC.unpack_from(data, i) for i in range(0, len(data), REC.size)]


def load_records(path):
    return strip_details(load_raw(path))


def load_status(path):
    st = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 2:
                st[p[0]] = int(p[1])
    return st


def load_oracle(path):
    """The oracle's branches [(from, to)] and summary; with -t, the summary
    also has "stretches": [("B", from, to) or ("K", from, to, syscall?)],
    what a user-only stream holds, in order."""
    branches, summary, seq = [], {}, []
    with open(path) as f:
        for line in f:
            if line.startswith("# summary"):
                summary.update(kv.split("=") for kv in line.split()[2:])
            if line.startswith("#"):
                continue
            p = line.split()
            if len(p) >= 4 and p[1] in ("B", "K"):
                frm, to = int(p[2], 16), int(p[3], 16)
                if p[1] == "B":
                    branches.append((frm, to))
                    seq.append(("B", frm, to))
                else:
                    seq.append(("K", frm, to, p[4].startswith("syscall")))
            elif len(p) >= 2:
                branches.append((int(p[0], 16), int(p[1], 16)))
    summary["stretches"] = seq
    return branches, summary


def disassemble(binary, func):
    """[(address, next address, mnemonic, direct target or None)] of a
    function, from objdump"""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn",
                          f"--disassemble={func}", binary],
                         capture_output=True, text=True, check=True).stdout
    insns = []
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)\s*([0-9a-f]+)?", line)
        if m and not line.rstrip().endswith(">:"):
            insns.append([int(m.group(1), 16), None, m.group(2),
                          int(m.group(3), 16) if m.group(3) else None])
    sizes = subprocess.run(["nm", "-S", binary], capture_output=True,
                           text=True, check=True).stdout
    for i, ins in enumerate(insns):
        ins[1] = insns[i + 1][0] if i + 1 < len(insns) else None
    for line in sizes.splitlines():
        p = line.split()
        if len(p) == 4 and p[3] == func:
            insns[-1][1] = int(p[0], 16) + int(p[1], 16)
    return [tuple(i) for i in insns]


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


class Checks:
    """The data of one run and the checks on it."""

    def __init__(self, res, build, linux):
        self.res, self.build, self.linux = res, build, linux
        self.diags = []
        self.ksyms = kernel_syms(os.path.join(res, "kallsyms"))
        # The run script notes the kernel's CONFIG_X86_KERNEL_IBT.
        ibt = read(os.path.join(build, "ibt"), "") == "y"
        self.classify = Classifier(self.ksyms, linux, ibt)
        self.s = {}
        self.st = {}
        for phase in ("main", "sleepy", "sysmix", "feedback", "flight",
                      "resume"):
            d = os.path.join(res, phase)
            if not os.path.isdir(d):
                continue
            for fn in sorted(os.listdir(d)):
                if fn.endswith(".bin"):
                    n = fn[:-4]
                    self.s[n] = load_records(os.path.join(d, fn))
                    self.st[n] = load_status(os.path.join(d, n + ".status"))
        self.oracle = {}
        for p in ("work", "sleepy"):
            f = os.path.join(res, p + ".oracle.txt")
            if os.path.exists(f):
                self.oracle[p] = load_oracle(f)
        self.prog = {p: prog_syms(os.path.join(build, "progs", p))
                     for p in ("work", "sleepy", "resumer", "flight")}
        start = read(os.path.join(res, "main", "start"), "0 0").split()
        self.pid, self.entry = int(start[0]), int(start[1], 16)

    # --- helpers ---------------------------------------------------------

    def diag(self, msg):
        self.diags.append(msg)

    def fmt(self, r, syms=None):
        frm, to, fl = r if len(r) == 3 else (*r, 0)
        if is_pseudo(frm):
            t = ptype(frm)
            return (f"{PNAMES.get(t, t)}({parg(frm):#x}) to={to:#x} "
                    f"flags={fl:#x}")
        name = (lambda a: self.ksyms.name(a) if kaddr(a) else
                (syms.name(a) if syms else hex(a)))
        return f"{name(frm)} -> {name(to)}" + (f" flags={fl:#x}" if fl else "")

    def same(self, what, got, want, syms=None):
        """Compare record lists; diagnose the first difference."""
        if got == want:
            return True
        i = 0
        while i < min(len(got), len(want)) and got[i] == want[i]:
            i += 1
        self.diag(f"{what}: {len(got)} records, expected {len(want)}; "
                  f"first difference at #{i}")
        for j in range(max(0, i - 2), i + 3):
            g = self.fmt(got[j], syms) if j < len(got) else "(end)"
            w = self.fmt(want[j], syms) if j < len(want) else "(end)"
            self.diag(f"  #{j}: got {g}")
            self.diag(f"  #{j}: exp {w}")
        return False

    def need(self, *names):
        missing = [n for n in names if n not in self.s]
        if missing:
            self.diag("missing streams: " + " ".join(missing))
            return False
        return True

    def rc(self, path):
        return read(os.path.join(self.res, path), "(none)")

    # --- the checks ------------------------------------------------------

    def c_ran(self):
        """main: the workload ran with all 15 consumers attached"""
        ok = True
        self.diag("kernel " + read(os.path.join(self.res, "uname"), "?"))
        for f in ("insmod.rc", "main/work.rc", "main/fence.rc",
                  "main/suspend_all.rc", "main/release.rc"):
            if self.rc(f) != "0":
                self.diag(f"{f}: {self.rc(f)}")
                ok = False
        err = read(os.path.join(self.res, "main", "work.err"), "")
        if err:
            self.diag("work.err: " + err)
        return ok and self.need("t_all", "cpu_all")

    def c_oracle(self):
        """oracle: traces of work and sleepy, with the known loop counts"""
        ok = True
        for p, steps in (("work", WORK_STEPS), ("sleepy", SLEEPY_STEPS)):
            if self.rc(p + ".oracle.rc") != "0" or p not in self.oracle:
                self.diag(f"{p}: oracle exit {self.rc(p + '.oracle.rc')}")
                ok = False
                continue
            br, summ = self.oracle[p]
            n = sum(1 for _, to in br if to == self.prog[p].by_name["step"])
            self.diag(f"{p}: {len(br)} branches, {summ.get('syscalls')} "
                      f"system calls, step() called {n} times")
            if n != steps:
                self.diag(f"{p}: step() called {n} times, expected {steps}")
                ok = False
        return ok

    def c_user_oracle(self):
        """t_user: user->user records == the oracle's, one KERNEL per return from the kernel"""
        if not self.need("t_user", "t_all") or "work" not in self.oracle:
            return False
        br, summ = self.oracle["work"]
        u = self.s["t_user"]
        ok = self.same("t_user vs oracle", [(f, t) for f, t, _ in real(u)],
                       br, self.prog["work"])
        if any(fl for _, _, fl in real(u)):
            self.diag("t_user: a branch record with flags != 0")
            ok = False
        kern = [r for r in u if is_type(r, KERNEL)]
        # Kernel entries but NMIs: user->kernel records of the all stream.  The
        # stream starts in the kernel (the exec stop), one more stretch than
        # entries, and ends there: exit_group, a system call the oracle
        # does not count (it does not return), closes the stream.
        entries = sum(1 for f, t, _ in real(self.s["t_all"])
                      if not kaddr(f) and kaddr(t) and
                      not is_nmi(self.classify(t)))
        self.diag(f"t_user: {len(real(u))} branches, {len(kern)} KERNEL, "
                  f"{entries} kernel entries in t_all")
        if len(kern) != entries + 1:
            self.diag(f"t_user: {len(kern)} KERNEL records, {entries} "
                      "kernel entries")
            ok = False
        if not kern or kern[-1] != u[-1] or kern[-1][1] != 0 or \
                parg(kern[-1][0]) & 0xff != E_SYSCALL:
            self.diag("t_user does not end with the KERNEL record of "
                      "exit_group (to=0): " + (self.fmt(u[-1]) if u else
                                               "(empty)"))
            ok = False
        sc = [r for r in kern[:-1] if parg(r[0]) & 0xff == E_SYSCALL]
        if len(sc) != int(summ.get("syscalls", -1)):
            self.diag(f"t_user: {len(sc)} system call KERNEL records, the "
                      f"oracle counted {summ.get('syscalls')} system calls")
            ok = False
        if not kern or kern[0] != u[0] or kern[0][1] != self.entry or \
                kern[0][2] != 0:
            self.diag("t_user does not start with KERNEL(to=entry point "
                      f"{self.entry:#x}, flags=0): "
                      + (self.fmt(u[0]) if u else "(empty)"))
            ok = False
        if any(r[1] == 0 or r[2] == 0 for r in kern[1:-1]):
            self.diag("t_user: a KERNEL record missing an address although "
                      "both crossings were recorded")
            ok = False
        return ok

    def c_filter_task(self):
        """t_user and t_kernel == the reference filters applied to t_all"""
        if not self.need("t_all", "t_user", "t_kernel"):
            return False
        a = self.s["t_all"]
        ok = self.same("t_user vs ref_user(t_all)", self.s["t_user"],
                       ref_user(a, self.classify, ended=True),
                       self.prog["work"])
        ok &= self.same("t_kernel vs ref_kernel(t_all)", self.s["t_kernel"],
                        ref_kernel(a))
        if self.classify.unknown:
            self.diag("entries of unknown kind: " + ", ".join(
                self.ksyms.name(a) for a in sorted(self.classify.unknown)))
        return ok

    def _cpu_ref(self, name, which):
        """The whole per-CPU stream @name against the reference filter
        applied to cpu_all, which was attached before it and suspended
        after it (progs/fence.c).  Where in cpu_all @name began is not
        known, but the CPU was in the kernel then (the attach runs there):
        a user-only stream starts at a return to user mode, with
        KERNEL(to, from 0); a kernel-only one at a kernel branch.  So the
        reference starts at the first record of cpu_all that makes the
        whole of @name match, which must come before the workload's first
        user-mode record (user-only) or its first SWITCH (kernel-only);
        after @name's end, cpu_all may only hold kernel records."""
        a, s = self.s["cpu_all"], self.s[name]
        if not s:
            self.diag(f"{name}: empty")
            return False
        first = next((i for i, r in enumerate(a) if is_type(r, SWITCH) and
                      r[1] == self.pid), None)
        if first is None:
            self.diag("cpu_all: no SWITCH to the workload")
            return False
        # The attach may come while the workload is in the kernel (its
        # exec): a user-only stream must begin by its first user-mode
        # record, a kernel-only one by its SWITCH.
        limit = first
        if which == "user":
            limit = next((i for i in range(first, len(a))
                          if not is_pseudo(a[i][0]) and
                          not (kaddr(a[i][0]) and kaddr(a[i][1]))), first)
        for p in range(limit + 1):
            frm, to, _ = a[p]
            # The stream may begin by a SWITCH record as cpu_all has it.
            same = a[p] == s[0]
            if is_pseudo(frm) and not same:
                continue
            if which == "user":
                if not same and not (kaddr(frm) and not kaddr(to) and
                                     to == s[0][1]):
                    continue
                ref = fill_wild(ref_user(a[p:], self.classify,
                                         per_cpu=True), s)
            else:
                if not same and not (
                        is_type(s[0], USER) and not kaddr(frm) and
                        kaddr(to) and to == s[0][1]):
                    continue
                ref = ref_kernel(a[p:])
            if ref[:len(s)] == s:
                break
        else:
            self.diag(f"{name}: no start in cpu_all by #{limit} (the "
                      f"workload's SWITCH at #{first}) makes the whole "
                      "stream match; from its first marker:")
            m = next((i for i, r in enumerate(s) if is_marker(r)), 0)
            ref = (ref_user(a, self.classify, per_cpu=True)
                   if which == "user" else ref_kernel(a))
            rm = next((i for i, r in enumerate(ref) if is_marker(r)), 0)
            self.same(f"{name} vs ref_{which}(cpu_all)", s[m:],
                      fill_wild(ref[rm:rm + len(s) - m], s[m:]))
            return False
        rest = ref[len(s):]
        self.diag(f"{name}: {len(s)} records == ref_{which}(cpu_all from "
                  f"#{p} of {len(a)}, the workload's SWITCH at #{first}); "
                  f"then {len(rest)} records until cpu_all stopped")
        if any((is_pseudo(r[0]) and not is_type(r, SWITCH)) or
               (not is_pseudo(r[0]) and not kaddr(r[0])) for r in rest):
            self.diag(f"{name}: cpu_all goes on with more than kernel "
                      "branches after it stopped: " + self.fmt(rest[0]))
            return False
        return True

    def c_filter_cpu(self):
        """cpu_user and cpu_kernel == the reference filters applied to cpu_all"""
        if not self.need("cpu_all", "cpu_user", "cpu_kernel"):
            return False
        return self._cpu_ref("cpu_user", "user") & \
            self._cpu_ref("cpu_kernel", "kernel")

    def _stretches(self, name, prog):
        """@name, a user-only stream of @prog from its exec, against the
        oracle's -t trace: branches, and each stretch in the kernel with
        where it entered and where it came back.  Page faults and
        interrupts, invisible to ptrace, must come back where they left;
        they are compared after that is checked."""
        br, summ = self.oracle[prog]
        want = summ["stretches"]
        got, hidden = [], 0
        for i, r in enumerate(self.s[name]):
            if not is_pseudo(r[0]):
                got.append(("B", r[0], r[1]))
            elif is_type(r, KERNEL):
                kind = parg(r[0]) & 0xff
                if kind in (E_EXCEPTION, E_INTERRUPT) and r[1] == r[2] \
                        and r[1]:
                    hidden += 1
                    continue
                got.append(("K", r[2], r[1], kind == E_SYSCALL))
            elif not is_type(r, MARKER):
                self.diag(f"{name} #{i}: {self.fmt(r)}")
                return False
        self.diag(f"{name}: {len(got)} branches and stretches in the kernel "
                  f"as the oracle's, {hidden} page faults and interrupts")
        if got == want:
            return True
        i = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w),
                 min(len(got), len(want)))
        self.diag(f"{name}: {len(got)} items, the oracle {len(want)}; "
                  f"first difference at #{i}")
        for j in range(max(0, i - 2), i + 3):
            self.diag(f"  #{j}: got "
                      + (" ".join(map(str, got[j])) if j < len(got) else "-")
                      + " exp "
                      + (" ".join(map(str, want[j])) if j < len(want)
                         else "-"))
        return False

    def c_stretches(self):
        """t_user, s_ll == the oracle -t: every branch, and each system call's entry and resume address, in order"""
        if not self.need("t_user", "s_ll") or \
                not {"work", "sleepy"} <= set(self.oracle):
            return False
        for p in ("work", "sleepy"):
            if not self.oracle[p][1]["stretches"]:
                self.diag(f"{p}: the oracle listed no stretch (not -t?)")
                return False
        return self._stretches("t_user", "work") & \
            self._stretches("s_ll", "sleepy")

    def c_kinds(self):
        """entry kinds of KERNEL records: system calls, page faults, interrupts, no NMI (ds.rst)"""
        if not self.need("t_user", "cpu_user"):
            return False
        ok = True
        for n in ("t_user", "cpu_user"):
            kinds = {}
            for r in self.s[n]:
                if is_type(r, KERNEL):
                    k = parg(r[0])
                    kinds[k] = kinds.get(k, 0) + 1
            self.diag(f"{n}: " + ", ".join(
                f"{['unknown', 'syscall', 'exception', 'interrupt'][k & 3]}"
                f"{' ' + hex(k >> 8) if k >> 8 else ''} x{v}"
                for k, v in sorted(kinds.items())))
            if any(is_nmi(k) for k in kinds):
                self.diag(f"{n}: NMI entries, which run untraced")
                ok = False
            for k, what in ((E_SYSCALL, "system call"),
                            (E_EXCEPTION | 14 << 8, "page fault")):
                if not kinds.get(k):
                    self.diag(f"{n}: no {what} entry")
                    ok = False
            if not any(k & 0xff == E_INTERRUPT for k in kinds):
                self.diag(f"{n}: no interrupt entry")
                ok = False
        return ok

    def c_details(self):
        """t_user: each KERNEL record after its detail (bts.h): system calls' numbers and ABI, times in order; none in other streams"""
        if not self.need("t_user", "t_all", "t_kernel"):
            return False
        u = self.s["t_user"]
        ok = True
        kern = [i for i, r in enumerate(u) if is_type(r, KERNEL)]
        got = [u.details[i] for i in kern]
        if None in got or u.stray:
            self.diag(f"t_user: {got.count(None)} of {len(kern)} KERNEL "
                      f"records without their detail, {u.stray} stray")
            return False
        times = [d[2] for d in got]
        if times != sorted(times):
            self.diag("t_user: detail times go back")
            ok = False
        # (abi, number) of each system call's detail; the others none.
        sc = [(parg(d[0]) >> 16, d[1]) for i, d in zip(kern, got)
              if parg(u[i][0]) & 0xff == E_SYSCALL]
        other = [parg(d[0]) >> 16 for i, d in zip(kern, got)
                 if parg(u[i][0]) & 0xff != E_SYSCALL]
        if not sc or sc[-1] != (ABI_X86_64, NR_EXIT_GROUP) or \
                any(abi != ABI_X86_64 for abi, _ in sc) or any(other):
            self.diag(f"t_user: system calls' details {sc[-3:]}, expected "
                      f"x86-64 ones ending in exit_group; others' ABI "
                      f"{set(other)}")
            ok = False
        self.diag(f"t_user: {len(kern)} details, {len(sc)} of system calls, "
                  f"{(times[-1] - times[0]) / 1e6:.1f} ms apart")
        for n in ("t_all", "t_kernel"):
            if any(self.s[n].details) or self.s[n].stray:
                self.diag(f"{n}: details in a stream that is not user-only")
                ok = False
        return ok

    def c_ring_task(self):
        """per-task rings == the last N records of their continuous streams"""
        ok = True
        for ring, cont in (("t_all_ring", "t_all"), ("t_user_ring", "t_user"),
                           ("t_kernel_ring", "t_kernel")):
            if not self.need(ring, cont):
                return False
            # Records as the streams held them: a ring's size counts the
            # details too.
            n = self.st[ring]["size"]
            c, r = self.s[cont].raw, self.s[ring].raw
            ok &= self.same(f"{ring} vs last {n} of {cont}", r, c[-n:])
            if len(c) >= n and len(r) != n:
                self.diag(f"{ring}: {len(r)} records, size {n}")
                ok = False
            if self.st[ring]["produced"] != len(c):
                self.diag(f"{ring}: produced {self.st[ring]['produced']}, "
                          f"{cont} has {len(c)}")
                ok = False
        return ok

    def c_ring_cpu(self):
        """per-CPU rings == N consecutive records of their continuous streams, ending where the ring stopped"""
        ok = True
        for ring, cont in (("cpu_all_ring", "cpu_all"),
                           ("cpu_user_ring", "cpu_user"),
                           ("cpu_kernel_ring", "cpu_kernel")):
            if not self.need(ring, cont):
                return False
            r, c = self.s[ring].raw, self.s[cont].raw
            n = self.st[ring]["size"]
            fr = [i for i, x in enumerate(r) if is_marker(x) and
                  marker_of(x) == FENCE]
            fc = [i for i, x in enumerate(c) if is_marker(x) and
                  marker_of(x) == FENCE]
            if len(fr) != 1 or len(fc) != 1:
                self.diag(f"{ring}/{cont}: fence markers {len(fr)}/{len(fc)}")
                ok = False
                continue
            start = fc[0] - fr[0]
            if start < 0:
                self.diag(f"{ring}: more records before the fence than {cont}")
                ok = False
                continue
            ok &= self.same(f"{ring} vs {cont}[{start}:]", r,
                            c[start:start + len(r)])
            if len(r) != n:
                self.diag(f"{ring}: {len(r)} records, size {n}")
                ok = False
        return ok

    def _segments(self):
        a, segs, cur = self.s["cpu_all"], [], None
        for r in a:
            if is_type(r, SWITCH):
                if cur is not None:
                    segs.append(cur)
                cur = [] if r[1] == self.pid else None
                if cur is not None and r[2] != self.pid:
                    self.diag(f"SWITCH to {r[1]} with tgid {r[2]}")
                    return None
            elif cur is not None:
                cur.append(r)
        if cur is not None:
            segs.append(cur)
        return segs

    def c_switch(self):
        """cpu_all cut at SWITCH records: the workload's segments make up t_all"""
        if not self.need("cpu_all", "t_all"):
            return False
        segs = self._segments()
        if not segs:
            self.diag("no SWITCH to the workload in cpu_all")
            return False
        t = self.s["t_all"]
        self.diag(f"{len(segs)} segments of the workload in cpu_all, "
                  f"{sum(map(len, segs))} records; t_all has {len(t)}")
        # After its last record, the task goes on exiting (and may sleep
        # in there), traced for the CPU but not for the task any more.
        cat = [r for s in segs for r in s]
        ok = self.same("cpu_all segments vs t_all", cat[:len(t)], t)
        user = [r for r in cat[len(t):] if not is_pseudo(r[0]) and
                not kaddr(r[0])]
        if user:
            self.diag(f"{len(user)} user-mode records of the workload in "
                      f"cpu_all after t_all's end: {self.fmt(user[0])}")
            ok = False
        if len(segs) < 2:
            self.diag("the workload ran in one piece: it should sleep")
            ok = False
        return ok

    BIG = ("t_all", "t_user", "t_kernel", "t_lossless", "cpu_all",
           "cpu_user", "cpu_kernel")

    def c_no_loss(self):
        """big continuous streams: no LOST record, status lost == 0, everything consumed"""
        ok = True
        for n in self.BIG:
            if not self.need(n):
                return False
            st, s = self.st[n], self.s[n]
            lost = [r for r in s if is_type(r, LOST)]
            if lost or st["lost"] or st["full"] or st["pending"]:
                self.diag(f"{n}: {len(lost)} LOST records, status lost "
                          f"{st['lost']}, pending {st['pending']}, module "
                          f"buffer full {st['full']}")
                ok = False
            if st["produced"] != len(s.raw):
                self.diag(f"{n}: produced {st['produced']}, read "
                          f"{len(s.raw)}")
                ok = False
        return ok

    def c_tiny_task(self):
        """t_tiny: t_all with LOST records exactly where records were dropped"""
        if not self.need("t_tiny", "t_all"):
            return False
        t, a, st = self.s["t_tiny"], self.s["t_all"], self.st["t_tiny"]
        p, ok = 0, True
        for i, r in enumerate(t):
            if is_type(r, LOST):
                p += r[1]
            elif p >= len(a) or a[p] != r:
                self.diag(f"t_tiny #{i} ({self.fmt(r)}) is not t_all #{p}")
                ok = False
                break
            else:
                p += 1
        reported = sum(r[1] for r in t if is_type(r, LOST))
        self.diag(f"t_tiny: {len(t)} records, {reported} lost in-stream, "
                  f"status lost {st['lost']}, {len(a) - p} of t_all's "
                  "records after its last")
        if p > len(a) or st["lost"] != reported + (len(a) - p):
            self.diag("t_tiny: kept + lost != t_all")
            ok = False
        if not reported:
            self.diag("t_tiny lost nothing: not tiny enough")
            ok = False
        return ok

    def c_tiny_total(self):
        """tiny streams: in-stream LOST total == status lost"""
        ok = True
        for n in ("t_tiny", "cpu_tiny"):
            if not self.need(n):
                return False
            reported = sum(r[1] for r in self.s[n] if is_type(r, LOST))
            if reported != self.st[n]["lost"] or not reported:
                self.diag(f"{n}: LOST records add up to {reported}, status "
                          f"lost {self.st[n]['lost']}")
                ok = False
            if self.st[n]["produced"] != len(self.s[n]):
                self.diag(f"{n}: produced {self.st[n]['produced']}, read "
                          f"{len(self.s[n])}")
                ok = False
        return ok

    def c_lossless(self):
        """t_lossless (256 records, slow consumer): == the oracle, == t_user, nothing lost, throttled"""
        if not self.need("t_lossless", "t_user") or "work" not in self.oracle:
            return False
        s, st = self.s["t_lossless"], self.st["t_lossless"]
        ok = self.same("t_lossless vs oracle", [(f, t) for f, t, _ in real(s)],
                       self.oracle["work"][0], self.prog["work"])
        ok &= self.same("t_lossless vs t_user", s, self.s["t_user"])
        self.diag(f"t_lossless: throttled {st['throttled']}, lost "
                  f"{st['lost']}")
        if st["throttled"] == 0 or st["lost"] or \
                any(is_type(r, LOST) for r in s):
            ok = False
        return ok

    def c_sysmix(self):
        """sysmix: lossless without an overflow callback, system calls between stretches longer than the headroom: nothing lost"""
        if not self.need("x_ll"):
            return False
        st = self.st["x_ll"]
        ok = self.rc("sysmix/sysmix.rc") == "0"
        if not ok:
            self.diag(f"sysmix exit {self.rc('sysmix/sysmix.rc')}")
        lost = [r for r in self.s["x_ll"] if is_type(r, LOST)]
        self.diag(f"x_ll: produced {st['produced']}, consumed "
                  f"{st['consumed']}, throttled {st['throttled']}, "
                  f"status lost {st['lost']}, {len(lost)} LOST records "
                  "in the last batch")
        # ROUNDS * STRETCH branches (progs/sysmix.c), most of them kept.
        if st["consumed"] < 4000 * 3000 * 99 // 100:
            self.diag("x_ll: fewer records consumed than sysmix branches")
            ok = False
        if st["throttled"] == 0:
            self.diag("x_ll: never throttled")
            ok = False
        return ok and not lost and not st["lost"]

    def c_sleepy(self):
        """sleepy: lossless consumer of a task that sleeps between bursts: == the oracle, nothing lost"""
        if not self.need("s_ll") or "sleepy" not in self.oracle:
            return False
        s, st = self.s["s_ll"], self.st["s_ll"]
        ok = self.rc("sleepy/sleepy.rc") == "0"
        if not ok:
            self.diag(f"sleepy exit {self.rc('sleepy/sleepy.rc')}: "
                      + read(os.path.join(self.res, "sleepy/sleepy.err"), ""))
        lost = [r for r in s if is_type(r, LOST)]
        self.diag(f"s_ll: {len(real(s))} branches, throttled "
                  f"{st['throttled']}, status lost {st['lost']}, "
                  f"{len(lost)} LOST records")
        if lost or st["lost"]:
            ok = False
        ok &= self.same("s_ll vs oracle", [(f, t) for f, t, _ in real(s)],
                        self.oracle["sleepy"][0], self.prog["sleepy"])
        if st["throttled"] == 0:
            self.diag("s_ll: never throttled")
            ok = False
        return ok

    def c_markers(self):
        """markers: in every stream of the task and of CPU 0, in order"""
        ok = True
        want = {n: WORK_MARKERS for n in ("t_all", "t_user", "t_kernel",
                                          "t_lossless")}
        want.update({n: WORK_MARKERS + [FENCE] for n in
                     ("cpu_all", "cpu_user", "cpu_kernel")})
        for n, w in want.items():
            if not self.need(n):
                return False
            if markers(self.s[n]) != w:
                self.diag(f"{n}: markers {markers(self.s[n])}")
                ok = False
        # Tiny streams may lose markers, but not reorder them.
        for n, w in (("t_tiny", WORK_MARKERS),
                     ("cpu_tiny", WORK_MARKERS + [FENCE])):
            got = markers(self.s.get(n, []))
            it = iter(w)
            if not all(m in it for m in got):
                self.diag(f"{n}: markers {got} not in order")
                ok = False
        return ok

    def c_user_only(self):
        """user-only streams: no kernel address; kernel-only: no user branch"""
        ok = True
        for n in ("t_user", "t_user_ring", "t_lossless", "cpu_user",
                  "cpu_user_ring", "s_ll"):
            if not self.need(n):
                return False
            # A CPU's streams tell who runs: SWITCH carries no address.
            allowed = (KERNEL, LOST, MARKER) + \
                ((SWITCH,) if n.startswith("cpu_") else ())
            for r in self.s[n]:
                if is_pseudo(r[0]):
                    t = ptype(r[0])
                    bad = t not in allowed or \
                        (t == KERNEL and (kaddr(r[1]) or kaddr(r[2])))
                else:
                    bad = kaddr(r[0]) or kaddr(r[1])
                if bad:
                    self.diag(f"{n}: {self.fmt(r)}")
                    ok = False
                    break
        for n in ("t_kernel", "t_kernel_ring", "cpu_kernel",
                  "cpu_kernel_ring"):
            if not self.need(n):
                return False
            allowed = (USER, LOST, MARKER) + \
                ((SWITCH,) if n.startswith("cpu_") else ())
            for r in self.s[n]:
                if is_pseudo(r[0]):
                    t = ptype(r[0])
                    bad = t not in allowed or \
                        (t == USER and any(x and not kaddr(x)
                                           for x in r[1:]))
                else:
                    bad = not kaddr(r[0]) or not kaddr(r[1])
                if bad:
                    self.diag(f"{n}: {self.fmt(r)}")
                    ok = False
                    break
        return ok

    def c_switch_only_all(self):
        """SWITCH records in per-CPU streams of each side, never in a task's"""
        if not self.need("cpu_all", "t_all"):
            return False
        ok = True
        per_cpu = ("cpu_all", "cpu_user", "cpu_kernel", "cpu_all_ring",
                   "cpu_user_ring", "cpu_kernel_ring", "cpu_tiny",
                   "A", "R", "S", "F")
        for n, s in self.s.items():
            has = any(is_type(r, SWITCH) for r in s)
            if has and n not in per_cpu or not has and n in (
                    "cpu_all", "cpu_user", "cpu_kernel"):
                self.diag(f"{n}: SWITCH records {'present' if has else 'absent'}")
                ok = False
        return ok

    def c_flight(self):
        """flight recorder: a lone per-CPU ring (hardware ring mode in between) == the task's stream where the task ran"""
        if not self.need("F", "T"):
            return False
        f, t, n = self.s["F"], self.s["T"], self.st["F"]["size"]
        ok = self.rc("flight/flight.rc") == "0"
        pid = int(read(os.path.join(self.res, "flight", "start"),
                       "0").split()[0])
        fm = [i for i, r in enumerate(f) if is_marker(r) and
              marker_of(r)[0] == 0x777]
        tm = [i for i, r in enumerate(t) if is_marker(r) and
              marker_of(r)[0] == 0x777]
        if len(f) != n or len(fm) != 1 or len(tm) != 1:
            self.diag(f"F: {len(f)} records of {n}, markers {len(fm)} in "
                      f"F, {len(tm)} in T")
            return False
        i, j = fm[0], tm[0]
        # The task's complete segments in F up to the marker, and what
        # F got after the marker until it was suspended, from the task.
        segs, cur = [], None
        for r in f[:i + 1]:
            if is_type(r, SWITCH):
                if cur is not None:
                    segs.append(cur)
                cur = [] if r[1] == pid else None
            elif cur is not None:
                cur.append(r)
        if cur is None:
            self.diag("F: the marker is not in a segment of the task")
            return False
        segs.append(cur)
        others = sum(1 for r in f[:i] if is_type(r, SWITCH) and r[1] != pid)
        cat = [r for s in segs for r in s]
        self.diag(f"F: {len(segs)} segments of the task before the marker, "
                  f"{others} switches to others, {len(f) - i - 1} records "
                  "after it")
        ok &= self.same("F's segments of the task vs T", cat,
                        t[max(0, j + 1 - len(cat)):j + 1])
        ok &= self.same("F after the marker vs T", f[i + 1:],
                        t[j + 1:j + len(f) - i])
        if len(segs) < 2 or not others:
            self.diag("F: the window shows no time without the task")
            ok = False
        return ok

    def c_feedback(self):
        """feedback: two kernel-only consumers of one task, drained in their overflow callbacks, lose nothing"""
        if not self.need("fb1", "fb2"):
            return False
        ok = self.rc("feedback/sleepy.rc") == "0"
        if not ok:
            self.diag(f"sleepy exit {self.rc('feedback/sleepy.rc')}")
        for n in ("fb1", "fb2"):
            s, st = self.s[n], self.st[n]
            own = sum(1 for f, _, _ in real(s) if kaddr(f) and
                      self.ksyms.name(f).split("+")[0] in
                      ("ds_stream_consume", "ds_consume_bts"))
            lost = [r for r in s if is_type(r, LOST)]
            self.diag(f"{n}: {len(s)} records, {own} of them from "
                      f"ds_stream_consume() copying records, status lost "
                      f"{st['lost']}, {st['callbacks']} callbacks")
            if st["lost"] or lost:
                ok = False
        return ok

    def _in(self, recs, func):
        p = self.prog["resumer"]
        ranges = [p.range(func), p.range(func + "_leaf")]
        return sum(1 for f, _, _ in real(recs)
                   if any(a <= f < b for a, b in ranges))

    def c_resume(self):
        """resume: a consumer attached suspended gets nothing from before ds_resume_bts()"""
        if not self.need("A", "R", "S"):
            return False
        ok = self.rc("resume/resumer.rc") == "0" and \
            self.rc("resume/attach.rc") == "0"
        counts = {n: [self._in(self.s[n], f) for f in
                      ("before_resume", "after_resume", "after_suspend")]
                  for n in "ARS"}
        self.diag("records of before_resume/after_resume/after_suspend: " +
                  ", ".join(f"{n} {c}" for n, c in counts.items()))
        if not all(counts["A"]) or not counts["R"][1]:
            self.diag("A or R missed records: the test proves nothing")
            ok = False
        if counts["R"][0]:
            self.diag("R has records of before_resume(), which ran before "
                      "it was resumed")
            ok = False
        if markers(self.s["R"]) != [(0x502, 0x502, 0)]:
            self.diag(f"R: markers {markers(self.s['R'])}")
            ok = False
        return ok

    def c_suspend(self):
        """suspend: nothing after ds_suspend_bts() returns"""
        if not self.need("S"):
            return False
        ok = True
        n = [self._in(self.s["S"], f) for f in
             ("before_resume", "after_resume", "after_suspend")]
        if not n[1] or n[2]:
            self.diag(f"S: {n[1]} after_resume records, {n[2]} "
                      "after_suspend records")
            ok = False
        if markers(self.s["S"]) != [(0x501, 0x501, 0)]:
            self.diag(f"S: markers {markers(self.s['S'])}")
            ok = False
        return ok

    def c_arb_perf(self):
        """arbitration: perf record -e branches:u -c 1 works while a consumer is attached (both are consumers)"""
        ok = self.rc("arb/attach1.rc") == "0" and self.rc("arb/perf1.rc") == "0"
        if not ok:
            err = read(os.path.join(self.res, "arb/perf1.err"), "")
            self.diag(f"attach {self.rc('arb/attach1.rc')}, perf exit "
                      f"{self.rc('arb/perf1.rc')}: "
                      + " | ".join(err.splitlines()[:6]))
        return ok

    def c_arb_attach(self):
        """arbitration: consumers attach while perf's branches:u -c 1 traces, and after"""
        ok = True
        if not read(os.path.join(self.res, "arb/perf2.child")):
            self.diag("perf's workload was not seen running")
            ok = False
        for f in ("attach2", "attach2t", "attach3"):
            if self.rc(f"arb/{f}.rc") != "0":
                e = read(os.path.join(self.res, f"arb/{f}.err"), "")
                self.diag(f"{f}: exit {self.rc(f'arb/{f}.rc')} {e}")
                ok = False
        if self.rc("arb/perf2.rc") != "0":
            self.diag(f"perf record exit {self.rc('arb/perf2.rc')}: " +
                      read(os.path.join(self.res, "arb/perf2.err"), ""))
            ok = False
        return ok

    def c_policy(self):
        """policy: on a Meltdown-affected CPU, kernel-mode consumers are refused (EACCES, the log names kernel.bts_kernel_recording) unless it is 1"""
        ok = True
        if "Not affected" in read(os.path.join(self.res, "policy/meltdown"),
                                  "Not affected"):
            self.diag("the VM's CPU is not one Meltdown affects")
            ok = False
        for f in ("kernel", "all"):
            e = read(os.path.join(self.res, f"policy/{f}.err"), "")
            if self.rc(f"policy/{f}.rc") == "0" or \
                    "permission denied" not in e.lower():
                self.diag(f"priv={f} refused? exit "
                          f"{self.rc(f'policy/{f}.rc')} {e}")
                ok = False
        for f in ("user", "allowed"):
            if self.rc(f"policy/{f}.rc") != "0":
                self.diag(f"{f}: exit {self.rc(f'policy/{f}.rc')} " +
                          read(os.path.join(self.res, f"policy/{f}.err"), ""))
                ok = False
        if "kernel.bts_kernel_recording=1" not in \
                read(os.path.join(self.res, "policy/log"), ""):
            self.diag("the refusal's log line does not name the knob")
            ok = False
        return ok

    def c_audit(self):
        """audit: ds.c's count of staged records with a kernel address outside the entry code sees the kernel consumers' records (tests/bts-dump relies on its 0)"""
        n = self.rc("main/audit").strip()
        kern = [r for r in self.s.get("t_kernel", []) if not is_pseudo(r[0])]
        self.diag(f"counted {n or '?'}; t_kernel holds {len(kern)} kernel "
                  "branches")
        return n.isdigit() and int(n) >= len(kern) > 0

    def c_swap(self):
        """swap: a callback taking the storage with ds_swap_bts_buffer() gets exactly what one consuming gets"""
        path = os.path.join(self.res, "swap")
        ref = load_records(os.path.join(path, "sref.bin"))
        got = load_records(os.path.join(path, "sswap.bin"))
        st = load_status(os.path.join(path, "sswap.status"))
        sref = load_status(os.path.join(path, "sref.status"))
        self.diag(f"run exit {self.rc('swap/run.rc')}: {len(got)} records "
                  f"by {st.get('swaps')} swaps, {len(ref)} consumed; lost "
                  f"{st.get('lost')} and {sref.get('lost')}")
        return self.rc("swap/run.rc") == "0" and got == ref and \
            len(ref) > 1000 and st.get("swaps", 0) > 0 and \
            st.get("lost") == 0 and sref.get("lost") == 0

    def _inherit_loop(self, binary):
        """loop() of inherit: its start, its jump back (from, to), its ret,
        and main()'s call of it (address, return address)"""
        code = disassemble(binary, "loop")
        br = [i for i in code if BRANCH.match(i[2])]
        if len(br) != 2 or not br[0][2].startswith("j") or \
                not br[1][2].startswith("ret") or br[0][3] > br[0][0]:
            raise ValueError(f"loop(): branches {br}, not a jump back and "
                             "a ret")
        calls = [i for i in disassemble(binary, "main")
                 if i[2].startswith("call") and i[3] == code[0][0]]
        if len(calls) != 1:
            raise ValueError(f"main() calls loop() {len(calls)} times")
        return (code[0][0], (br[0][0], br[0][3]), br[1][0],
                (calls[0][0], calls[0][1]))

    def _kid_ok(self, k, recs, loop):
        """A kid's stream holds one run of loop(): called, the jump back
        INHERIT_ROUNDS - 1 times, returned to the caller; page faults and
        interrupts in it come back where they left.  Returns the caller or
        None."""
        start, back, ret, _ = loop
        calls = [i for i, r in enumerate(recs) if not is_pseudo(r[0]) and
                 r[1] == start]
        if len(calls) != 1:
            self.diag(f"kid {k}: {len(calls)} calls of loop()")
            return None
        i, caller, jumps = calls[0] + 1, recs[calls[0]][0], 0
        while i < len(recs):
            r = recs[i]
            if is_type(r, KERNEL) and r[1] == r[2] and start <= r[1] <= ret:
                pass
            elif r == back + (0,):
                jumps += 1
            else:
                break
            i += 1
        end = recs[i] if i < len(recs) else None
        if jumps != INHERIT_ROUNDS - 1 or end is None or end[0] != ret or \
                not 2 <= end[1] - caller <= 7:
            self.diag(f"kid {k}: loop() called from {caller:#x}, jumped "
                      f"back {jumps} times, then "
                      + (self.fmt(end) if end else "(end)"))
            return None
        return caller

    def c_inherit(self):
        """inherit: a task's 2 threads and 3 processes get consumers that record their loop, record by record; without DS_BTS_INHERIT, none"""
        path = os.path.join(self.res, "inherit")
        inh = load_status(os.path.join(path, "inh.status")) \
            if os.path.exists(os.path.join(path, "inh.status")) else {}
        noinh = load_status(os.path.join(path, "noinh.status")) \
            if os.path.exists(os.path.join(path, "noinh.status")) else {}
        self.diag(f"run exit {self.rc('inherit/run.rc')}, release "
                  f"{self.rc('inherit/release.rc')}; inherited: "
                  f"{inh.get('kids')} consumers, {inh.get('kids_exited')} "
                  f"exits, {inh.get('kids_lost')} lost; not inherited: "
                  f"{noinh.get('kids')}")
        ok = self.rc("inherit/run.rc") == "0" and \
            self.rc("inherit/release.rc") == "0" and \
            inh.get("kids") == INHERIT_THREADS + INHERIT_FORKS and \
            inh.get("kids_exited") == inh.get("kids") and \
            inh.get("kids_lost") == 0 and noinh.get("kids") == 0
        loop = self._inherit_loop(os.path.join(self.build, "inherit"))
        kids = self.kids if hasattr(self, "kids") else \
            load_raw(os.path.join(path, "inh.kids"))
        streams, i = [], 0
        while i < len(kids):
            n = kids[i][2]
            if kids[i][:2] != (0, len(streams)) or i + 1 + n > len(kids):
                self.diag(f"inh.kids: bad header #{i} {kids[i]}")
                return False
            streams.append(strip_details(kids[i + 1:i + 1 + n]))
            i += 1 + n
        callers = [self._kid_ok(k, s, loop) for k, s in enumerate(streams)]
        forks = sum(1 for c in callers if c == loop[3][0])
        self.diag(f"{len(streams)} inherited streams of "
                  f"{', '.join(str(len(s)) for s in streams)} records; "
                  f"{forks} called loop() from main() (the processes)")
        ok &= None not in callers and forks == INHERIT_FORKS and \
            len(streams) == INHERIT_THREADS + INHERIT_FORKS
        # The parent's own streams, with and without INHERIT, are the same,
        # and never in loop().
        par = {n: load_records(os.path.join(path, n + ".bin"))
               for n in ("inh", "noinh")}
        ok &= self.same("inh vs noinh", par["inh"], par["noinh"])
        if any(loop[0] <= r[0] <= loop[2] for n in par for r in par[n]):
            self.diag("the parent's stream has records of loop()")
            ok = False
        return ok

    def c_exit_race(self):
        """detach contract: no task_exit callback after ds_release_bts() returned (released while the exit runs the callbacks)"""
        st = load_status(os.path.join(self.res, "exitrace", "e1.status")) \
            if os.path.exists(os.path.join(self.res, "exitrace",
                                           "e1.status")) else {}
        late = read(os.path.join(self.res, "exitrace", "late"), "?")
        # ds_consumers counts the releases that began while a task_exit
        # callback slept: e2's must be one.
        raced = [self.rc(f"exitrace/{f}") for f in ("raced.before", "raced")]
        hit = raced[0].isdigit() and raced[1].isdigit() and \
            int(raced[1]) == int(raced[0]) + 1
        ok = self.rc("exitrace/sleepy.rc") == "0" and \
            self.rc("exitrace/release2.rc") == "0" and st.get("exited") == 1
        self.diag(f"e1's task_exit callback {'was' if hit else 'was not'}"
                  f" sleeping at e2's release (raced {raced[0]} -> "
                  f"{raced[1]}); {late} late callbacks")
        return ok and hit and late == "0"

    def c_unload(self):
        """the module unloads after its consumers are released"""
        ok = True
        for f in ("sleepy/release.rc", "resume/release.rc",
                  "arb/release3.rc", "swap/release.rc", "inherit/release.rc",
                  "exitrace/release.rc", "rmmod.rc"):
            if self.rc(f) != "0":
                self.diag(f"{f}: {self.rc(f)}")
                ok = False
        return ok

    CHECKS = ("c_ran", "c_oracle", "c_user_oracle", "c_details",
              "c_stretches",
              "c_filter_task",
              "c_filter_cpu", "c_kinds", "c_ring_task", "c_ring_cpu", "c_switch",
              "c_no_loss", "c_tiny_task", "c_tiny_total", "c_lossless",
              "c_sleepy", "c_flight", "c_feedback", "c_markers", "c_user_only", "c_switch_only_all",
              "c_resume", "c_suspend", "c_arb_perf", "c_arb_attach",
              "c_policy", "c_audit",
              "c_swap", "c_inherit", "c_exit_race", "c_unload")
    # The long tier's phases (BUILD/full).
    LONG_CHECKS = ("c_sysmix",)

    def run(self, name):
        self.diags = []
        try:
            ok = bool(getattr(self, name)())
        except Exception as e:  # a crash is a failure, not the end
            self.diag(f"{type(e).__name__}: {e}")
            ok = False
        return ok, getattr(self, name).__doc__.strip(), self.diags


# --- self-test: each check must fail on data broken for it -----------------

def _mut(c, n):
    """Stream @n of the mutant, as its own copy."""
    c.s[n] = list(c.s[n])
    return c.s[n]


def _drop(c, n, i):
    del _mut(c, n)[i]


def _mut_raw(c, n, edit):
    """Stream @n of the mutant, @edit()ed as the stream held it."""
    raw = list(c.s[n].raw)
    edit(raw)
    c.s[n] = strip_details(raw)


def _insert(c, n, i, r):
    s = _mut(c, n)
    s.insert(len(s) if i is None else i, r)


def _drop_detail(c, n):
    """Stream @n with the detail of its middle KERNEL record gone."""
    s = c.s[n]
    kern = [i for i, r in enumerate(s) if is_type(r, KERNEL)]
    details = list(s.details)
    details[kern[len(kern) // 2]] = None
    c.s[n] = Stream(s, details, s.stray)


def _swap_first_markers(c, n):
    s = _mut(c, n)
    i = [k for k, r in enumerate(s) if is_marker(r)]
    s[i[0]], s[i[1]] = s[i[1]], s[i[0]]


def _tamper(c, n, pred, new, after_marker=False):
    s = _mut(c, n)
    first = next(k for k, r in enumerate(s) if is_marker(r)) \
        if after_marker else 0
    i = next(k for k, r in enumerate(s) if k > first and pred(r))
    s[i] = new(s[i])


def _override(c, path, value):
    c.res_override = {path: value}


def _status(c, n, **kv):
    c.st[n] = dict(c.st[n], **kv)


def _break_kid(c):
    """One jump back of an inherited loop() missing."""
    kids = load_raw(os.path.join(c.res, "inherit", "inh.kids"))
    _, back, _, _ = c._inherit_loop(os.path.join(c.build, "inherit"))
    i, out, done = 0, [], False
    while i < len(kids):
        recs = kids[i + 1:i + 1 + kids[i][2]]
        if not done and back + (0,) in recs:
            at = recs.index(back + (0,)) + 500
            del recs[recs.index(back + (0,), at)]
            done = True
        out += [(0, kids[i][1], len(recs))] + recs
        i += 1 + kids[i][2]
    c.kids = out


def mutant_of(base):
    m = copy.copy(base)
    m.s = dict(base.s)
    m.st = dict(base.st)
    m.oracle = {k: (list(v[0]), v[1]) for k, v in base.oracle.items()}
    return m


def _user_rec(r):
    return not is_pseudo(r[0]) and not kaddr(r[0]) and not kaddr(r[1])


MUTATIONS = {
    "c_ran": lambda c: _override(c, "main/work.rc", "1"),
    "c_oracle": lambda c: c.oracle["sleepy"][0].pop(
        next(i for i, b in enumerate(c.oracle["sleepy"][0])
             if b[1] == c.prog["sleepy"].by_name["step"])),
    "c_user_oracle": lambda c: _drop(
        c, "t_user", next(i for i, r in enumerate(c.s["t_user"])
                          if is_type(r, KERNEL) and i > 10)),
    "c_filter_task": lambda c: _tamper(
        c, "t_kernel", lambda r: is_type(r, USER),
        lambda r: (r[0], r[1], r[2] ^ 8)),
    "c_filter_cpu": lambda c: _tamper(
        c, "cpu_user", lambda r: is_type(r, KERNEL) and r[1],
        lambda r: (pseudo(KERNEL, parg(r[0]) ^ 0x100), r[1], r[2]), True),
    "c_kinds": lambda c: _tamper(
        c, "t_user", lambda r: is_type(r, KERNEL) and
        parg(r[0]) & 0xff == E_INTERRUPT,
        lambda r: (pseudo(KERNEL, E_INTERRUPT | 2 << 8), r[1], r[2])),
    "c_ring_task": lambda c: _mut_raw(c, "t_user_ring", lambda r: r.pop(0)),
    "c_ring_cpu": lambda c: _mut_raw(
        c, "cpu_kernel", lambda raw: raw.pop(
            next(i for i, r in enumerate(raw)
                 if is_marker(r) and marker_of(r) == FENCE) - 1)),
    "c_switch": lambda c: _drop(c, "t_all", len(c.s["t_all"]) // 2),
    "c_no_loss": lambda c: _mut_raw(
        c, "cpu_kernel", lambda r: r.insert(5, (pseudo(LOST), 3, 0))),
    "c_tiny_task": lambda c: _tamper(
        c, "t_tiny", lambda r: is_type(r, LOST),
        lambda r: (r[0], r[1] + 1, r[2])),
    "c_tiny_total": lambda c: _status(c, "cpu_tiny",
                                      lost=c.st["cpu_tiny"]["lost"] + 1),
    "c_lossless": lambda c: _status(c, "t_lossless", throttled=0),
    "c_sysmix": lambda c: _status(c, "x_ll", lost=1),
    "c_sleepy": lambda c: _tamper(c, "s_ll", _user_rec,
                                  lambda r: (r[0], r[1] + 1, r[2])),
    "c_flight": lambda c: _drop(c, "T", len(c.s["T"]) // 2 + 7) or _drop(
        c, "F", next(i for i, r in enumerate(c.s["F"]) if is_marker(r)) - 3),
    "c_feedback": lambda c: _status(c, "fb2", lost=1),
    "c_markers": lambda c: _swap_first_markers(c, "t_lossless"),
    "c_details": lambda c: _drop_detail(c, "t_user"),
    "c_user_only": lambda c: _tamper(
        c, "cpu_user", lambda r: is_type(r, KERNEL) and r[1],
        lambda r: (r[0], r[1] | (1 << 63), r[2])),
    "c_switch_only_all": lambda c: _insert(c, "t_all", None,
                                           (pseudo(SWITCH), 1, 1)),
    "c_resume": lambda c: _insert(
        c, "R", 0,
        (c.prog["resumer"].by_name["before_resume_leaf"], 0x401000, 0)),
    "c_suspend": lambda c: _insert(
        c, "S", None, (c.prog["resumer"].by_name["after_suspend"], 0x401000, 0)),
    "c_arb_perf": lambda c: _override(c, "arb/perf1.rc", "1"),
    "c_arb_attach": lambda c: _override(c, "arb/attach2t.rc", "1"),
    "c_policy": lambda c: _override(c, "policy/kernel.rc", "0"),
    "c_audit": lambda c: _override(c, "main/audit", "0"),
    "c_swap": lambda c: _override(c, "swap/run.rc", "1"),
    "c_stretches": lambda c: _tamper(
        c, "s_ll", lambda r: is_type(r, KERNEL) and
        parg(r[0]) & 0xff == E_SYSCALL and r[1],
        lambda r: (r[0], r[1] + 2, r[2])),
    "c_inherit": _break_kid,
    "c_exit_race": lambda c: _override(c, "exitrace/raced", "0"),
    "c_unload": lambda c: _override(c, "rmmod.rc", "1"),
}


class MutantChecks(Checks):
    res_override = {}

    def rc(self, path):
        return self.res_override.get(path, super().rc(path))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    self_test = "--self-test" in sys.argv
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    # The plan first: the run script fails a check.py that stops before
    # printing one result per check (a crash in the set-up included).
    checks = Checks.CHECKS
    if read(os.path.join(args[1], "full"), "") == "y":
        checks += Checks.LONG_CHECKS
    print(f"1..{len(checks)}", flush=True)
    base = MutantChecks(*args)
    failed = 0
    for name in checks:
        ok, desc, diags = base.run(name)
        if self_test:
            if not ok:
                # A check that fails anyway proves nothing here.
                print(f"ok - self-test: {desc} # SKIP fails on the real data")
                continue
            mutant = mutant_of(base)
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
            continue
        print(f"{'ok' if ok else 'not ok'} - {desc}")
        for d in diags:
            print(f"#   {d}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
