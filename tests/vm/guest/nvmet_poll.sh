#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Guest side of the nvmet polling-queue task's VM test (tests/vm/nvmet_poll_test.py asserts on what it records):
# our nvmet and nvmet-tcp (kmod/nvmet) in place of the stock ones, nvme0n1 exported over NVMe/TCP on the loopback
# (the fabrics bed's target, guest/fabrics_lib.sh), the kernel's host connected with one I/O queue; then
# - refusals: pqt_enable on a namespace not enabled, on a file, on a block device without poll queues;
# - routing: 4 KiB random reads with polled submission off and on, the backing controller's completions per qid;
# - switching: a verifying randrw while pqt_enable goes on and off, the drain checked after every switch-off;
# - the agent (nvme-adaptd from the build tree, guest/nvmet_agent_lib.sh): its lever for the target's queues, the
#   backing disk's reaps by the task seen as poll, its switching under a verifying randrw, restore on SIGTERM
#   and after kill -9;
# - (NVA_NVMET_COMPARE=1) the seed's comparison, interrupt against polled submission (and the agent's arm when
#   NVA_NVMET_AGENT_ARM names its hook, guest/nvmet_agent_arm.sh: the agent runs through the comparison).
# NVA_NVMET_DIR: the folder of the built nvmet.ko and nvmet-tcp.ko; NVA_NVMET_PARAMS: nvmet's parameters.
# shellcheck source=tests/vm/guest/lib.sh
source "$NVA_VM_DIR/guest/lib.sh"
# shellcheck source=tests/vm/guest/fabrics_lib.sh
source "$NVA_VM_DIR/guest/fabrics_lib.sh"
# shellcheck source=tests/vm/guest/nvmet_poll_lib.sh
source "$NVA_VM_DIR/guest/nvmet_poll_lib.sh"
# shellcheck source=tests/vm/guest/agent_lib.sh
source "$NVA_VM_DIR/guest/agent_lib.sh"
# shellcheck source=tests/vm/guest/nvmet_agent_lib.sh
source "$NVA_VM_DIR/guest/nvmet_agent_lib.sh"

readonly REFUSE_NQN=nqn.2026-12.io.nvme-adapt:pqt-refuse

step nvmet-load
d=$(results_subdir load)
uname -r > "$d/kernel.txt"
# /init loaded the stock target (and what it depends on); ours replaces it.
for m in nvmet_tcp nvme_loop nvmet; do
  if [[ -d /sys/module/$m ]]; then rmmod "$m"; fi
done
# shellcheck disable=SC2086  # the parameters are words
insmod "$NVA_NVMET_DIR/nvmet.ko" ${NVA_NVMET_PARAMS:-}
insmod "$NVA_NVMET_DIR/nvmet-tcp.ko"
cat /proc/sys/kernel/tainted > "$d/tainted.txt"
grep -H . "$PQT_PARAMS"/pqt_* > "$d/params.txt"
cat "$PQT_SYS/state" > "$d/pqt-state.txt"
cat "$PQT_SYS/stats" > "$d/stats.txt"
ls /sys/kernel/btf > "$d/btf.txt"
grep -w nvmet_pqt_poll_bio /proc/kallsyms > "$d/kallsyms.txt" || true
cat /sys/block/"$NVME_NS"/queue/io_poll > "$d/backing-io-poll.txt"
snapshot_queues "$d"
say "our nvmet: $(tr '\n' ' ' < "$d/params.txt"), task $(cat "$d/pqt-state.txt")"

step nvmet-target
fabrics_target_setup "$(results_subdir fabrics)"
pqt_target
ls "$PQT_NS" > "$d/ns-files.txt"

# Refusals: a namespace not enabled, one on a file (nvmet serves it through the file path), and (after the
# connect below) one on the TCP host's disk, a block device without poll queues.
step nvmet-refuse
r=$(results_subdir refuse)
refuse=$NVMET_CFG/subsystems/$REFUSE_NQN
mkdir "$refuse" "$refuse/namespaces/1" "$refuse/namespaces/2"
pqt_try "$refuse/namespaces/1/pqt_enable" 1 > "$r/not-enabled.txt"
truncate -s 16M /tmp/pqt-file.img
echo -n /tmp/pqt-file.img > "$refuse/namespaces/1/device_path"
echo 1 > "$refuse/namespaces/1/buffered_io"  # tmpfs has no O_DIRECT
echo 1 > "$refuse/namespaces/1/enable"
pqt_try "$refuse/namespaces/1/pqt_enable" 1 > "$r/file.txt"
cat "$refuse/namespaces/1/pqt_enable" > "$r/file-after.txt"

step nvmet-connect
pqt_connect "$(results_subdir fabrics/pqt)"
cat "/sys/block/$fabrics_disk/queue/io_poll" > "$r/host-disk-io-poll.txt"
echo -n "/dev/$fabrics_disk" > "$refuse/namespaces/2/device_path"
echo 1 > "$refuse/namespaces/2/enable"
pqt_try "$refuse/namespaces/2/pqt_enable" 1 > "$r/no-poll-queue.txt"
echo "$fabrics_disk" > "$r/no-poll-queue-device.txt"
for n in 1 2; do
  echo 0 > "$refuse/namespaces/$n/enable"
  rmdir "$refuse/namespaces/$n"
done
rmdir "$refuse"
dmesg | grep -F 'pqt:' > "$r/dmesg.txt" || true
say "refusals: not enabled $(cat "$r/not-enabled.txt"); file $(cat "$r/file.txt"); $fabrics_disk $(cat "$r/no-poll-queue.txt")"

step nvmet-route
pqt_route off 0
pqt_route on 1

step nvmet-toggle
pqt_toggle "$(results_subdir toggle)"

step nvmet-agent
pqt_agent_checks "$NVA_RESULTS_DIR"

if [[ ${NVA_NVMET_COMPARE:-0} == 1 ]]; then
  step nvmet-compare
  if [[ -n ${NVA_NVMET_AGENT_ARM:-} ]]; then
    pqt_agent_start compare "$(results_subdir compare/agent)"
    export NVA_NVMET_TARGET_CTRL=$pqt_agent_target
  fi
  pqt_compare "$(results_subdir compare)"
  if [[ -n ${NVA_NVMET_AGENT_ARM:-} ]]; then agent_stop "$NVA_RESULTS_DIR/compare/agent" TERM; fi
fi

step finish
pqt_snapshot "$NVA_RESULTS_DIR/pqt-final.txt"
fabrics_disconnect pqt
fabrics_target_teardown
rmmod nvmet_tcp
rmmod nvmet
echo "rmmod ok" > "$NVA_RESULTS_DIR/unload.txt"
dmesg > "$NVA_RESULTS_DIR/dmesg.txt"
