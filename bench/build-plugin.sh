#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/build-plugin.sh SRC OUT QEMU_INCLUDE: build the TCG plugin SRC
# (insn-marks.c, insn-profile.c, insn-range.c; tests/trace-bts's
# discontinuities.c) into OUT against the qemu-plugin.h in QEMU_INCLUDE,
# unless OUT is newer than SRC.
set -euo pipefail

src=$1 out=$2 inc=$3
# The marks' header too (insn-mark.h).
[ "$out" -ot "$src" ] || [ "$out" -ot "$(dirname "$src")/insn-mark.h" ] ||
	exit 0
read -ra glib <<<"$(pkg-config --cflags glib-2.0)"
gcc -shared -fPIC -O2 -Wall -I"$inc" "${glib[@]}" -o "$out" "$src"
