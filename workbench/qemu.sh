#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# qemu.sh BUILD_DIR PATCH_DIR
#
# Build Debian's QEMU 7.2 with our patches: x86_64-softmmu only, TCG,
# plugins and virtfs on, everything else off.  The first run fetches the
# source with `apt-get source qemu=VERSION` (Debian's own patches applied):
# the revision in workbench/base-versions while the mirror has it, or else
# the newest 1:7.2 one, never another QEMU (bookworm-backports, testing);
# later runs re-sync the patch series and let ninja rebuild what changed.
set -euo pipefail

build=$(realpath -m "$1")
patchdir=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
src="$build/src"
obj="$build/obj"

made_for=$(awk '$1 == "qemu" { print $2 }' "$here/base-versions")

as_root()
{
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		echo "qemu: need root (or sudo) to run: $*" >&2
		exit 1
	fi
}

# The QEMU source versions apt knows of, one a line.
source_versions()
{
	{ apt-cache showsrc --only-source qemu 2>/dev/null || true; } |
		sed -n 's/^Version: //p'
}

# The revision to fetch: base-versions' if apt has it, else the newest 1:7.2.
pick_version()
{
	local v best=
	for v in $(source_versions | grep -E '^1:7\.2[+.~-]'); do
		if [ "$v" = "$made_for" ]; then
			echo "$v"
			return
		fi
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
			best=$v
		fi
	done
	echo "$best"
}

fetch()		# fetch VERSION: apt-get source into $build/fetch
{
	rm -rf "$build/fetch"
	mkdir -p "$build/fetch"
	# apt drops privileges to _apt for the download; a fresh directory
	# it may write to avoids its "unsandboxed download" warning.
	chmod 0777 "$build/fetch"
	(cd "$build/fetch" && apt-get source -q "qemu=$1" >apt-source.log 2>&1)
}

if [ ! -e "$src/.bts-unpacked" ]; then
	rm -rf "$src"
	version=$(pick_version)
	if [ -z "$version" ]; then
		# No source index (apt's lists removed, or the deb-src entry
		# added but never fetched): fetch it once.
		echo "  UPDATE  apt's package lists (no QEMU 7.2 source known)" >&2
		as_root apt-get update -qq >&2 || true
		version=$(pick_version)
	fi
	if [ -z "$version" ]; then
		known=$(source_versions | tr '\n' ' ')
		cat >&2 <<-EOF
		qemu: apt knows no source of Debian 12's QEMU 7.2 (apt-cache showsrc qemu:
		qemu: ${known:-nothing}), which qemu/patches is made for.  This needs
		qemu: Debian 12 (bookworm) in apt's sources and a deb-src entry: run
		qemu: 'make deps', which writes /etc/apt/sources.list.d/bts-workbench-src.sources.
		EOF
		exit 1
	fi
	if [ "$version" != "$made_for" ]; then
		echo "qemu: the mirror no longer has QEMU $made_for (workbench/base-versions); fetching $version" >&2
	fi
	echo "  FETCH   qemu $version" >&2
	if ! fetch "$version"; then
		# Lists older than the mirror name files it no longer has.
		echo "  UPDATE  apt's package lists (apt-get source failed)" >&2
		as_root apt-get update -qq >&2 || true
		if ! fetch "$version"; then
			cat "$build/fetch/apt-source.log" >&2
			echo "qemu: apt-get source qemu=$version failed (log above); check apt's sources and network, then run 'make qemu' again" >&2
			exit 1
		fi
	fi
	dir=$(find "$build/fetch" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*')
	got=$(sed -n '1s/^qemu (\([^)]*\)).*/\1/p' "$dir/debian/changelog" 2>/dev/null || true)
	case "$got" in
	1:7.2[+.~-]*) ;;
	*)
		echo "qemu: apt-get source qemu=$version unpacked QEMU '${got:-(no debian/changelog)}', not Debian's 1:7.2, which qemu/patches is made for; nothing built" >&2
		rm -rf "$build/fetch"
		exit 1
		;;
	esac
	mv "$dir" "$src"
	echo "qemu ($got)" >"$src/.bts-unpacked"
	rm -rf "$build/fetch"
fi

rc=0
"$here/quilt-sync.sh" "$src" "$patchdir" || rc=$?
if [ $rc -eq 2 ]; then
	have=$(sed -n 's/^qemu (\(.*\))$/\1/p' "$src/.bts-unpacked")
	rel=${src#"$PWD"/}
	series=${patchdir#"$PWD"/}
	if [ "$have" = "$made_for" ]; then
		echo "qemu: $series does not apply to Debian's QEMU $have ($rel), the version it is made for: fix the patch named above" >&2
	elif [ "$(pick_version)" = "$made_for" ]; then
		cat >&2 <<-EOF
		qemu: $series does not apply to Debian's QEMU $have ($rel);
		qemu: it is made for $made_for (workbench/base-versions), which apt
		qemu: has.  To build on that, run:
		qemu:   rm -rf ${rel%/src} && make qemu
		EOF
	else
		cat >&2 <<-EOF
		qemu: $series does not apply to Debian's QEMU $have ($rel);
		qemu: it is made for $made_for (workbench/base-versions), which the
		qemu: mirror no longer has.  The patch named above must be refreshed:
		qemu:   cd $rel && QUILT_PC=.pc-bts QUILT_PATCHES=$patchdir quilt push -f
		qemu: then fix the rejects, 'quilt refresh', 'quilt push -a', and
		qemu: record $have in workbench/base-versions.
		EOF
	fi
	exit 1
elif [ $rc -ne 0 ]; then
	exit 1
fi
echo "  BUILD   qemu in $obj" >&2

# Let ccache hit across checkouts (CI builds in a fresh clone): paths
# under the build directory are hashed relative to it.
export CCACHE_BASEDIR="$build" CCACHE_NOHASHDIR=1

if [ ! -e "$obj/build.ninja" ]; then
	mkdir -p "$obj"
	(cd "$obj" && "$src/configure" \
		--target-list=x86_64-softmmu \
		--cc="ccache gcc" --host-cc="ccache gcc" \
		--disable-install-blobs --disable-docs --disable-tools \
		--disable-user --disable-werror --disable-debug-info \
		--enable-tcg --disable-kvm --disable-xen \
		--enable-plugins --enable-virtfs --enable-attr --enable-cap-ng \
		--disable-gtk --disable-sdl --disable-vnc --disable-opengl \
		--disable-spice --disable-curses --disable-slirp \
		--disable-gnutls --disable-nettle --disable-gcrypt \
		--disable-libusb --disable-usb-redir --disable-smartcard \
		--disable-capstone --disable-alsa --disable-pa --disable-jack \
		--disable-oss --disable-sndio \
		--disable-curl --disable-rbd --disable-glusterfs \
		--disable-libiscsi --disable-libnfs --disable-libssh \
		--disable-bzip2 --disable-lzo --disable-snappy --disable-zstd \
		--disable-numa --disable-seccomp --disable-vde \
		--disable-linux-aio --disable-linux-io-uring \
		--disable-guest-agent --disable-qom-cast-debug \
		--disable-fuse --disable-virtiofsd \
		>configure.log 2>&1) || {
		tail -40 "$obj/configure.log" >&2
		echo "qemu: configure failed; full log in $obj/configure.log" >&2
		rm -f "$obj/build.ninja"
		exit 1
	}
fi

ninja -C "$obj" qemu-system-x86_64 >"$obj/ninja.log" 2>&1 || {
	grep -E -B2 -A8 'error|Error' "$obj/ninja.log" | tail -60 >&2
	echo "qemu: build failed; full log in $obj/ninja.log" >&2
	exit 1
}
echo "  DONE    qemu in ${SECONDS}s" >&2
