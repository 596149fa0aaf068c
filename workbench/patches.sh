#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# patches.sh REPO BUILD_DIR
#
# Emit the kernel work as a `git format-patch` series against Debian's
# linux-source-6.12, as a reviewer would apply it with `git am`: one commit
# per patch in REPO/patches/series, each carrying its quilt patch plus the
# new (overlay) files that REPO/patches/overlay.map assigns to it.  Every
# overlay file must be assigned, so nothing is left out of the series.
# Output: BUILD_DIR/patches/out/*.patch.
set -euo pipefail

repo=$(realpath "$1")
build=$(realpath -m "$2")

# The series is signed off, and authored, by whoever generates it, as
# git format-patch -s would: the DCO is theirs to certify.
name=$(git -C "$repo" config user.name || true)
email=$(git -C "$repo" config user.email || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	echo "patches: no identity to sign the series with: git config user.name 'Your Name' && git config user.email you@example.org (the patches are authored and Signed-off-by with it)" >&2
	exit 1
fi
signer="$name <$email>"
work="$build/patches/linux"
out="$build/patches/out"
map="$repo/patches/overlay.map"
tarball=/usr/src/linux-source-6.12.tar.xz
git=(git -C "$work" -c user.name="$name" -c user.email="$email")
here=$(dirname "$(realpath "$0")")
installed=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)
made_for=$(awk '$1 == "linux-source-6.12" { print $2 }' "$here/base-versions")

# The base: the pristine Debian tree, committed once per version.
if ! "${git[@]}" rev-parse -q --verify refs/tags/base >/dev/null 2>&1 ||
	[ "$("${git[@]}" log -1 --format=%s base)" != "Debian linux-source-6.12 $installed" ]; then
	echo "  BASE    git repository of $tarball (once)" >&2
	rm -rf "$work"
	mkdir -p "$build/patches"
	tar -C "$build/patches" -xf "$tarball"
	mv "$build/patches/linux-source-6.12" "$work"
	git init -q "$work"
	# Debian's top-level .gitignore ignores everything at the top level.
	"${git[@]}" add -f -A
	"${git[@]}" commit -q -m "Debian $(dpkg-query -W -f='${Package} ${Version}' linux-source-6.12)"
	"${git[@]}" tag base
fi
"${git[@]}" checkout -q -f -B series base
"${git[@]}" clean -q -fdx

overlay=$(cd "$repo" && "$(dirname "$0")/overlay-files.sh")
patches=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$repo/patches/series" |
	awk '{print $1}')

# Every overlay file is assigned to one patch of the series.
for f in $overlay; do
	p=$(awk -v f="$f" '$1 == f { print $2 }' "$map" 2>/dev/null)
	if [ -z "$p" ] || ! grep -qxF "$p" <<<"$patches"; then
		echo "patches: $f is not assigned to a patch of the series in patches/overlay.map" >&2
		exit 1
	fi
done

if [ "$installed" != "$made_for" ]; then
	echo "patches: warning: the base is Debian's linux-source-6.12 $installed, but patches/ is made for $made_for (workbench/base-versions)" >&2
fi
for p in $patches; do
	if ! "${git[@]}" apply --index "$repo/patches/$p"; then
		echo "patches: patches/$p does not apply to Debian's linux-source-6.12 $installed; patches/ is made for $made_for (workbench/base-versions): 'apt-get install --allow-downgrades linux-source-6.12=$made_for && make patches' builds on that" >&2
		exit 1
	fi
	for f in $(awk -v p="$p" '$2 == p { print $1 }' "$map"); do
		mkdir -p "$work/$(dirname "$f")"
		cp "$repo/$f" "$work/$f"
		"${git[@]}" add -f "$f"
	done
	# The quilt header is the commit: Subject and body up to "---"; the
	# placeholder author and sign-off of patches/ become the signer's.
	sed -n -e '/^---$/q' -e '/^From: /d' \
		-e '/^Signed-off-by: .*@example\.invalid>$/d' \
		-e 's/^Subject: \(\[PATCH[^]]*\] \)\{0,1\}//' \
		-e 'p' "$repo/patches/$p" >"$build/patches/msg"
	"${git[@]}" commit -q -s --author="$signer" -F "$build/patches/msg"
done

rm -rf "$out"
"${git[@]}" format-patch -q --cover-letter --base=base -o "$out" base..series
# The cover letter: patches/cover-letter.txt's first line is its subject,
# the rest its text, in place of format-patch's placeholders.
cover=$(ls "$out"/0000-cover-letter.patch)
python3 - "$cover" "$repo/patches/cover-letter.txt" <<'EOF'
import sys
cover, text = sys.argv[1], open(sys.argv[2]).read().split("\n", 1)
s = open(cover).read()
s = s.replace("*** SUBJECT HERE ***", text[0], 1)
s = s.replace("*** BLURB HERE ***", text[1].strip("\n"), 1)
open(cover, "w").write(s)
EOF
ls "$out"
