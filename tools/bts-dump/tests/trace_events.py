# SPDX-License-Identifier: GPL-2.0
"""Chrome's trace-event JSON as bts-dump writes it (--format=chrome):
what a document holds per thread, and its problems.  Shared by the host
tests (check.py) and the DevTools check (devtools.py)."""


def chrome_events(doc):
    """Each thread's events of a trace-event document as a viewer lays
    them out, each complete (X) event a B and an E: in time order, at
    equal times the instants first, then the calls that end (innermost
    first), then those that begin (outermost first).  Returns the
    problems of the events themselves (keys, numbers, an instant's time
    going back on its thread) and the events per (pid, tid)."""
    bad, threads, last = [], {}, {}
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        return ["no traceEvents array"], threads
    for i, e in enumerate(events):
        ph = e.get("ph")
        key = (e.get("pid"), e.get("tid"))
        need = {"X": ("name", "ts", "dur"), "i": ("name", "ts", "s"),
                "M": ("name", "args")}.get(ph)
        if need is None:
            bad.append("event %d: phase %r" % (i, ph))
            continue
        if not all(isinstance(k, int) for k in key):
            bad.append("event %d: pid/tid not numbers" % i)
        if any(k not in e for k in need):
            bad.append("event %d: %s lacks one of %s" % (i, ph, need))
            continue
        if ph == "M":
            continue
        ts, dur = e["ts"], e.get("dur", 0)
        if not all(isinstance(v, (int, float)) and v >= 0
                   for v in (ts, dur)):
            bad.append("event %d: ts %r, dur %r" % (i, ts, dur))
            continue
        t = threads.setdefault(key, [])
        if ph == "i":
            if ts < last.get(key, 0):
                bad.append("event %d: ts %r goes back" % (i, ts))
            last[key] = ts
            t.append(((round(ts * 1024), 0, 0, i, 0), e))
            continue
        # In bts-dump's steps of 1/1024 us, which floating point adds
        # exactly (print_chrome.c).
        ts, end = round(ts * 1024), round((ts + dur) * 1024)
        # Of calls of the same extent, the first in the file is the
        # outer (as DevTools takes it).  A call of no duration ends where
        # it begins, among the begins.
        t.append(((ts, 2, -end, i, 0),
                  {"ph": "B", "name": e["name"], "ts": ts / 1024}))
        t.append(((ts, 2, -ts, i, 1) if end == ts else
                  (end, 1, -ts, -i, 0),
                  {"ph": "E", "name": e["name"], "ts": end / 1024}))
    return bad, {k: [e for _, e in sorted(v, key=lambda x: x[0])]
                 for k, v in threads.items()}


def chrome_check(doc):
    """Problems of a trace-event document (the JSON object format) as
    bts-dump writes it: chrome_events()' problems, and calls that overlap
    without one inside the other.  Returns the problems and, per thread,
    the time and the stack after each event, in order."""
    bad, threads = chrome_events(doc)
    stacks = {}
    for key, events in threads.items():
        st = []
        for e in events:
            if e["ph"] == "B":
                st.append(e["name"])
            elif e["ph"] == "E":
                if not st or e["name"] != st[-1]:
                    bad.append("thread %r: %s ends at %r inside another "
                               "call" % (key, e["name"], e["ts"]))
                    continue
                st.pop()
            stacks.setdefault(key, []).append((e["ts"], ";".join(st)))
        if st:
            bad.append("thread %r: %s left open" % (key, ";".join(st)))
    return bad, stacks


def chrome_calls(doc):
    """Per (pid, tid), the document's calls as [name, ts, dur, depth]
    (depth 0: no call around it), sorted."""
    _, threads = chrome_events(doc)
    calls = {}
    for key, events in threads.items():
        st, out = [], []
        for e in events:
            if e["ph"] == "B":
                st.append(len(out))
                out.append([e["name"], e["ts"], None, len(st) - 1])
            elif e["ph"] == "E" and st:
                c = out[st.pop()]
                c[2] = e["ts"] - c[1]
        calls[key] = sorted(out, key=lambda c: (c[1], c[3], c[0]))
    return calls
