#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""report.py: bench/qemu-bts.sh's table and "bench:" lines from its samples.

Arguments (bench/qemu-bts.sh passes them): SAMPLES ITERS ITERS_D EVERY
INSNS_STOCK INSNS_OURS B1 B2 SECONDS LOAD_START LOAD_END NCPU, where
SAMPLES has one line per timed run,
    CONFIG ROUND ITERS GUEST_NS HOST_WALL_NS HOST_CPU_NS [RECORDS LOST],
INSNS_* are the workload's user-mode instructions for one run of ITERS
iterations, and B1, B2 the oracle's branch counts for 10 and 20 times
EVERY iterations.
"""
import statistics as st
import sys

NAMES = {
    'a': 'stock QEMU, CPU without DS',
    'b': 'our QEMU, same CPU, BTS off',
    'c': 'our QEMU, DS/BTS CPU, BTS off',
    'd': 'our QEMU, BTS on (perf -c 1)',
    'e': 'our QEMU, BTS on (recorder)',
}
KEYS = {'b': 'qemu_bts_off_vs_stock', 'c': 'qemu_bts_cpu_off_vs_stock',
        'd': 'qemu_bts_on_vs_stock', 'e': 'qemu_bts_emulation_vs_stock'}


def table(title, t, insns):
    """One clock's table: t[config] = seconds per full workload run."""
    med = {c: st.median(v) for c, v in t.items()}
    print(title)
    print(f'   {"configuration":30} {"n":>2} {"median":>8} {"min":>8} '
          f'{"max":>8} {"spread":>7} {"vs a":>7} {"min/a":>7} {"MIPS":>6}')
    for c in sorted(t):
        v = t[c]
        spread = (max(v) - min(v)) / med[c] * 100
        print(f'{c}  {NAMES[c]:30} {len(v):2} {med[c]:8.3f} {min(v):8.3f} '
              f'{max(v):8.3f} {spread:6.1f}% {med[c] / med["a"]:7.3f} '
              f'{min(v) / min(t["a"]):7.3f} {insns / med[c] / 1e6:6.1f}')
    return med


def per_round(rounds, c):
    return [st.median(rounds[c][r]) / st.median(rounds['a'][r])
            for r in sorted(rounds[c]) if r in rounds['a']]


def main():
    path = sys.argv[1]
    iters, iters_d, every, insn_stock, insn_ours, b1, b2, secs = \
        map(int, sys.argv[2:10])
    load0, load1, ncpu = sys.argv[10:13]
    br_per_iter = (b2 - b1) / (every * 10)

    # Seconds per run of the full workload (d scaled up from iters_d).
    guest, cpu, rnd_g, rnd_c, recs = {}, {}, {}, {}, []
    for line in open(path):
        f = line.split()
        cfg, r, n, ns = f[0], int(f[1]), int(f[2]), int(f[3])
        scale = iters / n / 1e9
        guest.setdefault(cfg, []).append(ns * scale)
        rnd_g.setdefault(cfg, {}).setdefault(r, []).append(ns * scale)
        if f[5] != '-':
            cpu.setdefault(cfg, []).append(int(f[5]) * scale)
            rnd_c.setdefault(cfg, {}).setdefault(r, []).append(
                int(f[5]) * scale)
        if cfg == 'd':
            recs.append((int(f[6]), int(f[7]), ns / 1e9))

    print(f'Workload: {iters} iterations, getpid() every {every}; per '
          f'iteration {insn_ours / iters:.2f} user instructions and '
          f'{br_per_iter:.2f} taken user branches.')
    print(f'd runs {iters_d} iterations, scaled to {iters} (cost per '
          'iteration).  Seconds per workload run; MIPS = millions of the')
    print('workload\'s user instructions per second.')
    print()
    mg = table('Guest clock (CLOCK_MONOTONIC in the guest, around the '
               'workload only):', guest, insn_ours)
    print()
    mc = table('QEMU CPU time (all QEMU threads, host side, same runs; '
               'for d it includes perf\'s vCPU):', cpu, insn_ours)
    print()
    print('Ratio to a per round (medians within one round of VMs), '
          'for the noise:')
    for c in KEYS:
        print(f'  {c}/a guest clock: ' +
              ' '.join(f'{x:.3f}' for x in per_round(rnd_g, c)) +
              '   CPU time: ' +
              ' '.join(f'{x:.3f}' for x in per_round(rnd_c, c)))

    got = st.median(n / s for n, _, s in recs)
    expect = br_per_iter * iters_d
    emul = expect / st.median(s for _, _, s in recs)
    kept = st.median(n for n, _, _ in recs) / expect
    lost = ' '.join(str(lost) for _, lost, _ in recs)
    print()
    print(f'BTS on: {expect / 1e6:.2f} M user branch records per d run; '
          f'{emul / 1e6:.2f} M records/s written (guest clock, median);')
    print(f'        perf.data got {got / 1e6:.2f} M records/s, '
          f'{kept * 100:.1f}% of them; perf LOST records per run: {lost}.')
    # e writes the user branches, and the kernel's, into a ring nobody
    # drains: its time over c's per user branch bounds what writing a
    # record costs from above.
    per_rec = (mg['e'] - mg['c']) / (br_per_iter * iters) * 1e9
    print(f'Emulation alone (e): {mg["e"] / mg["a"]:.2f} times a, '
          f'{mg["e"] / mg["c"]:.2f} times c; {per_rec:.1f} ns over c per '
          'user branch (kernel records written too: at most that per '
          'record).')
    # The count includes the program's start-up and its printf() of the
    # time, whose digits vary: a few instructions either way.
    if abs(insn_stock - insn_ours) > insn_ours / 100000:
        print(f'NOTE: the workload ran {insn_stock} instructions on stock '
              f'QEMU and {insn_ours} on ours: not the same guest work.')
    print(f'bench/qemu-bts.sh took {secs} s; host load average {load0} at the '
          f'start, {load1} at the end, on {ncpu} CPUs.')
    print()
    for c in NAMES:
        print(f'bench: time_{c} median_s={mg[c]:.4f} '
              f'min_s={min(guest[c]):.4f} max_s={max(guest[c]):.4f} '
              f'cpu_median_s={mc[c]:.4f} n={len(guest[c])}')
    for c in KEYS:
        print(f'bench: {KEYS[c]} ratio={mg[c] / mg["a"]:.3f} '
              f'ratio_min={min(guest[c]) / min(guest["a"]):.3f} '
              f'cpu_ratio={mc[c] / mc["a"]:.3f}')
    for c in NAMES:
        print(f'bench: guest_mips_{c} value={insn_ours / mg[c] / 1e6:.1f}')
    print(f'bench: workload_insns stock={insn_stock} ours={insn_ours} '
          f'iters={iters}')
    print(f'bench: bts_records_per_s written={emul:.0f} captured={got:.0f} '
          f'captured_fraction={kept:.3f}')
    print(f'bench: qemu_bts_emulation_ns_per_user_branch value={per_rec:.1f}')


if __name__ == '__main__':
    main()
