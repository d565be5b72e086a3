#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# lintian --display-info on every package built (production, tools, -dbgsym, DKMS) and the .changes: no error, no
# warning, and no hardening-* tag of any level; the info tags are printed for the reader.
# Usage: package_lintian.sh PACKAGE_DIR
set -uo pipefail
dir=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v lintian >/dev/null || fail "lintian not found: install Debian package 'lintian' (scripts/install-deps)"
shopt -s nullglob
files=("$dir"/*.deb "$dir"/*.changes)
((${#files[@]} >= 6)) || fail "expected five packages and a .changes in $dir, found ${files[*]}"
log=$(mktemp /tmp/nvme-adapt-lintian.XXXXXX)
trap 'rm -f "$log"' EXIT
# --fail-on error: exit 2 means errors were found; any other non-zero status is lintian itself failing.
lintian --display-info --fail-on error "${files[@]}" > "$log" 2>&1
rc=$?
grep -v '^running with root privileges' "$log"
((rc == 0 || rc == 2)) || fail "lintian failed to run (exit $rc)"
errors=$(grep -c '^E:' "$log")
warnings=$(grep -c '^W:' "$log")
infos=$(grep -c '^I:' "$log")
hardening=$(grep -c ' hardening-' "$log")
echo "lintian on ${#files[@]} files: $errors errors, $warnings warnings, $infos infos, $hardening hardening tags"
((errors == 0 && warnings == 0 && hardening == 0)) || fail "lintian reports errors, warnings or hardening tags"
