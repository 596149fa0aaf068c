# SPDX-License-Identifier: GPL-2.0
"""Build bts-dump raw files (bts-dump.1, RAW FORMAT) from records.

Written from the man page and include/uapi/linux/bts.h, independently of
bts-dump's own writer, so that the tests (tests/run) and the fuzz seeds
(fuzz/gen-seeds) check the reader against the documented format.
"""

import os
import struct
import subprocess

MAGIC = b"BTSDUMP\n"
RECORDS, MAPS, MEMORY, EXIT, EVENT_FORMAT, COMM, JIT = 1, 2, 3, 4, 5, 6, 7
FILE, THREAD_COMM = 8, 9

# include/uapi/linux/bts.h
PSEUDO_KERNEL, PSEUDO_LOST, PSEUDO_MARKER, PSEUDO_THREAD = 1, 3, 4, 6
PSEUDO_DETAIL, PSEUDO_MAP = 7, 8
DETAIL_KERNEL_ENTRY, DETAIL_MARKER_PAYLOAD = 0, 1
DETAIL_MAP_FILE, DETAIL_MAP_BUILD_ID, DETAIL_MAP_NAME = 2, 3, 4
MAP_EXEC, MAP_MMAP, MAP_MUNMAP, MAP_COMM = 1, 2, 3, 4
MAP_ANONYMOUS, MAP_NAME_UNKNOWN = 1, 2
MARKER_USER_EVENT = 1
MARKER_TRUNCATED, MARKER_NOT_CAPTURED = 1, 2
ABI_NONE, ABI_X86_64, ABI_X32, ABI_I386 = 0, 1, 2, 3
ENTRY_UNKNOWN, ENTRY_SYSCALL, ENTRY_EXCEPTION, ENTRY_INTERRUPT = 0, 1, 2, 3
THREAD_RECORDS, THREAD_NEW, THREAD_EXIT = 0, 1, 2


def pseudo(type_, arg=0):
    return (0x80000000 << 32) | ((arg & 0xffffff) << 8) | (type_ & 0xff)


def branch(frm, to):
    return (frm, to, 0)


def kernel(kind, entry, resume, vector=0):
    """A stretch in the kernel entered at @entry, left to @resume."""
    return (pseudo(PSEUDO_KERNEL, kind | vector << 8), resume, entry)


def detail(type_, layout, val, to, flags):
    """A BTS_PSEUDO_DETAIL record for the next record, of type @type_."""
    return (pseudo(PSEUDO_DETAIL, type_ | layout << 8 | val << 16), to, flags)


def kernel_detail(abi, orig_ax, ns):
    """What the kernel puts before each KERNEL record: the system call's
    ABI (ABI_NONE if none), orig_ax and the time of the return."""
    return detail(PSEUDO_KERNEL, DETAIL_KERNEL_ENTRY, abi, orig_ax, ns)


def lost(count):
    return (pseudo(PSEUDO_LOST), count, 0)


LOST_OVERRUN, LOST_UNTRACED = 1, 2


def lost_unknown(why):
    """An unknown number lost: the hardware overran, or the thread ran on
    a CPU that could not trace it."""
    return (pseudo(PSEUDO_LOST, why), 0, 0)


def marker(ev_id, gen, at, length, flags=0, source=MARKER_USER_EVENT):
    """A BTS_PSEUDO_MARKER record alone: event @ev_id of generation @gen
    written at @at, with @length bytes of payload."""
    arg = source | flags << 8 | length << 16
    return (pseudo(PSEUDO_MARKER, arg), at, gen << 32 | ev_id)


def marker_payload(index, data):
    """The payload detail @index of a marker: 16 bytes of @data."""
    data = data.ljust(16, b"\0")
    lo, hi = struct.unpack("<QQ", data)
    return detail(PSEUDO_MARKER, DETAIL_MARKER_PAYLOAD, index, lo, hi)


def user_event(ev_id, gen, at, payload, flags=0):
    """What the kernel writes for a user_event: the payload's details,
    then the marker."""
    chunks = [payload[i:i + 16] for i in range(0, len(payload), 16)]
    return ([marker_payload(i, c) for i, c in enumerate(chunks)] +
            [marker(ev_id, gen, at, len(payload), flags)])


def bytes_details(type_, layout, data):
    """@data in details of @layout, 16 bytes each, zero-padded."""
    out = []
    for i in range(0, len(data), 16):
        lo, hi = struct.unpack("<QQ", data[i:i + 16].ljust(16, b"\0"))
        out.append(detail(type_, layout, i // 16, lo, hi))
    return out


def map_event(event, start=0, end=0, flags=0, build_id_len=0):
    """A BTS_PSEUDO_MAP record alone."""
    arg = event | flags << 8 | build_id_len << 16
    return (pseudo(PSEUDO_MAP, arg), start, end)


def map_comm(name):
    """A thread's name as the kernel gives it in its stream: the detail,
    then BTS_MAP_COMM."""
    return [*bytes_details(PSEUDO_MAP, DETAIL_MAP_NAME,
                           name.encode() + b"\0"), map_event(MAP_COMM)]


def map_file(path, bias=0, build_id=b"", mtime_ns=None):
    """What the kernel writes when the executable segments of ELF file
    @path are mapped at @bias: per segment, the file's two details, the
    build ID's, the name's, then the MAP record.  @mtime_ns: another
    modification time than the file's."""
    with open(path, "rb") as f:
        _, loads = elf_loads(f.read())
    st = os.stat(path)
    recs = []
    for flags, offset, vaddr, _, memsz in loads:
        if not flags & 1:
            continue
        start = bias + (vaddr & ~0xfff)
        end = bias + ((vaddr + memsz + 0xfff) & ~0xfff)
        recs += [
            detail(PSEUDO_MAP, DETAIL_MAP_FILE, 0, offset & ~0xfff,
                   st.st_ino),
            detail(PSEUDO_MAP, DETAIL_MAP_FILE, 1,
                   os.major(st.st_dev) << 32 | os.minor(st.st_dev),
                   st.st_mtime_ns if mtime_ns is None else mtime_ns),
            *bytes_details(PSEUDO_MAP, DETAIL_MAP_BUILD_ID, build_id),
            *bytes_details(PSEUDO_MAP, DETAIL_MAP_NAME,
                           path.encode() + b"\0"),
            map_event(MAP_MMAP, start, end, 0, len(build_id)),
        ]
    return recs


def build_id(path):
    """The build ID of ELF file @path (its NT_GNU_BUILD_ID note), or b""."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return bytes.fromhex(line.split("Build ID:")[1].strip())
    return b""


def exec_ranges(path, bias=0):
    """[(start, end)] of the executable segments of @path at @bias."""
    with open(path, "rb") as f:
        _, loads = elf_loads(f.read())
    return [(bias + (vaddr & ~0xfff),
             bias + ((vaddr + memsz + 0xfff) & ~0xfff))
            for flags, _, vaddr, _, memsz in loads if flags & 1]


def thread(tid, pid, event=THREAD_RECORDS):
    return (pseudo(PSEUDO_THREAD, event), tid, pid)


def header(version=1, size=16):
    return MAGIC + struct.pack("<II", version, size) + bytes(size - 16)


def chunk(type_, payload):
    return struct.pack("<II", type_, len(payload)) + payload


def records_chunk(recs, stream=0):
    body = b"".join(struct.pack("<QQQ", *r) for r in recs)
    return chunk(RECORDS, struct.pack("<II", stream, 0) + body)


def maps_chunk(pid, text, ppid=0):
    return chunk(MAPS, struct.pack("<II", pid, ppid) + text.encode())


def memory_chunk(pid, addr, data):
    return chunk(MEMORY, struct.pack("<IIQ", pid, 0, addr) + data)


def exit_chunk(pid, status, cmd):
    return chunk(EXIT, struct.pack("<Ii", pid, status) + cmd.encode())


def event_format_chunk(ev_id, gen, text):
    return chunk(EVENT_FORMAT, struct.pack("<II", ev_id, gen) + text.encode())


def comm_chunk(pid, name):
    return chunk(COMM, struct.pack("<II", pid, 0) + name.encode())


def thread_comm_chunk(pid, tid, name):
    return chunk(THREAD_COMM, struct.pack("<II", pid, tid) + name.encode())


def jit_chunk(pid, ns_pid, text, whole=True):
    return chunk(JIT, struct.pack("<III", pid, 1 if whole else 0, ns_pid) +
                 text.encode())


def file_chunk(pid, start, path, data=None):
    """A copy of the file @path (or @data in its name) that process
    @pid's mapping at @start maps."""
    st = os.stat(path)
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    return chunk(FILE, struct.pack("<IIQQII", pid, 0, start, st.st_ino,
                                   os.major(st.st_dev), os.minor(st.st_dev))
                 + data)


def elf_loads(data):
    """(e_type, [(p_flags, p_offset, p_vaddr, p_filesz, p_memsz)]) of PT_LOADs."""
    is64 = data[4] == 2
    e_type = struct.unpack_from("<H", data, 16)[0]
    if is64:
        phoff = struct.unpack_from("<Q", data, 32)[0]
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
    else:
        phoff = struct.unpack_from("<I", data, 28)[0]
        phentsize, phnum = struct.unpack_from("<HH", data, 42)
    loads = []
    for i in range(phnum):
        at = phoff + i * phentsize
        if is64:
            (p_type, p_flags, p_offset, p_vaddr, _, p_filesz,
             p_memsz, _) = struct.unpack_from("<IIQQQQQQ", data, at)
        else:
            (p_type, p_offset, p_vaddr, _, p_filesz, p_memsz,
             p_flags, _) = struct.unpack_from("<IIIIIIII", data, at)
        if p_type == 1:
            loads.append((p_flags, p_offset, p_vaddr, p_filesz, p_memsz))
    return e_type, loads


def maps_lines(path, bias=0):
    """The /proc/PID/maps lines of @path loaded at @bias, as Linux maps it."""
    with open(path, "rb") as f:
        _, loads = elf_loads(f.read())
    st = os.stat(path)
    lines = []
    for flags, offset, vaddr, _, memsz in loads:
        start = bias + (vaddr & ~0xfff)
        end = bias + ((vaddr + memsz + 0xfff) & ~0xfff)
        perms = ("r" if flags & 4 else "-") + ("w" if flags & 2 else "-") + \
            ("x" if flags & 1 else "-") + "p"
        lines.append("%x-%x %s %08x %02x:%02x %d                    %s\n" % (
            start, end, perms, offset & ~0xfff, os.major(st.st_dev),
            os.minor(st.st_dev), st.st_ino, path))
    return "".join(lines)


def special_line(start, end, name):
    return "%x-%x r-xp 00000000 00:00 0                          %s\n" % (
        start, end, name)
