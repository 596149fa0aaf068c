#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deb-tools.sh REPO BUILD_DIR
#
# The user-space half of `make deb`: BUILD_DIR/deb/bts-tools_VERSION_ARCH.deb
# with bts-dump and its manual, the gdb extension (tools/bts-dump/gdb) and
# the trace-cmd plugin (tools/tracing/bts) where libtraceevent looks for
# the system's plugins.  Its dependencies are what the binaries link
# (dpkg-shlibdeps).  Needs the kernel tree of `make kernel` or `make deb`
# (BUILD_DIR/linux) for bts-dump's system call tables.
set -euo pipefail

repo=$(realpath "$1")
build=$(realpath -m "$2")
src="$build/linux"
work="$build/deb-tools"
out="$build/deb"
root="$work/root"

if [ ! -d "$src/arch/x86/entry/syscalls" ]; then
	echo "deb-tools: $src has no kernel tree (run 'make kernel' first)" >&2
	exit 1
fi

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
# The commit's date and name: a later commit's package upgrades an
# earlier one's; a tree with changes says so.
commit=$(git -C "$repo" log -1 --format='%cd.%h' --date=format:%Y%m%d 2>/dev/null ||
	echo 0)
dirty=
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 &&
   ! git -C "$repo" diff --quiet HEAD -- tools include 2>/dev/null; then
	dirty=+local
fi
version="0~git$commit$dirty"

rm -rf "$root"
mkdir -p "$root/DEBIAN" "$out"

make -s -C "$repo/tools/bts-dump" O="$work/bts-dump" \
	SYSCALL_TBL_DIR="$src/arch/x86/entry/syscalls" \
	TOOLS_INCLUDE="$src/tools/include" \
	DESTDIR="$root" prefix=/usr install
gzip -9n "$root/usr/share/man/man1/bts-dump.1"
make -s -C "$repo/tools/tracing/bts" O="$work/plugin" \
	PLUGIN_DIR="$root/usr/lib/$multiarch/traceevent/plugins" install
mkdir -p "$root/usr/share/doc/bts-tools"
printf '%s\n' "bts tools: GPL-2.0 (each source file's SPDX-License-Identifier)." \
	"On Debian systems the license is in /usr/share/common-licenses/GPL-2." \
	>"$root/usr/share/doc/bts-tools/copyright"

# dpkg-shlibdeps reads debian/control of the directory it runs in.
mkdir -p "$work/shlibs/debian"
printf 'Source: bts-tools\n\nPackage: bts-tools\nArchitecture: any\n' \
	>"$work/shlibs/debian/control"
depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O -e "$root/usr/bin/bts-dump" \
	-e "$root/usr/lib/$multiarch/traceevent/plugins/plugin_bts.so" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
if [ -z "$depends" ]; then
	echo "deb-tools: dpkg-shlibdeps found no dependencies" >&2
	exit 1
fi

cat >"$root/DEBIAN/control" <<CONTROL
Package: bts-tools
Version: $version
Architecture: $arch
Maintainer: ${DEBFULLNAME:-bts developers} <${DEBEMAIL:-bts@localhost}>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Recommends: gdb, trace-cmd
Section: devel
Priority: optional
Description: branch traces from Intel's Debug Store (BTS)
 bts-dump traces the branches of a program in user mode through the bts
 kernel's /dev/bts, and prints them as text, call trees, JSON, Chrome
 timelines or perf's format.  Also: a gdb extension that puts a program's
 user_events in gdb's branch history (/usr/share/bts/gdb/bts.py), and a
 trace-cmd plugin for the bts tracer's events.  Needs a kernel with the
 Debug Store layer (linux-image-*-bts).
CONTROL

deb="$out/bts-tools_${version}_$arch.deb"
rm -f "$out"/bts-tools_*.deb
dpkg-deb --root-owner-group -Zgzip --build "$root" "$deb" >/dev/null
echo "  DEB     ${deb#"$PWD"/}" >&2
