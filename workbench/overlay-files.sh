#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# List the overlay: the files of the repository (the current directory)
# that are new kernel files at their kernel paths, sorted.
set -euo pipefail

# Top-level directories that mirror kernel paths.
dirs=()
for d in arch Documentation drivers include kernel lib mm scripts tools; do
	[ -d "$d" ] && dirs+=("$d")
done
[ ${#dirs[@]} -gt 0 ] || exit 0
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -co --exclude-standard -- "${dirs[@]}"
else
	find "${dirs[@]}" -type f
fi | sort
