#!/usr/bin/env bash
# Builds the Debian package the way `make package` does (cpack -G DEB), into OUT_DIR so that the
# build directory's own package output is left alone; the other package tests use OUT_DIR/*.deb.
# Usage: package_build.sh CPACK BUILD_DIR OUT_DIR DEB_VERSION
set -euo pipefail
cpack=$1 build=$2 out=$3 version=$4
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v dpkg-shlibdeps >/dev/null || fail "dpkg-shlibdeps not found: install Debian package 'dpkg-dev' (scripts/install-deps)"
[[ -f $build/CPackConfig.cmake ]] || fail "$build/CPackConfig.cmake missing: configure the build first"
rm -rf "$out"
mkdir -p "$out"
if ! "$cpack" -G DEB -B "$out" --config "$build/CPackConfig.cmake" > "$out/cpack.log" 2>&1; then
  cat "$out/cpack.log" >&2
  fail "cpack -G DEB failed"
fi
rm -rf "$out/_CPack_Packages"

expected="nvme-adapt_${version}_$(dpkg --print-architecture).deb"
shopt -s nullglob
debs=("$out"/*.deb)
((${#debs[@]} == 1)) || fail "expected one .deb in $out, found ${#debs[@]}: ${debs[*]}"
[[ $(basename "${debs[0]}") == "$expected" ]] || fail "package is named $(basename "${debs[0]}"), expected $expected"
echo "built $expected ($(stat -c %s "${debs[0]}") bytes)"
