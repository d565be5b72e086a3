#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Guest side of the kmod VM test (tests/vm/kmod_test.py asserts on what it records): our nvme-pci module
# (kmod/nvme-pci) in place of the stock one, its in-driver policy, the agent's per-queue lever on it under a
# verifying fio, restore on SIGTERM and after kill -9; NVA_KMOD_ONLY_COMPARE=1: instead, the seed's four-arm
# comparison alone (bench/kmod_compare.py).
# NVA_KMOD: the module; NVA_KMOD_PARAMS: the in-driver policy's numbers for the guest's pace (TCG).
# shellcheck source=tests/vm/guest/lib.sh
source "$NVA_VM_DIR/guest/lib.sh"
# shellcheck source=tests/vm/guest/agent_lib.sh
source "$NVA_VM_DIR/guest/agent_lib.sh"
# shellcheck source=tests/vm/guest/kmod_lib.sh
source "$NVA_VM_DIR/guest/kmod_lib.sh"

# The checks of the test: the driver's policy, the agent's lever under fio --verify, restore.
kmod_checks() {
  # The driver's own policy: adaptive_poll on once fio reads (so that no idle time before fio starts is in the
  # first window), the queues sampled every 0.25 s.
  step kmod-driver
  d=$(results_subdir driver)
  kmod_sample_start "$d/samples.txt"
  ( sleep 2; echo 1 > "$NVME_CTRL/adaptive_poll" ) &
  enabler=$!
  NVA_FIO_SECONDS=${NVA_KMOD_DRIVER_SECONDS:-12} io_run kmod-driver --name=q --ioengine=libaio --iodepth=32 --numjobs=2
  wait "$enabler"
  kmod_sample_stop
  kmod_queues "$d/queues.txt"
  echo 0 > "$NVME_CTRL/adaptive_poll"

  # The agent's per-queue lever (AUTO picks it where the module is): adaptive with windows that switch often,
  # under a verifying randrw, until the driver has counted enough switches.
  step kmod-agent
  a=$(results_subdir agent)
  kmod_modes "$a/modes-before.txt"
  agent_config kmod ""
  kmod_agent_policy kmod "$NVA_KMOD_AGENT_POLICY"
  agent_start kmod "$a" --metrics-listen off
  ctl --json report > "$a/report.json"
  ctl report > "$a/report.txt"
  ctl --json status > "$a/status.json"
  agent_watch "$a/watch.json"
  kmod_queues "$a/queues-before.txt"
  agent_settled_queues "$a/agent-queues-before.json"
  # Verifying fio in runs of a few seconds until the driver has counted the switches asked for (or 10 runs).
  # Each job writes its own 32 MiB and verifies what it wrote as it goes; the queue depth is low because every
  # switch drains the controller's I/O, and TCG completes writes slowly.
  for ((run = 0; run < 10; run++)); do
    io_may_fail=1 NVA_FIO_SECONDS=${NVA_KMOD_VERIFY_SECONDS:-20} io_run "kmod-verify-$run" --name=v --ioengine=libaio \
      --iodepth=4 --numjobs=2 --rw=randrw --rwmixread=80 --size=32M --offset_increment=64M --verify=crc32c \
      --verify_backlog=32 --verify_fatal=1
    kmod_queues "$a/queues-after.txt"
    switches=$(kmod_switches "$a/queues-before.txt" "$a/queues-after.txt")
    say "verify run $run: $switches switches so far"
    ((switches < ${NVA_KMOD_SWITCHES:-1000})) || break
  done
  agent_settled_queues "$a/agent-queues-after.json"

  # SIGTERM puts every queue back to the mode it had before the agent: hold both in poll first.
  step kmod-restore-term
  ctl override nvme0:q1 poll > "$a/override.txt"
  ctl override nvme0:q2 poll >> "$a/override.txt"
  wait_until 20 "both queues in poll" kmod_all_modes poll
  kmod_modes "$a/modes-held.txt"
  agent_stop "$a" TERM
  kmod_modes "$a/modes-after-term.txt"

  # kill -9 leaves the queues where they were; the next start restores them from its journal first.
  step kmod-restore-kill
  k=$(results_subdir agent-kill)
  agent_start kmod "$k" --metrics-listen off
  ctl override nvme0:q1 poll > "$k/override.txt"
  ctl override nvme0:q2 poll >> "$k/override.txt"
  wait_until 20 "both queues in poll" kmod_all_modes poll
  agent_stop "$k" KILL
  kmod_modes "$k/modes-after-kill.txt"
  cp "$AGENT_DIR/state/journal.log" "$k/" 2> /dev/null || true
  r=$(results_subdir agent-restart)
  agent_config off ""
  kmod_agent_policy off '"mode": "CONTROLLER_MODE_OFF"'
  agent_start off "$r" --metrics-listen off
  kmod_modes "$r/modes-after-restart.txt"
  agent_stop "$r" TERM
}

step kmod-load
d=$(results_subdir load)
uname -r > "$d/kernel.txt"
grep -H . /sys/module/nvme/parameters/* > "$d/params-stock.txt" || true
rmmod nvme
# shellcheck disable=SC2086  # the parameters are words
insmod "$NVA_KMOD" poll_queues=1 $NVA_KMOD_PARAMS
wait_for_live 30
cat /proc/sys/kernel/tainted > "$d/tainted.txt"
grep -H . /sys/module/nvme/parameters/* > "$d/params.txt"
cat "$NVME_CTRL/adaptive_poll" > "$d/adaptive_poll.txt"
kmod_queues "$d/queues.txt"
ls /sys/kernel/btf > "$d/btf.txt"
snapshot_queues "$d"
say "our nvme.ko: adaptive_poll $(cat "$d/adaptive_poll.txt"), $(tr '\n' ' ' < "$d/queues.txt")"

if [[ ${NVA_KMOD_ONLY_COMPARE:-0} == 1 ]]; then
  step kmod-compare
  kmod_compare "$(results_subdir compare)"
else
  kmod_checks
fi

step finish
kmod_queues "$NVA_RESULTS_DIR/queues-final.txt"
dmesg > "$NVA_RESULTS_DIR/dmesg.txt"
