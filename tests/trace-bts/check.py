# SPDX-License-Identifier: GPL-2.0
"""Check the bts tracer's runs (tests/trace-bts/guest.sh) on the host.

    check.py RESULTS [--self-test]

Prints TAP.  With --self-test, breaks the results in each way a check
looks for and expects that check to fail.
"""

import json
import os
import re
import subprocess
import sys

from taplib import read_in, results, tap

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
from perf_samples import perf_samples  # noqa: E402
from perf_samples import self_test as perf_samples_self_test  # noqa: E402

RES = sys.argv[1]
CPU = 1
CHAIN_CALLS = [("bts_chain_write", "bts_chain_a"), ("bts_chain_a", "bts_chain_b"),
               ("bts_chain_b", "bts_chain_c"), ("bts_chain_b", "bts_chain_c"),
               ("bts_chain_b", "bts_chain_c")]
LINE = re.compile(r"^\s*(\d+)\s+(\?|-?\d+/-?\d+)\s+(.*)$")
# The tracer's %pS, and libtraceevent's (trace-cmd report), with no size.
KSYM = re.compile(r"^([A-Za-z0-9_.]+)\+0x([0-9a-f]+)(/0x[0-9a-f]+)?( \[\w+\])?$")
# A bts event as trace-cmd report prints it with the format's print fmt.
REPORT = re.compile(r"^\s*(.+)-(\d+)\s+\[(\d+)\]\s+[\d.]+:\s+bts:\s+"
                    r"cpu=(\d+) tid=(-?\d+) tgid=(-?\d+) (\S+) -> (\S+) "
                    r"flags=0x[0-9a-f]+$")
SNAPSHOT = re.compile(r"snapshot: CPU (\d+)'s last (\d+) records follow")



def read(name, default=""):
    return read_in(RES, name, default)


class Rec:
    """One line of the bts tracer's output."""

    def __init__(self, cpu, task, text):
        self.cpu, self.task, self.text = cpu, task, text
        self.src = self.dst = None
        if " -> " in text and not text.startswith("--"):
            self.src, self.dst = text.split(" -> ", 1)

    def tid(self):
        return None if self.task == "?" else int(self.task.split("/")[0])


def parse(text):
    recs = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = LINE.match(line)
        if m:
            recs.append(Rec(int(m.group(1)), m.group(2), m.group(3)))
    return recs


def from_report(text):
    """trace-cmd report's bts events in the tracer's own format (trace),
    and the events whose common_pid is not their thread's."""
    lines, wrong_pid = [], []
    for line in text.splitlines():
        m = REPORT.match(line)
        if not m:
            continue
        pid, cpu, tid, tgid = (int(m.group(i)) for i in (2, 4, 5, 6))
        ends = []
        for addr in (m.group(7), m.group(8)):
            if re.match(r"^(0x)?[0-9a-f]+$", addr) and int(addr, 16) < 1 << 47:
                addr = "[user] 0x%x" % int(addr, 16)
            ends.append(addr)
        if tid >= 0 and pid != tid:
            wrong_pid.append(line)
        lines.append("%3d %s %s -> %s" % (
            cpu, "%d/%d" % (tid, tgid) if tid >= 0 else "?", ends[0], ends[1]))
    return "\n".join(lines) + "\n", wrong_pid


def from_plugin(text):
    """trace-cmd report's bts events as plugin_bts shows them: the
    tracer's own lines, after the event's name or on lines of their own
    (a chunk's records after the first); and how many chunks."""
    lines, chunks = [], 0
    for line in text.splitlines():
        m = re.search(r"\s(bts|bts_chunk):\s+(.*)$", line)
        if m:
            chunks += m.group(1) == "bts_chunk"
            line = m.group(2)
        if LINE.match(line):
            lines.append(line)
    return "\n".join(lines) + "\n", chunks


def ksym(addr):
    """(function, offset) of a symbolized kernel address, else None."""
    m = KSYM.match(addr or "")
    return (m.group(1), int(m.group(2), 16)) if m else None


def user(addr):
    return int(addr[len("[user] "):], 16) \
        if addr and addr.startswith("[user] ") else None


def chain_info(name):
    """chain.c's tid and the addresses of user_a and user_b."""
    m = re.search(r"tid (\d+) user_a 0x([0-9a-f]+) user_b 0x([0-9a-f]+)",
                  read(name + ".out"))
    return (int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16)) \
        if m else (None, None, None)


def kernel_calls(recs):
    """(index, caller, callee) of the calls between bts_chain functions."""
    out = []
    for i, r in enumerate(recs):
        s, d = ksym(r.src), ksym(r.dst)
        if s and d and s[0].startswith("bts_chain") and \
                d[0].startswith("bts_chain") and d[1] == 0 and s[0] != d[0]:
            out.append((i, s[0], d[0]))
    return out


def user_calls(recs, a, b, tid=None):
    """Indexes of the calls from user_a to user_b (by @tid, if given)."""
    return [i for i, r in enumerate(recs)
            if user(r.dst) == b and user(r.src) is not None and
            a <= user(r.src) < b + 0x100 and (tid is None or r.tid() == tid)]


def check_chain(name, want_user=True, want_kernel=True, trace=None):
    """The kernel chain in order on CPU 1, the user chain before it."""
    tid, a, b = chain_info(name)
    recs = [r for r in parse(trace if trace is not None else
                             read(name + ".trace")) if r.cpu == CPU]
    problems = []
    if read(name + ".rc").strip() != "0" or tid is None:
        problems.append("chain exited %s: %s" % (read(name + ".rc").strip(),
                                                 read(name + ".err")))
    kc = kernel_calls(recs)
    uc = user_calls(recs, a or 0, b or 0, tid)
    if want_kernel and [(c, d) for _, c, d in kc] != CHAIN_CALLS:
        problems.append("kernel calls on CPU %d: %s" % (
            CPU, [(c, d) for _, c, d in kc]))
    if not want_kernel and kc:
        problems.append("kernel calls in a user-only trace: %s" % kc)
    if want_user and len(uc) != 3:
        problems.append("%d calls user_a -> user_b by %s on CPU %d" % (
            len(uc), tid, CPU))
    if not want_user and uc:
        problems.append("user calls in a kernel-only trace")
    if want_user and want_kernel and uc and kc and uc[-1] > kc[0][0]:
        problems.append("the user calls come after the kernel chain")
    # Every recorder, of one side or both, sees the task switches.
    if want_kernel and kc and \
            any(recs[i].tid() != tid for i, _, _ in kc):
        problems.append("the kernel chain is not the chain's thread's (%s)"
                        % [recs[i].task for i, _, _ in kc])
    return problems, recs


def check_continuous(pipe, stats):
    """CPU 1's stream: the chains, nothing lost on the way."""
    problems, recs = check_chain("cont", trace=pipe)
    # Turning the option on copied the ring first: "not kept" is its own.
    problems += [r.text for r in recs if "fell behind" in r.text][:5]
    overrun = re.search(r"^overrun: (\d+)$", stats, re.M)
    if not overrun or overrun.group(1) != "0":
        problems.append("the ftrace buffer overran: %s" % stats)
    if len(recs) < 10000:
        problems.append("only %d records streamed" % len(recs))
    return problems, len(recs)


FELL_BEHIND = re.compile(r"^-- (\d+) records lost: the recorder fell behind$")
BTS_STATS = re.compile(r"^cpu%d produced (\d+) lost (\d+) pending (\d+)$" % CPU,
                       re.M)


def check_lost(pipe, stats, bts_stats):
    """CPU 1's stream when it fell behind: its lines count exactly the
    records the layer lost, and it goes on after them."""
    problems = []
    recs = [r for r in parse(pipe) if r.cpu == CPU]
    losses = [(i, int(m.group(1))) for i, m in
              ((i, FELL_BEHIND.match(r.text)) for i, r in enumerate(recs)) if m]
    m = BTS_STATS.search(bts_stats)
    if not m:
        return ["no counters of CPU %d in bts_stats: %r" % (CPU, bts_stats)], 0
    lost, pending = int(m.group(2)), int(m.group(3))
    in_stream = sum(n for _, n in losses)
    if not lost or in_stream != lost:
        problems.append("the stream's lines count %d lost records, the "
                        "layer %d" % (in_stream, lost))
    if pending:
        problems.append("%d records still in the stream" % pending)
    # Where the loss line goes depends on when the stream had room again:
    # during the spin or after it.
    if not any(ksym(r.dst) and ksym(r.dst)[0] == "bts_chain_step"
               for r in recs):
        problems.append("no call of bts_chain_step() in the stream")
    if losses and not any(r.dst for r in recs[losses[-1][0] + 1:]):
        problems.append("no branch after the last loss")
    overrun = re.search(r"^overrun: (\d+)$", stats, re.M)
    if not overrun or overrun.group(1) != "0":
        problems.append("the ftrace buffer overran: %s" % stats)
    return problems, lost


# Where an interrupt or NMI returns from: native_irq_return_iret's iretq,
# the NMI's own at the end of asm_exc_nmi.
IRET = ("native_irq_return_iret", "asm_exc_nmi")


def back_into_chain(r):
    """@r is an interrupt's or NMI's return into the module's chain."""
    s, d = ksym(r.src), ksym(r.dst)
    return bool(s and d and s[0] in IRET and d[0].startswith("bts_chain_"))


def third_call_site(recs):
    """Where bts_chain_b() makes its third call of bts_chain_c(), (function,
    offset), from a trace of the whole chain."""
    kc = kernel_calls(recs)
    return ksym(recs[kc[-1][0]].src) if len(kc) == len(CHAIN_CALLS) else None


def check_snapshot(text, third, min_records=500):
    """The snapshot's records: the module's chain up to the third call of
    bts_chain_c() (made from @third), which fired the trigger, and no return
    from it.  An interrupt or NMI in the chain can take enough of the 1024
    records that only the end of the chain is left: then one returns into
    the chain before what is left.  A snapshot of the 1024-record ring has
    @min_records of the CPU's at least."""
    heads = [m for m in (SNAPSHOT.search(l) for l in text.splitlines()) if m]
    recs = [r for r in parse(text) if r.cpu == CPU]
    problems = []
    if len(heads) != 1 or heads[0].group(1) != str(CPU) or \
            heads[0].group(2) != "1024":
        problems.append("snapshot lines: %s" % [m.group(0) for m in heads])
    kc = kernel_calls(recs)
    calls = [(c, d) for _, c, d in kc]
    cut = kc and calls != CHAIN_CALLS and \
        calls == CHAIN_CALLS[len(CHAIN_CALLS) - len(calls):] and \
        any(back_into_chain(r) for r in recs[:kc[0][0]])
    if calls != CHAIN_CALLS and not cut:
        problems.append("calls in the snapshot: %s" % calls)
    if kc and (third is None or ksym(recs[kc[-1][0]].src) != third):
        problems.append("the last call is not the third (%s): %s" % (
            third, recs[kc[-1][0]].src))
    # The third call is a tail call (a jmp): its return goes to a().
    back = [i for i, r in enumerate(recs)
            if (ksym(r.src) or ("",))[0] == "bts_chain_c" and
            (ksym(r.dst) or ("",))[0] in ("bts_chain_a", "bts_chain_b")]
    if kc and back and back[-1] > kc[-1][0]:
        problems.append("the snapshot goes on after the third call returned")
    if len(recs) < min_records:
        problems.append("only %d records in the snapshot" % len(recs))
    return problems


def no_addresses(recs, kernel):
    """Lines with an address of the side the trace must not show."""
    bad = []
    for r in recs:
        for addr in re.findall(r"\[user\] 0x[0-9a-f]+|\S+\+0x[0-9a-f]+/0x[0-9a-f]+",
                               r.text):
            is_user = addr.startswith("[user]")
            if is_user == kernel:
                bad.append("%s %s %s" % (r.cpu, r.task, r.text))
                break
    return bad


def branches(text):
    out = []
    for line in text.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            return None
        if r.get("kind") == "branch":
            out.append((r.get("from"), r.get("to")))
    return out


def perf_branches(path, tid):
    """@tid's user-to-user branches in perf's branches:u samples at @path
    (a crossing has its kernel end zeroed) since it exec'd chain (before,
    it ran bts-dump's child), each once (perf_samples.py), or an error's
    text."""
    try:
        samples, _, err = perf_samples(path, ["--tid", str(tid), "--comms",
                                              "chain"])
    except (OSError, ValueError, subprocess.TimeoutExpired,
            RuntimeError) as e:
        return None, str(e)
    return [(src, dst) for t, _, src, dst in samples
            if t == tid and src and dst], err


def dump_branches(jsonl):
    """bts-dump's branches in @jsonl, and how many of them came before
    chain's sched_setaffinity(), which moved it to CPU 1."""
    out, moved = [], None
    for line in jsonl.splitlines():
        r = json.loads(line)
        if r.get("kind") == "branch":
            out.append((int(r["from"], 16), int(r["to"], 16)))
        elif r.get("syscall") == "sched_setaffinity" and moved is None:
            moved = len(out)
    return out, moved


def write_calls(jsonl, perf, dump):
    """Which of two traces of chain is wrong: the calls of write() in each,
    against the writes chain counted (its copy's, and three more: its two
    printf()s and the chain's trigger)."""
    m = re.search(r"^writes (\d+)$", read("together.out"), re.M)
    entry = {int(r["to"], 16) for r in map(json.loads, jsonl.splitlines())
             if r.get("to_sym") in ("write", "__libc_write")}
    return "chain made %s writes; calls of write(): %d by perf's, %d by " \
        "bts-dump's" % (int(m.group(1)) + 3 if m else "?",
                        sum(d in entry for _, d in perf),
                        sum(d in entry for _, d in dump))


def check_together(trace, jsonl, perf):
    """One run of chain, three consumers at once: bts-dump's branches
    (@jsonl), perf's (@perf, from perf_branches()) and the recorder's user
    branches of chain's thread in @trace, on CPU 0 until chain moved
    itself to CPU 1, then there.  The recorder's are one run of
    bts-dump's, its oldest perhaps overwritten (CPU 0 went on with perf
    and bts-dump); perf's are bts-dump's."""
    problems = []
    tid, a, b = chain_info("together")
    if read("together.rc").strip() != "0" or tid is None:
        return ["perf record -- bts-dump -- chain exited %s: %s" % (
            read("together.rc").strip(), read("together.err")[-500:])]
    if re.search(r"lost|gaps", read("together.err"), re.I):
        problems.append("perf lost samples: %s" % read("together.err")[-300:])
    try:
        dump, moved = dump_branches(jsonl)
    except (ValueError, KeyError) as e:
        return problems + ["bts-dump's output: %s" % e]
    got, err = perf
    if got is None:
        problems.append("perf script failed: %s" % err)
    elif got != dump:
        first = next((i for i, (p, d) in enumerate(zip(got, dump)) if p != d),
                     min(len(got), len(dump)))
        problems.append("perf's %d branches are not bts-dump's %d: first "
                        "difference at %d; %s" % (len(got), len(dump), first,
                                                  write_calls(jsonl, got, dump)))
    recs = [r for r in parse(trace) if r.tid() == tid and
            user(r.src) is not None and user(r.dst) is not None]
    cpu0 = [(user(r.src), user(r.dst)) for r in recs if r.cpu == 0]
    cpu1 = [(user(r.src), user(r.dst)) for r in recs if r.cpu == CPU]
    if len(user_calls([r for r in recs if r.cpu == CPU], a, b, tid)) != 3:
        problems.append("the recorder's CPU 1 lacks chain's three user calls")
    if moved is None or not cpu1 or \
            cpu1 != dump[moved:moved + len(cpu1)] or \
            cpu0 != dump[moved - len(cpu0):moved]:
        problems.append("the recorder's %d and %d branches of chain on CPU 0 "
                        "and 1 are not bts-dump's around its move to CPU 1 "
                        "(after %s of %d)" % (len(cpu0), len(cpu1), moved,
                                              len(dump)))
    return problems


RAW = re.compile(r"^(\[user\] )?0x[0-9a-f]+ -> (\[user\] )?0x[0-9a-f]+$")


def check_ring(recs, n):
    """CPU 1's first copy with the default N, in raw form (bts-raw): tap()'s
    arguments."""
    not_kept = [r for r in recs if "older records not kept" in r.text]
    others = [r for r in recs if r.cpu != CPU]
    symbolized = [r.text for r in recs
                  if not r.text.startswith("--") and not RAW.match(r.text)]
    return (n == 2048 and len(not_kept) == 1 and recs and
            recs[0] is not_kept[0] and len(recs) - 1 == n and not others and
            not symbolized,
            "default N=%d: the first copy of CPU 1 is exactly its last N "
            "records after one 'not kept' line (%d lines), addresses only "
            "(bts-raw)" % (n, len(recs) - 1),
            "%d 'not kept' lines, %d of other CPUs, not raw: %s" % (
                len(not_kept), len(others), symbolized[:3]))


def run_checks(res):
    meltdown = read("meltdown")
    affected = "Not affected" not in meltdown
    if affected:
        tap(read("refused.rc").strip() not in ("", "0") and
            "bts_kernel_recording" in read("refused.log"),
            "kernel recording off on a Meltdown-affected CPU: the tracer is "
            "refused, the log names kernel.bts_kernel_recording",
            read("refused.err") + read("refused.log"))
    else:
        tap(read("refused.rc").strip() == "0",
            "a CPU Meltdown does not affect records without an opt-in")
    tap(read("current_tracer").strip() == "bts", "echo bts > current_tracer",
        read("current_tracer"))
    tap(read("dump_records").strip() == "64",
        "a crash dump shows 64 records unless told otherwise (bts_dump_records)",
        read("dump_records"))
    problems, _ = check_chain("big")
    tap(not problems, "N=65536: CPU 1 shows the user chain, then the module's "
        "chain, in order, by the chain's thread", "\n".join(problems))

    recs = [r for r in parse(read("ring.trace"))]
    n = int(read("ring.n", "0").strip() or 0)
    tap(*check_ring(recs, n))

    problems, recs = check_chain("user", want_kernel=False)
    bad = no_addresses(parse(read("user.trace")), kernel=False)
    tap(not problems and not bad and read("user.option").strip() == "0",
        "options/bts-kernel off: the user chain by the chain's thread, no kernel address on any CPU",
        "\n".join(problems + bad[:5]))
    problems, recs = check_chain("kernel", want_user=False)
    bad = no_addresses(parse(read("kernel.trace")), kernel=True)
    tap(not problems and not bad,
        "options/bts-user off: the module's chain by the chain's thread, no user address on any CPU",
        "\n".join(problems + bad[:5]))

    problems, _ = check_chain("beside")
    tap(not problems, "beside bts-dump on the same CPU: the chains, in order",
        "\n".join(problems))
    alone, beside = branches(read("alone.jsonl")), branches(read("beside.jsonl"))
    tap(read("alone.rc").strip() == "0" and
        read("beside.dump.rc").strip() == "0" and alone and
        alone == beside,
        "bts-dump beside the tracer: the same %d branches as alone"
        % len(alone or []),
        "alone %s (exit %s), beside %s (exit %s)" % (
            len(alone or []), read("alone.rc").strip(),
            len(beside or []), read("beside.dump.rc").strip()))
    perf = perf_branches(os.path.join(RES, "together.data"),
                         chain_info("together")[0] or 0)
    problems = check_together(read("together.trace"), read("together.jsonl"),
                              perf)
    tap(not problems,
        "the recorder, perf branches:u and bts-dump on one run of chain: "
        "perf's branches are bts-dump's, the recorder's one run of them",
        "\n".join(problems))
    problems, _ = check_chain("hotplug")
    tap(not problems, "CPU 1 offline and online again: it records the chains",
        "\n".join(problems))

    problems, n = check_continuous(read("cont.pipe"), read("cont.stats"))
    m = BTS_STATS.search(read("cont.bts_stats"))
    if not m or m.group(2) != "0":
        problems.append("bts_stats: %r" % read("cont.bts_stats"))
    tap(read("cont.option").strip() == "1" and not problems,
        "options/bts-continuous: CPU 1's trace_pipe streams the chains, in "
        "order, by the chain's thread; the stream never fell behind, the "
        "buffer never overran (%d records)" % n, "\n".join(problems))
    problems, n = check_lost(read("lost.pipe"), read("lost.stats"),
                             read("lost.bts_stats"))
    tap(read("lost.rc").strip() == "0" and not problems,
        "continuous, CPU 1 calling with interrupts off: the stream fell "
        "behind, its lines count the records lost as the layer does "
        "(bts_stats: %d), it goes on after them, the buffer never overran"
        % n, "\n".join(problems + [read("lost.err")]))

    _, big = check_chain("big")
    problems = check_snapshot(read("snapshot.trace"), third_call_site(big))
    trigger = read("snapshot.trigger").strip()
    tap(read("snapshot.rc").strip() == "0" and
        trigger == "bts_snapshot:unlimited if i == 2" and not problems,
        "bts_snapshot if i == 2 on bts_chain_c: one snapshot on CPU 1, its "
        "last 1024 records end in the chain's third call",
        "\n".join(problems + ["trigger: %r" % trigger]))

    report, wrong_pid = from_report(read("tracecmd.report.out"))
    problems, _ = check_chain("tracecmd", trace=report)
    tap(read("tracecmd.report.rc").strip() == "0" and not problems and
        not wrong_pid,
        "trace-cmd record -p bts, trace-cmd report: the chains on CPU 1, "
        "each event's common_pid its thread",
        "\n".join(problems + wrong_pid[:3] +
                  read("tracecmd.err").splitlines()[-5:] +
                  read("tracecmd.report.err").splitlines()[-5:]))

    problems = []
    for name in ("tracecmd", "tracecmd.cont"):
        text, chunks = from_plugin(read(name + ".plugin.out"))
        problems += ["%s: %s" % (name, p) for p in
                     check_chain(name, trace=text)[0]]
        if (name == "tracecmd.cont") != (chunks > 0):
            problems.append("%s: %d chunks" % (name, chunks))
        if read(name + ".plugin.rc").strip() != "0":
            problems.append("%s: report exit %s" % (name, read(name + ".plugin.rc")))
    tap(not problems,
        "trace-cmd report with plugin_bts: the chains, from the ring's "
        "copy and from -O bts-continuous's chunks",
        "\n".join(problems + read("tracecmd.cont.err").splitlines()[-5:]))

    tap(read("loop.out", "(missing)") == "" and
        read("done").strip() == "done",
        "start, stop and switch the tracer 20 times", read("loop.out"))
    tap(read("loop-plant.rc").strip() not in ("", "0") and
        "refused" in read("loop-plant.out"),
        "self-test: a refused switch of tracer fails the round",
        read("loop-plant.out"))


DUMP_START = re.compile(r"bts: the last (\d+) branches of CPU (\d+) "
                        r"(?:before the (\w+)|(stopped) by the panic), "
                        r"oldest first:")
DUMP_END = re.compile(r"bts: end of CPU (\d+)'s branches")


def crash_dump(log, why, cpu=CPU):
    """The records of the first dump of @cpu before @why ("oops",
    "panic"; "stopped": stopped by the panic) in a serial log, as Rec
    objects, and the count its header gives; ([], None) if none."""
    recs, n, inside = [], None, False
    for line in log.splitlines():
        line = re.sub(r"^\[[ 0-9.]+\] ", "", line)
        m = DUMP_START.search(line)
        if m and int(m.group(2)) == cpu and why in m.group(3, 4) and \
                n is None:
            n, inside = int(m.group(1)), True
            continue
        if inside and DUMP_END.search(line):
            break
        if inside and line.startswith("bts: "):
            recs.append(Rec(cpu, "?", line[len("bts: "):]))
    return recs, n


def check_crash_dump(what, log):
    """The path into the crash, in order, ending where the ring froze."""
    recs, n = crash_dump(log, what)
    problems = []
    if n is None:
        return ["no dump of CPU %d before the %s" % (CPU, what)]
    branches = [r for r in recs if r.src]
    if n > 512 or n < 400:
        problems.append("the dump has %d records, 512 asked for" % n)
    calls = [(c, d) for _, c, d in kernel_calls(recs)]
    funcs = [(ksym(r.src) or ("",))[0] + " -> " + (ksym(r.dst) or ("",))[0]
             for r in branches]
    if what == "oops":
        want = CHAIN_CALLS[1:] + [("bts_chain_oops_write", "bts_chain_crash")]
        if calls[-len(want):] != want:
            problems.append("chain calls in the dump: %s" % calls)
        fault = [i for i, f in enumerate(funcs)
                 if f == "bts_chain_crash -> asm_exc_page_fault"]
        if not fault:
            problems.append("no fault from bts_chain_crash in the dump")
    else:
        into = [i for i, f in enumerate(funcs) if f.endswith("-> sysrq_handle_crash")]
        panic = [i for i, f in enumerate(funcs)
                 if f.endswith("-> panic") or f.endswith("-> vpanic")]
        if not into or not panic or panic[-1] < into[-1]:
            problems.append("no call into sysrq_handle_crash, then panic "
                            "(%s, %s)" % (into, panic))
    # The ring ends in the call that froze it: from oops_begin() into
    # ds_freeze_local(), or into arch_panic_begin() (ds_freeze_local()
    # inlined), and the freeze's own branches up to its WRMSR: into the
    # state machine and, through its ops (an indirect call, with the
    # mitigations' thunks), the DEBUGCTL write.
    entry = "ds_freeze_local" if what == "oops" else "arch_panic_begin"
    freeze = ("ds_freeze_local", "arch_panic_begin", "ds_state_freeze",
              "ds_hw_write")

    def in_freeze(func):
        return func in freeze or func.startswith("__x86_indirect_thunk") \
            or func.endswith("_return_thunk")
    calls_in = [i for i, f in enumerate(funcs) if f.endswith("-> " + entry)]
    after = [f for f in funcs[calls_in[-1] + 1:]] if calls_in else []
    if not calls_in or len(after) > 10 or \
            any(not in_freeze(f.split(" -> ")[0]) or
                not in_freeze(f.split(" -> ")[1]) for f in after):
        problems.append("the ring does not end with the call into %s and "
                        "the freeze: %s" % (entry, funcs[-6:]))
    return problems


def check_stopped_dump(log):
    """The other CPU's dump in a panic: its last branches, read after
    panic() stopped it, end in the stop (stop_this_cpu())."""
    other = 1 - CPU
    recs, n = crash_dump(log, "stopped", other)
    if n is None:
        return ["no dump of CPU %d stopped by the panic" % other]
    funcs = [(ksym(r.src) or ("",))[0] + " -> " + (ksym(r.dst) or ("",))[0]
             for r in recs if r.src]
    problems = []
    if n > 512 or n < 400:
        problems.append("the dump has %d records, 512 asked for" % n)
    if not any(f.endswith("-> stop_this_cpu") for f in funcs[-64:]):
        problems.append("no call into stop_this_cpu among its last "
                        "branches: %s" % funcs[-6:])
    return problems


def check_ftrace_dump(log):
    """With ftrace_dump_on_oops, the ftrace buffer the oops dumps holds the
    crashing CPU's last records too: after the tracer's line that says so,
    the module's call into bts_chain_c()."""
    start = log.find("Dumping ftrace buffer")
    m = re.compile(r"oops: CPU 1's last (\d+) records follow").search(log, max(start, 0))
    if start < 0 or not m:
        return ["no ftrace dump with the oops's records (%s, %s)" % (
            start >= 0, bool(m))]
    end = log.find("-" * 33, m.end())
    if "-> bts_chain_c+0x0/" not in log[m.end():end if end > 0 else None]:
        return ["the ftrace dump's records lack the call into bts_chain_c"]
    return []


def crash_checks():
    oops_log = read("oops/serial.log")
    problems = check_crash_dump("oops", oops_log)
    # The runner passed the oops's own reports, and no other (exit 126);
    # the writer's shell died of it, guest-crash.sh went on and ended.
    tap(read("oops/vm.rc").strip() == "0" and not problems,
        "an oops on CPU 1: the console shows its last branches, the chain, "
        "the fault in bts_chain_crash, up to the freeze in oops_begin()",
        "\n".join(problems + ["VM exit %s" % read("oops/vm.rc").strip()]))
    problems = check_ftrace_dump(oops_log)
    tap(not problems, "the oops with ftrace_dump_on_oops: the ftrace dump "
        "holds CPU 1's last records, the chain among them",
        "\n".join(problems))
    problems = check_crash_dump("panic", read("panic/serial.log"))
    # The panic's report alone (else 126), and no status: it ended the VM.
    tap(read("panic/vm.rc").strip() == "125" and not problems,
        "sysrq-c on CPU 1: the console shows its last branches, into "
        "sysrq_handle_crash and panic(), up to the freeze",
        "\n".join(problems + ["VM exit %s" % read("panic/vm.rc").strip()]))
    problems = check_stopped_dump(read("panic/serial.log"))
    tap(not problems,
        "sysrq-c on CPU 1: then CPU 0's last branches, read once panic() "
        "stopped it, ending in the stop", "\n".join(problems))


def self_test():
    """Each check fails on results broken its way."""
    saved = results[:]
    del results[:]
    big = read("big.trace")
    lines = big.splitlines()
    calls = [i for i, l in enumerate(lines) if "-> bts_chain_c+0x0/" in l]
    broken = {
        "a call of the chain dropped":
            "\n".join(l for i, l in enumerate(lines) if i != (calls or [-1])[0]),
        "the chain on another CPU":
            "\n".join(re.sub(r"^(\s*)1 ", r"\g<1>0 ", l) for l in lines),
    }
    missed = []

    def caught(what, fails):
        """Count @what as missed unless the check failed on it."""
        if not fails:
            missed.append(what)
    for what, text in broken.items():
        problems, _ = check_chain("big", trace=text)
        print("#   self-test, %s: %s" % (what, "; ".join(problems)[:200]))
        caught(what, problems)
    bad = no_addresses(parse("  1 ? [user] 0x401000 -> do_syscall_64+0x5/0x100\n"),
                       kernel=False)
    caught("a kernel address in a user-only trace", bad)
    snap = read("snapshot.trace").splitlines()
    recs = parse("\n".join(snap))
    kc = kernel_calls(recs)
    third = [i for i, l in enumerate(snap) if "-> bts_chain_c+0x0/" in l][-1:]
    ret = "  1 ? bts_chain_c+0x20/0x30 -> bts_chain_b+0x1c/0x40"
    # The chain as the big run recorded it, after the snapshot's records
    # before its chain: with or without its call of bts_chain_b().
    _, big = check_chain("big")
    bkc = kernel_calls(big)
    chain = ["%3d ? %s" % (r.cpu, r.text) for r in
             big[bkc[0][0]:bkc[-1][0] + 1]] if bkc else []
    head = snap[:1] + ["%3d ? %s" % (r.cpu, r.text)
                       for r in recs[:kc[0][0]]] if kc else []
    whole = head + chain
    no_b = head + [l for l in chain if "-> bts_chain_b+0x0/" not in l]
    # Made of two runs' records, it has no ring's size: only the chain
    # is checked (a short head and chain made this fail by size alone).
    problems = check_snapshot("\n".join(whole), third_call_site(big), 0)
    print("#   self-test, a snapshot made of the big run's chain: %s" %
          "; ".join(problems)[:200])
    if problems or not chain:
        missed.append("(must pass) a snapshot made of the big run's chain")
    for what, text, min_records in (
            ("the third call dropped",
             [l for i, l in enumerate(snap) if i not in third], 500),
            ("a return after it", snap + [ret], 500),
            ("a second snapshot",
             snap + [l for l in snap if SNAPSHOT.search(l)], 500),
            ("the chain's first call dropped, no return into the chain",
             [l for i, l in enumerate(snap)
              if i != (kc[0][0] + 1 if kc else -1) and
              not any(back_into_chain(r) for r in parse(l))], 500),
            ("the call of bts_chain_b() dropped from the big run's chain",
             no_b, 0)):
        problems = check_snapshot("\n".join(text), third_call_site(big),
                                  min_records)
        print("#   self-test, snapshot with %s: %s" % (what, "; ".join(problems)[:200]))
        caught('snapshot with ' + what, problems)
    pipe, stats = read("lost.pipe"), read("lost.stats")
    bts_stats = read("lost.bts_stats")
    lines = pipe.splitlines()
    loss = [i for i, l in enumerate(lines) if "fell behind" in l][:1]
    last_loss = [i for i, l in enumerate(lines) if "fell behind" in l][-1:]
    for what, text, st, bst in (
            ("a loss line dropped",
             "\n".join(l for i, l in enumerate(lines) if i not in loss),
             stats, bts_stats),
            ("a loss miscounted", re.sub(r"-- (\d+) records lost",
                                         lambda m: "-- %d records lost" %
                                         (int(m.group(1)) + 1), pipe, 1),
             stats, bts_stats),
            ("the layer losing none", pipe, stats,
             re.sub(r"(cpu1 produced \d+) lost \d+", r"\1 lost 0", bts_stats)),
            ("records left in the stream", pipe, stats,
             re.sub(r"(cpu1 .*) pending \d+", r"\1 pending 3", bts_stats)),
            ("the stream ending at the last loss", "\n".join(
                lines[:last_loss[0] + 1] if last_loss else lines), stats,
             bts_stats),
            ("no call of bts_chain_step()", "\n".join(
                l for l in lines if "-> bts_chain_step+" not in l), stats,
             bts_stats)):
        problems, _ = check_lost(text, st, bst)
        print("#   self-test, falling behind with %s: %s" % (what, "; ".join(problems)[:200]))
        caught('falling behind with ' + what, problems)
    pipe, stats = read("cont.pipe"), read("cont.stats")
    kcall = [i for i, l in enumerate(pipe.splitlines()) if " -> bts_chain_a+0x0/" in l][:1]
    for what, text, st in (
            ("the chain's call dropped",
             "\n".join(l for i, l in enumerate(pipe.splitlines()) if i not in kcall),
             stats),
            ("a record lost", pipe + "  1   1/1   -- 5 records lost: the recorder fell behind\n",
             stats),
            ("an overrun", pipe, stats.replace("overrun: 0", "overrun: 7"))):
        problems, _ = check_continuous(text, st)
        print("#   self-test, continuous with %s: %s" % (what, "; ".join(problems)[:200]))
        caught('continuous with ' + what, problems)
    oops = read("oops/serial.log")
    m = re.search(r"oops: CPU 1's last \d+ records follow", oops)
    for what, log in (
            ("no ftrace dump", oops.replace("Dumping ftrace buffer", "")),
            ("no chain in it", oops[:m.end()] + re.sub(
                r"-> bts_chain_c\+0x0/", "-> bts_chain_x+0x0/",
                oops[m.end():]) if m else "")):
        problems = check_ftrace_dump(log)
        print("#   self-test, the oops with %s: %s" % (what, "; ".join(problems)[:200]))
        caught('the oops with ' + what, problems)
    ring = parse(read("ring.trace"))
    n = int(read("ring.n", "0").strip() or 0)
    for what, recs in (
            ("a record dropped", ring[:-1]),
            ("a record symbolized",
             ring[:-1] + [Rec(CPU, "?", "do_syscall_64+0x5/0x100 -> "
                              "0xffffffff81000000")])):
        bad = not check_ring(recs, n)[0]
        print("#   self-test, the raw ring with %s: %s" % (what, "fails" if bad else "passes"))
        caught("the raw ring with " + what, bad)
    trace, jsonl = read("together.trace"), read("together.jsonl")
    perf = perf_branches(os.path.join(RES, "together.data"),
                         chain_info("together")[0] or 0)
    tid = chain_info("together")[0]
    mine = [i for i, l in enumerate(trace.splitlines())
            if re.match(r"^\s*1\s+%s/" % tid, l) and "[user]" in l and
            " -> [user]" in l and l.split(" -> ")[0].split()[-2] == "[user]"]
    middle = mine[len(mine) // 2:len(mine) // 2 + 1]
    for what, args in (
            ("a branch of chain dropped from the recorder's CPU 1",
             ("\n".join(l for i, l in enumerate(trace.splitlines())
                        if i not in middle), jsonl, perf)),
            ("a branch dropped from perf's",
             (trace, jsonl, (perf[0][:-1] if perf[0] else None, perf[1]))),
            ("five of perf's branches twice",
             (trace, jsonl, (perf[0][:100] + perf[0][95:] if perf[0] else None,
                             perf[1]))),
            ("chain's branches on CPU 1 given to CPU 0",
             (re.sub(r"(?m)^(\s*)1(\s+%s/)" % tid, r"\g<1>0\2", trace),
              jsonl, perf))):
        problems = check_together(*args)
        print("#   self-test, together with %s: %s" % (what, "; ".join(problems)[:200]))
        caught('together with ' + what, problems)
    plugin = read("tracecmd.cont.plugin.out").splitlines()
    calls = [i for i, l in enumerate(plugin)
             if re.search(r" -> bts_chain_b\+0x0( |$)", l)][:1]
    text, _ = from_plugin("\n".join(l for i, l in enumerate(plugin) if i not in calls))
    problems, _ = check_chain("tracecmd.cont", trace=text)
    print("#   self-test, plugin's report with a call dropped: %s" % "; ".join(problems)[:200])
    caught("plugin's report with a call dropped", problems)
    report = read("tracecmd.report.out").splitlines()
    calls = [i for i, l in enumerate(report) if " -> bts_chain_c+0x0 " in l][:1]
    for what, text in (
            ("a call of the chain dropped",
             [l for i, l in enumerate(report) if i not in calls]),
            ("a pid not the thread's",
             [re.sub(r"-(\d+)(\s+\[001\])", r"-9\1\2", l) for l in report])):
        got, wrong = from_report("\n".join(text))
        problems, _ = check_chain("tracecmd", trace=got)
        print("#   self-test, trace-cmd report with %s: %s" % (
            what, "; ".join(problems + wrong[:1])[:200]))
        caught("trace-cmd report with " + what, problems or wrong)
    log = read("oops/serial.log")
    no_fault = "\n".join(l for l in log.splitlines()
                         if "bts_chain_crash+" not in l or "asm_exc_page_fault" not in l)
    cut = "\n".join(l for l in log.splitlines() if "-> ds_freeze_local+" not in l)
    for what, text in (("the fault dropped", no_fault),
                       ("the freeze dropped", cut)):
        problems = check_crash_dump("oops", text)
        print("#   self-test, oops dump with %s: %s" % (what, "; ".join(problems)[:200]))
        caught('oops dump with ' + what, problems)
    log = read("panic/serial.log")
    no_stop = "\n".join(l for l in log.splitlines() if "-> stop_this_cpu" not in l)
    problems = check_stopped_dump(no_stop)
    print("#   self-test, CPU 0's panic dump without the stop: %s" %
          "; ".join(problems)[:200])
    caught("CPU 0's panic dump without the stop", problems)
    if not perf_samples_self_test():
        missed.append("perf_samples.py's folding of made-up files")
    results[:] = saved
    if not calls:
        missed.append("trace-cmd report without a call of the chain to drop")
    tap(not missed, "self-test: the chain check fails with a call dropped or "
        "on another CPU, the address check with a kernel address, the "
        "snapshot check without the trigger's call, with a return after it, "
        "a second snapshot, without the chain's start and no return into it, "
        "or "
        "with a call in its middle dropped, the continuous check without a call, with a loss "
        "or an overrun, the falling-behind check with a loss line dropped or "
        "miscounted, no loss in the layer, records left in the stream, none "
        "after the last loss or no call of the spin's function, the plugin's report check without a call, the trace-cmd check without a call or with a "
        "wrong pid, the three consumers' check without a branch of the "
        "recorder's or perf's, five of perf's twice or with CPU 1's part on "
        "CPU 0 (perf_samples.py folding only perf record's re-reads), the "
        "raw ring's "
        "with a record dropped or symbolized, the ftrace dump's without it or "
        "without the chain, the crash check without the fault or the freeze, the "
        "stopped CPU's without the stop",
        "\n".join("not caught: " + what for what in missed))


def main():
    if "--self-test" in sys.argv:
        self_test()
    elif "--crash" in sys.argv:
        crash_checks()
    else:
        run_checks(RES)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
