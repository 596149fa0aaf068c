#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# qemu.sh BUILD_DIR PATCH_DIR
#
# Build Debian's QEMU 7.2 with our patches: x86_64-softmmu only, TCG,
# plugins and virtfs on, everything else off.  The first run fetches the
# source with `apt-get source qemu` (Debian's own patches applied); later
# runs re-sync the patch series and let ninja rebuild what changed.
set -euo pipefail

build=$(realpath -m "$1")
patchdir=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
src="$build/src"
obj="$build/obj"

if [ ! -e "$src/.bts-unpacked" ]; then
	rm -rf "$src" "$build/fetch"
	mkdir -p "$build/fetch"
	# apt drops privileges to _apt for the download; a fresh directory
	# it may write to avoids its "unsandboxed download" warning.
	chmod 0777 "$build/fetch"
	(cd "$build/fetch" && apt-get source -q qemu >apt-source.log 2>&1) || {
		cat "$build/fetch/apt-source.log" >&2
		echo "qemu: apt-get source qemu failed (run 'make deps')" >&2
		exit 1
	}
	mv "$build"/fetch/qemu-*/ "$src"
	grep -m1 -o '^qemu ([^)]*)' "$src/debian/changelog" >"$src/.bts-unpacked"
	rm -rf "$build/fetch"
fi

"$here/quilt-sync.sh" "$src" "$patchdir"
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
