# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers of the fabrics test bed (tests/vm/guest/fabrics.sh). Source after lib.sh.
# The target: one nvmet subsystem, namespace 1 on /dev/nvme0n1, one TCP port on 127.0.0.1 (configfs, stock
# drivers/nvme/target). The host: the kernel's nvme_tcp, connected with nvme-cli; the host root is read-only,
# so the host NQN and ID are given on the command line instead of /etc/nvme.

readonly FABRICS_NQN=nqn.2026-12.io.nvme-adapt:fabrics-bed
readonly FABRICS_HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:6e766d65-6164-6170-742d-666162726963
readonly FABRICS_HOSTID=6e766d65-6164-6170-742d-666162726963
readonly FABRICS_ADDR=127.0.0.1
readonly FABRICS_PORT=4420
readonly NVMET_CFG=/sys/kernel/config/nvmet
# Filled by fabrics_connect: the host's controller (nvmeN), its disk (head) and the path disk with blk-mq.
fabrics_ctrl=""
fabrics_disk=""

# The layers' hists: the host's and the backing controller's completions (nvme_complete_rq, one event for
# both, told apart by ctrl_id), the target's submissions and completions per queue.
readonly HOST_KEYS=ctrl_id,qid
readonly TARGET_EVENTS=(nvmet/nvmet_req_init nvmet/nvmet_req_complete)
target_keys=ctrl,qid

# Each event the bed counts keeps, from before the target exists to the VM's end, one trigger that never
# fires (its own hist, empty: the hist files' rows stay the counting trigger's). A tracepoint is registered
# (its static key and static call patched into the kernel's text: int3 breakpoints, IPIs to every vCPU)
# only when its first trigger comes and unregistered when its last goes, so the hists around each fio run
# then add and remove triggers without patching text: four patches for the whole run instead of about a
# hundred. Text patching under multi-threaded TCG is the suspect of the guests' int3 Oopses (tests/vm/README),
# and the 6.1 bed's soft lockup came in a shell whose one kernel-heavy act there was a hist trigger's write.
readonly PINNED_EVENTS=(nvme/nvme_complete_rq block/block_rq_complete nvmet/nvmet_req_init nvmet/nvmet_req_complete)
readonly PIN_TRIGGER="hist:keys=common_pid if common_pid < 0"

fabrics_pin_events() {  # fabrics_pin_events DIR: DIR/pinned-triggers.txt lists each event's triggers after
  local e
  for e in "${PINNED_EVENTS[@]}"; do
    echo "$PIN_TRIGGER" > "$TRACING/events/$e/trigger"
  done
  for e in "${PINNED_EVENTS[@]}"; do
    echo "$e $(grep -v '^#' "$TRACING/events/$e/trigger" | tr '\n' ';')"
  done > "$1/pinned-triggers.txt"
}

fabrics_target_setup() {  # fabrics_target_setup DIR
  local dir=$1 sub port
  fabrics_pin_events "$dir"
  mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
  ip link set lo up
  sub=$NVMET_CFG/subsystems/$FABRICS_NQN
  mkdir "$sub"
  echo 1 > "$sub/attr_allow_any_host"
  mkdir "$sub/namespaces/1"
  echo -n "/dev/$NVME_NS" > "$sub/namespaces/1/device_path"
  echo 1 > "$sub/namespaces/1/enable"
  port=$NVMET_CFG/ports/1
  mkdir "$port"
  echo tcp > "$port/addr_trtype"
  echo ipv4 > "$port/addr_adrfam"
  echo "$FABRICS_ADDR" > "$port/addr_traddr"
  echo "$FABRICS_PORT" > "$port/addr_trsvcid"
  ln -s "$sub" "$port/subsystems/$FABRICS_NQN"
  # The ctrl pointer as a hist key: where the kernel refuses it, per qid only (the host says which).
  if ! echo "hist:keys=$target_keys" > "$TRACING/events/nvmet/nvmet_req_complete/trigger" 2> "$dir/target-keys.err"; then
    target_keys=qid
  else
    echo "!hist:keys=$target_keys" > "$TRACING/events/nvmet/nvmet_req_complete/trigger"
  fi
  echo "$target_keys" > "$dir/target-keys.txt"
  echo "$FABRICS_NQN ns 1 /dev/$NVME_NS tcp $FABRICS_ADDR:$FABRICS_PORT" > "$dir/target.txt"
  grep -H . "$sub"/attr_* "$sub/namespaces/1"/* "$port"/addr_* > "$dir/target-attrs.txt" 2> /dev/null || true
}

# fabrics_subsystem_remove: the subsystem leaves the port (nvmet drops the controllers connected through it:
# their queues go), then its namespace and itself. What an operator tearing a target down does.
fabrics_subsystem_remove() {
  local sub=$NVMET_CFG/subsystems/$FABRICS_NQN
  rm -f "$NVMET_CFG/ports/1/subsystems/$FABRICS_NQN"
  [[ -d $sub ]] || return 0
  echo 0 > "$sub/namespaces/1/enable"
  rmdir "$sub/namespaces/1" "$sub"
}

fabrics_target_teardown() {
  fabrics_subsystem_remove
  rmdir "$NVMET_CFG/ports/1"
}

_tcp_controller() {  # prints the nvmeN whose transport is tcp and whose subsystem is ours
  local c
  for c in /sys/class/nvme/nvme*; do
    [[ $(cat "$c/transport" 2> /dev/null) == tcp && $(cat "$c/subsysnqn" 2> /dev/null) == "$FABRICS_NQN" &&
       $(cat "$c/state" 2> /dev/null) == live ]] && { echo "${c##*/}"; return 0; }
  done
  return 1
}

fabrics_path_disk=""
# fabrics_refresh: sets fabrics_ctrl, fabrics_disk and fabrics_path_disk to the live tcp controller of our
# subsystem (after a connect, or the agent's reconnect: it may come back under another name).
fabrics_refresh() {
  local tenths
  fabrics_ctrl=""
  for ((tenths = 0; tenths < 300; tenths++)); do
    fabrics_ctrl=$(_tcp_controller) && break
    sleep 0.1
  done
  [[ -n $fabrics_ctrl ]] || { say "no live tcp controller of $FABRICS_NQN"; return 1; }
  # Native multipath (Debian's default): the controller holds the path disk nvmeAcBnC, I/O goes to the head
  # nvmeAnC; without it the controller's disk is the one.
  for ((tenths = 0; tenths < 300; tenths++)); do
    fabrics_path_disk=$(find "/sys/class/nvme/$fabrics_ctrl/" -maxdepth 1 -name 'nvme*n*' -printf '%f\n' | head -1)
    fabrics_disk=$(sed -E 's/^nvme([0-9]+)c[0-9]+n([0-9]+)$/nvme\1n\2/' <<< "$fabrics_path_disk")
    [[ -n $fabrics_path_disk && -e /dev/$fabrics_disk ]] && break
    sleep 0.1
  done
  [[ -n $fabrics_path_disk && -e /dev/$fabrics_disk ]] || { say "no fabrics disk on $fabrics_ctrl"; return 1; }
}

# _host_polls 0|1: our live tcp controller runs (1) or does not run (0) poll queues, its disk is there.
_host_polls() {
  local c p
  c=$(_tcp_controller) || return 1
  p=$(find "/sys/class/nvme/$c/" -maxdepth 1 -name 'nvme*n*' -printf '%f\n' | head -1)
  [[ -n $p && $(cat "/sys/class/nvme/$c/$p/queue/io_poll" 2> /dev/null) == "$1" ]]
}

# fabrics_host_state OUT: "CONTROLLER queue_count Q io_poll P hw_queues H" of our tcp controller now.
fabrics_host_state() {
  local c p
  c=$(_tcp_controller) || { echo "none" > "$1"; return 0; }
  p=$(find "/sys/class/nvme/$c/" -maxdepth 1 -name 'nvme*n*' -printf '%f\n' | head -1)
  echo "$c queue_count $(cat "/sys/class/nvme/$c/queue_count") io_poll $(cat "/sys/class/nvme/$c/$p/queue/io_poll" 2> /dev/null || echo -) hw_queues $(find "/sys/class/nvme/$c/$p/mq" -mindepth 1 -maxdepth 1 2> /dev/null | wc -l) cntlid $(cat "/sys/class/nvme/$c/cntlid")" > "$1"
  say "host: $(cat "$1")"
}

# _agent_lists CONTROLLER OUT: the agent's queue list (to OUT) has a queue of CONTROLLER.
_agent_lists() {
  ctl --json queues > "$2" && grep -q "\"controller\":\"$1\"" "$2"
}

# _agent_lists_layout POLLS OUT: the agent lists every queue of $fabrics_ctrl (queue_count), POLLS of them as
# poll queues (OUT: its queue list).
_agent_lists_layout() {
  ctl --json queues > "$2" || return 1
  [[ $(grep -o "\"controller\":\"$fabrics_ctrl\"" "$2" | wc -l) == $(cat "/sys/class/nvme/$fabrics_ctrl/queue_count") &&
     $(grep -o 'nr_poll_queues at connect' "$2" | wc -l) == "$1" ]]
}

# fabrics_switch MODE DIR: `policy set --controller <host> --mode MODE` (the reconnect lever), then waits
# until the host runs (poll) or does not run (interrupt) poll queues and the agent lists it. DIR gets the
# CLI's answer, the host's state and the agent's queues.
fabrics_switch() {
  local mode=$1 dir=$2 polls=0
  [[ $mode == poll ]] && polls=1
  mkdir -p "$dir"
  ctl --json policy set --controller "$fabrics_ctrl" --mode "$mode" > "$dir/set-policy.json"
  wait_until 60 "the host reconnected with io_poll $polls" _host_polls "$polls"
  fabrics_refresh
  wait_until 30 "the agent to list $fabrics_ctrl as the kernel does" _agent_lists_layout "$polls" "$dir/queues.json"
  fabrics_host_state "$dir/host.txt"
  ctl --json status > "$dir/status.json"
}

# fabrics_connect NAME DIR [NVME-CONNECT ARGS...]: connects, waits for the live controller and its disk, and
# records the queue layout: DIR/connect.txt, controller.txt (nvmeN disk path-disk), attrs.txt, mq-cpu-list.txt,
# queue-limits.txt, target-connect-hist.txt (the target's queues: each sends its Connect on its own qid).
fabrics_connect() {
  local name=$1 dir=$2 tenths h path_disk
  shift 2
  echo "hist:keys=qid" > "$TRACING/events/nvmet/nvmet_req_init/trigger"
  nvme connect -t tcp -a "$FABRICS_ADDR" -s "$FABRICS_PORT" -n "$FABRICS_NQN" -q "$FABRICS_HOSTNQN" \
    -I "$FABRICS_HOSTID" "$@" > "$dir/connect.txt" 2>&1 || { say "nvme connect failed: $(cat "$dir/connect.txt")"; return 1; }
  fabrics_refresh || return 1
  path_disk=$fabrics_path_disk
  echo "$fabrics_ctrl $fabrics_disk $path_disk" > "$dir/controller.txt"
  for h in /sys/class/nvme/"$fabrics_ctrl"/*; do
    [[ -f $h ]] && v=$(cat "$h" 2> /dev/null) && echo "${h##*/}: $v"
  done > "$dir/attrs.txt"
  for h in /sys/class/nvme/"$fabrics_ctrl/$path_disk"/mq/*; do
    echo "${h##*/} $(cat "$h/cpu_list")"
  done > "$dir/mq-cpu-list.txt"
  for h in "head /sys/block/$fabrics_disk" "path /sys/class/nvme/$fabrics_ctrl/$path_disk" "backing /sys/block/$NVME_NS"; do
    echo "${h%% *} $(cat "${h#* }/queue/max_sectors_kb")"
  done > "$dir/queue-limits.txt"
  # A hidden path disk (multipath) has no dev attribute: the host then tells it from the backing disk.
  echo "host $(cat "/sys/class/nvme/$fabrics_ctrl/$path_disk/dev" 2> /dev/null || echo -) backing $(cat "/sys/block/$NVME_NS/dev")" > "$dir/devs.txt"
  sleep 0.5
  hist_stop nvmet/nvmet_req_init qid "$dir/target-connect-hist.txt"
  # Every queue once: a few reads from each CPU (blk-mq maps each CPU to one default queue), polled ones too
  # on a connection with poll queues. The target's queues that complete them, with its admin queue (the
  # Connect commands: an I/O queue's own Connect still runs as qid 0, nvmet_sq_setup sets the qid), are
  # the target's queues.
  hist_start nvmet/nvmet_req_complete qid
  for ((cpu = 0; cpu < $(nproc); cpu++)); do
    fio --name=touch --filename="/dev/$fabrics_disk" --direct=1 --rw=read --bs=4k --number_ios=4 --size=1M \
      --cpus_allowed="$cpu" --ioengine=psync --eta=never --output=/dev/null
    if [[ " $* " == *" --nr-poll-queues"* ]]; then
      fio --name=touch-polled --filename="/dev/$fabrics_disk" --direct=1 --rw=read --bs=4k --number_ios=4 \
        --size=1M --cpus_allowed="$cpu" --ioengine=io_uring --hipri=1 --eta=never --output=/dev/null
    fi
  done
  hist_stop nvmet/nvmet_req_complete qid "$dir/target-touch-hist.txt"
  dmesg | grep -E "$fabrics_ctrl" > "$dir/dmesg.txt" || true
  say "$name: $fabrics_ctrl ($fabrics_disk, path $path_disk), queue_count $(cat "/sys/class/nvme/$fabrics_ctrl/queue_count"), hw queues $(wc -l < "$dir/mq-cpu-list.txt")"
}

fabrics_disconnect() {  # fabrics_disconnect NAME
  nvme disconnect -n "$FABRICS_NQN" > "$NVA_RESULTS_DIR/fabrics/$1/disconnect.txt" 2>&1
  say "$1: disconnected: $(cat "$NVA_RESULTS_DIR/fabrics/$1/disconnect.txt")"
  fabrics_ctrl=""
  fabrics_disk=""
}

# fabrics_io CONNECTION NAME FIO_ARGS...: fio (QD32, one job, 2 s) on the fabrics disk while na-collect is
# attached, with the layers' hists around it. io/CONNECTION/NAME/: fio.json, fio.status, hist-nvme.txt
# (ctrl_id,qid), hist-req_init.txt and hist-req_complete.txt (the target), hist-block.txt (block_rq_complete
# per dev_t with the sectors: the bytes each layer's disk completed), na-collect.txt.
fabrics_io() {
  local conn=$1 name=$2 dir status=0 e
  shift 2
  dir=$(results_subdir "io/$conn/$name")
  hist_start nvme/nvme_complete_rq "$HOST_KEYS"
  hist_start block/block_rq_complete "dev:vals=nr_sector"
  for e in "${TARGET_EVENTS[@]}"; do hist_start "$e" "$target_keys"; done
  bash "$NVA_VM_DIR/guest/collect_during.sh" "$dir/na-collect.txt" -- \
    fio --filename="/dev/$fabrics_disk" --direct=1 --size=64M --iodepth=32 --numjobs=1 --name="$name" \
    --time_based --runtime="${NVA_FIO_SECONDS:-2}" --eta=never --output-format=json --output="$dir/fio.json" \
    "$@" || status=$?
  echo "$status" > "$dir/fio.status"
  hist_stop nvme/nvme_complete_rq "$HOST_KEYS" "$dir/hist-nvme.txt"
  hist_stop block/block_rq_complete "dev:vals=nr_sector" "$dir/hist-block.txt"
  for e in "${TARGET_EVENTS[@]}"; do hist_stop "$e" "$target_keys" "$dir/hist-${e#nvmet/nvmet_}.txt"; done
  ((status == 0)) || { say "$conn/$name: fio failed with status $status"; return "$status"; }
  say "$conn/$name: $(grep -c '^{' "$dir/hist-nvme.txt") nvme queues, $(grep -c '^{' "$dir/hist-req_complete.txt") target queues in the hists"
}

# _agent_lists_no CONTROLLER OUT: the agent's queue list (to OUT) has no queue of CONTROLLER.
_agent_lists_no() {
  ctl --json queues > "$2" && ! grep -q "\"controller\":\"$1\"" "$2"
}

# fabrics_settled_queues OUT: ListQueues once the I/O queues' counters stopped moving (agent_settled_queues
# of agent_lib.sh, without the admin queues: a fabrics host's keep-alive commands keep qid 0 moving).
fabrics_settled_queues() {
  local out=$1 previous="" current tries
  for tries in 1 2 3 4 5 6 7 8 9 10; do
    ctl --json queues > "$out"
    current=$("${AGENT_JSON[@]}" queues "$out" | awk '$1 !~ /:q0$/ { printf "%s=%s ", $1, $4 }')
    echo "$(uptime_s) $current" >> "$out.reads"
    [[ $current == "$previous" ]] && return 0
    previous=$current
    sleep 1.1
  done
  say "agent counters still moving after $tries reads"
  return 1
}

# _agent_lists_queue CONTROLLER QID OUT: the agent's queue list (to OUT) has that queue.
_agent_lists_queue() {
  ctl --json queues > "$3" && grep -q "\"controller\":\"$1\",\"queue\":$2}" "$3"
}

# _agent_lists_layer LAYER OUT: the agent's queue list (to OUT) has a queue in LAYER.
_agent_lists_layer() {
  ctl --json queues > "$2" && grep -q "\"layer\":\"$1\"" "$2"
}

# _agent_lists_no_layer LAYER OUT: the agent's queue list (to OUT) has no queue in LAYER.
_agent_lists_no_layer() {
  ctl --json queues > "$2" && ! grep -q "\"layer\":\"$1\"" "$2"
}

# _controller_gone CONTROLLER: sysfs has no such controller any more (the host gave up on it).
_controller_gone() { [[ ! -e /sys/class/nvme/$1 ]]; }

# _agent_layer_is CONTROLLER LAYER OUT: the agent lists CONTROLLER's queues, every one in LAYER (OUT: its list).
_agent_layer_is() {
  ctl --json queues > "$3" && grep -q "\"controller\":\"$1\"" "$3" &&
    python3 -c 'import json, sys; q = [x for x in json.load(open(sys.argv[1]))["queues"] if x["id"]["controller"] == sys.argv[2]]; sys.exit(not q or any(x.get("layer") != sys.argv[3] for x in q))' "$3" "$1" "$2"
}

# The digests of NVMe/TCP connections (one kernel: fabrics_test.py sets NVA_FABRICS_DIGESTS=1). The kernel
# shows them nowhere, so the reconnect lever takes them from nvme-cli's JSON config, here
# $AGENT_DIR/nvme-config.json (the host's /etc is read-only), and the wire tells what each queue negotiated:
# icreq_sniff.py records every ICReq/ICResp on the loopback.
FABRICS_DIGEST_ARGS=()
[[ ${NVA_FABRICS_DIGESTS:-0} == 1 ]] && FABRICS_DIGEST_ARGS=(--hdr-digest --data-digest)
sniff_pid=""
# fabrics_digests_begin DIR: writes nvme-cli's config (our port with both digests) and starts the sniffer
# (DIR/pdus.txt).
fabrics_digests_begin() {
  local dir=$1
  mkdir -p "$dir" "$AGENT_DIR"
  cat > "$AGENT_DIR/nvme-config.json" << JSON
[{"hostnqn": "$FABRICS_HOSTNQN", "hostid": "$FABRICS_HOSTID",
  "subsystems": [{"nqn": "$FABRICS_NQN", "ports": [{"transport": "tcp", "traddr": "$FABRICS_ADDR",
    "trsvcid": "$FABRICS_PORT", "hdr_digest": true, "data_digest": true}]}]}]
JSON
  cp "$AGENT_DIR/nvme-config.json" "$dir/nvme-config.json"
  python3 "$NVA_VM_DIR/guest/icreq_sniff.py" "$FABRICS_PORT" "$dir/pdus.txt" 2> "$dir/sniff.err" &
  sniff_pid=$!
  wait_until 30 "the ICReq sniffer to attach" test -e "$dir/pdus.txt.ready"
}
fabrics_digests_end() {
  [[ -n $sniff_pid ]] || return 0
  kill "$sniff_pid" 2> /dev/null || true
  wait "$sniff_pid" 2> /dev/null || true
  sniff_pid=""
}

# _agent_exited: nvme-adaptd (a child of this shell) is dead: gone, or a zombie not yet reaped.
_agent_exited() {
  [[ ! -e /proc/$agent_pid/stat || $(awk '{ print $3 }' "/proc/$agent_pid/stat" 2> /dev/null) == Z ]]
}
