#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# quilt-sync.sh TREE PATCHDIR
#
# Make TREE carry exactly the quilt series in PATCHDIR (a `series` file plus
# patches).  When the series or any patch changed since the last sync, pop
# what was applied (restoring the originals from quilt's backups) and push
# the new series.  Only files the patches touch get new timestamps, so make
# or ninja rebuild just those.
#
# quilt's state lives in TREE/.pc-bts, apart from any .pc a Debian source
# package keeps for its own patches; TREE/.bts-synced-series says which
# series was applied.
#
# Exit status 2: a patch of the series does not apply to TREE (the message
# names it); 1: any other error.
set -euo pipefail

tree=$(realpath "$1")
patchdir=$(realpath "$2")
stamp="$tree/.bts-synced-series"

export QUILT_PC=.pc-bts QUILT_PATCHES="$patchdir"
export QUILT_PUSH_ARGS="--color=never" QUILT_DIFF_ARGS="--no-timestamps"

series_hash()
{
	if [ -s "$patchdir/series" ]; then
		(cd "$patchdir" && sha256sum series $patches)
	fi | sha256sum | cut -d' ' -f1
}

patches=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$patchdir/series" 2>/dev/null |
	awk '{print $1}')
for p in $patches; do
	if [ ! -f "$patchdir/$p" ]; then
		echo "quilt-sync: $patchdir/series names $p, which does not exist" >&2
		exit 1
	fi
done

want=$(series_hash)
if [ -e "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi

cd "$tree"
if [ -e .pc-bts/applied-patches ]; then
	quilt --quiltrc /dev/null pop -a -f -q >/dev/null
fi
rm -rf .pc-bts
if [ -n "$patches" ]; then
	if ! quilt --quiltrc /dev/null push -a -q; then
		bad=$(quilt --quiltrc /dev/null next 2>/dev/null || true)
		echo "quilt-sync: ${bad:+${bad##*/} in }$patchdir does not apply to $tree" >&2
		exit 2
	fi
fi
echo "$want" >"$stamp"
