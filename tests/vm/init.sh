#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# /init of the VM tests' initramfs (busybox). Loads the modules, mounts the host root (read-only 9p) and the
# results share (writable 9p, at the same absolute path as on the host), mounts /proc /sys /dev /tmp tracefs
# debugfs bpffs inside the host root, then chroots there to run the guest script named in guest.env (or a
# shell), writes its exit status to the results share and powers off.
/bin/busybox --install -s /bin
export PATH=/bin

say() { echo "[init +$(cut -d' ' -f1 /proc/uptime)s] $*"; }
fatal() {
  echo "NVA-INIT-FATAL: $*"
  [ -d /results/. ] && echo "$*" > /results/init-error
  sync
  poweroff -f
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say "kernel $(uname -r) up"

# load_module NAME [PARAMS...]: modprobe, unless the kernel has NAME built in (modules.builtin; vmrun.py then
# passed nvme's parameters on the kernel command line).
load_module() {
  if grep -q "/$1\.ko" "/lib/modules/$(uname -r)/modules.builtin" 2>/dev/null; then
    say "$1 is built in"
    return 0
  fi
  modprobe "$@" || fatal "modprobe $* failed"
}

# The shares are 9p, or virtio-fs on kernels without 9p (vmrun.py says which: nva.share= on the command line).
share=9p
# shellcheck disable=SC2013  # the command line is words
for word in $(cat /proc/cmdline); do
  case $word in nva.share=*) share=${word#nva.share=} ;; esac
done
nine_p="trans=virtio,version=9p2000.L,msize=262144"
mount_share() {  # mount_share TAG DIR [9P_OPTIONS]: a writable share, or read-only with 9P_OPTIONS ro,...
  if [ "$share" = virtiofs ]; then
    mount -t virtiofs ${3:+-o ro} "$1" "$2"
  else
    mount -t 9p -o "$nine_p${3:+,$3}" "$1" "$2"
  fi
}
if [ "$share" = virtiofs ]; then share_modules="virtio_pci virtiofs"; else share_modules="virtio_pci 9pnet_virtio 9p"; fi
for m in $share_modules; do
  load_module "$m"
done
mount_share results /results || fatal "cannot mount the results share ($share tag results)"
[ -f /results/guest.env ] || fatal "no guest.env in the results share"
set -a
# shellcheck disable=SC1091  # written by vmrun.py
. /results/guest.env
set +a

# shellcheck disable=SC2086  # the parameters are words on purpose
load_module nvme $NVA_NVME_PARAMS
# Modules a test asks for by name (the fabrics test bed: nvmet, nvmet_tcp, nvme_tcp, ...), after nvme.
for m in ${NVA_EXTRA_MODULES:-}; do
  load_module "$m"
done

mount_share hostroot /host ro,cache=loose || fatal "cannot mount the host root ($share tag hostroot)"
# shellcheck disable=SC2015  # any failed mount is fatal
mount -t proc proc /host/proc &&
  mount -t sysfs sysfs /host/sys &&
  mount -t devtmpfs devtmpfs /host/dev &&
  mkdir -p /host/dev/pts /host/dev/shm &&
  mount -t devpts devpts /host/dev/pts &&
  mount -t tmpfs tmpfs /host/dev/shm &&
  mount -t tmpfs tmpfs /host/tmp &&
  mount -t tmpfs tmpfs /host/run &&
  mount -t tracefs tracefs /host/sys/kernel/tracing &&
  mount -t debugfs debugfs /host/sys/kernel/debug &&
  mount -t bpf bpf /host/sys/fs/bpf ||
  fatal "cannot mount the guest file systems under the host root"
[ -d "/host$NVA_RESULTS_DIR" ] || fatal "results dir $NVA_RESULTS_DIR is not visible in the host root"
mount --bind /results "/host$NVA_RESULTS_DIR" || fatal "cannot bind the results share to $NVA_RESULTS_DIR"

waited=0
until [ -e /sys/block/nvme0n1 ]; do
  [ "$waited" -ge "$((NVA_NVME_WAIT * 10))" ] &&
    fatal "no nvme0n1 after ${NVA_NVME_WAIT}s (dmesg: $(dmesg | grep -i nvme | tail -3))"
  sleep 0.1
  waited=$((waited + 1))
done
say "nvme0n1 ready ($(dmesg | grep -o '[0-9]*/[0-9]*/[0-9]* default/read/poll queues' | tail -1))"

export HOME=/tmp TERM="${TERM:-linux}" PATH="$NVA_GUEST_PATH"
if [ "$NVA_SHELL" = 1 ]; then
  say "shell in the host root (chroot); the guest script would be: bash $NVA_GUEST_SCRIPT; exit powers off"
  (exec setsid cttyhack chroot /host /bin/bash --noprofile --norc -i)
  status=$?
else
  say "running $NVA_GUEST_SCRIPT"
  chroot /host /bin/bash "$NVA_GUEST_SCRIPT" </dev/null
  status=$?
fi
echo "$status" > /results/guest-exit-status
say "exit status $status; powering off"
sync
umount "/host$NVA_RESULTS_DIR"
poweroff -f
