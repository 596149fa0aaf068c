# SPDX-License-Identifier: GPL-2.0
"""What the host checks of tests/trace-bts share (check.py, oracle.py):
TAP results, and reading the files of a results folder."""

import os

results = []


def tap(ok, desc, diag=""):
    results.append(ok)
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), desc))
    if not ok and diag:
        for line in str(diag).rstrip("\n").split("\n")[:30]:
            print("#   " + line)


def read_in(folder, name, default=""):
    """The text of @folder/@name, @default if it cannot be read."""
    try:
        with open(os.path.join(folder, name)) as f:
            return f.read()
    except OSError:
        return default
