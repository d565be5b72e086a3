# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for guest scripts of the VM tests (bash, run by /init in the chroot of the shared host root).
#   source "$NVA_VM_DIR/guest/lib.sh"
# Guest scripts record raw facts as files under $NVA_RESULTS_DIR; the host parses them and asserts after the
# VM has powered off. Timings of each step go to steps.tsv (name, start, end in guest uptime seconds, status).
set -euo pipefail
: "${NVA_RESULTS_DIR:?run guest scripts inside the VM with tests/vm/vmrun.py}"

readonly TRACING=/sys/kernel/tracing
readonly NVME_CTRL=/sys/class/nvme/nvme0
readonly NVME_NS=nvme0n1
# Prefix for io_run's fio command, e.g. a BPF loader that runs fio while its programs are attached.
io_wrapper=()

uptime_s() { cut -d' ' -f1 /proc/uptime; }
say() { echo "[guest +$(uptime_s)s] $*"; }

_step_name=""
_step_start=""
_close_step() {  # _close_step STATUS
  [[ -n $_step_name ]] || return 0
  printf '%s\t%s\t%s\t%s\n' "$_step_name" "$_step_start" "$(uptime_s)" "$1" >> "$NVA_RESULTS_DIR/steps.tsv"
  [[ $1 == ok ]] || say "step $_step_name FAILED (status $1)"
  _step_name=""
}
_on_exit() {
  local status=$?
  if ((status == 0)); then _close_step ok; else _close_step "$status"; fi
}
trap _on_exit EXIT

# step NAME: starts a named step and ends the previous one.
step() {
  _close_step ok
  _step_name=$1
  _step_start=$(uptime_s)
  say "== $1"
}

# results_subdir NAME: creates $NVA_RESULTS_DIR/NAME and prints its path.
results_subdir() {
  mkdir -p "$NVA_RESULTS_DIR/$1"
  echo "$NVA_RESULTS_DIR/$1"
}

# hist_start EVENT KEYS / hist_stop EVENT KEYS OUT: a tracefs histogram around some work (BPF-free counts).
hist_start() { echo "hist:keys=$2" > "$TRACING/events/$1/trigger"; }
hist_stop() {
  cat "$TRACING/events/$1/hist" > "$3"
  echo "!hist:keys=$2" > "$TRACING/events/$1/trigger"
}

# hist_summary FILE: "qid=count ..." from a hist:keys=qid file.
hist_summary() { awk '/^\{ qid:/ { gsub(/[{}]/, ""); printf "q%s=%s ", $2, $4 }' "$1"; }

# snapshot_queues DIR: the controller's queue layout as the kernel reports it.
snapshot_queues() {
  local dir=$1 h
  cp /proc/interrupts "$dir/interrupts.txt"
  for h in /sys/block/"$NVME_NS"/mq/*; do
    echo "${h##*/} $(cat "$h/cpu_list")"
  done > "$dir/mq-cpu-list.txt"
  for h in "$NVME_CTRL"/device/msi_irqs/*; do
    echo "${h##*/} $(cat "$h")"
  done > "$dir/msi-irqs.txt"
  cat "$NVME_CTRL/state" > "$dir/state.txt"
  dmesg | grep -E 'nvme.*(default/read/poll queues|reset)' > "$dir/dmesg-queues.txt" || true
}

# io_run NAME FIO_ARGS...: 4 KiB random reads on /dev/nvme0n1 (global options; FIO_ARGS add --name=... jobs
# and engines) with the per-qid nvme_complete_rq histogram around them. Results in io/NAME/: fio.json,
# hist-qid.txt, interrupts.before, interrupts.after, fio.status (fio's exit status), dmesg-during.txt (the
# kernel's nvme messages of the run: a command timing out, its abort, the reset after it). fio failing fails
# the step unless io_may_fail=1 (the host then judges fio's errors).
io_may_fail=0
io_run() {
  local name=$1 dir status=0 logged
  shift
  dir=$(results_subdir "io/$name")
  logged=$(dmesg | wc -l)
  cp /proc/interrupts "$dir/interrupts.before"
  hist_start nvme/nvme_complete_rq qid
  "${io_wrapper[@]}" fio --filename="/dev/$NVME_NS" --rw=randread --bs=4k --direct=1 --size=64M \
    --time_based --runtime="${NVA_FIO_SECONDS:-3}" --eta=never --output-format=json --output="$dir/fio.json" \
    "$@" || status=$?
  echo "$status" > "$dir/fio.status"
  hist_stop nvme/nvme_complete_rq qid "$dir/hist-qid.txt"
  dmesg | tail -n "+$((logged + 1))" | { grep nvme || true; } > "$dir/dmesg-during.txt"
  ((status == 0 || io_may_fail)) || { say "$name: fio failed with status $status"; return "$status"; }
  cp /proc/interrupts "$dir/interrupts.after"
  say "$name: completions per qid: $(hist_summary "$dir/hist-qid.txt")"
}

# wait_for_live SECONDS: waits until the controller is live again (after a reset).
wait_for_live() {
  local tenths=$(($1 * 10))
  until [[ $(cat "$NVME_CTRL/state") == live && -e /dev/$NVME_NS ]]; do
    ((tenths-- > 0)) || { say "nvme0 not live after $1 s: $(cat "$NVME_CTRL/state")"; return 1; }
    sleep 0.1
  done
}
