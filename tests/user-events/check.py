#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/user-events/check.py: the markers of bts-dump --markers checked
against what the traced program says it wrote and, for the branches around
them, against the ptrace single-step oracle (tests/bts-dump/check.py does
the record-by-record comparison).

  check.py markers ORACLE DUMP LOG --binary BIN [--glob GLOB]
  check.py threads DUMP LOG
  check.py reregister DUMP
  check.py none DUMP
  check.py m32 DUMP
  check.py enabled DUMP STAGE...
  check.py trigger|trigger-self-test FULL_TEXT TRIGGER_TEXT N
  check.py self-test ORACLE DUMP LOG --binary BIN
  check.py recorder|recorder-self-test TRACE LOG [--dump DUMP]

The bts tracer's markers (options/bts-markers): in a CPU's trace, every
event the program wrote, decoded, each between the system call's entry
into the kernel (the branch from its address) and the return to user
mode after it (the branch to the address after it), and with --dump the
very markers bts-dump got of the same run.

A marker sits exactly where its write was: the record after it in its
thread's stream is the system call (write or writev) at the marker's own
address, and the thread's stream without its markers is the oracle's.
"""
import argparse
import copy
import fnmatch
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
spec = importlib.util.spec_from_file_location(
    "dumpcheck", os.path.join(HERE, "..", "bts-dump", "check.py"))
dc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dc)

# The system calls that write an event, as bts-dump names them.
WRITES = ("write", "writev")
# What each event of markers.c carries, from its "NAME SEQ" log line.
PAYLOADS = {
    "bts_test_a": lambda seq: {"seq": seq, "tag": "tag%d" % (seq % 10)},
    "bts_test_b": lambda seq: {"msg": "message %02d" % seq,
                               "val": 1000 * seq},
    "bts_test_big": lambda seq: {"seq": seq, "blob": None},
    "bts_other_c": lambda seq: {"seq": seq},
}


def read_log(path):
    """The program's "[TID ]NAME SEQ" lines, as (tid or None, name, seq)."""
    out = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 3:
                out.append((int(w[0]), w[1], int(w[2])))
            elif len(w) == 2:
                out.append((None, w[0], int(w[1])))
    return out


def placement_check(records, diag, where):
    """Each marker comes right before the write system call that wrote it,
    at the marker's address, in user space."""
    ok = True
    for i, r in enumerate(records):
        if r.get("kind") != "marker":
            continue
        at = dc.num(r.get("at", 0))
        nxt = records[i + 1] if i + 1 < len(records) else {}
        if (nxt.get("kind") != "kernel" or nxt.get("entry") != "syscall" or
                nxt.get("syscall") not in WRITES or
                dc.num(nxt.get("from", 0)) != at):
            diag(f"{where}: marker {r.get('event')} {r.get('fields')} at "
                 f"{r.get('at')} is followed by {nxt or '(end)'}, not its "
                 "write system call")
            ok = False
        if not at or at >= 1 << 47:
            diag(f"{where}: marker at {r.get('at')}: not a user address")
            ok = False
    return ok


def events_check(markers, want, diag, where):
    """The markers are the events the log lists, in order, decoded."""
    got = [(r.get("event"), r.get("fields"), r.get("truncated", False))
           for r in markers]
    exp = [(name, PAYLOADS[name](seq), name == "bts_test_big")
           for name, seq in want]
    if got == exp:
        return True
    first = next((i for i, (g, e) in enumerate(zip(got, exp)) if g != e),
                 min(len(got), len(exp)))
    diag(f"{where}: {len(got)} markers, the program wrote {len(exp)} "
         f"that match; first difference at #{first}:")
    diag(f"  got  {got[first] if first < len(got) else '(none)'}")
    diag(f"  want {exp[first] if first < len(exp) else '(none)'}")
    return False


def markers_check(oracle, dump, log, sym, glob, diag):
    """The single-threaded program: markers where the oracle's writes are,
    with the payloads the program wrote, only those the glob matches."""
    ok = True
    threads = dump.ranked()
    if len(threads) != 1:
        diag(f"{len(threads)} threads in the dump, want 1")
        return False
    recs = threads[0]
    if not placement_check(recs, diag, "main"):
        ok = False
    want = [(n, s) for _, n, s in log if fnmatch.fnmatchcase(n, glob)]
    if not events_check([r for r in recs if r.get("kind") == "marker"],
                        want, diag, "main"):
        ok = False
    bare = dc.Dump(records=[r for r in dump.records
                            if r.get("kind") != "marker"])
    if not dc.compare_trace(oracle, bare, sym, diag):
        ok = False
    return ok


def threads_check(dump, log, diag):
    """Each thread's markers are the ones it wrote, in its own stream."""
    ok = True
    by_tid = {}
    for tid, name, seq in log:
        by_tid.setdefault(tid, []).append((name, seq))
    if sorted(by_tid) != sorted(t for t in dump.threads if t):
        diag(f"threads in the dump {sorted(dump.threads)}, writers "
             f"{sorted(by_tid)}")
        ok = False
    for tid, want in sorted(by_tid.items()):
        recs = dump.threads.get(tid, [])
        if not placement_check(recs, diag, f"thread {tid}"):
            ok = False
        markers = [r for r in recs if r.get("kind") == "marker"]
        got = [(r.get("event"), r.get("fields", {}).get("seq"))
               for r in markers]
        if got != want:
            diag(f"thread {tid}: markers {got[:4]}... ({len(got)}), it "
                 f"wrote {want[:4]}... ({len(want)})")
            ok = False
    return ok


def reregister_check(dump, diag):
    """bts_test_re twice, each generation decoded with its own format, and
    the multi-format event."""
    markers = [r for r in dump.records if r.get("kind") == "marker"]
    got = [(r.get("event"), r.get("fields")) for r in markers]
    want = [("bts_test_re", {"x": 1}), ("bts_test_re", {"y": 2, "z": 3}),
            ("bts_test_multi", {"v": 4})]
    ok = got == want
    if not ok:
        diag(f"got  {got}\nwant {want}")
    gens = [(r.get("id"), r.get("gen")) for r in markers[:2]]
    if len(gens) == 2 and gens[0] == gens[1]:
        diag(f"both bts_test_re markers name id/generation {gens[0]}")
        ok = False
    for tid, recs in dump.threads.items():
        if not placement_check(recs, diag, f"thread {tid}"):
            ok = False
    return ok


def enabled_check(dump, stages, diag):
    """enablebit's markers: the stages it wrote, where it wrote them."""
    markers = [r for r in dump.records if r.get("kind") == "marker"]
    got = [(r.get("event"), r.get("fields")) for r in markers]
    want = [("bts_test_en", {"stage": s}) for s in stages]
    ok = got == want
    if not ok:
        diag(f"got  {got}\nwant {want}")
    for tid, recs in dump.threads.items():
        if not placement_check(recs, diag, f"thread {tid}"):
            ok = False
    return ok


def m32_check(dump, diag):
    """The 32-bit writer's three events, by int $0x80 write and writev."""
    markers = [r for r in dump.records if r.get("kind") == "marker"]
    got = [(r.get("event"), r.get("fields")) for r in markers]
    want = [("bts_test_a", {"seq": s, "tag": "m32"}) for s in (1, 2, 3)]
    ok = got == want
    if not ok:
        diag(f"got  {got}\nwant {want}")
    for tid, recs in dump.threads.items():
        if not placement_check(recs, diag, f"thread {tid}"):
            ok = False
        abis = {r.get("abi") for r in recs if r.get("kind") == "kernel" and
                r.get("syscall") in WRITES}
        if abis != {"i386"}:
            diag(f"thread {tid}: the writes' ABIs are {abis}, not i386")
            ok = False
    return ok


def trigger_blocks(lines):
    """--trigger's output: [(window lines, event line)]."""
    blocks, cur = [], None
    for line in lines:
        if line.startswith("[tid ") and "the last" in line:
            cur = []
        elif cur is not None and line.startswith("-- event "):
            blocks.append((cur, line))
            cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def aside(line):
    """A line two runs need not share: an interrupt, a page fault."""
    return line.startswith(("-- interrupt", "-- exception #PF"))


def trigger_check(full, trig, n, diag):
    """Each window is the @n lines before its event, one window per event,
    as the full trace of another run shows them (the trace's thread
    headers aside, and interrupts and page faults, which differ from run to
    run)."""
    body = [x for x in full if not x.startswith("[tid ") and not aside(x)]
    events = [i for i, x in enumerate(body) if x.startswith("-- event ")]
    blocks = trigger_blocks(trig)
    ok = len(blocks) == len(events) and len(events) > 0
    if not ok:
        diag(f"{len(blocks)} windows, {len(events)} events in the full trace")
    for k, (i, (window, event)) in enumerate(zip(events, blocks)):
        kept = [x for x in window if not aside(x)]
        want = body[max(0, i - len(kept)):i]
        if (i >= n and len(window) != n) or kept != want or \
                event != body[i]:
            diag(f"window {k}: got {window + [event]}")
            diag(f"  want {body[max(0, i - n):i] + [body[i]]}")
            ok = False
            break
    return ok


def none_check(dump, diag):
    """Without --markers, no marker."""
    n = sum(1 for r in dump.records if r.get("kind") == "marker")
    if n:
        diag(f"{n} markers in a trace that asked for none")
    return n == 0 and bool(dump.records)


def self_test(oracle, dump, log, sym, diag):
    """Each way a marker can be wrong makes the checks fail."""
    quiet = dc.Diag(quiet=True)
    glob = "bts_test_*"
    ok = markers_check(oracle, dump, log, sym, glob, quiet)
    if not ok:
        diag("the unbroken trace fails:")
        for line in quiet.lines[-8:]:
            diag("  " + line)
        return False
    recs = dump.records
    idx = [i for i, r in enumerate(recs) if r.get("kind") == "marker"]
    cases = []

    def edited(fn):
        r = copy.deepcopy(recs)
        fn(r)
        return dc.Dump(records=r)

    def swap_back(r):
        i = idx[3]
        r[i - 1], r[i] = r[i], r[i - 1]

    cases.append(("a marker one record early", edited(swap_back)))
    cases.append(("a marker missing", edited(lambda r: r.pop(idx[5]))))
    cases.append(("a field changed", edited(
        lambda r: r[idx[2]]["fields"].update(seq=99))))
    cases.append(("a marker of another event", edited(
        lambda r: r[idx[1]].update(event="bts_other_c"))))
    cases.append(("a kernel address", edited(
        lambda r: r[idx[0]].update(at="0xffffffff81000000"))))
    cases.append(("a branch dropped", edited(lambda r: r.pop(idx[4] - 1))))
    failed = 0
    for name, broken in cases:
        if markers_check(oracle, broken, log, sym, glob, dc.Diag(True)):
            diag(f"not caught: {name}")
            failed += 1
    diag(f"{len(cases) - failed} of {len(cases)} broken traces caught")
    return failed == 0


# A line of the bts tracer's trace: CPU, TID/PID (or ?), the record.
TRACE_LINE = re.compile(r"^\s*(\d+)\s+(?:(-?\d+)/(-?\d+)|\?)\s+(.*)$")
EVENT = re.compile(r"^-- event u:(\w+)((?: \w+=(?:\"(?:[^\"\\]|\\.)*\"|\?|-?\d+))*)"
                   r"( \(first \d+ bytes\))? at \[user\] (0x[0-9a-f]+)$")
FIELD = re.compile(r" (\w+)=(\"(?:[^\"\\]|\\.)*\"|\?|-?\d+)")
BRANCH = re.compile(r"^(\S.*?) -> (\S.*)$")
KERNEL_STRETCH = re.compile(r"^-- kernel from \[user\] (0x[0-9a-f]+) back at "
                            r"\[user\] (0x[0-9a-f]+)$")
USER = re.compile(r"^\[user\] (0x[0-9a-f]+)$")


def trace_records(path):
    """The trace's records, as (tid or None, text), in order."""
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            m = TRACE_LINE.match(line.rstrip("\n"))
            if m:
                out.append((int(m.group(2)) if m.group(2) else None,
                            m.group(4)))
    return out


def parse_event(text):
    """A marker's line as a dict like bts-dump's jsonl, or None."""
    m = EVENT.match(text)
    if not m:
        return None
    fields = {}
    for k, v in FIELD.findall(m.group(2)):
        if v == "?":
            fields[k] = None
        elif v.startswith('"'):
            fields[k] = v[1:-1].encode().decode("unicode_escape")
        else:
            fields[k] = int(v)
    return {"kind": "marker", "event": m.group(1), "fields": fields,
            "truncated": bool(m.group(3)), "at": int(m.group(4), 16)}


def user_addr(end):
    m = USER.match(end)
    return int(m.group(1), 16) if m else None


def recorder_placement(recs, diag):
    """Each marker lies inside its own system call: the last user-mode
    branch before it leaves user mode from the marker's address, the first
    after it returns to the instruction after that, and only kernel
    branches come between; in a recorder of the user side only, the record
    after it is the stretch in the kernel from that address back to the
    next instruction.  The task may be switched out and in again in its
    system call, after the marker: the switch back comes between (@recs
    are the task's own, so the switches away are not among them)."""
    ok = True
    for i, (_, text) in enumerate(recs):
        if not text.startswith("-- event "):
            continue
        ev = parse_event(text)
        nxt = next((t for _, t in recs[i + 1:]
                    if not t.startswith("-- switch to ")), "")
        stretch = KERNEL_STRETCH.match(nxt)
        if stretch or nxt.startswith("-- kernel "):
            if not stretch or int(stretch.group(1), 16) != ev["at"] or \
                    int(stretch.group(2), 16) != ev["at"] + 2:
                diag(f"marker #{i} ({text}): followed by {nxt}, not its "
                     "system call's stretch in the kernel")
                ok = False
            continue
        before = after = None
        for j in range(i - 1, -1, -1):
            b = BRANCH.match(recs[j][1])
            if b and user_addr(b.group(1)) is not None:
                before = b
                break
            if b and user_addr(b.group(2)) is not None:
                break
        for j in range(i + 1, len(recs)):
            b = BRANCH.match(recs[j][1])
            if b and user_addr(b.group(2)) is not None:
                after = b
                break
            if b and user_addr(b.group(1)) is not None:
                break
        if not before or user_addr(before.group(1)) != ev["at"] or \
                user_addr(before.group(2)) is not None:
            diag(f"marker #{i} ({text}): the user-mode branch before it is "
                 f"{before.group(0) if before else '(none)'}, not its "
                 "system call's entry")
            ok = False
        if not after or user_addr(after.group(2)) != ev["at"] + 2 or \
                user_addr(after.group(1)) is not None:
            diag(f"marker #{i} ({text}): the return to user mode after it "
                 f"is {after.group(0) if after else '(none)'}, not to "
                 f"{ev['at'] + 2:#x}")
            ok = False
    return ok


def recorder_check(recs, log, dump, diag):
    """Every event the program wrote, in one thread's records, decoded and
    in place; with @dump, the same markers as bts-dump's trace of the run."""
    bad = [t for tid, t in recs
           if t.startswith("-- event ") and not parse_event(t)]
    if bad:
        diag(f"{len(bad)} marker lines not understood, first: {bad[0]}")
        return False
    # Other processes may write other events meanwhile.
    events = [(tid, parse_event(t)) for tid, t in recs
              if t.startswith("-- event ") and
              parse_event(t)["event"] in PAYLOADS]
    # The task of the records before a ring's first task switch is not
    # known ("?", None): they are the task's that the switch leaves.
    tids = {tid for tid, _ in events}
    if len(tids - {None}) > 1 or not events:
        diag(f"markers of the threads {sorted(tids, key=str)}, want the "
             "program's only")
        return False
    mine = [r for r in recs if r[0] in tids]
    ok = recorder_placement(mine, diag)
    markers = [e for _, e in events]
    if not events_check(markers, [(n, s) for _, n, s in log], diag,
                        "recorder"):
        ok = False
    if dump is not None:
        want = [(r.get("event"), r.get("fields"), dc.num(r.get("at", 0)))
                for r in dump.records if r.get("kind") == "marker"]
        got = [(m["event"], m["fields"], m["at"]) for m in markers
               if fnmatch.fnmatchcase(m["event"], "bts_test_*")]
        if got != want:
            i = next((i for i, (g, w) in enumerate(zip(got, want))
                      if g != w), min(len(got), len(want)))
            diag(f"recorder: {len(got)} markers, bts-dump {len(want)}; "
                 f"first difference at #{i}:")
            diag(f"  recorder {got[i] if i < len(got) else '(none)'}")
            diag(f"  bts-dump {want[i] if i < len(want) else '(none)'}")
            ok = False
    return ok


def recorder_self_test(recs, log, dump, diag):
    """A marker moved, dropped, changed or at another address: caught."""
    if not recorder_check(recs, log, dump, dc.Diag(True)):
        diag("the unbroken trace fails")
        return False
    idx = [i for i, (_, t) in enumerate(recs) if t.startswith("-- event ")]

    def edited(fn):
        r = list(recs)
        fn(r)
        return r

    def early(r):
        i = idx[3]
        while not BRANCH.match(r[i - 1][1]) or \
                user_addr(BRANCH.match(r[i - 1][1]).group(1)) is None:
            r[i - 1], r[i] = r[i], r[i - 1]
            i -= 1
        r[i - 1], r[i] = r[i], r[i - 1]

    def field(r):
        r[idx[2]] = (r[idx[2]][0], r[idx[2]][1].replace("seq=", "seq=9", 1))

    def addr(r):
        r[idx[4]] = (r[idx[4]][0], re.sub(r"0x[0-9a-f]+$", "0x1000",
                                          r[idx[4]][1]))
    cases = [("a marker before its system call", edited(early)),
             ("a marker missing", edited(lambda r: r.pop(idx[5]))),
             ("a field changed", edited(field)),
             ("a marker at another address", edited(addr))]
    failed = 0
    for name, broken in cases:
        if recorder_check(broken, log, dump, dc.Diag(True)):
            diag(f"not caught: {name}")
            failed += 1
    diag(f"{len(cases) - failed} of {len(cases)} broken traces caught")
    return failed == 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("markers", "self-test"):
        s = sub.add_parser(name)
        s.add_argument("oracle")
        s.add_argument("jsonl")
        s.add_argument("log")
        s.add_argument("--binary", required=True)
        s.add_argument("--glob", default="bts_test_*")
    s = sub.add_parser("threads")
    s.add_argument("jsonl")
    s.add_argument("log")
    for name in ("reregister", "none", "m32"):
        sub.add_parser(name).add_argument("jsonl")
    for name in ("trigger", "trigger-self-test"):
        s = sub.add_parser(name)
        s.add_argument("full")
        s.add_argument("trig")
        s.add_argument("n", type=int)
    s = sub.add_parser("enabled")
    s.add_argument("jsonl")
    s.add_argument("stages", type=int, nargs="+")
    for name in ("recorder", "recorder-self-test"):
        s = sub.add_parser(name)
        s.add_argument("trace")
        s.add_argument("log")
        s.add_argument("--dump")
    a = p.parse_args()
    diag = dc.Diag()
    if a.cmd.startswith("recorder"):
        dump = dc.Dump(a.dump) if a.dump else None
        fn = recorder_check if a.cmd == "recorder" else recorder_self_test
        sys.exit(0 if fn(trace_records(a.trace), read_log(a.log), dump,
                         diag) else 1)
    if a.cmd.startswith("trigger"):
        with open(a.full) as f:
            full = f.read().splitlines()
        with open(a.trig) as f:
            trig = f.read().splitlines()
        if a.cmd == "trigger":
            sys.exit(0 if trigger_check(full, trig, a.n, diag) else 1)
        # A window a line short, and one shown late: both caught.
        cut = [x for i, x in enumerate(trig) if i != 1]
        late = [x for x in trig if not x.startswith("-- event ")][:-1] + \
            [x for x in trig if x.startswith("-- event ")]
        ok = trigger_check(full, trig, a.n, dc.Diag(True)) and \
            not trigger_check(full, cut, a.n, dc.Diag(True)) and \
            not trigger_check(full, late, a.n, dc.Diag(True))
        diag("the good output passes; a window a line short and "
             "events shown late fail" if ok else "self-test failed")
        sys.exit(0 if ok else 1)
    dump = dc.Dump(a.jsonl)
    if dump.bad:
        diag(f"{len(dump.bad)} lines are not JSON, first: {dump.bad[0]}")
        sys.exit(1)
    if a.cmd == "threads":
        ok = threads_check(dump, read_log(a.log), diag)
    elif a.cmd == "reregister":
        ok = reregister_check(dump, diag)
    elif a.cmd == "none":
        ok = none_check(dump, diag)
    elif a.cmd == "m32":
        ok = m32_check(dump, diag)
    elif a.cmd == "enabled":
        ok = enabled_check(dump, a.stages, diag)
    else:
        sym = dc.Symbols(a.binary)
        oracle = dc.Oracle(a.oracle)
        log = read_log(a.log)
        if a.cmd == "markers":
            ok = markers_check(oracle, dump, log, sym, a.glob, diag)
        else:
            ok = self_test(oracle, dump, log, sym, diag)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
