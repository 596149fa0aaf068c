# SPDX-License-Identifier: GPL-2.0
"""What bts-dump's host tests share (check.py, check_perf.py): the
command line (see run), TAP results and running bts-dump."""

import json
import os
import subprocess
import sys

BTS_DUMP, WORK, PROG, PROG_PIE, PROG32, SRC = sys.argv[1:7]

# Files by build ID come from where the tests put them, not from the
# machine's perf cache or a debuginfod server on the network.
os.environ.pop("DEBUGINFOD_URLS", None)
os.environ["HOME"] = WORK

results = []


def tap(ok, desc, diag=""):
    results.append(ok)
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), desc))
    if not ok and diag:
        for line in diag.rstrip("\n").split("\n"):
            print("# " + line)


def nm(path):
    syms = {}
    out = subprocess.check_output(["nm", "-S", "--defined-only", path],
                                  text=True)
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4:
            syms[f[3]] = (int(f[0], 16), int(f[1], 16))
        elif len(f) == 3:
            syms[f[2]] = (int(f[0], 16), 0)
    return syms


def marked_line(src, name):
    with open(src) as f:
        for n, line in enumerate(f, 1):
            if "@%s */" % name in line:
                return n
    raise LookupError(name)


def write(name, data):
    path = os.path.join(WORK, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def run(path, *args):
    p = subprocess.run([BTS_DUMP, "-i", path] + list(args),
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def run_memcheck(path, *args):
    """run() under valgrind: exit 99 on a read of uninitialised memory, a
    bad access or a leak of what bts-dump should have freed."""
    p = subprocess.run(["valgrind", "-q", "--error-exitcode=99",
                        "--leak-check=full", "--errors-for-leak-kinds=definite",
                        BTS_DUMP, "-i", path] + list(args),
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def jsonl(out):
    return [json.loads(line) for line in out.splitlines()]


def has_lines(out, want):
    """Every line of @want appears in @out, in order."""
    lines = out.splitlines()
    at = 0
    for w in want:
        while at < len(lines) and lines[at] != w:
            at += 1
        if at == len(lines):
            return False
        at += 1
    return True


def diag(out, want):
    return "expected, in order:\n  " + "\n  ".join(want) + \
        "\ngot:\n  " + "\n  ".join(out.splitlines())
