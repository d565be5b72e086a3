#!/usr/bin/env bash
# The package carries all four programs, each with its man page.
# Usage: package_binaries.sh DEB
set -euo pipefail
deb=$1
contents=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|')
missing=()
for entry in /usr/sbin/nvme-adaptd:8 /usr/bin/nvme-adaptctl:1 /usr/bin/uvnvme-load:1 /usr/bin/nvme-adapt-replay:1; do
  path=${entry%:*} section=${entry#*:}
  page=/usr/share/man/man$section/$(basename "$path").$section.gz
  grep -qx "$path" <<< "$contents" || missing+=("$path")
  grep -qx "$page" <<< "$contents" || missing+=("$page")
done
if ((${#missing[@]})); then
  echo "FAIL: the package lacks ${missing[*]} (their modules' install rules are not in this build yet?)" >&2
  exit 1
fi
echo "all four programs and their man pages are in the package"
