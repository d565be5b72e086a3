#!/bin/bash
# Guest side of the fabrics test bed (tests/vm/fabrics_test.py asserts on what it records). nvme (PCIe, the
# emulated nvme0) plus nvmet, nvmet_tcp, nvme_fabrics and nvme_tcp loaded by /init (NVA_EXTRA_MODULES).
# An nvmet subsystem exports nvme0n1 as namespace 1 on a TCP port on 127.0.0.1; the kernel's NVMe/TCP host
# connects to it with nvme-cli, once with interrupt-only queues and once with --nr-poll-queues, and fio runs
# the seed's shapes on the fabrics disk with a tracefs hist on each layer: host (nvme_complete_rq of the TCP
# controller), target (nvmet_req_complete) and backing (nvme_complete_rq of nvme0). na-collect counts the
# same runs.
# shellcheck source=tests/vm/guest/lib.sh
source "$NVA_VM_DIR/guest/lib.sh"
# shellcheck source=tests/vm/guest/fabrics_lib.sh
source "$NVA_VM_DIR/guest/fabrics_lib.sh"
# shellcheck source=tests/vm/guest/agent_lib.sh
source "$NVA_VM_DIR/guest/agent_lib.sh"

step fabrics-modules
d=$(results_subdir fabrics)
uname -r > "$d/kernel.txt"
# configfs may be built in without a /sys/module entry: the file system type tells.
for m in configfs nvmet nvmet_tcp nvme_fabrics nvme_tcp; do
  if [[ -d /sys/module/$m ]] || { [[ $m == configfs ]] && grep -qw configfs /proc/filesystems; }; then
    echo "$m loaded"
  else
    echo "$m missing"
  fi
done > "$d/modules.txt"
cat "$NVME_CTRL/queue_count" > "$d/backing-queue-count.txt"
say "modules: $(tr '\n' ' ' < "$d/modules.txt")"
for e in nvme/nvme_complete_rq nvmet/nvmet_req_init nvmet/nvmet_req_complete; do
  cp "$TRACING/events/$e/format" "$d/format-${e#*/}.txt"
done

step fabrics-target
fabrics_target_setup "$d"
say "target: $(cat "$d/target.txt")"

# The seed's shapes, QD32, one job, on the fabrics disk; the layers' hists around each run.
run_shapes() {  # run_shapes CONNECTION
  local bs rw
  for bs in 4k 2m; do
    for rw in randread randwrite randrw; do
      fabrics_io "$1" "$bs-$rw" --bs="$bs" --rw="$rw" --ioengine=libaio
    done
  done
}

step connect-interrupt
fabrics_connect interrupt "$(results_subdir fabrics/interrupt)"
step io-interrupt
run_shapes interrupt
fabrics_disconnect interrupt

step connect-poll
fabrics_connect poll "$(results_subdir fabrics/poll)" --nr-poll-queues=1
step io-poll
run_shapes poll
# io_uring IOPOLL: on a connection with poll queues the host's polled reads land on them.
fabrics_io poll 4k-randread-hipri --bs=4k --rw=randread --ioengine=io_uring --hipri=1

# The agent on this node, which is initiator and target at once: its queue list names each queue's transport
# and layer, its counts follow the hists, and the host controller vanishing (disconnect) drops its queues.
step agent-fabrics
a=$(results_subdir agent)
agent_config fabrics ""
agent_start fabrics "$a" --metrics-listen 127.0.0.1:9464
agent_watch "$a/watch.json"
fabrics_settled_queues "$a/queues-before.json"
fabrics_io poll agent-4k-randrw --bs=4k --rw=randrw --ioengine=libaio
fabrics_settled_queues "$a/queues-after.json"
python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
  http://127.0.0.1:9464/metrics > "$a/metrics.txt"
step agent-host-vanishes
host_ctrl=$(cut -d' ' -f1 "$NVA_RESULTS_DIR/fabrics/poll/controller.txt")
fabrics_disconnect poll
wait_until 30 "the agent to drop $host_ctrl" _agent_lists_no "$host_ctrl" "$a/queues-after-disconnect.json"
ctl --json status > "$a/status-after-disconnect.json"
agent_stop "$a" TERM

step finish
fabrics_target_teardown
dmesg > "$NVA_RESULTS_DIR/dmesg.txt"
