#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
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

# The agent on this node, which is initiator and target at once, on an interrupt-only connection whose
# controller has the reconnect lever (levers.controllers): its queue list names each queue's transport and
# layer and its counts follow the hists; `policy set --mode poll` reconnects the host with a poll queue, where
# io_uring hipri then lands; SIGTERM reconnects it as it was.
fabrics_disconnect poll
step agent-fabrics
# On the digests kernel the lever's connections run header and data digests, listed in nvme-cli's config;
# elsewhere the agent's config declares them off. Either way the lever has a source (the kernel shows none).
[[ ${#FABRICS_DIGEST_ARGS[@]} -gt 0 ]] && fabrics_digests_begin "$(results_subdir fabrics/digests)"
fabrics_connect lever "$(results_subdir fabrics/lever)" "${FABRICS_DIGEST_ARGS[@]}"
a=$(results_subdir agent)
# The policy a previous agent persisted is the operator's choice and would switch the host again at start:
# each agent here starts from the default policy, so that what it does is the journal's doing alone.
lever_config() {
  rm -f "$AGENT_DIR/state/policy.json"
  if [[ ${#FABRICS_DIGEST_ARGS[@]} -gt 0 ]]; then
    agent_config fabrics "{\"nvmeCliConfig\": \"$AGENT_DIR/nvme-config.json\", \"controllers\": [{\"controller\": \"$fabrics_ctrl\", \"lever\": \"LEVER_KIND_TCP_RECONNECT\"}]}"
  else
    agent_config fabrics "{\"controllers\": [{\"controller\": \"$fabrics_ctrl\", \"lever\": \"LEVER_KIND_TCP_RECONNECT\", \"hdrDigest\": false, \"dataDigest\": false}]}"
  fi
}
lever_config
agent_start fabrics "$a" --metrics-listen 127.0.0.1:9464
agent_watch "$a/watch.json"
# The target's controller (the host's cntlid) in adaptive mode with short windows: no lever serves it, so
# its queues are decided in shadow, a decision per window.
target_ctrl=nvmet:c$(cat "/sys/class/nvme/$fabrics_ctrl/cntlid")
wait_until 30 "the agent to list $target_ctrl" _agent_lists "$target_ctrl" "$a/queues-target.json"
ctl --json policy set --controller "$target_ctrl" --mode adaptive --window-completions 128 > "$a/target-policy.json"
# Its I/O queue is listed from its first completion: a few reads first, so that the measured run's windows
# are the agent's from its start.
dd if="/dev/$fabrics_disk" of=/dev/null bs=4k count=64 iflag=direct 2> /dev/null
wait_until 30 "the agent to list $target_ctrl q1" _agent_lists_queue "$target_ctrl" 1 "$a/queues-target.json"
fabrics_settled_queues "$a/queues-before.json"
fabrics_io lever agent-4k-randrw --bs=4k --rw=randrw --ioengine=libaio
fabrics_settled_queues "$a/queues-after.json"
python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
  http://127.0.0.1:9464/metrics > "$a/metrics.txt"
fabrics_host_state "$a/host-before.txt"

step agent-reconnect-poll
fabrics_switch poll "$a/poll"
fabrics_settled_queues "$a/poll/queues-before.json"
fabrics_io lever agent-hipri --bs=4k --rw=randread --ioengine=io_uring --hipri=1
fabrics_settled_queues "$a/poll/queues-after.json"
cp "$AGENT_DIR/state/journal.json" "$a/poll/journal.json" 2> /dev/null || echo '{}' > "$a/poll/journal.json"
cp "$AGENT_DIR/state/journal.log" "$a/poll/journal.log" 2> /dev/null || true
step agent-stop-restores
agent_stop "$a" TERM
wait_until 60 "the host reconnected without poll queues" _host_polls 0
fabrics_refresh
fabrics_host_state "$a/host-after-stop.txt"
cp "$AGENT_DIR/state/journal.json" "$a/journal-after-stop.json" 2> /dev/null || echo '{}' > "$a/journal-after-stop.json"
cp "$AGENT_DIR/state/journal.log" "$a/journal-after-stop.log" 2> /dev/null || true

# A crash after the switch: the next agent restores the host from the journal at its start. Then the host
# disconnects under it: its queues are dropped with events, and the agent goes on.
step agent-crash-restores
b=$(results_subdir agent/crash)
lever_config
if [[ ${#FABRICS_DIGEST_ARGS[@]} -gt 0 ]]; then
  # kill -9 between the lever's disconnect and its connect (the failpoint of test builds): the host is
  # disconnected, the journal holds the in-flight entry with the connect options, digests included.
  echo reconnect_disconnected > "$b/kill-point.txt"
  export NVME_ADAPT_FAILPOINT=reconnect_disconnected
  agent_start fabrics "$b"
  unset NVME_ADAPT_FAILPOINT
  ctl --json policy set --controller "$fabrics_ctrl" --mode poll > "$b/set-policy.txt" 2>&1 || true
  wait_until 60 "nvme-adaptd to die between the disconnect and the connect" _agent_exited
  status=0
  wait "$agent_pid" || status=$?
  echo "$status" > "$b/exit-status"
  say "nvme-adaptd killed at reconnect_disconnected: exit status $status"
  agent_pid=""
else
  echo after_switch > "$b/kill-point.txt"
  agent_start fabrics "$b"
  fabrics_switch poll "$b/poll"
  agent_stop "$b" KILL
fi
cp "$AGENT_DIR/state/journal.json" "$b/journal-after-kill.json" 2> /dev/null || echo '{}' > "$b/journal-after-kill.json"
cp "$AGENT_DIR/state/journal.log" "$b/journal-after-kill.log" 2> /dev/null || true
fabrics_host_state "$b/host-after-kill.txt"
rm -f "$AGENT_DIR/state/policy.json"
agent_start fabrics "$b/next"
wait_until 60 "the host reconnected without poll queues" _host_polls 0
fabrics_refresh
fabrics_host_state "$b/next/host-restored.txt"
# Switched again (journaled), then the host disconnects under the agent: its queues are dropped with events,
# and at SIGTERM the journal drops the entry (nothing connected over it to restore) and ends empty.
step agent-host-vanishes
fabrics_switch poll "$b/next/poll"
agent_watch "$b/next/watch.json"
host_ctrl=$fabrics_ctrl
wait_until 30 "the agent to list $host_ctrl" _agent_lists "$host_ctrl" "$b/next/queues-before-disconnect.json"
fabrics_disconnect lever
wait_until 30 "the agent to drop $host_ctrl" _agent_lists_no "$host_ctrl" "$b/next/queues-after-disconnect.json"
ctl --json status > "$b/next/status-after-disconnect.json"
agent_stop "$b/next" TERM
cp "$AGENT_DIR/state/journal.json" "$b/next/journal-after-stop.json" 2> /dev/null || echo '{}' > "$b/next/journal-after-stop.json"
cp "$AGENT_DIR/state/journal.log" "$b/next/journal-after-stop.log" 2> /dev/null || true

# The target goes instead: a host that gives up in seconds (--ctrl-loss-tmo) is switched (journaled, the
# reconnect keeps its timeouts), then with fio on it the subsystem is removed from the target. nvmet drops the
# controllers of that subsystem with their queues; the host retries, gives up and removes its controller: the
# agent drops its queues with events, nvme0 is no longer exported (layer local, its queues kept), the agent
# answers, and at SIGTERM the journal drops the entry of the vanished host and ends empty.
step agent-target-vanishes
t=$(results_subdir agent/target-gone)
fabrics_digests_end
fabrics_connect target-gone "$(results_subdir fabrics/target-gone)" --ctrl-loss-tmo=3 --reconnect-delay=1 \
  "${FABRICS_DIGEST_ARGS[@]}"
lever_config
# The target's queues leave the list 5 s after their last completion (60 s by default).
agent_start fabrics "$t" --target-idle 5
fabrics_switch poll "$t/poll"
# From after the switch: its reconnect drops and re-adds the host's queues too.
agent_watch "$t/watch.json"
cat "/sys/class/nvme/$fabrics_ctrl/ctrl_loss_tmo" "/sys/class/nvme/$fabrics_ctrl/reconnect_delay" > "$t/poll/host-timeouts.txt"
cp "$AGENT_DIR/state/journal.json" "$t/journal-before.json" 2> /dev/null || echo '{}' > "$t/journal-before.json"
cp "$AGENT_DIR/state/journal.log" "$t/journal-before.log" 2> /dev/null || true
host_ctrl=$fabrics_ctrl
wait_until 30 "the agent to list nvme0 as backing" _agent_layer_is nvme0 backing "$t/queues-before.json"
wait_until 30 "the agent to list the target's queues" _agent_lists_layer target "$t/queues-before.json"
# fio fails once the disk goes: its status is recorded, not asserted.
timeout 60 fio --filename="/dev/$fabrics_disk" --direct=1 --size=64M --iodepth=32 --numjobs=1 --name=target-gone \
  --rw=randread --bs=4k --ioengine=libaio --time_based --runtime=30 --eta=never --output-format=json \
  --output="$t/fio.json" > /dev/null 2>&1 &
fio_pid=$!
sleep 2
echo "$(uptime_s) removing $FABRICS_NQN" > "$t/removal.txt"
fabrics_subsystem_remove
wait_until 30 "the host to give up on $host_ctrl" _controller_gone "$host_ctrl"
echo "$(uptime_s) $host_ctrl gone" >> "$t/removal.txt"
wait_until 30 "the agent to drop $host_ctrl" _agent_lists_no "$host_ctrl" "$t/queues-after.json"
wait_until 30 "the agent to list nvme0 as local" _agent_layer_is nvme0 local "$t/queues-after.json"
echo "$(uptime_s) the agent dropped $host_ctrl" >> "$t/removal.txt"
wait_until 30 "the agent to drop the target's queues" _agent_lists_no_layer target "$t/queues-after.json"
echo "$(uptime_s) the agent dropped the target's queues" >> "$t/removal.txt"
ctl --json status > "$t/status-after.json"
fio_status=0
wait "$fio_pid" || fio_status=$?
echo "$fio_status" > "$t/fio.status"
say "target gone: $(tr '\n' ';' < "$t/removal.txt") fio status $fio_status"
agent_stop "$t" TERM
cp "$AGENT_DIR/state/journal.json" "$t/journal-after-stop.json" 2> /dev/null || echo '{}' > "$t/journal-after-stop.json"
cp "$AGENT_DIR/state/journal.log" "$t/journal-after-stop.log" 2> /dev/null || true

step finish
fabrics_target_teardown
dmesg > "$NVA_RESULTS_DIR/dmesg.txt"
