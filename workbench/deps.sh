#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install every Debian package the workbench needs.  Idempotent: when all
# packages are present and the deb-src entry exists it does nothing, so
# `make check` can call it on every run without touching the network.
set -euo pipefail

packages=(
	# kernel build (Debian 6.12 source, minimal config, ccache)
	build-essential bc bison flex libelf-dev libssl-dev cpio kmod rsync
	python3 xz-utils ccache quilt git linux-source-6.12
	# QEMU 7.2 from Debian's source package, x86_64-softmmu with virtfs
	dpkg-dev meson ninja-build pkg-config libglib2.0-dev libpixman-1-dev
	libfdt-dev zlib1g-dev libcap-ng-dev libattr1-dev
	# firmware and option ROMs the dfsg QEMU source does not ship
	seabios qemu-system-data
	# guest-side clients and tools: perf, gdb, symbols, instruction decode
	linux-perf gdb elfutils libdw-dev libcapstone-dev valgrind util-linux
	# bts-dump's fuzzer (tools/bts-dump/fuzz): clang and its libFuzzer
	clang libclang-rt-14-dev
)

src_list=/etc/apt/sources.list.d/bts-workbench-src.sources

as_root()
{
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		echo "deps: need root (or sudo) to run: $*" >&2
		exit 1
	fi
}

# `apt-get source qemu` needs a deb-src line.  Derive it from the
# machine's own binary sources so the same mirror (and snapshot) is used.
need_update=
if [ ! -e "$src_list" ]; then
	tmp=$(mktemp)
	if [ -e /etc/apt/sources.list.d/debian.sources ]; then
		sed -e 's/^Types:.*/Types: deb-src/' \
			/etc/apt/sources.list.d/debian.sources >"$tmp"
	elif [ -e /etc/apt/sources.list ]; then
		# One-line format: turn "deb URI SUITE COMPONENTS" into a
		# deb822 stanza per line.
		awk '$1 == "deb" {
			i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents:", $i, $(i + 1)
			for (j = i + 2; j <= NF; j++) printf " %s", $j
			printf "\n\n"
		}' /etc/apt/sources.list >"$tmp"
	fi
	if [ ! -s "$tmp" ]; then
		echo "deps: no Debian apt source found to derive a deb-src entry from" >&2
		exit 1
	fi
	as_root install -m 0644 "$tmp" "$src_list"
	rm -f "$tmp"
	need_update=1
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
		grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done

if [ -z "$need_update" ] && [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

echo "deps: installing ${missing[*]:-(source index only)}" >&2
as_root apt-get update -q
if [ ${#missing[@]} -gt 0 ]; then
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
