#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/trace-bts/guest-reset.sh RESULTS OUT HOW [PLANT]: the first boot
# of a tests/trace-bts/last-boot run.  Loads bts_chain.ko, keeps where its
# functions are (RESULTS/kallsyms: the next boot has no module to name
# them), has perf set up the DS save areas (perf clears what it owns of
# them: the region's headers must not be there), starts the flight
# recorder on every CPU, and ends the boot as HOW says:
#
#   triple  CPU 1 triple-faults from the module's chain
#   traced  the same, from a shell that bts-dump (tools/bts-dump) traces: a
#           consumer of the task on CPU 1 takes the CPU out of the
#           hardware's ring, so the kept buffer holds the records since
#           the layer last drained it
#   lockup  CPU 1 locks up in the module's spin, interrupts off; once it
#           spins, a line on the console ("bts_chain: CPU 1 locked up")
#           asks the host to reset the machine (QEMU's system_reset)
#   sysrq   the chain on CPU 1, then sysrq-b on CPU 0: an immediate reboot
#   panic   an oops on CPU 1 in the module's chain, with panic_on_oops
#           (the kernel command line has panic=N: the panic reboots)
#
# PLANT (bts_persist_plant.ko: header, build, offset, area, random) damages the
# region first; area and random stop the recorder before, and wait for
# the layer to let its buffers go (they overwrite where the hardware and
# the layer write).  Never returns: the machine resets.
set -eu

res=$1 out=$2 how=$3 plant=${4-}
# A lockup's CPU 0 must never wait for CPU 1.  A TLB flush of a process
# that ever ran there sends it an IPI (6.12 keeps a CPU in the mask of
# each mm it ran), and this shell's copy-on-write faults after a fork
# flush its own mm: run it, from its exec on, on CPU 0 only.
if [ "$how" = lockup ] && [ -z "${BTS_GUEST_ON_CPU0:-}" ]; then
	BTS_GUEST_ON_CPU0=1 exec taskset -c 0 "$0" "$@"
fi
T=/sys/kernel/tracing
D=/sys/kernel/debug
insmod "$out/bts_chain.ko"
grep -w '\[bts_chain\]' /proc/kallsyms >"$res/kallsyms"
perf stat -e instructions -- true 2>"$res/perf.txt"
echo bts >$T/current_tracer
echo 1 >$T/tracing_on
if [ -n "$plant" ]; then
	insmod "$out/bts_persist_plant.ko"
	case $plant in
	area|random)
		taskset -c 1 sh -c "echo x >$D/bts_chain"
		echo nop >$T/current_tracer ;;
	esac
	# area and random wait for the layer to let the buffers go.
	for ((i = 0; i < 100; i++)); do
		echo "$plant" 2>/dev/null >$D/bts_persist_plant && break
		sleep 0.2
	done
	[ "$i" -lt 100 ] || { echo "could not plant $plant" >&2; exit 1; }
fi
sync
case $how in
triple)
	taskset -c 1 sh -c "echo x >$D/bts_chain_reset" ;;
traced)
	"$(dirname "$(realpath "$0")")/../../tools/bts-dump/bts-dump" -q --format=raw -o /tmp/traced.raw -- \
		taskset -c 1 sh -c "echo x >$D/bts_chain_reset" ;;
lockup)
	# From here on CPU 0 must not wait for CPU 1: no IPI, no interrupt
	# routed there.  This shell runs on CPU 0 only (above) and uses
	# builtins only; the console is polled, not interrupt-driven.
	taskset -c 1 sh -c "echo x >$D/bts_chain_lockup" &
	spins=0
	until [ "$spins" -ge 100000 ]; do
		read -r spins <$D/bts_chain_spins
	done
	echo "bts_chain: CPU 1 locked up" >/dev/kmsg
	wait ;;
sysrq)
	taskset -c 1 sh -c "echo x >$D/bts_chain"
	taskset -c 0 sh -c 'echo b >/proc/sysrq-trigger' ;;
panic)
	echo 1 >/proc/sys/kernel/panic_on_oops
	taskset -c 1 sh -c "echo x >$D/bts_chain_oops" ;;
*)
	echo "guest-reset.sh: no way to end the boot called '$how'" >&2 ;;
esac
echo "the machine did not reset" >&2
exit 1
