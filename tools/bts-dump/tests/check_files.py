# SPDX-License-Identifier: GPL-2.0
"""The files mappings name (check.py runs these): a file rebuilt or
replaced since it was traced is told from the one mapped, by what the
trace says of it (build ID, modification time, inode), and its addresses
get no names from it."""

import os
import shutil
import socket
import subprocess
import time
import urllib.request

import rawgen as rg
from checklib import (BTS_DUMP, PROG, PROG_PIE, WORK, jsonl, nm, run, tap,
                      write)

S = nm(PROG)


def branches(out):
    return [(r.get("from_sym"), r.get("to_sym"), r.get("to_dso"))
            for r in jsonl(out) if r["kind"] == "branch"]


def mapped(path, pid, **kw):
    """A trace whose MAP records map @path (as ld.so would at its link
    address) and run its tramp -> leaf."""
    return write("files-%d.raw" % pid, rg.header() + rg.records_chunk([
        rg.thread(pid, pid, rg.THREAD_NEW), rg.map_event(rg.MAP_EXEC),
        *rg.map_file(path, 0, **kw),
        rg.branch(S["tramp"][0], S["leaf"][0])]))


def said(err, path, what):
    return err.count("%s: not the file the trace mapped (its %s differs: "
                     "rebuilt or replaced since)" % (path, what)) == 1


def test_files():
    """Rebuilt or replaced files are not symbolized as the ones mapped"""
    right = [("tramp", "leaf", "prog")]
    bare = [(None, None, "prog")]
    bid = rg.build_id(PROG)
    rc, out, err = run(mapped(PROG, 100, build_id=bid), "--format=jsonl")
    tap(rc == 0 and bid and branches(out) == right and "not the file" not in
        err, "files: the build ID the trace gives is the file's: named",
        out + err)

    other = bytes(b ^ 0xff for b in bid)
    rc, out, err = run(mapped(PROG, 101, build_id=other), "--format=jsonl")
    tap(rc == 0 and branches(out) == bare and said(err, PROG, "build ID"),
        "files: another build ID: no names, and bts-dump says so once",
        out + err)

    mtime = os.stat(PROG).st_mtime_ns
    rc, out, err = run(mapped(PROG, 102, mtime_ns=mtime - 10**9),
                       "--format=jsonl")
    tap(rc == 0 and branches(out) == bare and
        said(err, PROG, "modification time"),
        "files: no build ID, another modification time: no names",
        out + err)
    rc, out, err = run(mapped(PROG, 103, mtime_ns=mtime - 10**9,
                              build_id=bid), "--format=jsonl")
    tap(rc == 0 and branches(out) == right,
        "files: the build ID is the identity where there is one (a copy, "
        "a touch)", out + err)

    # A /proc snapshot names device and inode: the file replaced after
    # the trace was taken (a new inode at the path) is not the one.
    copy = os.path.join(WORK, "replaced")
    shutil.copy(PROG, copy)
    f = write("files-snap.raw", rg.header() +
              rg.maps_chunk(104, "".join(rg.maps_lines(copy))) +
              rg.records_chunk([rg.thread(104, 104, rg.THREAD_NEW),
                                rg.branch(S["tramp"][0], S["leaf"][0])]))
    rc, out, err = run(f, "--format=jsonl")
    named = rc == 0 and branches(out) == [("tramp", "leaf", "replaced")]
    tmp = copy + ".new"
    shutil.copy(PROG_PIE, tmp)
    os.rename(tmp, copy)
    rc, out, err = run(f, "--format=jsonl")
    tap(named and branches(out) == [(None, None, "replaced")] and
        said(err, copy, "inode"),
        "files: a snapshot's file replaced since (another inode): named "
        "before, not after", out + err)

    # Deleted since: the path /proc/PID/maps shows, or any path gone.
    gone = copy + " (deleted)"
    f = write("files-gone.raw", rg.header() +
              rg.maps_chunk(105, rg.maps_lines(PROG).replace(PROG, gone)) +
              rg.records_chunk([rg.thread(105, 105, rg.THREAD_NEW),
                                rg.branch(S["tramp"][0], S["leaf"][0]),
                                rg.branch(S["leaf"][0], S["tramp"][0])]))
    rc, out, err = run(f, "--format=jsonl")
    tap(rc == 0 and branches(out) == [(None, None, "replaced (deleted)")] * 2
        and err.count("%s: No such file or directory: its addresses are not "
                      "symbolized" % gone) == 1,
        "files: a file deleted since: no names, and bts-dump says why once, "
        "naming the file and the error", out + err)

    # Deleted or replaced, and the trace carries a copy of the file as
    # it was mapped (bts-dump read it from /proc/PID/map_files): named
    # from the copy, whatever the path holds; a copy of another inode's
    # is not used.
    shutil.copy(PROG, copy)
    start = [int(line.split("-")[0], 16)
             for line in rg.maps_lines(copy).splitlines()
             if line.split()[1] == "r-xp"][0]
    lines = rg.maps_lines(copy).replace(copy, gone)

    def carried(pid, path):
        return write("files-carried-%d.raw" % pid, rg.header() +
                     rg.maps_chunk(pid, lines) +
                     rg.file_chunk(pid, start, path) +
                     rg.records_chunk([rg.thread(pid, pid, rg.THREAD_NEW),
                                       rg.branch(S["tramp"][0],
                                                 S["leaf"][0])]))
    f = carried(109, copy)
    other = os.path.join(WORK, "other")
    shutil.copy(PROG, other)
    f2 = carried(110, other)
    os.unlink(copy)
    rc, out, err = run(f, "--format=jsonl")
    rc2, out2, err2 = run(f2, "--format=jsonl")
    tap(rc == 0 and branches(out) == [("tramp", "leaf", "replaced (deleted)")]
        and not err and rc2 == 0 and
        branches(out2) == [(None, None, "replaced (deleted)")],
        "files: deleted since, with a copy of the mapped file in the trace: "
        "named from the copy; a copy of another inode (the same bytes) is "
        "not used",
        out + err + out2 + err2)

    # Rebuilt within one trace: each mapping named from its version, the
    # first read while it was there: as records come (folded), and when
    # they arrive though they print at the end (jsonl, held in time order).
    bid2 = bytes(b ^ 0x5a for b in bid)
    with open(PROG, "rb") as src:
        data = src.read()

    def run_of(pid, build):
        return rg.records_chunk([
            rg.thread(pid, pid, rg.THREAD_NEW), rg.map_event(rg.MAP_EXEC),
            *rg.map_file(copy, 0, build_id=build),
            rg.branch(S["tramp"][0], S["leaf"][0])])

    for fmt in ("folded", "jsonl"):
        shutil.copy(PROG, copy)
        p = subprocess.Popen([BTS_DUMP, "-i", "-", "--format=" + fmt],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        p.stdin.write(rg.header() + run_of(106, bid))
        p.stdin.flush()
        time.sleep(1)
        with open(tmp, "wb") as dst:
            dst.write(data.replace(bid, bid2))
        os.rename(tmp, copy)
        p.stdin.write(run_of(107, bid2) + run_of(108, bid))
        out, err = p.communicate(timeout=60)
        if fmt == "folded":
            got = sorted(out.decode().splitlines())
        else:
            got = sorted("[tid %d pid %d];%s;%s 1" % (
                r["tid"], r["pid"], r.get("from_sym"), r.get("to_sym"))
                for r in jsonl(out.decode()) if r["kind"] == "branch")
        want = ["[tid %d pid %d];tramp;leaf 1" % (n, n)
                for n in (106, 107, 108)]
        tap(p.returncode == 0 and got == want and b"not the file" not in err,
            "files: a file rebuilt during the trace: the old build's and "
            "the new one's mappings each named from their version (%s)" %
            fmt, "\n".join(got) + "\n" + err.decode())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_by_build_id():
    """A file rebuilt since it ran: named from a copy of its build ID, in
    perf's build-ID cache or from a debuginfod server"""
    bid = rg.build_id(PROG)
    path = os.path.join(WORK, "rebuilt")
    with open(PROG, "rb") as src:
        data = src.read()
    with open(path, "wb") as dst:
        dst.write(data.replace(bid, bytes(b ^ 0x5a for b in bid)))
    os.chmod(path, 0o755)
    f = mapped(path, 110, build_id=bid)
    home = os.path.join(WORK, "home")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home)

    def dump(env):
        p = subprocess.run([BTS_DUMP, "-i", f, "--format=jsonl"], env=env,
                           capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    rc, out, err = dump(env)
    tap(rc == 0 and branches(out) == [(None, None, "rebuilt")] and
        said(err, path, "build ID") and "perf buildid-cache -a" in err,
        "build ID: none cached: no names, and bts-dump says where it looked",
        out + err)
    # A copy of the build that ran, kept as perf keeps it.
    keep = os.path.join(WORK, "kept", "rebuilt")
    os.makedirs(os.path.dirname(keep), exist_ok=True)
    shutil.copy(PROG, keep)
    p = subprocess.run(["perf", "buildid-cache", "-a", keep], env=env,
                       capture_output=True, text=True)
    rc, out, err = dump(env)
    tap(p.returncode == 0 and rc == 0 and
        branches(out) == [("tramp", "leaf", "rebuilt")] and
        "not the file" not in err,
        "build ID: perf buildid-cache -a's copy names the rebuilt file's "
        "mapping", p.stderr + out + err)
    shutil.rmtree(os.path.join(home, ".debug"))

    # A debuginfod server on this machine that has the build that ran.
    port = free_port()
    srv = subprocess.Popen(["debuginfod", "-p", str(port), "-F",
                            os.path.dirname(keep), "-d",
                            os.path.join(WORK, "debuginfod.sqlite")],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d" % port
    try:
        # Ready when it has scanned the folder and serves the file.
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen("%s/buildid/%s/executable" %
                                       (url, bid.hex()), timeout=5).read()
                break
            except OSError:
                time.sleep(0.5)
        rc, out, err = dump(dict(env, DEBUGINFOD_URLS=url,
                                 DEBUGINFOD_CACHE_PATH=os.path.join(
                                     WORK, "debuginfod-cache")))
    finally:
        srv.terminate()
        srv.wait()
    tap(rc == 0 and branches(out) == [("tramp", "leaf", "rebuilt")] and
        "not the file" not in err,
        "build ID: a debuginfod server's copy names the rebuilt file's "
        "mapping", out + err)
