#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian packages the way `make package` does (scripts/make-packages: dpkg-buildpackage -b -us -uc
# on deploy/debian), into OUT_DIR so that build/packages is left alone; the other package tests use
# OUT_DIR/*.deb. Expects exactly the production package, the tools package, their -dbgsym packages and the
# DKMS package of our nvme-pci module (Architecture: all).
# Usage: package_build.sh SOURCE_DIR OUT_DIR DEB_VERSION JOBS [CMAKE_FLAGS...]
set -euo pipefail
src=$1 out=$2 version=$3 jobs=$4
shift 4
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$(dirname "$out")"
log=$(dirname "$out")/package-build.log
started=$SECONDS
if ! NVME_ADAPT_CMAKE_FLAGS="$*" "$src/scripts/make-packages" "$out" "$jobs" > "$log" 2>&1; then
  tail -60 "$log" >&2
  fail "scripts/make-packages failed (whole log: $log)"
fi
grep -q 'dpkg-buildpackage: info: binary-only upload' "$log" || fail "no dpkg-buildpackage -b in $log"

arch=$(dpkg --print-architecture)
expected=("nvme-adapt_${version}_${arch}.deb" "nvme-adapt-dbgsym_${version}_${arch}.deb"
          "nvme-adapt-tools_${version}_${arch}.deb" "nvme-adapt-tools-dbgsym_${version}_${arch}.deb"
          "nvme-adapt-nvme-pci-dkms_${version}_all.deb")
shopt -s nullglob
built=()
for deb in "$out"/*.deb "$out"/*.ddeb; do built+=("$(basename "$deb")"); done
[[ "$(printf '%s\n' "${built[@]}" | sort)" == "$(printf '%s\n' "${expected[@]}" | sort)" ]] ||
  fail "built ${built[*]:-nothing}, expected ${expected[*]}"
for deb in "${expected[@]}"; do
  echo "built $deb ($(stat -c %s "$out/$deb") bytes)"
done
echo "dpkg-buildpackage took $((SECONDS - started)) s"
