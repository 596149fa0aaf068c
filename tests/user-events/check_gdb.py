#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/user-events/check_gdb.py: gdb's `bts markers`
(tools/bts-dump/gdb/bts.py) checked against what the program says it
wrote and against the ptrace single-step oracle's run of it.

  check_gdb.py threads ORACLE ORACLE_OUT GDB_JSONL --binary B [--older]
  check_gdb.py m32 ORACLE GDB_JSONL
  check_gdb.py breakon ORACLE ORACLE_OUT GDB_JSONL
  check_gdb.py calls GDB_JSONL DUMP_CALLS --binary B [--self-test]
  check_gdb.py self-test ORACLE ORACLE_OUT GDB_JSONL --binary B

GDB_JSONL is what gdb_driver.py's `bts-test-dump` wrote at the stop:
`info bts-markers`' lines, then for each marker K where `bts goto-marker
K` went (thread, pc, instruction) and the targets of the branches gdb's
history holds from there to the stop.  ORACLE_OUT is the program's
output in the oracle's run (progs/gdbmarks.c: each role's thread id,
then each event as "ROLE NAME SEQ" in the order its thread wrote them);
in gdb's run, its role N is gdb's thread N + 1.

A marker is where its write was when:

- it is in `info bts-markers` once, decoded as the program wrote it, in
  its writer's thread (the role its seq names), in the order each thread
  wrote (gdb's thread, not the kernel's thread id, names the writer);
- `bts goto-marker` selects that thread and lands on the marker's own
  system call instruction;
- the branches gdb's history has from there to the stop are the ones
  the oracle's thread took after that write (the same write, counted
  among the thread's writes at the markers' addresses) up to where the
  program stopped.  gdb builds its history from the user-mode branches
  alone: where the kernel moved the thread (a signal handler, the return
  from it) gdb has a gap or walks on, so the kernel's part is left out of
  the oracle's, and each stretch of gdb's between gaps must be, in
  order, a stretch of the oracle's: the first at its start, the last at
  its end.  A marker one branch off, or in another write, fails that;
- `bts call-history` shows each thread's events, in order, each after
  the call-history segment of the function that wrote it.

breakon: gdb stopped by `bts break-on bts_test_big` is in main's system
call that wrote it, which `info bts-markers` lists last, and main's events
up to it land where the oracle has their writes.

calls: `bts call-history` of each thread against bts-dump's --calls
--markers of the same run (DUMP_CALLS), line by line: see
calls_dump_check().

With --older (gdb's buffer kept fewer branches than the program took), a
marker may instead say it is older than gdb's history, and goto-marker
must refuse it: those are each thread's oldest, and at least one marker
is of each kind.
"""
import argparse
import copy
import importlib.util
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
spec = importlib.util.spec_from_file_location(
    "dumpcheck", os.path.join(HERE, "..", "bts-dump", "check.py"))
dc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dc)

INFO = re.compile(r"^(\d+) +thread \d+\.(\d+) \(LWP (\d+)\)  "
                  r"(?:insn (\d+)|(.+?))  "
                  r"u:(\w+)(.*) at 0x([0-9a-f]+)(?: <.*>)?$")
FIELD = re.compile(r' (\w+)=("(?:[^"\\]|\\.)*"|\S+)')
# The system calls that write an event: write, writev (x86-64, i386).
WRITES = ("syscall:1", "syscall:20", "syscall:4", "syscall:146")


def parse_info(line):
    """An `info bts-markers` line as a dict, None if it is none."""
    m = INFO.match(line)
    if not m:
        return None
    fields = {}
    for f in FIELD.finditer(m[7]):
        v = f[2]
        fields[f[1]] = v[1:-1] if v.startswith('"') else \
            (None if v == "?" else int(v))
    return {"k": int(m[1]), "thread": int(m[2]), "lwp": int(m[3]),
            "insn": int(m[4]) if m[4] else None, "why": m[5],
            "name": m[6], "fields": fields,
            "truncated": m[7].endswith(" (truncated)"),
            "site": int(m[8], 16)}


def read_gdb(path):
    """(the first line: threads' pcs and info lines, the markers, goto
    results by K); the head also holds each thread's call history."""
    with open(path) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    head = lines[0]
    head["calls"] = next((d["calls"] for d in lines if "calls" in d), {})
    gotos = {d["k"]: d for d in lines if "k" in d}
    return head, [parse_info(x) for x in head["info"]], gotos


# The function whose segment of gdb's call history writes each event.
WRITERS = {"bts_test_a": "emit_a", "bts_test_b": "emit_b",
           "bts_test_big": "emit_big"}
SEGMENT = re.compile(r"^(\d+)\t( *)(\S+)$")
EVENT = re.compile(r"^\t( *)  -- event (\d+): u:(\w+)")


def calls_check(head, markers, diag):
    """`bts call-history`: each thread's events in gdb's call history,
    each after the segment of the function that wrote it, a level deeper;
    the thread's events in gdb's history, all of them, in order."""
    ok = True
    by_k = {m["k"]: m for m in markers}
    for num, text in sorted(head["calls"].items()):
        seg, got = None, []
        for line in text.splitlines():
            m = SEGMENT.match(line)
            if m:
                seg = m
                continue
            m = EVENT.match(line)
            if not m:
                continue
            k = int(m[2])
            got.append(k)
            want = WRITERS.get(by_k[k]["name"]) if k in by_k else None
            if seg is None or seg[3] != want or m[1] != seg[2]:
                diag(f"bts call-history of thread {num}: event {k} after "
                     f"{seg[0] if seg else 'nothing'!r}, not in {want}")
                ok = False
        want = [m["k"] for m in markers
                if m["thread"] == int(num) and m["insn"] is not None]
        if got != want:
            diag(f"bts call-history of thread {num} shows events {got}, "
                 f"its markers in gdb's history are {want}")
            ok = False
    if not head["calls"]:
        diag("no call history")
        ok = False
    return ok


def read_program(path):
    """The oracle's run's output: {role: tid} and [(role, name, seq)]."""
    roles, events = {}, []
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^role (\d+) tid (\d+)$", line.strip())
            if m:
                roles[int(m[1])] = int(m[2])
            m = re.match(r"^(\d+) (bts_test_\w+) (\d+)$", line.strip())
            if m:
                events.append((int(m[1]), m[2], int(m[3])))
    return roles, events


def role_of(seq):
    """gdbmarks.c's seq: 100 * role + round; the signal's, main's."""
    return 0 if seq >= 1000 else seq // 100


def seq_of(marker):
    """The seq the program wrote: bts_test_b carries it as val / 1000."""
    f = marker["fields"]
    return f["val"] // 1000 if marker["name"] == "bts_test_b" else f["seq"]


def expected_fields(name, seq):
    if name == "bts_test_a":
        return {"seq": seq, "tag": "signal" if seq >= 1000 else "thread"}
    if name == "bts_test_b":
        return {"msg": "message %03d" % seq, "val": 1000 * seq}
    return {"seq": seq, "blob": None}


def oracle_targets(events, write_at, stop_at):
    """The targets of the user-mode branches the oracle's thread took
    after its event at @write_at, up to @stop_at (stop_at(event) is
    "in" for the last one, "out" for the first one left out)."""
    out = []
    for e in events[write_at + 1:]:
        cut = stop_at(e)
        if cut == "out":
            break
        if e[0] == "B":
            out.append(e[2])
        if cut == "in":
            break
    return out


def stretches(targets):
    """gdb's targets between its gaps."""
    out, cur = [], []
    for t in targets:
        if t == "gap":
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    return out + [cur]


def aligned(got, want):
    """Whether gdb's stretches are, in order, stretches of the oracle's:
    the first its start, the last its end.  An empty string of why not."""
    parts = stretches(got)
    if len(parts) == 1:
        return "" if parts[0] == want else "differs"
    first, last = parts[0], parts[-1]
    if want[:len(first)] != first:
        return "differs before its first gap"
    if last and want[len(want) - len(last):] != last:
        return "differs after its last gap"
    at = len(first)
    for p in parts[1:-1]:
        found = next((i for i in range(at, len(want) - len(p) + 1)
                      if want[i:i + len(p)] == p), None)
        if found is None:
            return "a stretch between gaps is not the oracle's"
        at = found + len(p)
    if at > len(want) - len(last):
        return "its stretches overlap"
    return ""


def writes_of(events, sites):
    """Indexes of the thread's events that write at the markers' sites."""
    return [i for i, e in enumerate(events)
            if e[0] == "K" and e[3] in WRITES and e[1] in sites]


def marker_check(mk, goto, oracle_events, write_at, stop_at, diag):
    """One marker: where goto-marker went, against the oracle."""
    ok = True
    if "error" in goto:
        diag(f"marker {mk['k']}: goto-marker failed: {goto['error']}")
        return False
    if goto["lwp"] != mk["lwp"] or goto["pc"] != mk["site"] or \
            goto["insn"] != mk["insn"]:
        diag(f"marker {mk['k']}: goto-marker went to LWP {goto['lwp']} "
             f"pc {goto['pc']:#x} insn {goto['insn']}, not LWP "
             f"{mk['lwp']} pc {mk['site']:#x} insn {mk['insn']}")
        ok = False
    want = oracle_targets(oracle_events, write_at, stop_at)
    why = aligned(goto["targets"], want)
    if why:
        got = goto["targets"]
        diag(f"marker {mk['k']} ({mk['name']} {mk['fields']}): gdb's "
             f"branches after it ({len(got)}, {got.count('gap')} gaps) "
             f"are not the oracle's after its write ({len(want)}): {why}")
        ok = False
    return ok


def threads_check(oracle, oracle_out, gdb, stop_here, older, diag):
    head, markers, gotos = gdb
    o_roles, log = read_program(oracle_out)
    ok = True
    if None in markers or not markers:
        diag("info bts-markers has %d lines, %d not a marker's" %
             (len(markers), markers.count(None)))
        return False
    got = sorted((role_of(seq_of(m)), m["name"], seq_of(m))
                 for m in markers)
    if got != sorted(log):
        diag(f"info bts-markers lists {len(markers)} events, the program "
             f"wrote {len(log)}: {sorted(set(got) ^ set(log))[:6]}")
        return False
    sites = {m["site"] for m in markers}
    by_role = {}
    for m in markers:
        seq = seq_of(m)
        role = role_of(seq)
        by_role.setdefault(role, []).append((m, seq))
        want = expected_fields(m["name"], seq)
        if m["fields"] != want or m["truncated"] != (m["name"] ==
                                                     "bts_test_big"):
            diag(f"marker {m['k']}: {m['fields']}, the program wrote {want}")
            ok = False
        if m["thread"] != role + 1:
            diag(f"marker {m['k']} ({m['name']} {seq}) is thread "
                 f"{m['thread']}'s, its writer was thread {role + 1}")
            ok = False
    mapped = older_seen = 0
    for role, ms in sorted(by_role.items()):
        order = [(r_name, r_seq) for r, r_name, r_seq in log if r == role]
        if [(m["name"], seq) for m, seq in ms] != order:
            diag(f"role {role}'s markers are not in the order it wrote them")
            ok = False
            continue
        events = oracle.threads.get(o_roles.get(role), [])
        writes = writes_of(events, sites)
        if len(writes) != len(ms):
            diag(f"role {role}: the oracle saw {len(writes)} writes at the "
                 f"markers' sites, gdb lists {len(ms)} markers")
            ok = False
            continue
        stop_at = stop_rule(role, stop_here)
        seen_mapped = False
        for (m, _), write_at in zip(ms, writes):
            goto = gotos.get(m["k"], {"error": "no goto result"})
            if m["insn"] is None:
                older_seen += 1
                if not older or "older than gdb's history" not in m["why"]:
                    diag(f"marker {m['k']} is not in gdb's history: "
                         f"{m['why']}")
                    ok = False
                elif seen_mapped:
                    diag(f"marker {m['k']} is older than gdb's history, "
                         f"an older one of its thread is not")
                    ok = False
                elif "older than gdb's history" not in \
                        goto.get("error", ""):
                    diag(f"marker {m['k']}: goto-marker did not refuse it "
                         f"as older than the history: {goto}")
                    ok = False
                continue
            seen_mapped = True
            mapped += 1
            ok &= marker_check(m, goto, events, write_at, stop_at, diag)
    ok &= calls_check(head, markers, diag)
    if older and (not older_seen or not mapped):
        diag(f"{older_seen} markers older than gdb's history, {mapped} in "
             f"it: the run shows not both")
        ok = False
    if ok:
        diag(f"{len(markers)} markers of {len(by_role)} threads: {mapped} "
             f"where the oracle has their writes, {older_seen} older than "
             f"gdb's history")
    return ok


def stop_rule(role, stop_here):
    """Where gdbmarks stopped: main in stop_here(), the call to it its
    last branch; the others in their read() of the go pipe."""
    if role == 0:
        return lambda e: "in" if e[0] == "B" and e[2] == stop_here else None
    return lambda e: "out" if e[0] == "K" and e[3] == "syscall:0" else None


def breakon_check(oracle, oracle_out, gdb, diag):
    """`bts break-on bts_test_big`: gdb stopped main in the system call
    that wrote it, as it returned; the event is listed last, and main's
    events before it land where the oracle has their writes, up to that
    system call."""
    head, markers, gotos = gdb
    o_roles, log = read_program(oracle_out)
    if None in markers or not markers:
        diag(f"info bts-markers: {head['info'][:3]}")
        return False
    big = markers[-1]
    main_tid = next((int(t) for t in head["threads"]
                     if any(m["thread"] == 1 and m["lwp"] == int(t)
                            for m in markers)), None)
    if big["name"] != "bts_test_big" or big["thread"] != 1 or \
            main_tid is None or head["threads"][str(main_tid)] != \
            big["site"] + 2:
        diag(f"the last event is {big['name']} of thread {big['thread']} at "
             f"{big['site']:#x}; main stopped at "
             f"{head['threads'].get(str(main_tid), 0):#x}")
        return False
    mine = [m for m in markers if m["thread"] == 1]
    want = [(n, q) for r, n, q in log if r == 0]
    want = want[:want.index(("bts_test_big", 7)) + 1]
    if [(m["name"], seq_of(m)) for m in mine] != want:
        diag(f"main's events: {[(m['name'], seq_of(m)) for m in mine]}, "
             f"the program wrote {want} by then")
        return False
    events = oracle.threads[o_roles[0]]
    writes = writes_of(events, {m["site"] for m in mine})
    ok = True
    for m, write_at in zip(mine[:-1], writes):
        ok &= marker_check(m, gotos.get(m["k"], {"error": "none"}), events,
                           write_at,
                           lambda e: "out" if e[0] == "K" and
                           e[1] == big["site"] else None, diag)
    # The event it stopped at: its system call the last instruction run.
    ok &= marker_check(big, gotos.get(big["k"], {"error": "none"}), events,
                       writes[len(mine) - 1], lambda e: "out", diag)
    if ok:
        diag(f"stopped in bts_test_big's write, listed last; main's "
             f"{len(mine)} events where the oracle has them")
    return ok


GAP = "[decode error"
DUMP_THREAD = re.compile(r"^\[tid (\d+) pid \d+")
DUMP_SEGMENT = re.compile(r"^\d+\t *(\S+)$")
DUMP_EVENT = re.compile(r"^\t *-- event (u:\w+.*?)(?: (?:in|at) \S+.*)?$")
GDB_EVENT = re.compile(r"^\t *  -- event \d+: (u:\w+.*)$")


def dump_calls(path):
    """bts-dump --calls' lines of each thread, as ("f", name) for each
    function segment and ("e", event) for each event; its other notes
    (system calls, signals, threads) are left out."""
    out, tid = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = DUMP_THREAD.match(line)
            if m:
                tid = int(m[1])
                continue
            m = DUMP_SEGMENT.match(line)
            if m:
                out.setdefault(tid, []).append(("f", m[1]))
                continue
            m = DUMP_EVENT.match(line)
            if m:
                out.setdefault(tid, []).append(("e", m[1]))
    return out


def gdb_calls(text):
    """`bts call-history`'s lines the same way, in stretches between
    gdb's gaps ("[decode error ...]")."""
    parts = [[]]
    for line in text.splitlines():
        num, tab, name = line.partition("\t")
        if GAP in line:
            parts.append([])
        elif tab and num.isdigit() and name.strip():
            parts[-1].append(("f", name.strip()))
        else:
            m = GDB_EVENT.match(line)
            if m:
                parts[-1].append(("e", m[1]))
    return parts


def same_function(names, a, b):
    """Whether gdb's name @a and bts-dump's @b name one function: aliases
    at one address (read, __libc_read), or code without a symbol (gdb's
    "??", bts-dump's module name)."""
    if a == b:
        return True
    if a == "??":
        return b not in names
    return bool(names.get(a, set()) & names.get(b, set()))


def calls_dump_check(gdb, dump_txt, binary, diag):
    """`bts call-history` against bts-dump's --calls --markers of the same
    run (bts-dump -p, then gdb attached): each thread's function segments
    and events, line by line, the same functions (by address) and the
    same events between the same segments.  Where gdb's history has gaps
    (main's signal handler, after which gdb's BTS decoder walks code the
    thread never ran) the stretch before the first gap is compared: it
    must be where bts-dump's begins and hold every event of main's
    before the signal."""
    head, markers, _ = gdb
    sym, names = dc.Symbols(binary), {}
    for name, addr in zip(sym.names, sym.addrs):
        names.setdefault(name, set()).add(addr)
    dump = dump_calls(dump_txt)
    lwp_of = {m["thread"]: m["lwp"] for m in markers if m}
    ok, compared = True, 0
    for num, text in sorted(head["calls"].items()):
        parts = gdb_calls(text)
        theirs = dump.get(lwp_of.get(int(num)), [])
        mine = parts[0]
        if len(parts) == 1 and len(mine) != len(theirs):
            diag(f"thread {num}: gdb's call history has {len(mine)} lines, "
                 f"bts-dump's {len(theirs)}")
            ok = False
        for i, (a, b) in enumerate(zip(mine, theirs)):
            if a[0] != b[0] or (a[0] == "f" and
                                not same_function(names, a[1], b[1])) or \
                    (a[0] == "e" and a[1] != b[1]):
                diag(f"thread {num}, line {i + 1} of its history: gdb "
                     f"has {a}, bts-dump {b}")
                ok = False
                break
        if len(mine) > len(theirs):
            diag(f"thread {num}: gdb's first stretch is longer than "
                 f"bts-dump's whole history")
            ok = False
        events = sum(1 for x in mine if x[0] == "e")
        want = sum(1 for m in markers if m and m["thread"] == int(num) and
                   m["fields"].get("tag") != "signal")
        if events != want:
            diag(f"thread {num}: {events} events compared, {want} wanted")
            ok = False
        compared += len(mine)
    if ok:
        diag(f"{len(head['calls'])} threads' call histories, {compared} "
             f"lines, as bts-dump's")
    return ok


def calls_self_test(gdb, dump_txt, binary, diag):
    """An event a line early in gdb's call history, or a function in
    place of another, fails the comparison with bts-dump's."""
    if not calls_dump_check(gdb, dump_txt, binary, dc.Diag(True)):
        diag("self-test: the good run does not pass")
        return False
    head, markers, gotos = gdb
    num = max(head["calls"], key=lambda n: len(head["calls"][n]))
    lines = head["calls"][num].splitlines()
    at = next(i for i, x in enumerate(lines) if GDB_EVENT.match(x))
    early = copy.deepcopy(head)
    moved = lines[:]
    moved.insert(at - 1, moved.pop(at))
    early["calls"][num] = "\n".join(moved)
    other = copy.deepcopy(head)
    swapped = lines[:]
    seg = next(i for i, x in enumerate(lines[at + 1:], at + 1)
               if re.match(r"^\d+\t *main$", x))
    swapped[seg] = swapped[seg].replace("main", "leaf")
    other["calls"][num] = "\n".join(swapped)
    caught_early = not calls_dump_check((early, markers, gotos), dump_txt,
                                        binary, dc.Diag(True))
    caught_other = not calls_dump_check((other, markers, gotos), dump_txt,
                                        binary, dc.Diag(True))
    diag(f"an event a line early {'fails' if caught_early else 'PASSES'}; "
         f"leaf in place of main {'fails' if caught_other else 'PASSES'}")
    return caught_early and caught_other


def m32_check(oracle, gdb, diag):
    _, markers, gotos = gdb
    if None in markers or [m["fields"].get("seq") for m in markers] != \
            [1, 2, 3] or any(m["fields"].get("tag") != "m32"
                             for m in markers):
        diag(f"info bts-markers: {gdb[0]['info']}, not m32's three events")
        return False
    (tid, events), = oracle.threads.items()
    writes = writes_of(events, {m["site"] for m in markers})
    if len(writes) != 3:
        diag(f"the oracle saw {len(writes)} writes at the markers' sites")
        return False
    ok = True
    for m, write_at in zip(markers, writes):
        if m["insn"] is None:
            diag(f"marker {m['k']} is not in gdb's history: {m['why']}")
            ok = False
            continue
        # Stopped at the exit system call, which never returns.
        ok &= marker_check(m, gotos.get(m["k"], {"error": "none"}), events,
                           write_at,
                           lambda e: "out" if e[0] == "K" and e[2] == 0
                           else None, diag)
    if ok:
        diag("m32's 3 markers (i386 write and writev) where the oracle "
             "has their writes")
    return ok


def self_test(oracle, oracle_out, gdb, stop_here, diag):
    """A marker one branch later, or in another thread, or an event a
    segment early in the call history, fails."""
    if not threads_check(oracle, oracle_out, gdb, stop_here, False,
                         dc.Diag(True)):
        diag("self-test: the good run does not pass")
        return False
    head, markers, gotos = gdb
    # One branch later: its history from the next branch's target on.
    late = copy.deepcopy(gotos)
    k = next(k for k, g in late.items() if len(g.get("targets", [])) > 2)
    late[k]["targets"] = late[k]["targets"][1:]
    # In another thread: the first marker's line names another thread.
    first = markers[0]
    other = next(m for m in markers if m["thread"] != first["thread"])
    moved = copy.deepcopy(head)
    moved["info"][0] = moved["info"][0].replace(
        "thread 1.%d (LWP %d)" % (first["thread"], first["lwp"]),
        "thread 1.%d (LWP %d)" % (other["thread"], other["lwp"]), 1)
    moved_markers = [parse_info(x) for x in moved["info"]]
    # In the call history, an event after the segment before its own.
    early = copy.deepcopy(head)
    num, text = next(iter(sorted(early["calls"].items())))
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if EVENT.match(x))
    lines.insert(at - 1, lines.pop(at))
    early["calls"][num] = "\n".join(lines)
    caught_early = not threads_check(oracle, oracle_out,
                                     (early, markers, gotos), stop_here,
                                     False, dc.Diag(True))
    caught_late = not threads_check(oracle, oracle_out,
                                    (head, markers, late), stop_here,
                                    False, dc.Diag(True))
    caught_moved = not threads_check(oracle, oracle_out,
                                     (moved, moved_markers, gotos),
                                     stop_here, False, dc.Diag(True))
    diag(f"a marker one branch later {'fails' if caught_late else 'PASSES'};"
         f" one in another thread {'fails' if caught_moved else 'PASSES'};"
         f" an event a segment early in the call history "
         f"{'fails' if caught_early else 'PASSES'}")
    return caught_late and caught_moved and caught_early


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("threads", "self-test"):
        s = sub.add_parser(name)
        s.add_argument("oracle")
        s.add_argument("oracle_out")
        s.add_argument("gdb")
        s.add_argument("--binary", required=True)
        s.add_argument("--older", action="store_true")
    s = sub.add_parser("m32")
    s.add_argument("oracle")
    s.add_argument("gdb")
    s = sub.add_parser("calls")
    s.add_argument("gdb")
    s.add_argument("dump_calls")
    s.add_argument("--binary", required=True)
    s.add_argument("--self-test", action="store_true")
    s = sub.add_parser("breakon")
    s.add_argument("oracle")
    s.add_argument("oracle_out")
    s.add_argument("gdb")
    a = p.parse_args()
    diag = dc.Diag()
    gdb = read_gdb(a.gdb)
    if a.cmd == "calls":
        check = calls_self_test if a.self_test else calls_dump_check
        sys.exit(0 if check(gdb, a.dump_calls, a.binary, diag) else 1)
    oracle = dc.Oracle(a.oracle)
    if a.cmd == "m32":
        sys.exit(0 if m32_check(oracle, gdb, diag) else 1)
    if a.cmd == "breakon":
        sys.exit(0 if breakon_check(oracle, a.oracle_out, gdb, diag) else 1)
    stop_here = dc.Symbols(a.binary).range("stop_here")[0]
    if a.cmd == "threads":
        ok = threads_check(oracle, a.oracle_out, gdb, stop_here, a.older,
                           diag)
    else:
        ok = self_test(oracle, a.oracle_out, gdb, stop_here, diag)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
