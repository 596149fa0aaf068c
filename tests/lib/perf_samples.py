#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Branches from perf's BTS samples (perf record -e branches:u -c 1), with
the samples perf record wrote twice counted once.

perf record's reader (perf_mmap__push(), tools/perf/util/mmap.c, 6.1 to
6.12 at least) reads the ring's data_head twice: once for where the next
round starts (prev) and once, in perf_mmap__read_init(), for where this
round ends.  When the kernel publishes samples between the two reads, they
are copied to perf.data in this round and again in the next.  Under TCG
the window is wide enough to see it about once in ten runs.

The kernel writes each run of BTS samples with one perf_output_begin(),
one time stamp and one publication of data_head, so its copy in perf.data
is contiguous, within one round.  The same samples in two adjacent rounds,
byte for byte, are that re-read; only those are counted once.  Anything
else that repeats (a batch delivered twice by the kernel has another time
stamp; a copy rounds later is perf record falling behind) is left for the
comparison to catch.

As a command: perf_samples.py DATA [perf script options] prints the
branches as "FROM => TO" lines, and on standard error how many groups it
counted once.  self_test() checks the folding on made-up files
(tests/trace-bts/check.py --self-test runs it).
"""
import re
import struct
import subprocess
import sys

PERF_RECORD_SAMPLE = 9
PERF_RECORD_FINISHED_ROUND = 68
SAMPLE_IDENTIFIER, SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME = 1 << 16, 1, 2, 4

LINE = re.compile(r"^\s*(\d+)\s+(\d+)\.(\d{9}):\s+([0-9a-f]+)\s+=>\s+"
                  r"([0-9a-f]+)\s*$")


def sample_type(data):
    """The sample_type of the events in perf.data @data (bytes); all the
    same, or ValueError."""
    magic, _, attr_size, attrs, attrs_size = struct.unpack_from("<8sQQQQ", data)
    if magic != b"PERFILE2" or not attr_size:
        raise ValueError("not a perf.data file")
    types = {struct.unpack_from("<Q", data, attrs + i * attr_size + 24)[0]
             for i in range(attrs_size // attr_size)}
    if len(types) != 1:
        raise ValueError("events of different sample types: %s" % types)
    return types.pop()


def rereads(data):
    """{(tid, time): n}: the groups of n samples of a tid and a time that
    perf.data @data holds twice, in two adjacent rounds, byte for byte."""
    stype = sample_type(data)
    if not stype & SAMPLE_TID or not stype & SAMPLE_TIME:
        raise ValueError("samples without tid or time: %#x" % stype)
    at_tid = 8 + 8 * bool(stype & SAMPLE_IDENTIFIER) + 8 * bool(stype & SAMPLE_IP)
    offset, size = struct.unpack_from("<QQ", data, 40)
    groups, round_no, pos = {}, 0, offset
    while pos + 8 <= offset + size:
        kind, _, rec_size = struct.unpack_from("<IHH", data, pos)
        if rec_size < 8:
            raise ValueError("a record of size %d at %#x" % (rec_size, pos))
        if kind == PERF_RECORD_FINISHED_ROUND:
            round_no += 1
        elif kind == PERF_RECORD_SAMPLE:
            _, tid, time = struct.unpack_from("<IIQ", data, pos + at_tid)
            parts = groups.setdefault((tid, time), {})
            parts.setdefault(round_no, []).append(data[pos:pos + rec_size])
        pos += rec_size
    out = {}
    for key, parts in groups.items():
        if len(parts) != 2:
            continue
        r1, r2 = sorted(parts)
        if r2 == r1 + 1 and parts[r1] == parts[r2]:
            out[key] = len(parts[r1])
    return out


def fold(samples, twice):
    """@samples: (tid, time, from, to) in perf script's order; @twice: what
    rereads() found.  Each group perf.data holds twice is kept once if
    perf script shows it as that run twice.  Returns the samples and the
    number of groups folded."""
    out, folded, i = [], 0, 0
    while i < len(samples):
        j = i
        while j < len(samples) and samples[j][:2] == samples[i][:2]:
            j += 1
        group = samples[i:j]
        n = twice.get(group[0][:2])
        if n and len(group) == 2 * n and group[:n] == group[n:]:
            group = group[:n]
            folded += 1
        out.extend(group)
        i = j
    return out, folded


def perf_samples(path, args=(), timeout=300):
    """(tid, time, from, to) of the samples perf script shows of @path with
    @args, the re-read groups folded; how many were; perf's standard
    error.  Raises OSError, ValueError (not a file this reads),
    subprocess.TimeoutExpired or RuntimeError (perf failed)."""
    with open(path, "rb") as f:
        twice = rereads(f.read())
    out = subprocess.run(["perf", "script", "-f", "-i", path, "--ns", "-F",
                          "tid,time,ip,addr", *args],
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode:
        raise RuntimeError(out.stderr[-500:])
    samples = []
    for line in out.stdout.splitlines():
        m = LINE.match(line)
        if m:
            samples.append((int(m.group(1)),
                            int(m.group(2)) * 10**9 + int(m.group(3)),
                            int(m.group(4), 16), int(m.group(5), 16)))
        elif line.strip():
            raise RuntimeError("perf script printed a line that is no "
                               "branch sample: %r" % line)
    samples, folded = fold(samples, twice)
    return samples, folded, out.stderr


def made_up(records, stype=SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME):
    """A perf.data of one event and @records: (tid, time, ip) samples, or
    None for a PERF_RECORD_FINISHED_ROUND."""
    attr = struct.pack("<IIQQQ", 0, 32, 0, 1, stype) + struct.pack("<QQ", 0, 0)
    attr_size = len(attr)
    body = b""
    for r in records:
        if r is None:
            body += struct.pack("<IHH", PERF_RECORD_FINISHED_ROUND, 0, 8)
        else:
            tid, time, ip = r
            body += struct.pack("<IHHQIIQ", PERF_RECORD_SAMPLE, 0, 32, ip,
                                tid, tid, time)
    head = 8 * 13
    return struct.pack("<8sQQQQQQQQ", b"PERFILE2", head, attr_size, head,
                       attr_size, head + attr_size, len(body), 0, 0) + \
        bytes(head - 72) + attr + body


def self_test():
    """Made-up files: a re-read folds; the same samples within one round
    (a tight loop), or a batch again at another time, do not."""
    a, b, c = (7, 5, 0x10), (7, 5, 0x20), (7, 6, 0x10)
    S = [(7, 5, 0x10, 1), (7, 5, 0x20, 1)]
    cases = (
        ("a re-read", [a, b, None, a, b], S + S, S, 1),
        ("the same samples two rounds later", [a, b, None, None, a, b],
         S + S, S + S, 0),
        ("a tight loop", [a, a, None, c], [S[0], S[0]], [S[0], S[0]], 0),
        ("the batch again later", [a, b, None, c],
         S + [(7, 6, 0x10, 1)], S + [(7, 6, 0x10, 1)], 0),
        ("a re-read that differs", [a, b, None, a, a], S + [S[0], S[0]],
         S + [S[0], S[0]], 0))
    ok = True
    for what, records, shown, want, n in cases:
        got, folded = fold(shown, rereads(made_up(records)))
        good = got == want and folded == n
        print("#   perf_samples self-test, %s: %s" % (what, "ok" if good else
                                                      "FAILS"))
        ok &= good
    return ok


def main():
    try:
        samples, folded, err = perf_samples(sys.argv[1], sys.argv[2:])
    except (OSError, ValueError, subprocess.TimeoutExpired,
            RuntimeError) as e:
        sys.stderr.write("%s\n" % e)
        return 1
    for _, _, src, dst in samples:
        print("%x => %x" % (src, dst))
    sys.stderr.write(err)
    if folded:
        sys.stderr.write("perf_samples.py: %d groups perf record wrote "
                         "twice counted once\n" % folded)
    return 0


if __name__ == "__main__":
    sys.exit(main())
