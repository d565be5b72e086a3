#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `systemd-analyze verify` of the unit, in a scratch root: the unit, the built daemon at the unit's
# ExecStart path, the other Exec binaries and the host's unit files (the targets the unit depends on).
# No running systemd is needed, nothing is written outside the scratch root. Any message fails the test:
# verify exits 0 on unknown keys and bad values, printing them.
# Usage: systemd_verify.sh UNIT_FILE DAEMON_BINARY
set -euo pipefail
unit=$1 daemon=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v systemd-analyze >/dev/null || fail "systemd-analyze not found: install Debian package 'systemd' (scripts/install-deps)"
[[ -d /lib/systemd/system ]] || fail "/lib/systemd/system missing: install Debian package 'systemd' (scripts/install-deps)"
[[ -x $daemon ]] || fail "daemon binary $daemon not built"

root=$(mktemp -d /tmp/nvme-adapt-verify.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/lib/systemd" "$root/usr/bin" "$root/usr/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
cp -a /lib/systemd/system "$root/usr/lib/systemd/"
name=$(basename "$unit")
cp "$unit" "$root/lib/systemd/system/$name"

# Every Exec*= command: the daemon from the build, anything else from the host.
daemon_path=$(sed -n 's/^ExecStart=[-@:+!]*\([^ ]*\).*/\1/p' "$unit")
[[ $daemon_path == /usr/sbin/nvme-adaptd ]] || fail "$unit: ExecStart runs '$daemon_path', the package installs /usr/sbin/nvme-adaptd"
while read -r exe; do
  dest="$root$exe"
  mkdir -p "$(dirname "$dest")"
  if [[ $exe == "$daemon_path" ]]; then
    cp "$daemon" "$dest"
  else
    [[ -x $exe ]] || fail "$unit runs $exe, which this machine does not have"
    cp "$exe" "$dest"
  fi
done < <(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\([^ ]*\).*/\1/p' "$unit" | sort -u)

verify() { systemd-analyze verify --man=no --root="$root" "$1" 2>&1; }

# The setup must be able to see a problem: a copy with an unknown key has to be reported.
sed 's/^\[Service\]$/[Service]\nNoSuchKey=1/' "$unit" > "$root/lib/systemd/system/nvme-adapt-selfcheck.service"
selfcheck=$(verify nvme-adapt-selfcheck.service || true)
[[ $selfcheck == *NoSuchKey* ]] || fail "systemd-analyze verify did not report an unknown key in this setup: '$selfcheck'"
rm "$root/lib/systemd/system/nvme-adapt-selfcheck.service"

if ! output=$(verify "$name"); then
  fail "systemd-analyze verify $name exited non-zero: $output"
fi
[[ -z $output ]] || fail "systemd-analyze verify $name reported: $output"
echo "systemd-analyze verify $name: clean ($(systemd-analyze --version | head -1))"
# For the reader: systemd's own exposure score of the sandbox (informational, not asserted).
systemd-analyze security --offline=yes --root="$root" "$name" 2>&1 | tail -1 || true
