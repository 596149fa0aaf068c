#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# series-build.sh REPO BUILD_DIR
#
# Build every prefix of the series that `make patches` writes, as a
# bisecting reviewer would: the git tree BUILD_DIR/patches/linux (one
# commit per patch) is checked out at each commit in turn and built with
# the test kernel's config (tinyconfig + configs/base.config), in
# BUILD_DIR/patches/kernel.  A step fails on a build error or on any
# compiler warning in what it rebuilt (each file is rebuilt in the step
# that changed it or what it includes, so a warning shows where it came
# from).  The base itself is built first, so that its own warnings, if
# any, are not blamed on the first patch.
#
# The last commit is the tree `make kernel` builds; the steps before it
# cost what they rebuild (a header a patch touches, the files a new
# Kconfig symbol reaches).  Prints each step's time; exit 1 at the first
# step that fails, naming it.
set -euo pipefail

repo=$(realpath "$1")
build=$(realpath -m "$2")
work="$build/patches/linux"
obj="$build/patches/kernel"
git=(git -C "$work")

"$repo/workbench/patches.sh" "$repo" "$build" >/dev/null

# ccache hits across this tree and BUILD_DIR/linux for unchanged files:
# the same layout under a different base (see kernel.sh).
export CCACHE_BASEDIR="$build/patches" CCACHE_NOHASHDIR=1
kmake=(make -C "$work" O="$obj" CC="ccache gcc" HOSTCC="ccache gcc"
	-j"$(nproc)")

mkdir -p "$obj"
steps=$("${git[@]}" rev-list --reverse base..series)
total=$(wc -w <<<"$steps")
n=0
for c in base $steps; do
	"${git[@]}" checkout -q --detach "$c"
	subject=$("${git[@]}" log -1 --format=%s "$c")
	start=$SECONDS
	# The config is made anew at each step: a patch may add symbols.
	"${kmake[@]}" -s tinyconfig >/dev/null
	(cd "$work" && scripts/kconfig/merge_config.sh -m -O "$obj" \
		"$obj/.config" "$repo/configs/base.config" >/dev/null)
	"${kmake[@]}" -s olddefconfig >/dev/null
	log="$obj/build-$n.log"
	if ! "${kmake[@]}" bzImage modules >"$log" 2>&1; then
		grep -E -A5 'error:|Error [0-9]' "$log" | head -40 >&2
		echo "series-build: step $n/$total does not build: $subject (log: $log)" >&2
		"${git[@]}" checkout -q series
		exit 1
	fi
	if grep -E 'warning:' "$log" >&2; then
		echo "series-build: step $n/$total builds with warnings: $subject (log: $log)" >&2
		"${git[@]}" checkout -q series
		exit 1
	fi
	printf '  BUILT   %2d/%d %4ds  %s\n' "$n" "$total" $((SECONDS - start)) "$subject"
	n=$((n + 1))
done
"${git[@]}" checkout -q series
echo "series-build: all $total steps build, without warnings, in ${SECONDS}s"
