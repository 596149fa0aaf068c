# SPDX-License-Identifier: GPL-2.0
"""Application events (user_events) in gdb's branch trace.

gdb's ``record btrace bts`` shows what a program did, branch by branch;
this extension shows, in the same history, where the program wrote the
events it describes itself with (Documentation/trace/user_events.rst):

    (gdb) source /usr/local/share/bts/gdb/bts.py
    (gdb) record btrace bts
    (gdb) bts markers 'myapp_*'     # subscribe this inferior to the events
    (gdb) continue
    (gdb) info bts-markers          # the events written while recording
    (gdb) bts goto-marker 3         # replay from the write of the third

The events come from /dev/bts (include/uapi/linux/bts.h): a file per
thread of the inferior, attached in ring mode with BTS_ATTACH_MARKERS and
BTS_ATTACH_INHERIT_THREADS (the threads the inferior creates, not the
processes it forks, which gdb does not record), which enables the events
in the inferior only and puts
a BTS_PSEUDO_MARKER record in the thread's stream between the branches
before the write and those after it.  At every stop each thread's ring is
read (BTS_IOC_SNAPSHOT) and each new marker placed in gdb's history of
that thread.  Both are made of the same hardware records, and both end
where the thread stopped: gdb's history is the blocks of instructions
between the thread's user-mode branches, the stream those branches with
the kernel's entries and exits and the markers between them.  A marker
with N branches after it in the stream was written in the block N
branches back from the end of gdb's history, by the system call
instruction the marker names.  A history that does not reach back that
far (gdb's buffer kept only the newest branches), or could not decode
that block (gdb cannot follow the kernel into a signal handler), says so
rather than point anywhere else.
"""

import ctypes
import errno
import fcntl
import fnmatch
import os
import struct

import gdb

# include/uapi/linux/bts.h
BTS_PSEUDO_TAG = 0x80000000
BTS_PSEUDO_KERNEL = 1
BTS_PSEUDO_MARKER = 4
BTS_PSEUDO_DETAIL = 7
BTS_DETAIL_KERNEL_ENTRY = 0
BTS_DETAIL_MARKER_PAYLOAD = 1
BTS_MARKER_TRUNCATED = 1 << 0
BTS_MARKER_NOT_CAPTURED = 1 << 1
BTS_ATTACH_MARKERS = 1 << 3
BTS_ATTACH_INHERIT_THREADS = 1 << 4
BTS_MODE_RING = 1
BTS_MAX_RECORDS = 1 << 20
BTS_IOC_ATTACH = 0xB901
BTS_IOC_DETACH = 0xB903
BTS_IOC_SNAPSHOT = 0xB904
BTS_IOC_EVENT_FORMAT = 0xB905
RECORD = struct.Struct("<QQQ")
TAG = struct.pack("<I", BTS_PSEUDO_TAG)

DEVICE = "/dev/bts"
# Why a marker has no place in gdb's history, and what to do about it.
OLDER = "older than gdb's history"
GAP = "in a gap of gdb's history"
ELSEWHERE = "not where gdb's history has its system call"
ADVICE = {
    OLDER: "gdb's buffer kept only newer branches: a larger `set record "
    "btrace bts buffer-size' keeps more",
    GAP: "gdb could not decode that stretch of the trace (it does not "
    "follow the kernel into a signal handler)",
    ELSEWHERE: "gdb's history and the branch trace disagree there",
}
DEFAULT_RECORDS = 65536


def _pseudo_records(data, start=0):
    """The indexes of the pseudo-records in @data, a stream's records,
    from byte @start (a record's) on.

    Found by their tag, the high half of the source, with bytes.find():
    a ring holds some 65,536 records, mostly branches, which a loop in
    Python would take one by one at every stop.  The stream is
    user-only, so a branch's source is a user address, whose high half
    is never the tag; the tag elsewhere in a record (a target, flags) is
    not where a source's high half is, and is passed over."""
    out = []
    at = data.find(TAG, start + 4)
    while at >= 0:
        if at % RECORD.size == 4:
            out.append(at // RECORD.size)
            at = data.find(TAG, at + RECORD.size)
        else:
            at = data.find(TAG, at + 1)
    return out


def _last_kernel_record(data):
    """Where in @data its newest BTS_PSEUDO_KERNEL record starts; 0 if it
    has none.  Searched from the end: a system call under way is after
    it."""
    end = len(data)
    while True:
        at = data.rfind(TAG, 0, end)
        if at < 0:
            return 0
        if at % RECORD.size == 4 and _pseudo_type(
                struct.unpack_from("<Q", data, at - 4)[0]) == \
                BTS_PSEUDO_KERNEL:
            return at - 4
        end = at + len(TAG) - 1


def _pseudo_type(frm):
    return frm & 0xFF


def _pseudo_arg(frm):
    return (frm >> 8) & 0xFFFFFF


class Marker:
    """One event a thread of the inferior wrote."""

    def __init__(self, lwp, site, ev_id, gen, flags, payload):
        self.lwp = lwp
        self.site = site            # the system call instruction
        self.id = ev_id
        self.gen = gen
        self.flags = flags          # BTS_MARKER_*
        self.payload = payload      # None: its details are not in the ring
        self.branches = 0           # branches after it, to the stop
        self.time = None            # its system call's return, ns
        self.number = None          # its instruction in gdb's history
        self.first_pc = None        # that history's first, then
        self.why = None             # why not, when it has none

    def key(self):
        """The same write, seen in two snapshots."""
        return (self.lwp, self.time, self.site, self.id, self.gen)


class Stream:
    """What one snapshot of a thread's ring says about its markers, from
    byte @start (a record's) on."""

    def __init__(self, lwp, data, start=0):
        self.lwp = lwp
        self.markers = []
        self.newest_kernel_time = None
        self.oldest_kernel_time = None
        # The newest kernel stretch's two records (its detail, with the
        # time it ended, and itself): where the next snapshot's new
        # records begin, found again there.
        self.anchor = None
        self._parse(data, start)

    def _parse(self, data, start):
        words = memoryview(data).cast("Q")
        first = start // RECORD.size
        payload = {}
        entry_time = None
        unreturned = []             # markers before their system call's
        after = first - 1           # the pseudo-record before this one
        pseudo = _pseudo_records(data, start)
        for nr_pseudo, at in enumerate(pseudo):
            # The branches of the stream so far.
            branches = at - first - nr_pseudo
            if at != after + 1:
                payload.clear()     # a marker's details come right before
            after = at
            frm, to, flags = words[3 * at], words[3 * at + 1], \
                words[3 * at + 2]
            kind = _pseudo_type(frm)
            arg = _pseudo_arg(frm)
            if kind == BTS_PSEUDO_DETAIL:
                layout = (arg >> 8) & 0xFF
                if (arg & 0xFF) == BTS_PSEUDO_MARKER and \
                        layout == BTS_DETAIL_MARKER_PAYLOAD:
                    payload[arg >> 16] = struct.pack("<QQ", to, flags)
                elif (arg & 0xFF) == BTS_PSEUDO_KERNEL and \
                        layout == BTS_DETAIL_KERNEL_ENTRY:
                    entry_time, entry_at = flags, at
                continue
            if kind == BTS_PSEUDO_MARKER:
                length = (arg >> 16) & 0xFF
                raw = b"".join(payload.get(j, b"")
                               for j in range((length + 15) // 16))
                m = Marker(self.lwp, to, flags & 0xFFFFFFFF, flags >> 32,
                           (arg >> 8) & 0xFF,
                           raw[:length] if len(raw) >= length else None)
                m.branches = -branches
                self.markers.append(m)
                unreturned.append(m)
            elif kind == BTS_PSEUDO_KERNEL:
                # The first stretch after a marker is its system call's.
                for m in unreturned:
                    m.time = entry_time
                unreturned = []
                if entry_time is not None:
                    if self.oldest_kernel_time is None:
                        self.oldest_kernel_time = entry_time
                    self.newest_kernel_time = entry_time
                    self.anchor = bytes(data[entry_at * RECORD.size:
                                             (at + 1) * RECORD.size])
            payload.clear()
            entry_time = None
        branches = len(data) // RECORD.size - first - len(pseudo)
        for m in self.markers:
            m.branches += branches


def _errno_text(err):
    return "%s (%s)" % (os.strerror(err), errno.errorcode.get(err, err))


def _cpu_has_bts():
    """Whether /proc/cpuinfo lists the branch trace store (flag bts); True
    if it cannot tell."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return "bts" in line.partition(":")[2].split()
    except OSError:
        pass
    return True


def _open_device():
    """A new /dev/bts file, or the error that says why there is none."""
    try:
        return os.open(DEVICE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENOENT and not _cpu_has_bts():
            raise gdb.GdbError(
                "bts: no %s: this CPU has no branch trace store (BTS: "
                "Intel CPUs have it, few virtual machines show it)" % DEVICE)
        if e.errno == errno.ENOENT:
            raise gdb.GdbError(
                "bts: no %s: this kernel has no branch trace device "
                "(CONFIG_X86_DS)" % DEVICE)
        if e.errno in (errno.EACCES, errno.EPERM):
            raise gdb.GdbError(
                "bts: %s: %s; kernel.perf_event_paranoid above 2 "
                "needs CAP_PERFMON" % (DEVICE, _errno_text(e.errno)))
        raise gdb.GdbError("bts: %s: %s" % (DEVICE, _errno_text(e.errno)))


class Device:
    """A /dev/bts file attached to one thread and the threads it starts."""

    def __init__(self, lwp, glob, nr_records):
        self.lwp = lwp
        self.nr_records = nr_records
        self.fd = _open_device()
        self._glob = ctypes.create_string_buffer(glob.encode())
        attach = struct.pack("<IIIIIIQ", 32,
                             BTS_ATTACH_INHERIT_THREADS | BTS_ATTACH_MARKERS,
                             lwp,
                             BTS_MODE_RING, nr_records, 0,
                             ctypes.addressof(self._glob))
        try:
            fcntl.ioctl(self.fd, BTS_IOC_ATTACH, bytearray(attach))
        except OSError as e:
            os.close(self.fd)
            raise gdb.GdbError("bts: cannot trace thread %d: %s%s" % (
                lwp, _errno_text(e.errno), {
                    errno.EOPNOTSUPP: ": no branch trace store on this "
                    "CPU, or a kernel without user_events markers "
                    "(CONFIG_USER_EVENTS_BTS)",
                    errno.EDQUOT: ": past kernel.bts_user_max_kb "
                    "(try a smaller `set bts records`)",
                    errno.EBUSY: ": the thread has too many tracers",
                }.get(e.errno, "")))
        self._records = (ctypes.c_char * (nr_records * RECORD.size))()

    def snapshot(self, lwp):
        """The thread's ring as it is now, or None if this file has not it."""
        arg = bytearray(struct.pack("<IIIIQ", 24, 0, lwp, self.nr_records,
                                    ctypes.addressof(self._records)))
        try:
            fcntl.ioctl(self.fd, BTS_IOC_SNAPSHOT, arg)
        except OSError as e:
            if e.errno == errno.ESRCH:
                return None
            raise gdb.GdbError("bts: reading thread %d's trace: %s" %
                               (lwp, _errno_text(e.errno)))
        nr = struct.unpack_from("<I", arg, 12)[0]
        return bytes(self._records[:nr * RECORD.size])

    def event_format(self, ev_id, gen):
        """The event's format ("NAME TYPE FIELD; ..."), None if gone."""
        size = 512
        while True:
            buf = ctypes.create_string_buffer(size)
            arg = bytearray(struct.pack("<IIIIIIQ", 32, 0, ev_id, gen, size,
                                        0, ctypes.addressof(buf)))
            try:
                fcntl.ioctl(self.fd, BTS_IOC_EVENT_FORMAT, arg)
            except OSError as e:
                if e.errno == errno.ENOSPC:
                    size = struct.unpack_from("<I", arg, 16)[0]
                    continue
                return None
            return buf.value.decode(errors="replace")

    def close(self):
        try:
            fcntl.ioctl(self.fd, BTS_IOC_DETACH, 0)
        finally:
            os.close(self.fd)


class EventFormat:
    """A user_event's fields, to decode a marker's payload."""

    SCALARS = {"s64": (8, True), "u64": (8, False), "long": (8, True),
               "unsigned long": (8, False), "s32": (4, True),
               "u32": (4, False), "int": (4, True),
               "unsigned int": (4, False), "pid_t": (4, True),
               "s16": (2, True), "u16": (2, False), "short": (2, True),
               "unsigned short": (2, False), "s8": (1, True),
               "u8": (1, False), "char": (1, True),
               "unsigned char": (1, False)}

    def __init__(self, text):
        name, _, rest = text.partition(" ")
        self.name = name
        self.fields = []            # (name, kind, offset, size, chars)
        self.complete = True
        offset = 0
        for spec in filter(None, rest.split("; ")):
            field = self._field(spec, offset)
            if not field:
                self.complete = False
                break
            self.fields.append(field)
            offset += field[3]

    def _field(self, spec, offset):
        words = spec.split()
        if len(words) < 2:
            return None
        if words[0] == "struct":
            if len(words) != 4 or not words[3].isdigit():
                return None
            return (words[2], "bytes", offset, int(words[3]), False)
        ftype, fname = " ".join(words[:-1]), words[-1]
        for loc in ("__data_loc ", "__rel_loc "):
            if ftype.startswith(loc):
                return (fname, loc.strip("_ "), offset, 4, "char" in ftype)
        if ftype.endswith("]") and "[" in ftype:
            base, _, count = ftype[:-1].partition("[")
            if count.isdigit() and base in ("char", "unsigned char"):
                return (fname, "chars" if base == "char" else "bytes",
                        offset, int(count), base == "char")
            return None
        if ftype in self.SCALARS:
            size, signed = self.SCALARS[ftype]
            return (fname, "int" if signed else "uint", offset, size, False)
        return None

    @staticmethod
    def _string(raw):
        raw = raw.split(b"\0", 1)[0]
        return '"%s"' % "".join(
            chr(c) if 0x20 <= c < 0x7F and c not in b'"\\' else
            ("\\" + chr(c) if c in b'"\\' else "\\x%02x" % c) for c in raw)

    def decode(self, payload):
        """' NAME=VALUE' for each field; '?' where the marker cut it."""
        out = []
        for fname, kind, offset, size, chars in self.fields:
            value = "?"
            if offset + size <= len(payload):
                raw = payload[offset:offset + size]
                num = int.from_bytes(raw, "little")
                if kind == "int":
                    value = str(int.from_bytes(raw, "little", signed=True))
                elif kind == "uint":
                    value = str(num)
                elif kind == "chars":
                    value = self._string(raw)
                elif kind == "bytes":
                    value = '"%s"' % raw.hex()
                else:
                    at, n = num & 0xFFFF, num >> 16
                    # __data_loc counts from the record's common fields
                    # (8 bytes), which a payload lacks.
                    at = at - 8 if kind == "data_loc" else at + offset + 4
                    if at >= 0 and at + n <= len(payload):
                        raw = payload[at:at + n]
                        value = self._string(raw) if chars else \
                            '"%s"' % raw.hex()
            out.append(" %s=%s" % (fname, value))
        if not self.complete:
            out.append(" payload=%s" % payload.hex())
        return "".join(out)


def _pc_size(item):
    """(pc, size) of an instruction of gdb's history; False for a gap."""
    try:
        return (item.pc, item.size)
    except gdb.error:
        return False


def _recording():
    rec = gdb.current_recording()
    if rec is None or rec.method != "btrace":
        raise gdb.GdbError("bts: gdb is not recording with btrace: "
                           "`record btrace bts` first")
    return rec


def _inferior_pid():
    inf = gdb.selected_inferior()
    if not inf.pid:
        raise gdb.GdbError("The program is not being run.")
    return inf


class Session:
    """The subscription of one inferior, and the markers it has seen."""

    def __init__(self, inf, glob, nr_records):
        self.inf = inf
        self.pid = inf.pid
        self.glob = glob
        self.nr_records = nr_records
        self.devices = []
        self.markers = []           # in the order of their writes
        self.seen = {}              # Marker.key() -> Marker
        self.formats = {}
        self.newest_time = {}       # lwp -> newest kernel stretch seen
        self.anchors = {}           # lwp -> Stream.anchor, last stop's
        self.unreturned = []        # written in a call still under way
        try:
            for t in sorted(inf.threads(), key=lambda t: t.num):
                self._attach(t.ptid[1])
        except gdb.GdbError:
            self.close()
            raise

    def _attach(self, lwp):
        self.devices.append(Device(lwp, self.glob, self.nr_records))

    def close(self):
        for dev in self.devices:
            try:
                dev.close()
            except OSError:
                pass
        self.devices = []

    def _snapshot(self, lwp):
        for dev in self.devices:
            data = dev.snapshot(lwp)
            if data is not None:
                return data
        return None

    def format_of(self, m):
        key = (m.id, m.gen)
        if key not in self.formats:
            text = None
            for dev in self.devices:
                text = dev.event_format(m.id, m.gen)
                if text:
                    break
            self.formats[key] = EventFormat(text) if text else None
        return self.formats[key]

    def update(self):
        """At a stop: take in the markers written since the last."""
        threads = {t.ptid[1]: t for t in self.inf.threads()}
        self.unreturned = []
        for lwp in sorted(threads):
            data = self._snapshot(lwp)
            if data is None:
                # A thread none of our files traces (created before the
                # subscription by a thread that is gone): trace it now.
                self._attach(lwp)
                continue
            stream = Stream(lwp, data, self._resume_at(lwp, data))
            if stream.anchor is not None:
                self.anchors[lwp] = stream.anchor
            self._warn_if_overrun(lwp, stream)
            new = [m for m in stream.markers if m.key() not in self.seen]
            if new:
                self._place(threads[lwp], new)
            for m in new:
                if m.time is None:
                    # Written in a system call that has not returned: no
                    # key yet; the next stop's snapshot places it again.
                    self.unreturned.append(m)
                else:
                    self.seen[m.key()] = m
                    self.markers.append(m)
        self.markers.sort(key=lambda m: (m.time, m.lwp))

    def _resume_at(self, lwp, data):
        """Where the records new since the last stop begin, or nearly:
        at the newest kernel stretch seen then (its time makes its
        records unique), whose markers have all been taken in; those
        after it, written in a system call that had not returned, are
        read again.  0 if it is no longer in the ring."""
        anchor = self.anchors.get(lwp)
        at = data.rfind(anchor) if anchor else -1
        return at if at >= 0 and at % RECORD.size == 0 else 0

    def listing(self):
        """The markers in the order of their writes, as K counts them."""
        return self.markers + self.unreturned

    def _warn_if_overrun(self, lwp, stream):
        newest = self.newest_time.get(lwp)
        if newest is not None and stream.oldest_kernel_time is not None \
                and stream.oldest_kernel_time > newest:
            gdb.write("bts: thread LWP %d ran past its ring (%d records) "
                      "since the last stop: events it wrote before its "
                      "oldest kept record are missing (`set bts records`)\n"
                      % (lwp, self.nr_records),
                      gdb.STDERR)
        if stream.newest_kernel_time is not None:
            self.newest_time[lwp] = stream.newest_kernel_time

    def _place(self, thread, markers):
        """Each marker's instruction in gdb's history of @thread."""
        selected = gdb.selected_thread()
        try:
            thread.switch()
            rec = gdb.current_recording()
            if rec is None or rec.method != "btrace":
                for m in markers:
                    m.why = "gdb was not recording"
                return
            self._place_in(rec, markers)
        finally:
            if selected is not None and selected.is_valid():
                selected.switch()

    @staticmethod
    def _place_in(rec, markers):
        """
        gdb's history is made of the same branches as the stream, less
        the kernel's entries and exits: a block of instructions that run
        one after the other between two of them.  A marker with N
        branches after it in the stream was written in the block N
        branches back from the end of gdb's history, at its system call
        instruction.  Where gdb could not follow the trace (a signal
        handler, which no user branch leads to), a gap stands for the
        block, between the branches before and after it.
        """
        hist = rec.instruction_history
        todo = {}
        for m in markers:
            todo.setdefault(m.branches, []).append(m)
        last = max(todo)
        crossed = 0
        i = len(hist) - 1
        # What follows the last instruction that ran: the current one,
        # which is not in the history, and may be a branch's target.  (A
        # system call restarted leaves the thread at the instruction that
        # made it: no branch.)
        live = gdb.newest_frame().pc()
        after = (live, 0)           # (pc, size) after this one; gap: False
        if i >= 0 and _pc_size(hist[i])[:1] == (live,):
            after = None
        while i >= 0:
            item = hist[i]
            here = _pc_size(item)
            if after is not None and \
                    (not here or not after or after[0] != sum(here)):
                crossed += 1
                if crossed > last:
                    break
            for m in todo.get(crossed, ()):
                if m.number is None and here and here[0] == m.site:
                    m.number = item.number
                    m.first_pc = _pc_size(hist[0])
                elif m.number is None and not here:
                    m.why = GAP
            after = here
            i -= 1
        for m in markers:
            if m.number is not None:
                m.why = None
            elif m.branches > crossed:
                m.why = OLDER
            elif m.why is None:
                m.why = ELSEWHERE


_sessions = {}


def _session(required=True):
    inf = gdb.selected_inferior()
    s = _sessions.get(inf.num)
    if s is not None and s.pid != inf.pid:
        s.close()
        del _sessions[inf.num]
        s = None
    if s is None and required:
        raise gdb.GdbError("bts: no subscription for this inferior: "
                           "`bts markers GLOB` first")
    return s


def _on_stop(event):
    s = _session(required=False)
    if s is None:
        return
    try:
        s.update()
    except gdb.GdbError as e:
        gdb.write("%s\n" % e, gdb.STDERR)


def _on_exit(event):
    inf = getattr(event, "inferior", None) or gdb.selected_inferior()
    s = _sessions.pop(inf.num, None)
    if s is not None:
        s.close()


class RecordsParameter(gdb.Parameter):
    """How many records each thread's ring keeps for `bts markers'.

The markers of events written since the last stop are found in this
many records of each thread's branch trace (pseudo-records included);
more records between two stops lose the older ones' events (gdb says
so).  Each thread's ring takes 24 bytes a record, which counts against
sysctl kernel.bts_user_max_kb.  Takes effect at the next `bts markers'."""

    set_doc = "Set the records each thread's marker ring keeps."
    show_doc = "Show the records each thread's marker ring keeps."

    def __init__(self):
        super().__init__("bts records", gdb.COMMAND_DATA,
                         gdb.PARAM_ZUINTEGER)
        self.value = DEFAULT_RECORDS

    def get_set_string(self):
        if not 2 <= self.value <= BTS_MAX_RECORDS:
            bad = self.value
            self.value = DEFAULT_RECORDS
            raise gdb.GdbError("bts records: %d is not between 2 and %d" %
                               (bad, BTS_MAX_RECORDS))
        return ""

    def get_show_string(self, svalue):
        return "Each thread's marker ring keeps %s records." % svalue


class BtsPrefix(gdb.Command):
    """Branch trace commands: events an application wrote, in gdb's history.

bts markers GLOB     -- subscribe this inferior to the user_events GLOB names
bts markers off      -- unsubscribe
bts goto-marker K    -- replay from the write of event K of `info bts-markers'
bts call-history     -- gdb's call history with the events interleaved
bts break-on NAME    -- stop where the program writes event NAME
info bts-markers     -- the events written while recording"""

    def __init__(self):
        super().__init__("bts", gdb.COMMAND_RUNNING, gdb.COMPLETE_NONE, True)


class BtsMarkers(gdb.Command):
    """Subscribe this inferior to application events: bts markers GLOB|off.

GLOB names user_events (Documentation/trace/user_events.rst) as they were
registered, with `*', `?' and `[...]'; `*' takes every event.  The events
it names are enabled in this inferior's processes only (each event's
enable bit is set there), for as long as the subscription lasts, and each
write of one by a thread of the inferior is placed in gdb's branch
history of that thread: `info bts-markers' lists them, `bts goto-marker'
goes there.  Needs `record btrace bts' (or pt), the kernel's /dev/bts
and user_events.  `bts markers off' ends the subscription and clears the
enable bits; without an argument, show the subscription."""

    def __init__(self):
        super().__init__("bts markers", gdb.COMMAND_RUNNING,
                         gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        glob = arg.strip()
        if len(glob) >= 2 and glob[0] == glob[-1] and glob[0] in "'\"":
            glob = glob[1:-1]
        s = _session(required=False)
        if not glob:
            if s is None:
                gdb.write("No bts subscription in this inferior.\n")
            else:
                gdb.write("Events %s of process %d, %d threads traced.\n" %
                          (s.glob, s.pid, len(s.devices)))
            return
        if glob == "off":
            if s is None:
                raise gdb.GdbError("bts: no subscription to end")
            s.close()
            del _sessions[s.inf.num]
            return
        if len(glob.encode()) >= 256:
            raise gdb.GdbError("bts: the glob is longer than 255 bytes")
        inf = _inferior_pid()
        # Before gdb's recording: without BTS, or with perf_event_paranoid
        # above 2, `record btrace' fails too, and this says why.
        os.close(_open_device())
        _recording()
        if s is not None:
            s.close()
            del _sessions[inf.num]
        _sessions[inf.num] = Session(inf, glob, RECORDS.value)
        if from_tty:
            gdb.write("Events %s of process %d will show in the "
                      "history.\n" % (glob, inf.pid))


def _thread_name(lwp):
    for t in gdb.selected_inferior().threads():
        if t.ptid[1] == lwp:
            return "thread %d.%d (LWP %d)" % (t.inferior.num, t.num, lwp)
    return "LWP %d (exited)" % lwp


def _describe(s, m):
    fmt = s.format_of(m)
    text = "u:%s" % fmt.name if fmt else \
        "event %d (generation %d)" % (m.id, m.gen)
    if m.flags & BTS_MARKER_NOT_CAPTURED:
        text += ": payload not captured"
    elif m.payload is None:
        text += ": payload not in the trace"
    elif fmt:
        text += fmt.decode(m.payload)
    elif m.payload:
        text += ": " + m.payload.hex(" ")
    if m.flags & BTS_MARKER_TRUNCATED:
        text += " (truncated)"
    return text


def _where(addr):
    """@addr as gdb prints a code address: 0x401711 <emit_a+54>."""
    try:
        return gdb.format_address(addr)
    except (gdb.error, RuntimeError):
        return "0x%x" % addr


class InfoBtsMarkers(gdb.Command):
    """The events written while recording: info bts-markers.

One line per event of the subscription (`bts markers'), in the order they
were written: its number K for `bts goto-marker', the thread, the
instruction in gdb's history that wrote it, the event with its decoded
fields, and the system call instruction.  An event without an instruction
says why: "older than gdb's history" (gdb's buffer kept only newer
branches), "in a gap of gdb's history" (a stretch gdb could not decode),
or "not where gdb's history has its system call"."""

    def __init__(self):
        super().__init__("info bts-markers", gdb.COMMAND_STATUS,
                         gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        s = _session()
        markers = s.listing()
        if not markers:
            gdb.write("No events recorded.\n")
            return
        for k, m in enumerate(markers, 1):
            where = m.why if m.number is None else "insn %d" % m.number
            gdb.write("%-4d %s  %s  %s at %s\n" % (
                k, _thread_name(m.lwp), where, _describe(s, m),
                _where(m.site)))


class BtsGotoMarker(gdb.Command):
    """Replay from the write of an event: bts goto-marker K.

K counts from 1 in the order of `info bts-markers'.  Selects the thread
that wrote the event and goes (`record goto') to the system call
instruction that wrote it; `record goto end' comes back."""

    def __init__(self):
        super().__init__("bts goto-marker", gdb.COMMAND_RUNNING,
                         gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        s = _session()
        try:
            k = int(gdb.parse_and_eval(arg)) if arg.strip() else None
        except gdb.error as e:
            raise gdb.GdbError("bts goto-marker: %s" % e)
        if k is None:
            raise gdb.GdbError("Argument required (marker number).")
        markers = s.listing()
        if not 1 <= k <= len(markers):
            raise gdb.GdbError("bts: no marker %d (%d recorded)" %
                               (k, len(markers)))
        m = markers[k - 1]
        if m.number is None:
            raise gdb.GdbError("bts: marker %d is %s: %s" %
                               (k, m.why, ADVICE.get(m.why, m.why)))
        thread = next((t for t in s.inf.threads() if t.ptid[1] == m.lwp),
                      None)
        if thread is None:
            raise gdb.GdbError("bts: marker %d's thread (LWP %d) has exited"
                               % (k, m.lwp))
        thread.switch()
        rec = _recording()
        hist = rec.instruction_history
        # gdb numbers its history from 1 until the recording restarts.
        idx = m.number - 1
        if not 0 <= idx < len(hist) or _pc_size(hist[0]) != m.first_pc or \
                _pc_size(hist[idx])[:1] != (m.site,):
            raise gdb.GdbError("bts: marker %d is no longer in gdb's "
                               "history (the recording was restarted)" % k)
        rec.goto(hist[idx])
        gdb.execute("frame", to_string=not from_tty)


def _segment_first(segs, i):
    """The first instruction number of segment @i or the next that has
    one (a gap's segment has none); None past the end."""
    while i < len(segs):
        insns = segs[i].instructions
        if len(insns):
            return insns[0].number
        i += 1
    return None


def _segment_of(segs, number):
    """The number of the call-history segment holding instruction
    @number: the last whose first instruction is at or before it."""
    lo, hi = 0, len(segs) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        first = _segment_first(segs, mid)
        if first is not None and first <= number:
            lo = mid
        else:
            hi = mid - 1
    return segs[lo].number


class BtsCallHistory(gdb.Command):
    """The call history with the events: bts call-history.

gdb's `record function-call-history /c' of the selected thread, all of
it, with each event the thread wrote (`info bts-markers') on a line of
its own after the function segment that wrote it, one level deeper:
"-- event K: u:NAME FIELDS"."""

    def __init__(self):
        super().__init__("bts call-history", gdb.COMMAND_RUNNING,
                         gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        s = _session()
        rec = _recording()
        segs = rec.function_call_history
        if not len(segs):
            raise gdb.GdbError("No trace.")
        lwp = gdb.selected_thread().ptid[1]
        after = {}
        for k, m in enumerate(s.listing(), 1):
            if m.lwp == lwp and m.number is not None:
                after.setdefault(_segment_of(segs, m.number), []).append(
                    (k, m))
        text = gdb.execute("record function-call-history /c %d,%d" %
                           (segs[0].number, segs[len(segs) - 1].number),
                           to_string=True)
        out = []
        for line in text.splitlines():
            out.append(line)
            num, tab, name = line.partition("\t")
            if not tab or not num.isdigit():
                continue
            indent = name[:len(name) - len(name.lstrip(" "))]
            for k, m in after.get(int(num), ()):
                out.append("\t%s  -- event %d: %s" %
                           (indent, k, _describe(s, m)))
        gdb.write("\n".join(out) + "\n")


class WroteFunction(gdb.Function):
    """$_bts_wrote(GLOB): 1 if the selected thread is in the system call that
wrote an event whose name GLOB matches (the subscription's, `bts
markers'), else 0.  `bts break-on' makes it a catchpoint's condition."""

    def __init__(self):
        super().__init__("_bts_wrote")

    def invoke(self, glob):
        s = _session(required=False)
        thread = gdb.selected_thread()
        if s is None or thread is None:
            return 0
        data = s._snapshot(thread.ptid[1])
        if data is None:
            return 0
        pattern = glob.string()
        # Only a system call under way matters: after the newest stretch.
        for m in Stream(thread.ptid[1], data,
                        _last_kernel_record(data)).markers:
            fmt = s.format_of(m)
            # No kernel stretch after it: its system call is under way.
            if m.time is None and fmt and fnmatch.fnmatchcase(fmt.name,
                                                              pattern):
                return 1
        return 0


class BtsBreakOn(gdb.Command):
    """Stop where the program writes an event: bts break-on NAME.

Makes a catchpoint of the write and writev system calls whose condition
is $_bts_wrote("NAME"): it stops the program in the system call that
wrote an event NAME matches (a glob, among those `bts markers' takes),
as it returns, with the branches that led there in gdb's history; `info
bts-markers' lists the event last.  Delete it as any catchpoint."""

    def __init__(self):
        super().__init__("bts break-on", gdb.COMMAND_BREAKPOINTS,
                         gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        _session()
        glob = arg.strip().strip("'\"")
        if not glob:
            raise gdb.GdbError("Argument required (event name).")
        if '"' in glob or "\\" in glob:
            raise gdb.GdbError("bts break-on: quotes or backslashes in %s"
                               % glob)
        before = {b.number for b in gdb.breakpoints()}
        gdb.execute("catch syscall write writev", to_string=True)
        new = [b for b in gdb.breakpoints() if b.number not in before]
        if len(new) != 1:
            raise gdb.GdbError("bts break-on: no catchpoint was made")
        new[0].condition = '$_bts_wrote("%s")' % glob
        gdb.write("Catchpoint %d: stops where the program writes %s\n" %
                  (new[0].number, glob))


class SetBtsPrefix(gdb.Command):
    """Set branch trace marker options: set bts records N."""

    def __init__(self):
        super().__init__("set bts", gdb.COMMAND_DATA, gdb.COMPLETE_NONE,
                         True)


class ShowBtsPrefix(gdb.Command):
    """Show branch trace marker options: show bts records."""

    def __init__(self):
        super().__init__("show bts", gdb.COMMAND_DATA, gdb.COMPLETE_NONE,
                         True)


SetBtsPrefix()
ShowBtsPrefix()
RECORDS = RecordsParameter()
BtsPrefix()
BtsMarkers()
InfoBtsMarkers()
BtsGotoMarker()
BtsCallHistory()
BtsBreakOn()
WroteFunction()
gdb.events.stop.connect(_on_stop)
gdb.events.exited.connect(_on_exit)
