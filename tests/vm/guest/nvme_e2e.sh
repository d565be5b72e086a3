#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Guest side of the VM end-to-end test (tests/vm/nvme_e2e_test.py asserts on what it records).
# Runs in the VM: nvme loaded with poll_queues=1, the host root as /, results under $NVA_RESULTS_DIR.
# The kernel-only steps (BPF-free cross-checks) come first; the agent's steps (nvme-adaptd and nvme-adaptctl
# from the build tree) run between "bpf" and "set-features", with the queue layout still 2/0/1.
# shellcheck source=tests/vm/guest/lib.sh
source "$NVA_VM_DIR/guest/lib.sh"
# shellcheck source=tests/vm/guest/agent_lib.sh
source "$NVA_VM_DIR/guest/agent_lib.sh"

step discovery
d=$(results_subdir discovery)
uname -r > "$d/kernel.txt"
for f in "$NVME_CTRL"/*; do
  [[ -f $f ]] && v=$(cat "$f" 2>/dev/null) && echo "${f##*/}: $v"
done > "$d/nvme0-attrs.txt"
snapshot_queues "$d"
ls /sys/kernel/btf > "$d/btf.txt"
grep -H . /sys/module/nvme/parameters/* > "$d/nvme-params.txt"

step io-libaio
io_run libaio --name=libaio --ioengine=libaio --iodepth=16

step io-hipri
io_run hipri --name=hipri --ioengine=io_uring --hipri=1 --iodepth=16

step bpf
d=$(results_subdir bpf)
bpftool --version > "$d/bpftool-version.txt"
bpftool -j feature probe kernel > "$d/feature-probe.json" 2> "$d/feature-probe.err"
say "bpftool feature probe done"
bpftool btf list > "$d/btf-list.txt"
bpftool btf dump file /sys/kernel/btf/nvme_core -B /sys/kernel/btf/vmlinux |
  grep -E "'btf_trace_nvme_[a-z_]+'" > "$d/nvme_core-trace-types.txt" || true
say "module BTF checked"
if [[ -n ${NVA_BPF_PROBE_OBJ:-} ]]; then
  io_wrapper=(python3 "$NVA_VM_DIR/guest/attach_probe.py" "$NVA_BPF_PROBE_OBJ" "$d/attach.json" --)
  NVA_FIO_SECONDS=2 io_run bpf-attached --name=libaio --ioengine=libaio --iodepth=16 \
    --name=hipri --stonewall --ioengine=io_uring --hipri=1 --iodepth=16
  # shellcheck disable=SC2034  # read by io_run in lib.sh
  io_wrapper=()
fi

# The collector's kernel nvme programs against the tracefs hist of the same run, per batch (the default where
# the nvme module's BTF allows it) and per completion (the nvme_sq tracepoint): per-qid counts must be equal.
step collector-counts
for path in per-batch per-completion; do
  args=()
  [[ $path == per-completion ]] && args=(--nvme-per-completion)
  io_wrapper=(bash "$NVA_VM_DIR/guest/collect_during.sh" "$(results_subdir "collector/$path")/na-collect.txt"
    "${args[@]}" --)
  NVA_FIO_SECONDS=2 io_run "collector-$path" --name=libaio --ioengine=libaio --iodepth=16 \
    --name=hipri --stonewall --ioengine=io_uring --hipri=1 --iodepth=16
  # shellcheck disable=SC2034  # read by io_run in lib.sh
  io_wrapper=()
done

# Run A: the poll_queues + reset lever for nvme0, chosen in the levers config.
step agent-start
a=$(results_subdir agent/a)
agent_config a '{"controllers": [{"controller": "nvme0", "lever": "LEVER_KIND_POLL_QUEUES_RESET"}]}'
agent_start a "$a" --metrics-listen off
ctl --json queues > "$a/queues.json"
ctl --json report > "$a/report.json"
ctl report > "$a/report.txt"
snapshot_queues "$a"
agent_watch "$a/watch.json"

step agent-io
agent_settled_queues "$a/queues-before-libaio.json"
io_run agent-libaio --name=libaio --ioengine=libaio --iodepth=16
agent_settled_queues "$a/queues-after-libaio.json"
io_run agent-hipri --name=hipri --ioengine=io_uring --hipri=1 --iodepth=16
agent_settled_queues "$a/queues-after-hipri.json"

# poll first: the queues are in interrupt mode as found, so only after it does interrupt make a change.
step agent-lever-poll
switch_controller poll "$a/switch-1-poll"
step agent-lever-interrupt
switch_controller interrupt "$a/switch-2-interrupt"
step agent-lever-poll-again
switch_controller poll "$a/switch-3-poll"
step agent-crash
switch_controller interrupt "$a/switch-4-interrupt"
agent_stop "$a" KILL
cp "$AGENT_DIR/state/policy.json" "$a/"
cp "$AGENT_DIR/state/journal.json" "$a/" 2> /dev/null || echo '{}' > "$a/journal.json"
cp "$AGENT_DIR/state/journal.log" "$a/" 2> /dev/null || true

# Run B: the kernel's default lever (coalescing on a stock kernel), the same state dir: the journal left by
# the crash puts poll_queues back first, the policy persisted over gRPC (nvme0 interrupt) stays in force.
step agent-restart
b=$(results_subdir agent/b)
ip link set lo up
agent_config b ""
agent_start b "$b" --metrics-listen 127.0.0.1:9464
wait_until 30 "nvme0 with its poll queue back" _kernel_split_is 1
ctl --json queues > "$b/queues.json"
ctl --json policy get > "$b/policy.json"
snapshot_queues "$b"
agent_watch "$b/watch.json"

step agent-coalescing
status=0
ctl --json override nvme0:q1 poll > "$b/override.json" 2>&1 || status=$?
echo "$status" > "$b/override.status"
wait_until 20 "a lever error in the agent's status" _agent_reports_lever_error "$b/status-after-error.json"
wait_until 20 "a lever_error event" grep -q EVENT_KIND_LEVER_ERROR "$b/watch.json"
python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
  http://127.0.0.1:9464/metrics > "$b/metrics.txt"
ctl --json queues > "$b/queues-after-error.json"
ctl --json status > "$b/status-before-stop.json"
agent_stop "$b" TERM
cp "$AGENT_DIR/state/journal.json" "$b/" 2>/dev/null || true
cp "$AGENT_DIR/state/journal.log" "$b/" 2>/dev/null || true

step set-features
d=$(results_subdir set-features)
status=0
nvme get-feature /dev/nvme0 -f 8 > "$d/get-fid8.txt" 2>&1 || status=$?
echo "$status" > "$d/get-fid8.status"
status=0
# Aggregation threshold 8 completions, time 2 x 100 us: what a coalescing lever would ask of a real SSD.
nvme set-feature /dev/nvme0 -f 8 -v 0x0207 > "$d/set-fid8.txt" 2>&1 || status=$?
echo "$status" > "$d/set-fid8.status"
say "set-feature FID 08h: status $status: $(tr '\n' ' ' < "$d/set-fid8.txt")"

step lever
d=$(results_subdir lever)
echo 0 > /sys/module/nvme/parameters/poll_queues
start=$(uptime_s)
echo 1 > "$NVME_CTRL/reset_controller"
wait_for_live 30
echo "$start $(uptime_s)" > "$d/reset-uptime.txt"
snapshot_queues "$d"
say "after poll_queues=0 + reset: $(tail -1 "$d/dmesg-queues.txt")"
# 6.1 completes polled I/O on the interrupt queues when the device has no poll queue; newer kernels refuse
# it (EOPNOTSUPP): the host tells which.
io_may_fail=1 io_run hipri-no-poll-queue --name=hipri --ioengine=io_uring --hipri=1 --iodepth=16

step finish
dmesg > "$NVA_RESULTS_DIR/dmesg.txt"
