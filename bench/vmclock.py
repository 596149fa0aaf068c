#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""vmclock.py SOCKET OUT: the host's times of each run of bench/workload.

Listens on the Unix socket SOCKET, to which QEMU connects a serial port
of the guest (-chardev socket,path=SOCKET -device isa-serial), and
accepts one connection.  The workload writes 's' before each timed run
and 'e' after it (with tcdrain(), outside its own clock_gettime()s).  For
each s..e pair, one line goes to OUT:

    vmclock wall_ns=N cpu_ns=N

wall_ns is the host's CLOCK_MONOTONIC; cpu_ns the CPU time QEMU's threads
got meanwhile (the sum of /proc/PID/task/*/schedstat, the peer PID taken
from SO_PEERCRED).  Unlike the guest's clock, the CPU time leaves out the
time the host ran other work instead of QEMU.  Exits when QEMU closes the
connection.
"""
import os
import socket
import struct
import sys
import time


def cpu_ns(pid):
    total = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/schedstat') as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass    # a thread that just exited
    return total


def main():
    path, out = sys.argv[1], sys.argv[2]
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    # Ready: bench/qemu-bts.sh starts QEMU once this file exists.
    open(path + '.ready', 'w').close()
    conn, _ = srv.accept()
    cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                           struct.calcsize('3i'))
    pid = struct.unpack('3i', cred)[0]
    start = None
    with open(out, 'w') as f:
        while True:
            data = conn.recv(64)
            if not data:
                break
            for c in data:
                now = (time.monotonic_ns(), cpu_ns(pid))
                if c == ord('s'):
                    start = now
                elif c == ord('e') and start:
                    f.write(f'vmclock wall_ns={now[0] - start[0]} '
                            f'cpu_ns={now[1] - start[1]}\n')
                    f.flush()
                    start = None
    os.unlink(path)
    os.unlink(path + '.ready')


if __name__ == '__main__':
    main()
