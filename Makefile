# SPDX-License-Identifier: GPL-2.0
#
# bts workbench: build Debian's 6.12 kernel with our overlay and patches,
# Debian's QEMU 7.2 with ours, and test everything under QEMU TCG.
# `make help` lists the targets.

SHELL := /bin/bash
BUILD := build

# DEBUG=1 selects the debug kernel (KASAN, lockdep, kmemleak) for `kernel`,
# `check` and `demo`.
ifneq ($(DEBUG),)
VARIANT := debug
export BTS_VM_DEBUG := 1
else
VARIANT := plain
endif

.PHONY: help deps deps-deb kernel kernel-debug kernel-kcsan qemu check check-full demo \
	bench deb hw-check patches series-build shell clean distclean

help:
	@echo 'make demo       build everything, then show the workbench at work'
	@echo 'make check      build, then run the test suites CI runs (tests/README.md)'
	@echo 'make check-full make check plus the long tier: debug kernel, soaks, repeats'
	@echo 'make deps       install the Debian packages the project needs'
	@echo 'make kernel     build the test kernel (DEBUG=1: the debug kernel)'
	@echo 'make kernel-debug  build the debug kernel (make check-full needs it too)'
	@echo 'make kernel-kcsan  build the KCSAN kernel (make check-full needs it too)'
	@echo 'make qemu       build QEMU with our patches'
	@echo 'make deb        packages for a real machine: the bts kernel (of the'
	@echo '                running kernel'"'"'s config, or KCONFIG=FILE) and bts-tools'
	@echo 'make hw-check   on a machine booted into the bts kernel: the hardware'"'"'s'
	@echo '                BTS against the emulation'"'"'s choices, a report to attach'
	@echo 'make bench      the benchmarks (figures, not pass/fail; bench/README.md)'
	@echo 'make patches    the kernel work as a git format-patch series'
	@echo 'make series-build  build each step of that series (bisectable?)'
	@echo 'make shell      a root shell in the test VM'
	@echo 'make clean      remove build output, keep unpacked sources'
	@echo 'make distclean  remove all of build/'

deps:
	@workbench/deps.sh

# What `make deb` needs, not the test VM's QEMU and clients: a user's own
# machine gets only these.
deps-deb:
	@workbench/deps.sh deb

kernel: deps
	@workbench/kernel.sh . $(BUILD) $(VARIANT)

# The debug kernel, whatever DEBUG says: the long tier's suites (stress,
# fuzzing, the report net) run on it.
kernel-debug: deps
	@workbench/kernel.sh . $(BUILD) debug

# The data race detector's kernel, for the long tier's stress under KCSAN.
kernel-kcsan: deps
	@workbench/kernel.sh . $(BUILD) kcsan

qemu: deps
	@workbench/qemu.sh $(BUILD)/qemu qemu/patches

check: kernel qemu
	@tests/check

# Everything: make check's suites, then the long tier (tests/README.md).
# What a change to kernel code passes before its issue is resolved.
check-full: kernel kernel-debug kernel-kcsan qemu
	@tests/check --full

# Debian packages for a real machine, in $(BUILD)/deb (README.md, "On a
# real machine").
deb: deps-deb
	@workbench/kernel.sh . $(BUILD) deb
	@workbench/deb-tools.sh . $(BUILD)

# On a machine booted into the bts kernel, as root (README.md, "On a real
# machine"): the report in $(HW_CHECK_OUT)/report.txt.  KDIR: the kernel
# build tree its module builds against (default: the running kernel's
# headers); HW_CHECK_PROGS: the programs bts-dump traces against the oracle
# (tests/bts/progs; empty: none).
HW_CHECK_OUT ?= $(BUILD)/hw-check
hw-check: deps-deb
	@tests/hw-check/bts-hw-check --out $(HW_CHECK_OUT) \
		$(if $(KDIR),--kdir $(KDIR)) \
		$(if $(filter undefined,$(origin HW_CHECK_PROGS)),,--progs "$(HW_CHECK_PROGS)")

demo: kernel qemu
	@workbench/demo.sh

bench: kernel qemu
	@bench/ds-splay.sh
	@bench/idle-cost.sh
	@bench/qemu-bts.sh
	@bench/bts-dump.sh
	@bench/attach-cost.sh
	@bench/exit-cost.sh
	@bench/detach-cost.sh
	@bench/delivery-cost.sh
	@bench/marker-cost.sh
	@bench/gdb-stop-cost.sh

patches: deps
	@workbench/patches.sh . $(BUILD)

# Each prefix of the series builds, without warnings: what a reviewer
# bisecting it needs (long: a kernel build per patch that touches a header).
series-build: deps
	@workbench/series-build.sh . $(BUILD)

shell: kernel qemu
	@tests/vm/run

clean:
	rm -rf $(BUILD)/kernel $(BUILD)/kernel-debug $(BUILD)/kernel-kcsan \
		$(BUILD)/kernel-stock $(BUILD)/kernel-deb $(BUILD)/kernel-debian-config \
		$(BUILD)/deb $(BUILD)/deb-tools \
		$(BUILD)/qemu/obj $(BUILD)/vm

distclean:
	rm -rf $(BUILD)
