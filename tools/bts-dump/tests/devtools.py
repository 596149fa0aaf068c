#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""devtools.py [--shots DIR] FILE...: open bts-dump's --format=chrome
files in the Performance panel of Chromium's DevTools, headless, as a
person would (its trace viewer, about:tracing's successor), and check
that it reads each without an error on its console, every event of the
file, and every call nested as the file means it (trace_events.py).
Keeps a screenshot of each in DIR for a person to look at.  Prints TAP.

Needs Debian's chromium and Python's standard library only: the browser
is driven over --remote-debugging-pipe (the DevTools protocol, JSON
messages ended by NUL), and the file is served to it from 127.0.0.1 with
the CORS header its fetch() needs."""

import argparse
import base64
import functools
import http.server
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from trace_events import chrome_calls, chrome_check

VIEWER = "devtools://devtools/bundled/trace_app.html"
LOAD_SECONDS = 60
# The panel draws after it has parsed: give it time before the shot.
SETTLE_SECONDS = 1.5

# What the viewer parsed: its raw events and, per thread, its calls
# (Chromium's own web tests read them through these two hooks).
PARSED = """
import('./panels/timeline/timeline.js').then(m => {
    const panel = m.TimelinePanel.TimelinePanel.instance();
    const parsed = panel.getParsedTraceForLayoutTests();
    if (!parsed)
        return null;
    const threads = {};
    for (const [pid, proc] of parsed.Renderer.processes)
        for (const [tid, th] of proc.threads) {
            const calls = threads[pid + '/' + tid] = [];
            const walk = n => {
                calls.push([n.entry.name, n.entry.ts, n.entry.dur,
                            n.depth]);
                n.children.forEach(walk);
            };
            if (th.tree)
                th.tree.roots.forEach(walk);
        }
    return {events: panel.getTraceEngineRawTraceEventsForLayoutTests().length,
            threads: threads};
})
"""


class CorsHandler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Access-Control-Allow-Origin", "*")
        super().end_headers()

    def log_message(self, *args):
        pass


class Browser:
    """Headless Chromium, driven over its debugging pipe."""

    def __init__(self, profile, log):
        to_child, self.to_browser = os.pipe()
        self.from_browser, from_child = os.pipe()
        # The child's fds 3 and 4, whatever numbers the pipes got here.
        to_child, from_child = os.dup(to_child), os.dup(from_child)

        def child_fds():
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.log = open(log, "w")
        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox",
             "--remote-debugging-pipe", "--user-data-dir=" + profile,
             "--enable-unsafe-swiftshader", "--window-size=1400,800",
             "--no-first-run", "--disable-dev-shm-usage", "about:blank"],
            preexec_fn=child_fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=self.log)
        os.close(to_child)
        os.close(from_child)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def _read(self, timeout):
        """One message, or None after @timeout seconds without one."""
        while b"\0" not in self.buf:
            if not select.select([self.from_browser], [], [], timeout)[0]:
                return None
            data = os.read(self.from_browser, 1 << 16)
            if not data:
                raise RuntimeError("chromium exited (see %s)" % self.log.name)
            self.buf += data
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + LOAD_SECONDS
        while time.time() < deadline:
            reply = self._read(deadline - time.time())
            if reply is None:
                break
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply["result"]
            self.events.append(reply)
        raise RuntimeError("%s: no answer in %d s" % (method, LOAD_SECONDS))

    def pump(self, seconds):
        """Collect what the browser reports for @seconds."""
        deadline = time.time() + seconds
        while True:
            left = deadline - time.time()
            msg = self._read(max(left, 0)) if left > 0 else None
            if msg is None:
                return
            self.events.append(msg)


def console_errors(events, session):
    """Errors the page reported: console.error(), uncaught exceptions,
    failed loads and policy refusals."""
    errors = []
    for e in events:
        if e.get("sessionId") != session:
            continue
        p = e.get("params", {})
        if e["method"] == "Runtime.consoleAPICalled" and \
                p["type"] in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description")))
                                   for a in p["args"]))
        elif e["method"] == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            errors.append(d.get("exception", {}).get("description",
                                                     d["text"]))
        elif e["method"] == "Log.entryAdded" and \
                p["entry"]["level"] == "error":
            errors.append(p["entry"]["text"])
    return errors


def view(browser, url, shot):
    """Open @url in the viewer; returns what it parsed (PARSED) and the
    errors its page reported, and writes a screenshot to @shot."""
    target = browser.call("Target.createTarget", {"url": "about:blank"})
    session = browser.call("Target.attachToTarget",
                           {"targetId": target["targetId"],
                            "flatten": True})["sessionId"]
    for method in ("Runtime.enable", "Log.enable", "Page.enable"):
        browser.call(method, {}, session)
    # The viewer's policy lets it fetch only from itself.
    browser.call("Page.setBypassCSP", {"enabled": True}, session)
    browser.call("Page.navigate", {"url": VIEWER}, session)
    browser.pump(1)
    # Navigation from outside cannot give a devtools:// URL a query: the
    # page sets its own, the viewer's "load this trace" parameter.  Later,
    # not in the evaluation: the navigation may else end it first, and
    # the call fails with "Inspected target navigated or closed".
    search = "?loadTimelineFromURL=" + urllib.parse.quote(url, safe="")
    browser.call("Runtime.evaluate",
                 {"expression": "setTimeout(() => { location.search = %s; })"
                  % json.dumps(search)}, session)
    parsed = None
    deadline = time.time() + LOAD_SECONDS
    while parsed is None and time.time() < deadline:
        browser.pump(0.5)
        try:
            r = browser.call("Runtime.evaluate",
                             {"expression": PARSED, "awaitPromise": True,
                              "returnByValue": True}, session)
        except RuntimeError:
            continue
        if "exceptionDetails" not in r:
            parsed = r["result"].get("value")
    browser.pump(SETTLE_SECONDS)
    png = browser.call("Page.captureScreenshot", {}, session)
    with open(shot, "wb") as f:
        f.write(base64.b64decode(png["data"]))
    browser.call("Target.closeTarget", {"targetId": target["targetId"]})
    return parsed, console_errors(browser.events, session)


def compare(doc, parsed):
    """Differences between the calls of @doc and those the viewer
    parsed, and its count of events."""
    bad = []
    if parsed is None:
        return ["the viewer parsed no trace in %d s" % LOAD_SECONDS]
    events = len(doc.get("traceEvents", []))
    if parsed["events"] != events:
        bad.append("the viewer read %d events of %d" %
                   (parsed["events"], events))
    want = {"%d/%d" % k: v for k, v in chrome_calls(doc).items() if v}
    got = {k: sorted(([n, t, d, depth] for n, t, d, depth in v),
                     key=lambda c: (c[1], c[3], c[0]))
           for k, v in parsed["threads"].items() if v}
    for key in sorted(set(want) | set(got)):
        w = [[n, round(t, 3), round(d, 3), depth]
             for n, t, d, depth in want.get(key, [])]
        g = [[n, round(t, 3), round(d, 3), depth]
             for n, t, d, depth in got.get(key, [])]
        if w != g:
            diff = [(a, b) for a, b in zip(w, g) if a != b][:3]
            bad.append("thread %s: the viewer has %d calls, the file %d; "
                       "first differences (file, viewer): %s" %
                       (key, len(g), len(w), diff))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shots", default=".",
                    help="folder for the screenshots (default: here)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    if not shutil.which("chromium"):
        print("1..0 # SKIP no chromium (Debian's package chromium)")
        return 0
    os.makedirs(args.shots, exist_ok=True)
    work = tempfile.mkdtemp(prefix="devtools-")
    serve = os.path.join(work, "serve")
    os.mkdir(serve)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0),
        functools.partial(CorsHandler, directory=serve))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = Browser(os.path.join(work, "profile"),
                      os.path.join(args.shots, "chromium.log"))
    failed = 0
    try:
        for n, path in enumerate(args.files, 1):
            name = os.path.basename(path)
            shot = os.path.join(args.shots, name + ".png")
            try:
                with open(path) as f:
                    doc = json.load(f)
                bad, _ = chrome_check(doc)
            except ValueError as e:
                doc, bad = {}, ["not JSON: %s" % e]
            served = "%d-%s" % (n, name)
            shutil.copy(path, os.path.join(serve, served))
            url = "http://127.0.0.1:%d/%s" % (server.server_address[1],
                                              urllib.parse.quote(served))
            parsed, errors = view(browser, url, shot)
            bad = ["console: " + e for e in errors] + \
                compare(doc, parsed) + bad
            calls = sum(len(v) for v in chrome_calls(doc).values()) \
                if doc else 0
            if bad:
                failed += 1
                print("not ok %d - %s: DevTools' Performance panel reads "
                      "it cleanly" % (n, path))
                for line in bad[:20]:
                    print("# " + line)
            else:
                print("ok %d - %s: DevTools' Performance panel reads its "
                      "%d events and %d calls, nested as the file says, "
                      "without an error; screenshot %s" %
                      (n, path, parsed["events"], calls, shot))
    finally:
        browser.close()
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    print("1..%d" % len(args.files))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
