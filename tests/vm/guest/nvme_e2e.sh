#!/bin/bash
# Guest side of the VM end-to-end test (tests/vm/nvme_e2e_test.py asserts on what it records).
# Runs in the VM: nvme loaded with poll_queues=1, the host root as /, results under $NVA_RESULTS_DIR.
# Kernel-only steps; the daemon's steps join between "io" and "lever" (it must see both routings first).
# shellcheck source=tests/vm/guest/lib.sh
source "$NVA_VM_DIR/guest/lib.sh"

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
io_run hipri-no-poll-queue --name=hipri --ioengine=io_uring --hipri=1 --iodepth=16

step finish
dmesg > "$NVA_RESULTS_DIR/dmesg.txt"
