#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel.sh REPO BUILD_DIR VARIANT [TARGET...]
#
# Build the test kernel: Debian's 6.12 source, our overlay (new files at
# their kernel paths in REPO) and our quilt series (REPO/patches), with a
# config of tinyconfig + REPO/configs/base.config (+ debug.config for the
# "debug" VARIANT).  Output goes to BUILD_DIR/kernel or BUILD_DIR/kernel-debug;
# the source tree BUILD_DIR/linux stays clean so both variants share it.
#
# The "stock" VARIANT is the baseline for benchmarks: Debian's source as it
# is (its own tree, BUILD_DIR/linux-stock: no overlay, no patches) with the
# lines of base.config whose symbols that tree has, into BUILD_DIR/kernel-stock.
#
# The "deb" VARIANT is a kernel for a real machine (`make deb`): the config
# $KCONFIG (default: the running kernel's, /boot/config-$(uname -r); .gz
# and .xz are read too) with REPO/configs/deb.config merged on top, built
# with the kernel's own `bindeb-pkg` in BUILD_DIR/kernel-deb.  Its
# linux-image and linux-headers packages end up in BUILD_DIR/deb
# (workbench/deb-kernel.sh).
#
# With TARGETs, only those are built (objects or directories, as kbuild
# takes them), in $BTS_KERNEL_OBJ when set: the long tier compiles what the
# series touches under a distribution's full config that way
# (tests/deb/full-config).
#
# Incremental: the overlay is copied by content (unchanged files keep their
# timestamps), the series is re-applied only when it changed, and the config
# is regenerated only when a fragment changed.
#
# patches/ is made for the linux-source-6.12 version in workbench/base-versions;
# bookworm-security moves on.  A tree of another version is built with a
# warning when the series still applies to it, and refused, with the command
# that brings back the right version, when it does not.
set -euo pipefail

repo=$(realpath "$1")
build=$(realpath -m "$2")
variant=$3
shift 3
targets=("$@")
here=$(dirname "$(realpath "$0")")
src="$build/linux"
tarball=/usr/src/linux-source-6.12.tar.xz

case "$variant" in
plain)
	obj="$build/kernel"
	fragments=("$repo/configs/base.config")
	;;
debug)
	obj="$build/kernel-debug"
	fragments=("$repo/configs/base.config" "$repo/configs/debug.config")
	;;
kcsan)
	obj="$build/kernel-kcsan"
	fragments=("$repo/configs/base.config" "$repo/configs/kcsan.config")
	;;
deb)
	obj="$build/kernel-deb"
	base_config=${KCONFIG:-/boot/config-$(uname -r)}
	if [ ! -r "$base_config" ]; then
		cat >&2 <<-EOF
		kernel: no config to start from: $base_config is not there.
		kernel: Give one with KCONFIG=FILE, e.g. Debian's own for amd64 (from
		kernel: linux-config-6.12, which make deb installs):
		kernel:   make deb KCONFIG=/usr/src/linux-config-6.12/config.amd64_none_amd64.xz
		EOF
		exit 1
	fi
	fragments=("$repo/configs/deb.config")
	;;
stock)
	src="$build/linux-stock"
	obj="$build/kernel-stock"
	fragments=("$repo/configs/base.config")
	;;
*)
	echo "kernel: unknown variant '$variant' (plain, debug, kcsan or stock)" >&2
	exit 1
	;;
esac

obj=${BTS_KERNEL_OBJ:-$obj}

if [ ! -e "$src/.bts-unpacked" ]; then
	if [ ! -r "$tarball" ]; then
		echo "kernel: $tarball missing (run 'make deps')" >&2
		exit 1
	fi
	echo "  UNPACK  $tarball" >&2
	rm -rf "$src" "$build/linux-source-6.12"
	mkdir -p "$build"
	# Unpacked files dated now, not as in the tarball: a new version
	# replacing an old tree must not look older than its objects.
	tar -C "$build" -m -xf "$tarball"
	mv "$build/linux-source-6.12" "$src"
	dpkg-query -W -f='${Package} ${Version}\n' linux-source-6.12 \
		>"$src/.bts-unpacked"
fi

# --- overlay ------------------------------------------------------------
manifest="$src/.bts-overlay"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
# The stock tree gets an empty overlay.
if [ "$variant" != stock ]; then
	(cd "$repo" && "$here/overlay-files.sh") >"$list"
fi

touch "$manifest"
# An overlay file must be new to the kernel: changing an upstream file is a
# patch's job, or `make patches` could not show it as a reviewable diff.
while read -r f; do
	if [ -e "$src/$f" ] && ! grep -qxF "$f" "$manifest"; then
		echo "kernel: $f exists upstream; change it with a patch in patches/" >&2
		exit 1
	fi
done <"$list"
comm -23 "$manifest" "$list" | while read -r f; do
	rm -f "$src/$f"
done
if [ -s "$list" ]; then
	rsync -c --files-from="$list" "$repo/" "$src/"
fi
cp "$list" "$manifest"

# --- patches ------------------------------------------------------------
if [ "$variant" != stock ]; then
	have=$(awk '{ print $2 }' "$src/.bts-unpacked")
	made_for=$(awk '$1 == "linux-source-6.12" { print $2 }' "$here/base-versions")
	rel=${src#"$PWD"/}
	sudo=
	[ "$(id -u)" -eq 0 ] || sudo="sudo "
	refresh="${sudo}apt-get install --allow-downgrades linux-source-6.12=$made_for && rm -rf $rel && make kernel"
	rc=0
	"$here/quilt-sync.sh" "$src" "$repo/patches" || rc=$?
	if [ $rc -ne 0 ]; then
		if [ $rc -eq 2 ] && [ "$have" != "$made_for" ]; then
			cat >&2 <<-EOF
			kernel: $rel is Debian's linux-source-6.12 $have, but patches/ is
			kernel: made for $made_for (workbench/base-versions) and does not apply.
			kernel: To build on $made_for, run:
			kernel:   $refresh
			kernel: ('apt-cache policy linux-source-6.12' lists the versions the mirror
			kernel: has.)  Without $made_for there, the patch named above must be
			kernel: refreshed for $have:
			kernel:   cd $rel && QUILT_PC=.pc-bts QUILT_PATCHES=$repo/patches quilt push -f
			kernel: then fix the rejects, 'quilt refresh', 'quilt push -a', and record
			kernel: $have in workbench/base-versions.
			EOF
		fi
		exit 1
	fi
	if [ "$have" != "$made_for" ]; then
		cat >&2 <<-EOF
		kernel: warning: $rel is Debian's linux-source-6.12 $have, but patches/ is
		kernel: warning: made for $made_for (workbench/base-versions).  The patches
		kernel: warning: apply; if the tests pass, record $have there.  To build on
		kernel: warning: $made_for instead, run:
		kernel: warning:   $refresh
		EOF
	fi
fi

# Let ccache hit across checkouts (CI builds in a fresh clone): paths
# under the build directory are hashed relative to it.
export CCACHE_BASEDIR="$build" CCACHE_NOHASHDIR=1

# --- config -------------------------------------------------------------
if [ "$variant" = stock ]; then
	# Only our patches add some symbols (CONFIG_X86_DS...): keep the
	# fragment lines whose symbol the stock tree's Kconfig declares, and
	# mark the kernel's release.
	mkdir -p "$obj"
	awk '
		FNR == NR { known["CONFIG_" $1]; next }
		{ sym = "" }
		/^CONFIG_[A-Za-z0-9_]+=/ { sym = $0; sub(/=.*/, "", sym) }
		/^# CONFIG_[A-Za-z0-9_]+ is not set$/ { sym = $2 }
		sym && !(sym in known) { print "# not in the stock tree: " $0; next }
		sym == "CONFIG_LOCALVERSION" { print sym "=\"-stock\""; next }
		{ print }
	' <(find "$src/" -name 'Kconfig*' -exec sed -nE \
		's/^[[:space:]]*(menu)?config[[:space:]]+([A-Za-z0-9_]+).*/\2/p' {} +) \
		"${fragments[@]}" >"$obj/stock.config"
	fragments=("$obj/stock.config")
fi
kmake=(make -C "$src" O="$obj" CC="ccache gcc" HOSTCC="ccache gcc"
	-j"$(nproc)")
# A config of the user's own (deb) starts from it, the test kernels from
# tinyconfig.
start_config()
{
	local key val
	if [ -z "${base_config:-}" ]; then
		"${kmake[@]}" -s tinyconfig >/dev/null
		return
	fi
	case "$base_config" in
	*.xz)	xz -dc "$base_config" >"$obj/.config" ;;
	*.gz)	gzip -dc "$base_config" >"$obj/.config" ;;
	*)	cat "$base_config" >"$obj/.config" ;;
	esac
	# A distribution's config names the certificates its own build trusts
	# (Debian's: debian/certs/...), which the source package does not ship;
	# without them the kernel trusts only the key its build makes.
	for key in SYSTEM_TRUSTED_KEYS SYSTEM_REVOCATION_KEYS; do
		val=$("$src/scripts/config" --file "$obj/.config" --state "$key")
		if [ -n "$val" ] && [ "$val" != undef ] && [ ! -e "$src/$val" ]; then
			echo "  CONFIG  $key=\"$val\" is not in the source: cleared" >&2
			"$src/scripts/config" --file "$obj/.config" --set-str "$key" ""
		fi
	done
}
want=$( { [ -z "${base_config:-}" ] || cat "$base_config"; cat "${fragments[@]}"; } |
	sha256sum | cut -d' ' -f1)
if [ ! -e "$obj/.config" ] || [ "$(cat "$obj/.bts-config" 2>/dev/null)" != "$want" ]; then
	echo "  CONFIG  $variant: ${base_config:-tinyconfig} + ${fragments[*]##*/}" >&2
	mkdir -p "$obj"
	start_config
	(cd "$src" && \
		scripts/kconfig/merge_config.sh -m -O "$obj" "$obj/.config" \
		"${fragments[@]}" >"$obj/merge_config.log")
	"${kmake[@]}" -s olddefconfig >/dev/null
	# merge_config only warns when Kconfig drops a requested value (an
	# unmet dependency); a test kernel without it would test nothing.
	# Later fragments override earlier ones, as in merge_config.
	if ! awk '
		/^CONFIG_[A-Za-z0-9_]+=/ { sym = $0; sub(/=.*/, "", sym) }
		/^# CONFIG_[A-Za-z0-9_]+ is not set$/ { sym = $2 }
		!sym { next }
		FNR == NR { want[sym] = $0; sym = ""; next }
		{ got[sym] = $0; sym = "" }
		END {
			for (s in want) {
				g = (s in got) ? got[s] : "# " s " is not set"
				if (g != want[s]) {
					printf "kernel: fragment wants \"%s\", config has \"%s\"\n", want[s], g
					bad = 1
				}
			}
			exit bad
		}' <(cat "${fragments[@]}") "$obj/.config" >&2; then
		rm -f "$obj/.bts-config"
		exit 1
	fi
	echo "$want" >"$obj/.bts-config"
fi

# --- build --------------------------------------------------------------
# kbuild TARGET...: build them, the log in $obj/build.log; errors shown,
# warnings printed.
kbuild()
{
	echo "  BUILD   $variant: $* in ${obj#"$repo"/}" >&2
	if ! "${kmake[@]}" "$@" >"$obj/build.log" 2>&1; then
		grep -E -A5 'error:|Error [0-9]' "$obj/build.log" | head -60 >&2
		echo "kernel: build failed; full log in $obj/build.log" >&2
		exit 1
	fi
	grep -E 'warning:' "$obj/build.log" >&2 || true
}
if [ ${#targets[@]} -gt 0 ]; then
	kbuild "${targets[@]}"
	echo "  DONE    $variant: ${#targets[@]} targets in ${SECONDS}s" >&2
	exit 0
fi
if [ "$variant" = deb ]; then
	# The kernel's own packaging; gzip: xz takes minutes over a
	# distribution config's modules.  No -dbg package (see deb-kernel.sh).
	"$here/deb-kernel.sh" clean "$build" "$obj"
	KDEB_COMPRESS=${KDEB_COMPRESS:-gzip} \
	DEB_BUILD_PROFILES=pkg.linux-upstream.nokerneldbg kbuild bindeb-pkg
	"${kmake[@]}" -s kernelrelease >"$obj/kernelrelease"
	exec "$here/deb-kernel.sh" collect "$build" "$obj"
fi
kbuild bzImage modules
"${kmake[@]}" -s kernelrelease >"$obj/kernelrelease"
echo "  DONE    $variant kernel $(cat "$obj/kernelrelease") in ${SECONDS}s" >&2
