#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""bench/insn-profile.py LOG SYSTEM_MAP [DIVISOR] [TOP]: the counts that
insn-profile.c printed in LOG, added up by the kernel function each address
is in (System.map), user addresses as one "[user]" line; per DIVISOR (the
events or records the region did) and as shares of the total."""
import bisect
import re
import sys


def main():
    log, smap = sys.argv[1], sys.argv[2]
    div = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    syms = []
    with open(smap) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[1] in "tTwW":
                syms.append((int(w[0], 16), w[2]))
    syms.sort()
    addrs = [a for a, _ in syms]
    by = {}
    total = 0
    with open(log) as f:
        for line in f:
            m = re.match(r"pc ([0-9a-f]+) (\d+)$", line)
            if not m:
                continue
            pc, n = int(m[1], 16), int(m[2])
            total += n
            if pc < 1 << 63:
                name = "[user]"
            else:
                i = bisect.bisect_right(addrs, pc) - 1
                name = syms[i][1] if i >= 0 else "[kernel ?]"
            by[name] = by.get(name, 0) + n
    print(f"{total / div:10.1f}  all ({total} instructions / {div:g})")
    for name, n in sorted(by.items(), key=lambda x: -x[1])[:top]:
        print(f"{n / div:10.1f}  {100 * n / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
