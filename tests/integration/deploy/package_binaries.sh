#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Each program is in its package with its man page (the agent and CLI in nvme-adapt, the load generator and
# the replay in nvme-adapt-tools, none in both); the debug symbols of each are in its -dbgsym package; every
# ELF file is hardened as dpkg-buildflags' hardening=+all makes it: BIND_NOW and PIE in its dynamic section,
# fortified functions where it calls any.
# Usage: package_binaries.sh PACKAGE_DIR VERSION
set -euo pipefail
dir=$1 version=$2
arch=$(dpkg --print-architecture)
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v readelf >/dev/null || fail "readelf not found: install Debian package binutils"
contents() { local listing; listing=$(dpkg-deb -c "$dir/${1}_${version}_${arch}.deb"); awk '{print $NF}' <<< "$listing" | sed 's|^\./|/|'; }

declare -A owner=([/usr/sbin/nvme-adaptd:8]=nvme-adapt [/usr/bin/nvme-adaptctl:1]=nvme-adapt
                  [/usr/bin/uvnvme-load:1]=nvme-adapt-tools [/usr/bin/nvme-adapt-replay:1]=nvme-adapt-tools)
for entry in "${!owner[@]}"; do
  path=${entry%:*} section=${entry#*:} package=${owner[$entry]}
  page=/usr/share/man/man$section/$(basename "$path").$section.gz
  other=$([[ $package == nvme-adapt ]] && echo nvme-adapt-tools || echo nvme-adapt)
  grep -qx "$path" <<< "$(contents "$package")" || fail "$package lacks $path"
  grep -qx "$page" <<< "$(contents "$package")" || fail "$package lacks $page"
  ! grep -qx "$path" <<< "$(contents "$other")" || fail "$other has $path too"
done

root=$(mktemp -d /tmp/nvme-adapt-binaries.XXXXXX)
trap 'rm -rf "$root"' EXIT
for package in nvme-adapt nvme-adapt-tools; do
  dpkg-deb -x "$dir/${package}_${version}_${arch}.deb" "$root"
  dpkg-deb -x "$dir/${package}-dbgsym_${version}_${arch}.deb" "$root"
done
for binary in usr/sbin/nvme-adaptd usr/bin/nvme-adaptctl usr/bin/uvnvme-load usr/bin/nvme-adapt-replay; do
  dynamic=$(readelf -d "$root/$binary")
  grep -qE '\(BIND_NOW\)|\(FLAGS\) +BIND_NOW|\(FLAGS_1\).* NOW\b' <<< "$dynamic" ||
    fail "$binary has no BIND_NOW: $(grep -E 'FLAGS' <<< "$dynamic")"
  grep -qE '\(FLAGS_1\).*\bPIE\b' <<< "$dynamic" || fail "$binary is not PIE"
  segments=$(readelf -lW "$root/$binary")
  grep -q GNU_RELRO <<< "$segments" || fail "$binary has no RELRO segment"
  id=$(readelf -n "$root/$binary" | sed -n 's/.*Build ID: //p')
  [[ -f $root/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug ]] ||
    fail "$binary (build ID $id): no debug symbols in its -dbgsym package"
  sections=$(readelf -SW "$root/$binary")
  ! grep -q '\.debug_info' <<< "$sections" || fail "$binary is not stripped"
  echo "$binary: BIND_NOW, PIE, RELRO; debug symbols in /usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
done
flags=$(readelf -d "$root/usr/sbin/nvme-adaptd")
grep -E 'FLAGS' <<< "$flags"
echo "every program is in one package with its man page, hardened, its symbols in its -dbgsym package"
