#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install every Debian package the workbench needs (with the argument
# "deb": only those `make deb` needs).  Idempotent: when all
# packages are present and apt's source index has Debian's QEMU 7.2 it does
# nothing, so `make check` can call it on every run without touching the
# network.  linux-source-6.12 is installed at the version patches/ is made
# for (workbench/base-versions) while the mirror has it.
#
# For the workbench's self-tests: BTS_DEPS_SRC_LIST replaces the deb-src
# file's path.
set -euo pipefail

# What `make deb` needs (`deps.sh deb`): the kernel, its packaging, and
# bts-tools' libraries.
deb_packages=(
	# kernel build (Debian 6.12 source, ccache) and its packages; pahole
	# for distribution configs with BTF
	build-essential bc bison flex libelf-dev libssl-dev cpio kmod rsync
	python3 xz-utils ccache quilt git linux-source-6.12 dpkg-dev debhelper
	dwarves
	# Debian's own kernel configs, a start for a machine without one
	linux-config-6.12
	# bts-dump: DWARF, instruction decode, demangler, debuginfod
	elfutils libdw-dev libcapstone-dev libipt-dev libiberty-dev
	libdebuginfod-dev
	# the trace-cmd plugin (tools/tracing/bts)
	libtraceevent-dev
)
packages=(
	"${deb_packages[@]}"
	# QEMU 7.2 from Debian's source package, x86_64-softmmu with virtfs
	meson ninja-build pkg-config libglib2.0-dev libpixman-1-dev
	libfdt-dev zlib1g-dev libcap-ng-dev libattr1-dev
	# firmware and option ROMs the dfsg QEMU source does not ship
	seabios qemu-system-data
	# guest-side clients and tools: perf, gdb, valgrind
	linux-perf gdb valgrind util-linux
	# a local debuginfod server for bts-dump's test
	debuginfod
	# the bts tracer's trace-cmd test (tests/trace-bts)
	trace-cmd
	# the guest tests' pgrep
	procps
	# tests/deb/run renders bts-dump's manual from its package
	man-db
	# bts-dump's fuzzer (tools/bts-dump/fuzz): clang and its libFuzzer
	clang libclang-rt-14-dev
	# bts-dump's timelines opened in DevTools, headless
	# (tools/bts-dump/tests/devtools.py)
	chromium
)
only_deb=
if [ "${1:-}" = deb ]; then
	packages=("${deb_packages[@]}")
	only_deb=1
fi

src_list=${BTS_DEPS_SRC_LIST:-/etc/apt/sources.list.d/bts-workbench-src.sources}
here=$(dirname "$(realpath "$0")")

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
if [ -z "$only_deb" ] && [ ! -e "$src_list" ]; then
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

# One dpkg-query for all (it skips unknown names, and exits 1 for them).
declare -A installed=()
while read -r p; do
	[ -z "$p" ] || installed[$p]=1
done <<<"$({ dpkg-query -W -f='${Status} ${Package}\n' "${packages[@]}" 2>/dev/null || true; } |
	sed -n 's/^install ok installed //p')"
missing=()
for p in "${packages[@]}"; do
	[ -n "${installed[$p]:-}" ] || missing+=("$p")
done

# `make qemu` fetches QEMU 7.2's source: apt's lists must have it (images
# often ship without lists, or remove them after installing).
qemu_source_known()
{
	{ apt-cache showsrc --only-source qemu 2>/dev/null || true; } |
		grep -qE '^Version: 1:7\.2[+.~-]'
}
if [ -z "$only_deb" ] && [ -z "$need_update" ] && ! qemu_source_known; then
	need_update=1
fi

if [ -z "$need_update" ] && [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}" >&2
else
	echo "deps: updating apt's package lists (they lack the QEMU 7.2 source)" >&2
fi
as_root apt-get update -q
if [ -z "$only_deb" ] && ! qemu_source_known; then
	echo "deps: warning: apt's lists have no source of Debian 12's QEMU 7.2, which 'make qemu' needs: are Debian 12 (bookworm) and a deb-src entry ($src_list) in apt's sources?" >&2
fi
# The kernel source at the version patches/ is made for, while the mirror
# has it (bookworm-security keeps a few); else the newest, which `make
# kernel` checks the patches against.
made_for=$(awk '$1 == "linux-source-6.12" { print $2 }' "$here/base-versions")
for i in "${!missing[@]}"; do
	[ "${missing[$i]}" = linux-source-6.12 ] || continue
	if { apt-cache madison linux-source-6.12 2>/dev/null || true; } |
		awk -F' *[|] *' '{ sub(/^ +/, "", $1) } $1 == "linux-source-6.12" { print $2 }' |
		grep -qxF "$made_for"; then
		missing[$i]="linux-source-6.12=$made_for"
	else
		echo "deps: the mirror no longer has linux-source-6.12 $made_for (workbench/base-versions); installing its newest" >&2
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
