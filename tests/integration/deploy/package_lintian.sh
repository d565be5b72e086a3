#!/usr/bin/env bash
# lintian on the package: no error allowed; warnings and infos are printed for the reader.
# Usage: package_lintian.sh DEB
set -uo pipefail
deb=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v lintian >/dev/null || fail "lintian not found: install Debian package 'lintian' (scripts/install-deps)"
log=$(mktemp /tmp/nvme-adapt-lintian.XXXXXX)
trap 'rm -f "$log"' EXIT
# --fail-on error: exit 2 means errors were found; any other non-zero status is lintian itself failing.
lintian --pedantic --display-info --fail-on error "$deb" > "$log" 2>&1
rc=$?
grep -v '^running with root privileges' "$log"
((rc == 0 || rc == 2)) || fail "lintian failed to run (exit $rc)"
errors=$(grep -c '^E:' "$log")
warnings=$(grep -c '^W:' "$log")
echo "lintian: $errors errors, $warnings warnings"
((rc == 0 && errors == 0)) || fail "lintian reports errors"
