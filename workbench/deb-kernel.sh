#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deb-kernel.sh BUILD_DIR OBJ_DIR MAKE...
#
# The kernel packages of `make deb`, once workbench/kernel.sh has the
# source and OBJ_DIR's config ready: the kernel's own `bindeb-pkg`, whose
# packages dpkg-buildpackage leaves beside OBJ_DIR, moved to BUILD_DIR/deb.
# Only linux-image and linux-headers go there, what `apt install
# ./build/deb/*.deb` should install: linux-libc-dev would replace the
# distribution's C library headers with these.  A config with debug info
# would also make a -dbg package, large and for debugging the kernel
# itself: the build profile leaves it out.
set -euo pipefail

build=$1
obj=$2
shift 2
kmake=("$@")

out="$build/deb"
# dpkg-buildpackage leaves its packages in the parent of where it runs.
parent=$(dirname "$(realpath "$obj")")
release=$("${kmake[@]}" -s kernelrelease)

# Packages of an earlier build, maybe of another release, must not be
# taken for this one's.
rm -f "$out"/linux-*.deb "$parent"/linux-*.deb "$parent"/linux-*.buildinfo \
	"$parent"/linux-*.changes
mkdir -p "$out"

echo "  DEB     $release in ${out#"$PWD"/}" >&2
# gzip: xz takes minutes over a distribution config's modules.
if ! KDEB_COMPRESS=${KDEB_COMPRESS:-gzip} \
		DEB_BUILD_PROFILES=pkg.linux-upstream.nokerneldbg \
		"${kmake[@]}" bindeb-pkg \
		>"$obj/build.log" 2>&1; then
	grep -E -A5 'error:|Error [0-9]' "$obj/build.log" | head -60 >&2
	echo "kernel: bindeb-pkg failed; full log in $obj/build.log" >&2
	exit 1
fi
grep -E 'warning:' "$obj/build.log" >&2 || true

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
echo "$release" >"$obj/kernelrelease"
echo "  DONE    $(cd "$out" && echo linux-*"$release"_*.deb) in ${SECONDS}s" >&2
