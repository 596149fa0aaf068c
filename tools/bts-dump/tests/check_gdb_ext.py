# SPDX-License-Identifier: GPL-2.0
"""The gdb extension's reading of a thread's ring (check.py runs these).

gdb/bts.py finds the markers of a snapshot (BTS_IOC_SNAPSHOT) at every
stop: each marker's event and payload, the branches after it, and the
kernel stretch that ended its system call.  It finds the pseudo-records
by their tag rather than taking the records one by one.  Checked here
against the straightforward reading, record by record, written from
include/uapi/linux/bts.h, on random streams made with rawgen; gdb itself
is a stub (the module needs it only to define its commands).
"""

import errno
import importlib.util
import os
import random
import struct
import sys
import time
import types

import rawgen as rg
from checklib import SRC, tap

TAG = 0x80000000


def load_extension():
    """gdb/bts.py, with a stub for the module gdb gives it."""
    stub = types.ModuleType("gdb")

    class Any:
        def __init__(self, *args, **kwargs):
            pass

        def __getattr__(self, name):
            return Any()

        def __call__(self, *args, **kwargs):
            return Any()

    for name in ("Command", "Parameter", "Function"):
        setattr(stub, name, Any)
    stub.GdbError = type("GdbError", (Exception,), {})
    stub.error = type("error", (Exception,), {})
    stub.events = Any()
    stub.COMMAND_DATA = stub.COMMAND_RUNNING = stub.COMMAND_STATUS = 0
    stub.COMMAND_BREAKPOINTS = stub.COMPLETE_NONE = stub.PARAM_ZUINTEGER = 0
    saved = sys.modules.get("gdb")
    sys.modules["gdb"] = stub
    try:
        path = os.path.join(SRC, "..", "gdb", "bts.py")
        spec = importlib.util.spec_from_file_location("bts_gdb_ext", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if saved is None:
            del sys.modules["gdb"]
        else:
            sys.modules["gdb"] = saved
    return mod


def reference(data):
    """Each marker as (site, id, gen, flags, payload, branches after it,
    its system call's entry time), record by record: a marker's payload
    is the details right before it (none is a branch), its time that of
    the first kernel stretch after it."""
    out, payload, entry, pending, branches = [], {}, None, [], 0
    for frm, to, flags in struct.iter_unpack("<QQQ", data):
        if frm >> 32 != TAG:
            branches += 1
            payload = {}
            continue
        kind, arg = frm & 0xFF, (frm >> 8) & 0xFFFFFF
        if kind == rg.PSEUDO_DETAIL:
            if arg & 0xFF == rg.PSEUDO_MARKER and \
                    (arg >> 8) & 0xFF == rg.DETAIL_MARKER_PAYLOAD:
                payload[arg >> 16] = struct.pack("<QQ", to, flags)
            elif arg & 0xFF == rg.PSEUDO_KERNEL and \
                    (arg >> 8) & 0xFF == rg.DETAIL_KERNEL_ENTRY:
                entry = flags
            continue
        if kind == rg.PSEUDO_MARKER:
            length = arg >> 16
            raw = b"".join(payload.get(i, b"")
                           for i in range((length + 15) // 16))
            m = [to, flags & 0xFFFFFFFF, flags >> 32, (arg >> 8) & 0xFF,
                 raw[:length] if len(raw) >= length else None, branches,
                 None]
            out.append(m)
            pending.append(m)
        elif kind == rg.PSEUDO_KERNEL:
            for m in pending:
                m[6] = entry
            pending = []
        payload, entry = {}, None
    for m in out:
        m[5] = branches - m[5]
    return [tuple(m) for m in out]


def extension_view(ext, data, start=0):
    return [(m.site, m.id, m.gen, m.flags, m.payload, m.branches, m.time)
            for m in ext.Stream(1, data, start).markers]


def last_kernel(data):
    """Where the newest KERNEL record starts, record by record; 0 if
    none."""
    found = 0
    for i, (frm, _, _) in enumerate(struct.iter_unpack("<QQQ", data)):
        if frm >> 32 == TAG and frm & 0xFF == rg.PSEUDO_KERNEL:
            found = i * 24
    return found


def user_address(rnd):
    """A user address; some hold the tag's bytes, in their low half."""
    if rnd.random() < 0.2:
        return 0x7ffe80000000
    return 0x400000 + rnd.randrange(1 << 20)


def random_stream(rnd, nr):
    """@nr-odd records: branches, system calls with markers (some with
    their payload cut by the ring's start or by a branch), kernel
    stretches, unknown pseudo-records, and payload bytes that hold the
    tag."""
    recs = []
    while len(recs) < nr:
        pick = rnd.random()
        if pick < 0.6:
            recs.append(rg.branch(user_address(rnd), user_address(rnd)))
        elif pick < 0.75:
            n = rnd.randrange(0, 60)
            body = bytes(rnd.randrange(256) for _ in range(n))
            if rnd.random() < 0.3:
                body = (b"\0\0\0\x80" * 15)[:n]
            ev = rg.user_event(rnd.randrange(1, 50), rnd.randrange(4),
                               user_address(rnd), body,
                               rnd.choice((0, rg.MARKER_TRUNCATED)))
            if rnd.random() < 0.1:
                ev.insert(rnd.randrange(len(ev)),
                          rg.branch(user_address(rnd), user_address(rnd)))
            recs += ev
        elif pick < 0.95:
            recs += [rg.kernel_detail(rg.ABI_X86_64, 1,
                                      rnd.randrange(1 << 40)),
                     rg.kernel(rg.ENTRY_SYSCALL, user_address(rnd),
                               user_address(rnd))]
        else:
            recs.append((rg.pseudo(0x42, rnd.randrange(1 << 24)),
                         user_address(rnd), rnd.randrange(1 << 64)))
    # A ring's oldest records may start anywhere, a marker's details too.
    recs = recs[rnd.randrange(4):]
    return b"".join(struct.pack("<QQQ", *r) for r in recs)


def test_gdb_ext_markers():
    ext = load_extension()
    rnd = random.Random(36)
    streams = [random_stream(rnd, rnd.randrange(1, 3000))
               for _ in range(200)]
    bad = [i for i, s in enumerate(streams)
           if extension_view(ext, s) != reference(s)]
    markers = sum(len(reference(s)) for s in streams)
    tap(not bad and markers > 1000,
        "gdb extension: the markers of 200 random rings (%d markers) as "
        "a record-by-record reading finds them" % markers,
        "streams that differ: %s" % bad[:10])

    # Planted: the scan passes over the last pseudo-record, or takes the
    # record before each; both must show.
    s = streams[0]
    scan = ext._pseudo_records
    ext._pseudo_records = lambda data, start=0: scan(data, start)[:-1]
    missed = extension_view(ext, s) != reference(s)
    ext._pseudo_records = lambda data, start=0: [max(i - 1, 0)
                                                 for i in scan(data, start)]
    shifted = extension_view(ext, s) != reference(s)
    ext._pseudo_records = scan
    tap(missed and shifted,
        "self-test: a pseudo-record missed, or one record off, differs "
        "from the record-by-record reading (%s, %s)" % (missed, shifted))

    # From a record on: the markers of the rest, as reading only the
    # rest finds them; the newest kernel stretch found from the end.
    rnd = random.Random(37)
    bad_start, bad_last = [], []
    for i, s in enumerate(streams):
        start = rnd.randrange(len(s) // 24 + 1) * 24
        if extension_view(ext, s, start) != reference(s[start:]):
            bad_start.append(i)
        if ext._last_kernel_record(s) != last_kernel(s):
            bad_last.append(i)
    tap(not bad_start and not bad_last,
        "gdb extension: a ring read from a record on, and its newest "
        "kernel stretch, as record by record",
        "streams that differ: %s, %s" % (bad_start[:10], bad_last[:10]))

    # Two stops: the ring's last 3,000 records at each, the thread having
    # run on in between.  The second reads on from the first's newest
    # kernel stretch; every marker is in one reading or the other.
    lost, checked, planted = [], 0, 0
    for i in range(100):
        whole = random_stream(rnd, 9000)
        n1 = rnd.randrange(1000, len(whole) // 24 - 1000) * 24
        n2 = min(n1 + rnd.randrange(0, 2000) * 24, len(whole))
        first = whole[max(0, n1 - 72000):n1]
        second = whole[max(0, n2 - 72000):n2]
        anchor = ext.Stream(1, first).anchor
        at = ext.Session._resume_at(types.SimpleNamespace(
            anchors={1: anchor}), 1, second)
        if anchor is None or at == 0:
            continue
        seen = {(m[0], m[1], m[2], m[6]) for m in reference(first)
                if m[6] is not None}
        later = {(m[0], m[1], m[2], m[6])
                 for m in extension_view(ext, second, at)}
        every = {(m[0], m[1], m[2], m[6]) for m in reference(second)}
        if not every <= seen | later or later != {
                (m[0], m[1], m[2], m[6]) for m in reference(second[at:])}:
            lost.append(i)
        checked += 1
        # Planted: reading on from where the first ring ended loses the
        # markers of a system call that had not returned then.
        new = len(second) - (n2 - n1)
        planted += not every <= seen | {(m[0], m[1], m[2], m[6]) for m in
                                        extension_view(ext, second, new)}
    tap(not lost and checked > 50 and planted > 10,
        "gdb extension: the next stop reads on from the last one's newest "
        "kernel stretch and misses no marker (%d pairs of stops; reading "
        "on from the first ring's end instead loses some in %d)" %
        (checked, planted), "pairs that lose markers: %s" % lost[:10])

    # What a stop costs: a full ring of 65,536 records (the extension's
    # default), a marker every 64 branches.  Printed, not asserted.
    recs = []
    for i in range(1000):
        recs += [rg.branch(0x401000 + i, 0x402000)] * 56
        recs += rg.user_event(7, 0, 0x401800, bytes(24))
        recs += [rg.kernel_detail(rg.ABI_X86_64, 1, i),
                 rg.kernel(rg.ENTRY_SYSCALL, 0x401802, 0x401804)]
    data = b"".join(struct.pack("<QQQ", *r) for r in recs[:65536])
    t0 = time.perf_counter()
    fast = extension_view(ext, data)
    t1 = time.perf_counter()
    slow = reference(data)
    t2 = time.perf_counter()
    tap(fast == slow and len(fast) > 900,
        "gdb extension: a full ring of 65,536 records read in %.1f ms "
        "(record by record: %.1f ms)" % ((t1 - t0) * 1e3, (t2 - t1) * 1e3))


def test_gdb_ext_attach_errors():
    """What `bts markers` says when the kernel refuses the attach, for the
    refusals the VM cannot show (its kernel has markers, no limit
    reached): the ioctl is a stub that fails as such a kernel would."""
    ext = load_extension()
    want = {
        errno.EOPNOTSUPP: "a kernel without user_events markers "
                          "(CONFIG_USER_EVENTS_BTS)",
        errno.EDQUOT: "past kernel.bts_user_max_kb",
        errno.EBUSY: "the thread has too many tracers",
    }
    saved = (ext.os.open, ext.os.close, ext.fcntl.ioctl)
    bad = []
    try:
        ext.os.open = lambda *args: 99
        ext.os.close = lambda fd: None
        for err, text in want.items():
            def refuse(fd, req, arg, err=err):
                raise OSError(err, os.strerror(err))
            ext.fcntl.ioctl = refuse
            try:
                ext.Device(1234, "myapp_*", 16)
                bad.append("%s: no error" % errno.errorcode[err])
            except ext.gdb.GdbError as e:
                if not str(e).startswith("bts: cannot trace thread 1234: ") \
                        or text not in str(e):
                    bad.append(str(e))
    finally:
        ext.os.open, ext.os.close, ext.fcntl.ioctl = saved
    tap(not bad, "gdb extension: a refused attach says why (no markers in "
        "the kernel, the per-user limit, too many tracers)", "\n".join(bad))

