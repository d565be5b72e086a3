#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The DKMS package of our nvme-pci module, as `make package` built it (nvme-adapt-nvme-pci-dkms, deploy/debian and
# kmod/dkms), builds the module kmod/build_module.py builds: its files are unpacked from the .deb and Debian's
# dkms runs on them (dkms add, dkms build -k RELEASE) for the VM's 6.1 kernel, against the headers
# build_module.py cached and the linux-source-6.1 package it downloaded. The result must carry the same
# vermagic and srcversion (the same sources, patched the same way) and the same parameters as build_module.py's
# module (kmod_build_6_1), module BTF (from the image's vmlinuz: Debian's headers have no vmlinux) and DKMS's MOK
# signature. A linux-source of another version than the kernel image's
# must be refused with both versions named, and a kernel with no patch series with the supported ones named.
#
# Nothing is installed on the host: dkms works in a scratch tree (--dkmstree, --sourcetree, --kernelsourcedir),
# signs with a scratch key (its sign_file, mok_signing_key and mok_certificate settings, taken from the
# environment where no framework.conf sets them), and the package versions prepare.sh checks come from a scratch
# dpkg database (DPKG_ADMINDIR) in which linux-source-6.1 is installed by dpkg --root and the image is recorded
# from its .deb's control fields (installing it would run its maintainer scripts and the host's kernel hooks).
# The host's /var/lib/dkms and /etc/dkms are compared before and after.
#
# Usage: kmod_dkms_test.sh SOURCE_DIR BUILD_DIR PACKAGE_DIR DEB_VERSION
set -euo pipefail
src=$1 build=$2 pkgdir=$3 version=$4
kernel=6.1
started=$SECONDS
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || fail "needs root: dpkg --root installs files owned by root (run the tests as root)"
for tool in dkms:dkms dpkg-deb:dpkg dpkg-query:dpkg modinfo:kmod patch:patch xz:xz-utils make:make gcc-12:gcc-12 \
            openssl:openssl python3:python3 pahole:dwarves objcopy:binutils; do
  command -v "${tool%%:*}" >/dev/null || fail "${tool%%:*} not found: install Debian package ${tool#*:} (scripts/install-deps)"
done
deb=$pkgdir/nvme-adapt-nvme-pci-dkms_${version}_all.deb
[[ -f $deb ]] || fail "$deb not found: deploy.package_build (fixture deploy_deb, scripts/make-packages) makes it"
# The host's own dkms settings win over the environment: a key set there would be used (and made) instead.
if grep -Eqs '^[[:space:]]*(sign_file|mok_signing_key|mok_certificate)=' /etc/dkms/framework.conf /etc/dkms/framework.conf.d/*.conf; then
  fail "/etc/dkms/framework.conf(.d) sets sign_file or a MOK key: the test would sign with the host's key"
fi

work=$build/kmod-dkms-test
rm -rf "$work"
mkdir -p "$work"
log=$work/test.log
host_state() { ls -lAR /var/lib/dkms /etc/dkms 2>/dev/null; }
host_before=$(host_state)

# The reference: build_module.py's module for the same kernel (cached by kmod_build_6_1), and what it used.
reference=$(python3 "$src/kmod/build_module.py" --build-dir "$build" --kernel "$kernel" 2>>"$log") ||
  fail "kmod/build_module.py --kernel $kernel failed (kmod_build_6_1 builds it): $(tail -5 "$log")"
read -r release source_version < <(python3 -c 'import json, sys; b = json.load(open(sys.argv[1]))
print(b["release"], b["source_version"])' "$(dirname "$reference")/build.json")
[[ -n ${source_version:-} ]] || fail "no release and source_version in $(dirname "$reference")/build.json"
cache=$build/vm-cache
headers=$cache/kmod/headers/$release/usr/src/linux-headers-$release
source_deb=$cache/kmod/debs/linux-source-${kernel}_${source_version}_all.deb
image_deb=$cache/packages/$kernel/linux-image-${release}_${source_version}_amd64.deb
sign_file=$cache/kmod/headers/$release/usr/lib/linux-kbuild-$kernel/scripts/sign-file
for path in "$headers/Makefile" "$source_deb" "$image_deb" "$sign_file"; do
  [[ -e $path ]] || fail "$path not found: kmod/build_module.py --kernel $kernel caches it"
done
# The headers as Debian installs them: build_module.py's copy holds the image's vmlinux, Debian's does not. And
# the image's /boot/vmlinuz, whose vmlinux prepare.sh gives Kbuild for module BTF.
mkdir -p "$work/headers" "$work/boot"
for entry in "$headers"/* "$headers"/.[!.]*; do
  [[ $(basename "$entry") == vmlinux ]] || ln -s "$entry" "$work/headers/"
done
dpkg-deb --fsys-tarfile "$image_deb" | tar -x -C "$work/boot" --strip-components=2 "./boot/vmlinuz-$release" ||
  fail "no ./boot/vmlinuz-$release in $image_deb"

# The package's files, as apt would put them under /usr/src.
dpkg-deb -x "$deb" "$work/pkg"
conf=$(ls "$work"/pkg/usr/src/nvme-adapt-nvme-pci-*/dkms.conf 2>/dev/null) || fail "no /usr/src/nvme-adapt-nvme-pci-*/dkms.conf in $deb"
module=nvme-adapt-nvme-pci
module_version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$conf")
[[ $module_version == "${version%-*}" ]] || fail "dkms.conf's PACKAGE_VERSION is '$module_version', expected ${version%-*}"
[[ $(dpkg-deb -f "$deb" Depends) == *dkms* ]] || fail "$deb does not depend on dkms: $(dpkg-deb -f "$deb" Depends)"

# A scratch dpkg database: linux-source-6.1 installed for real, the image recorded.
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/log"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
dpkg --root="$root" --log="$root/var/log/dpkg.log" --force-depends --force-script-chrootless -i "$source_deb" \
  >> "$log" 2>&1 || fail "dpkg --root -i $source_deb failed: $(tail -5 "$log")"
{ echo; dpkg-deb -f "$image_deb"; echo "Status: install ok installed"; } >> "$root/var/lib/dpkg/status"
export DPKG_ADMINDIR=$root/var/lib/dpkg NVME_ADAPT_LINUX_SOURCE_DIR=$root/usr/src NVME_ADAPT_BOOT_DIR=$work/boot
export sign_file mok_signing_key=$work/keys/mok.key mok_certificate=$work/keys/mok.pub
mkdir -p "$work/keys"

dkms_build() {  # DKMS_TREE: dkms add and build into that tree; dkms's output lands in $log
  mkdir -p "$1"
  dkms add -m "$module" -v "$module_version" --sourcetree "$work/pkg/usr/src" --dkmstree "$1" >> "$log" 2>&1 ||
    fail "dkms add failed: $(tail -5 "$log")"
  dkms build -m "$module" -v "$module_version" -k "$release" --kernelsourcedir "$work/headers" \
    --sourcetree "$work/pkg/usr/src" --dkmstree "$1" >> "$log" 2>&1
}

t=$SECONDS
dkms_build "$work/dkms" || fail "dkms build for $release failed: $(tail -20 "$log")"
build_seconds=$((SECONDS - t))
built=$work/dkms/$module/$module_version/$release/$(uname -m)/module/nvme.ko
[[ -f $built ]] || fail "dkms build left no $built"
status=$(dkms status -m "$module" -v "$module_version" --dkmstree "$work/dkms" 2>&1)
[[ $status == *"$module/$module_version, $release, $(uname -m): built"* ]] || fail "dkms status says: $status"

for field in vermagic srcversion; do
  ours=$(modinfo -F "$field" "$built") theirs=$(modinfo -F "$field" "$reference")
  [[ -n $ours && $ours == "$theirs" ]] || fail "$field of the DKMS module is '$ours', build_module.py's '$theirs'"
done
ours=$(modinfo -F parm "$built" | cut -d: -f1 | sort) theirs=$(modinfo -F parm "$reference" | cut -d: -f1 | sort)
[[ $ours == "$theirs" ]] || fail "parameters differ: DKMS: $(echo $ours), build_module.py: $(echo $theirs)"
for parm in adaptive_poll adaptive_poll_window adaptive_poll_threshold_ns adaptive_poll_slack_ns \
            adaptive_poll_max_failures adaptive_poll_backoff_windows adaptive_poll_max_windows \
            adaptive_poll_interval_ns adaptive_poll_budget; do
  grep -qx "$parm" <<< "$ours" || fail "the DKMS module lacks our parameter $parm"
done
# Module BTF naming the function the agent's collector hooks (fexit/nvme_adaptive_poll_cq).
objcopy --dump-section .BTF="$work/nvme.btf" "$built" "$work/nvme.ko.tmp" 2>/dev/null || fail "the DKMS module has no .BTF section"
grep -qa nvme_adaptive_poll_cq "$work/nvme.btf" || fail "the DKMS module's BTF does not name nvme_adaptive_poll_cq"
signer=$(modinfo -F signer "$built")
[[ $signer == "DKMS module signing key" && -s $work/keys/mok.pub ]] ||
  fail "the DKMS module is not signed with DKMS's MOK key (signer '$signer')"
echo "dkms build: $release in ${build_seconds} s; vermagic, srcversion $(modinfo -F srcversion "$built") and" \
     "$(wc -l <<< "$ours") parameters as build_module.py's module; BTF; signed by '$signer'"

# A linux-source of another version than the image: refused, both versions named, no module.
mismatch=${source_version}~other
cp -a "$root/var/lib/dpkg" "$work/dpkg-mismatch"
sed -i "/^Package: linux-source-$kernel\$/,/^\$/s/^Version: .*/Version: $mismatch/" "$work/dpkg-mismatch/status"
DPKG_ADMINDIR=$work/dpkg-mismatch
dkms_build "$work/dkms-mismatch" && fail "dkms build succeeded with linux-source-$kernel $mismatch"
DPKG_ADMINDIR=$root/var/lib/dpkg
expected="linux-source-$kernel is version $mismatch but linux-image-$release is $source_version"
[[ $(tail -30 "$log") == *"$expected"* ]] || fail "the mismatch was not refused with '$expected': $(tail -20 "$log")"
[[ ! -e $work/dkms-mismatch/$module/$module_version/$release ]] || fail "a module was kept for the mismatched source"
# dkms runs MAKE even when PRE_BUILD failed: make must have stopped on the same message (what make.log shows).
grep -q "$expected" "$work/dkms-mismatch/$module/$module_version/build/make.log" ||
  fail "make.log of the refused build does not say '$expected'"
echo "refused: $expected"

# A kernel no patch series is made for: prepare.sh names the supported ones (before reading any source).
mkdir -p "$work/unsupported"
cp -a "$work"/pkg/usr/src/$module-*/. "$work/unsupported/"
if out=$(cd "$work/unsupported" && ./prepare.sh 6.5.0-5-amd64 "$work/headers" 2>&1); then fail "prepare.sh accepted kernel 6.5.0-5-amd64"; fi
[[ $out == *"kernel 6.5.0-5-amd64 (6.5) is not supported: patch series exist for Debian's kernels 6.1 6.12 7.3 only"* ]] ||
  fail "prepare.sh refused 6.5.0-5-amd64 without naming the supported kernels: $out"
grep -q 'not supported' "$work/unsupported/drivers/nvme/host/Kbuild" || fail "prepare.sh left no failing Kbuild for make"
echo "refused: ${out#nvme-adapt-nvme-pci: }"

[[ $(host_state) == "$host_before" ]] || fail "the host's /var/lib/dkms or /etc/dkms changed"
rm -rf "$work/root" "$work/boot" "$work/dkms-mismatch" "$work/unsupported" "$work/dpkg-mismatch" "$work"/nvme.*
echo "kmod_dkms: passed in $((SECONDS - started)) s (the package's dkms build $build_seconds s); log $log"
