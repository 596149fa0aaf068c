#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deb-kernel.sh clean|collect BUILD_DIR OBJ_DIR
#
# Around the kernel's own `bindeb-pkg` in OBJ_DIR (workbench/kernel.sh,
# `make deb`), whose dpkg-buildpackage leaves the packages beside OBJ_DIR:
# "clean" removes those of an earlier build, maybe of another release, so
# none is taken for this one's; "collect" moves this release's to
# BUILD_DIR/deb.  Only linux-image and linux-headers go there, what `apt
# install ./build/deb/*.deb` should install: linux-libc-dev would replace
# the distribution's C library headers with these.  A config with debug
# info would also make a -dbg package, large and for debugging the kernel
# itself: kernel.sh's build profile leaves it out.
set -euo pipefail

action=$1
build=$2
obj=$3
out="$build/deb"
# dpkg-buildpackage leaves its packages in the parent of where it runs.
parent=$(dirname "$(realpath "$obj")")

case $action in
clean)
	rm -f "$out"/linux-*.deb "$parent"/linux-*.deb "$parent"/linux-*.buildinfo \
		"$parent"/linux-*.changes
	;;
collect)
	release=$(cat "$obj/kernelrelease")
	mkdir -p "$out"
	found=0
	for deb in "$parent"/linux-*.deb; do
		[ -e "$deb" ] || continue
		case "${deb##*/}" in
		linux-image-"$release"_*|linux-headers-"$release"_*)
			mv "$deb" "$out/"; found=$((found + 1)) ;;
		*)
			rm -f "$deb" ;;
		esac
	done
	rm -f "$parent"/linux-*.buildinfo "$parent"/linux-*.changes
	if [ "$found" -ne 2 ]; then
		echo "kernel: bindeb-pkg made $found of linux-image-$release and linux-headers-$release" >&2
		exit 1
	fi
	echo "  DONE    $(cd "$out" && echo linux-*"$release"_*.deb)" >&2
	;;
*)
	echo "deb-kernel.sh: clean or collect, not '$action'" >&2
	exit 1
	;;
esac
