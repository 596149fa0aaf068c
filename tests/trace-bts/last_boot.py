#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/trace-bts/last_boot.py: /sys/kernel/tracing/bts_last_boot after
bts_chain.ko triple-faulted CPU 1 (tests/trace-bts/last-boot).

  last_boot.py chain KALLSYMS LAST_BOOT RELEASE
  last_boot.py self-test KALLSYMS LAST_BOOT RELEASE

KALLSYMS: the module's symbols in the first boot (/proc/kallsyms lines),
LAST_BOOT: the file as the second boot showed it.  The checks:

- the previous boot is named, as this same kernel (RELEASE), so kernel
  addresses are named;
- every CPU shows its last branches, in sections "CPU N: ...";
- CPU 1's last branches end in the chain, in order: the calls into
  bts_chain_a, bts_chain_b, bts_chain_c three times, and last
  bts_chain_triple_fault (branches from the module to a function's first
  instruction),
  after which only branches inside it: nothing ran after the instruction
  that reset the machine.

self-test: the same file with CPU 1's last record dropped, or two of the
chain's calls swapped, or CPU 1's section missing, fails.
"""
import re
import sys

CHAIN = ["bts_chain_a", "bts_chain_b", "bts_chain_c", "bts_chain_c",
         "bts_chain_c", "bts_chain_triple_fault"]
CPU = re.compile(r"^CPU (\d+): (.*)$")
RECORD = re.compile(r"^  (?!-- )(.+?) -> (.+)$")


def module_functions(path):
    """[(start, name)] of the module's text symbols, sorted."""
    out = []
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and f[1] in "tT":
            out.append((int(f[0], 16), f[2]))
    return sorted(out)


def address(text):
    """A printed address as an int, None for a named one."""
    if text.startswith("0x"):
        return int(text, 16)
    return None


def function_of(funcs, addr):
    """The module function holding @addr (up to the next symbol)."""
    name = None
    for start, n in funcs:
        if start > addr:
            break
        name = n
    if funcs and addr > funcs[-1][0] + 0x1000:
        return None
    return name


def parse(text):
    """(header, {cpu: (what, [(from, to)])})."""
    lines = text.splitlines()
    cpus, cur = {}, None
    for line in lines[1:]:
        m = CPU.match(line)
        if m:
            cur = int(m[1])
            cpus[cur] = (m[2], [])
            continue
        m = RECORD.match(line)
        if m and cur is not None:
            cpus[cur][1].append((m[1], m[2]))
    return (lines[0] if lines else ""), cpus


def check(funcs, text, release):
    """An empty string if the file shows the chain, else why not."""
    header, cpus = parse(text)
    if not header.startswith("previous boot: %s " % release) or \
            "another kernel" in header:
        return "header: %r" % header
    if sorted(cpus) != [0, 1] or any(not what.startswith("its last branches")
                                      for what, _ in cpus.values()):
        return "CPU sections: %r" % {c: w for c, (w, _) in cpus.items()}
    recs = cpus[1][1]
    # Calls: a branch from the module to a function's first instruction
    # (a return lands inside the caller; an interrupt's iret, which may
    # come back to a first instruction, is the kernel's).
    starts = {start: name for start, name in funcs}
    entered = [starts[address(to)] for frm, to in recs
               if function_of(funcs, address(frm) or 0) and
               address(to) in starts and starts[address(to)] in CHAIN]
    if entered[-len(CHAIN):] != CHAIN:
        return "CPU 1 entered %s last, not %s" % (entered[-8:], CHAIN)
    # Nothing after the call into bts_chain_triple_fault but its own.
    last = max(i for i, (_, to) in enumerate(recs)
               if function_of(funcs, address(to) or 0) ==
               "bts_chain_triple_fault" and
               function_of(funcs, address(recs[i][0]) or 0) !=
               "bts_chain_triple_fault")
    after = recs[last + 1:]
    if any(function_of(funcs, address(f) or 0) != "bts_chain_triple_fault"
           for f, _ in after):
        return "CPU 1 branched elsewhere after entering bts_chain_triple_fault: %s" % after[:4]
    return ""


def main():
    mode, kallsyms, path, release = sys.argv[1:5]
    funcs = module_functions(kallsyms)
    text = open(path).read()
    if mode == "chain":
        why = check(funcs, text, release)
        header, cpus = parse(text)
        print("# %s" % (why or "CPU 1's %d last records end in the chain, "
                        "up to the triple fault" % len(cpus[1][1])))
        sys.exit(1 if why else 0)
    lines = text.splitlines()
    records = [i for i, l in enumerate(lines) if RECORD.match(l)]
    cpu1 = next(i for i, l in enumerate(lines) if l.startswith("CPU 1:"))
    dropped = lines[:records[-1]] + lines[records[-1] + 1:]
    starts = {start: name for start, name in funcs}
    calls = [i for i in records if i > cpu1 and
             function_of(funcs, address(RECORD.match(lines[i])[1]) or 0) and
             starts.get(address(RECORD.match(lines[i])[2])) in CHAIN]
    if len(calls) < 2:
        print("# the file has not the chain's calls to swap")
        sys.exit(1)
    swapped = lines[:]
    swapped[calls[0]], swapped[calls[1]] = swapped[calls[1]], swapped[calls[0]]
    missing = lines[:cpu1]
    caught = [bool(check(funcs, "\n".join(v), release))
              for v in (dropped, swapped, missing)]
    print("# the last record dropped: %s; two calls swapped: %s; CPU 1 "
          "missing: %s" % tuple("fails" if c else "PASSES" for c in caught))
    sys.exit(0 if all(caught) and not check(funcs, text, release) else 1)


if __name__ == "__main__":
    main()
