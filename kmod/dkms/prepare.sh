#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The PRE_BUILD step of the nvme-adapt-nvme-pci DKMS module (kmod/dkms/dkms.conf): lays out our nvme-pci driver in
# drivers/nvme/host/ of dkms's build directory for kernel KERNELRELEASE the way kmod/build_module.py does it, from
# the Debian package linux-source-X of that kernel: only drivers/nvme/host is extracted from its tarball, the
# patch series for the kernel's major.minor (patches/<X>/) is applied, our files (src/) and the pace function
# the agent's BPF side shares (bpf/na_pace.h) are copied beside the driver, and a Kbuild names the objects.
#
# The driver includes its private header drivers/nvme/host/nvme.h, whose structures must be those of the
# nvme-core module that the kernel's image shipped: so the installed linux-source-X must be the very version of
# the package linux-image-KERNELRELEASE, and its tarball the one that package installed (dpkg's md5sum).
#
# Module BTF, which the agent's fentry/fexit hooks on the nvme module need (the stock module has it), is made by
# Kbuild only where the kernel tree holds the kernel's vmlinux; Debian's headers do not. So MAKE runs in ./kbuild:
# the headers tree itself where it has a vmlinux, else a tree of links to its entries with the ELF vmlinux taken
# from the image's /boot/vmlinuz-KERNELRELEASE beside them (as build_module.py takes it from the image package),
# when pahole (Debian package dwarves) is there to encode BTF; without one of them, a module without BTF.
#
# Usage (dkms runs it in the build directory): prepare.sh KERNELRELEASE KERNEL_SOURCE_DIR
# Environment: NVME_ADAPT_LINUX_SOURCE_DIR, where linux-source-X.tar.xz is read (default /usr/src, where the
# package puts it); NVME_ADAPT_BOOT_DIR, where vmlinuz-KERNELRELEASE is read (default /boot); DPKG_ADMINDIR
# (dpkg's own) for the package database the versions are read from.
set -euo pipefail
kernelver=${1:?usage: prepare.sh KERNELRELEASE KERNEL_SOURCE_DIR}
kdir=${2:?usage: prepare.sh KERNELRELEASE KERNEL_SOURCE_DIR}
source_dir=${NVME_ADAPT_LINUX_SOURCE_DIR:-/usr/src}
boot_dir=${NVME_ADAPT_BOOT_DIR:-/boot}
driver=drivers/nvme/host

fail() {
  echo "nvme-adapt-nvme-pci: $*" >&2
  # dkms goes on to MAKE even when PRE_BUILD fails: this Kbuild stops that make with the same message (in
  # make.log), instead of a compiler error about a driver that is not there. make's $( ) and # are dropped.
  rm -rf drivers kbuild
  mkdir -p "$driver"
  ln -s "$kdir" kbuild
  printf '$(error nvme-adapt-nvme-pci: %s)\n' "$(printf '%s' "$*" | tr -d '$#()')" > "$driver/Kbuild"
  exit 1
}

# The patch series shipped, one folder per kernel series: the kernels this module is made for.
supported=$(cd patches && ls -d */ | tr -d / | sort -V | paste -sd ' ')
series=$(printf '%s' "$kernelver" | cut -d. -f1,2)
[[ -d patches/$series ]] ||
  fail "kernel $kernelver ($series) is not supported: patch series exist for Debian's kernels $supported only"

installed_version() {  # the version of package $1 in dpkg's database, or nothing
  { dpkg-query -W -f='${db:Status-Status} ${Version}' "$1" 2>/dev/null || true; } | sed -n 's/^installed //p'
}
image=linux-image-$kernelver
image_version=$(installed_version "$image")
if [[ -z $image_version ]]; then  # Debian's unsigned build of the same image
  image=linux-image-$kernelver-unsigned
  image_version=$(installed_version "$image")
fi
[[ -n $image_version ]] ||
  fail "no Debian package linux-image-$kernelver is installed: the driver is built only for a Debian kernel image"
source_pkg=linux-source-$series
source_version=$(installed_version "$source_pkg")
[[ -n $source_version ]] ||
  fail "$source_pkg is not installed: apt install $source_pkg=$image_version (the version of $image)"
[[ $source_version == "$image_version" ]] ||
  fail "$source_pkg is version $source_version but $image is $image_version: the driver's private header must" \
       "match the kernel's nvme-core; install $source_pkg=$image_version, or upgrade to and boot the kernel of" \
       "$source_version"

tarball=$source_dir/$source_pkg.tar.xz
[[ -f $tarball ]] || fail "$tarball not found ($source_pkg $source_version installed; NVME_ADAPT_LINUX_SOURCE_DIR=$source_dir)"
# The tarball read must be the one that package version installed, wherever it is read from.
md5sums=$(dpkg-query --control-path "$source_pkg" md5sums 2>/dev/null) || true
expected=
[[ -n $md5sums ]] && expected=$(awk -v f="usr/src/$source_pkg.tar.xz" '$2 == f {print $1}' "$md5sums")
[[ -n $expected ]] || fail "$source_pkg's md5sums has no entry for usr/src/$source_pkg.tar.xz: cannot check $tarball"
[[ $(md5sum < "$tarball" | cut -d' ' -f1) == "$expected" ]] ||
  fail "$tarball is not the tarball $source_pkg $source_version installed (md5sum differs): reinstall $source_pkg"

echo "nvme-adapt-nvme-pci: $source_pkg $source_version for $kernelver: extracting $driver from $tarball"
rm -rf drivers
# The whole xz stream is read to find the folder: about 10 s.
tar -xJf "$tarball" --strip-components=1 "$source_pkg/$driver" ||
  fail "extract: $source_pkg/$driver not read from $tarball"
for patch in patches/"$series"/*.patch; do
  out=$(patch -p1 --forward --batch -i "$patch" 2>&1) || fail "patch: $patch does not apply to $source_pkg $source_version: $out"
done
cp src/* bpf/na_pace.h "$driver/" || fail "copy: src/ and bpf/na_pace.h into $driver"
# The same objects as kmod/build_module.py's MODULES["nvme-pci"] (the test compares the two modules' srcversion).
printf '%s\n' 'obj-m := nvme.o' 'nvme-y := pci.o nvme-adaptive.o nvme-adaptive-sysfs.o' 'ccflags-y += -I$(src)' \
  > "$driver/Kbuild"
echo "nvme-adapt-nvme-pci: $driver patched with $(ls patches/"$series"/*.patch | wc -l) patches of series $series"

# The ELF vmlinux a bzImage carries: its payload (where the boot protocol header says), decompressed (xz on
# bookworm, zstd on trixie; the build appends the payload's size after the compressed stream).
extract_vmlinux() {
  local image=$1 setup offset length start magic
  setup=$(od -An -tu1 -j $((0x1f1)) -N1 "$image" | tr -d ' ')
  read -r offset length < <(od -An -tu4 -j $((0x248)) -N8 "$image")
  start=$(( (${setup:-0} > 0 ? setup : 4) * 512 + 512 + offset ))
  magic=$(od -An -tx1 -j "$start" -N4 "$image" | tr -d ' ')
  case $magic in
    fd377a58) tail -c +$((start + 1)) "$image" | head -c "$length" | xz -dcq --single-stream ;;
    28b52ffd) command -v zstd >/dev/null && tail -c +$((start + 1)) "$image" | head -c $((length - 4)) | zstd -dcq ;;
  esac
}
rm -rf kbuild
vmlinuz=$boot_dir/vmlinuz-$kernelver
if [[ -e $kdir/vmlinux ]]; then
  ln -s "$kdir" kbuild
elif ! command -v pahole >/dev/null; then
  echo "nvme-adapt-nvme-pci: warning: no pahole (Debian package dwarves): the module has no BTF" >&2
  ln -s "$kdir" kbuild
elif [[ ! -f $vmlinuz ]]; then
  echo "nvme-adapt-nvme-pci: warning: no $vmlinuz to take the kernel's BTF from: the module has no BTF" >&2
  ln -s "$kdir" kbuild
else
  mkdir kbuild
  { extract_vmlinux "$vmlinuz" > kbuild/vmlinux; } 2>/dev/null || true
  if [[ $(od -An -tx1 -N4 kbuild/vmlinux | tr -d ' ') == 7f454c46 ]]; then
    for entry in "$kdir"/* "$kdir"/.[!.]*; do
      [[ -e $entry ]] && ln -s "$entry" kbuild/
    done
    echo "nvme-adapt-nvme-pci: module BTF against the vmlinux of $vmlinuz"
  else
    echo "nvme-adapt-nvme-pci: warning: no ELF vmlinux in $vmlinuz's payload: the module has no BTF" >&2
    rm -rf kbuild
    ln -s "$kdir" kbuild
  fi
fi
