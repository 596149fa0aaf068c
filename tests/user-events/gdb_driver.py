# SPDX-License-Identifier: GPL-2.0
"""tests/user-events: gdb's side of the `bts markers` check.

Sourced into gdb after tools/bts-dump/gdb/bts.py.  `bts-test-dump FILE`
writes, as JSON lines, what a user of the extension sees at this stop
and where each marker takes them: `info bts-markers`' lines, then for
each marker K the thread and instruction `bts goto-marker K` selects
and the targets of the branches gdb's history holds from there to where
the thread stopped (an instruction that does not follow the one before
it is a branch's target, and so is the thread's current pc if it does
not follow the last instruction that ran), or the error it gave; last,
each thread's `bts call-history`.
check.py compares them with the ptrace oracle's run of the program.
"""
import json

import gdb


def _targets(hist, start, live_pc):
    out = []
    prev = None
    for i in range(start, len(hist)):
        try:
            insn = (hist[i].pc, hist[i].size)
        except gdb.error:
            # A gap (gdb 13 does not name gdb.RecordGap).
            out.append("gap")
            prev = None
            continue
        if prev is not None and insn[0] != sum(prev):
            out.append(insn[0])
        prev = insn
    # A restarted system call leaves the thread at the instruction that
    # made it, which ran already: no branch.
    if prev is not None and live_pc not in (sum(prev), prev[0]):
        out.append(live_pc)
    return out


class TestDump(gdb.Command):
    """bts-test-dump FILE: the markers and where goto-marker goes."""

    def __init__(self):
        super().__init__("bts-test-dump", gdb.COMMAND_MAINTENANCE)

    def invoke(self, arg, from_tty):
        inf = gdb.selected_inferior()
        live = {}
        for t in inf.threads():
            t.switch()
            live[t.ptid[1]] = int(gdb.parse_and_eval("$pc"))
        listing = gdb.execute("info bts-markers", to_string=True)
        with open(arg, "w") as out:
            lines = [ln for ln in listing.splitlines() if ln.strip()]
            out.write(json.dumps({"threads": live, "info": lines}) + "\n")
            for k in range(1, len(lines) + 1):
                try:
                    gdb.execute("bts goto-marker %d" % k, to_string=True)
                except gdb.error as e:
                    out.write(json.dumps({"k": k, "error": str(e)}) + "\n")
                    continue
                lwp = gdb.selected_thread().ptid[1]
                rec = gdb.current_recording()
                pos = rec.replay_position
                hist = rec.instruction_history
                first = hist[0].number
                out.write(json.dumps({
                    "k": k, "lwp": lwp,
                    "pc": int(gdb.parse_and_eval("$pc")),
                    "insn": pos.number,
                    "history": len(hist),
                    "targets": _targets(hist, pos.number - first,
                                        live[lwp]),
                }) + "\n")
                gdb.execute("record goto end", to_string=True)
            calls = {}
            for t in inf.threads():
                t.switch()
                calls[t.num] = gdb.execute("bts call-history",
                                           to_string=True)
            out.write(json.dumps({"calls": calls}) + "\n")


TestDump()
