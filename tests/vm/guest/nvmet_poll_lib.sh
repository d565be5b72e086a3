# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2154  # fabrics_ctrl, fabrics_disk, fabrics_path_disk: set by fabrics_lib.sh
# Helpers for the nvmet polling-queue task's guest script (tests/vm/guest/nvmet_poll.sh): our nvmet's pqt files
# (kmod/nvmet/README.md) read and set, the routing runs, the toggling run and the seed's comparison. Source after
# lib.sh and fabrics_lib.sh.

readonly PQT_SYS=/sys/module/nvmet/pqt
readonly PQT_PARAMS=/sys/module/nvmet/parameters
PQT_NS=""  # namespaces/1 of the bed's subsystem, set by pqt_target
readonly PQT_HIST_KEYS=ctrl_id,qid

pqt_target() { PQT_NS=$NVMET_CFG/subsystems/$FABRICS_NQN/namespaces/1; }

# pqt_try [-q] FILE VALUE: writes VALUE to FILE; sets pqt_result to "ok" or "error: <the shell's message>" and
# prints it unless -q. No fork: the switching loop calls it hundreds of times.
pqt_result=""
pqt_try() {
  local quiet=0 err=""
  [[ $1 == -q ]] && { quiet=1; shift; }
  if { echo "$2" > "$1"; } 2> /tmp/pqt-try.err; then
    pqt_result=ok
  else
    read -r err < /tmp/pqt-try.err || true
    pqt_result="error: ${err##*: }"
  fi
  ((quiet)) || echo "$pqt_result"
}

# pqt_connect DIR: the kernel's NVMe/TCP host connects to the bed's target with one I/O queue (the seed's one
# queue pair) and no poll queue; DIR/connect.txt, controller.txt (nvmeN disk path-disk), host.txt.
pqt_connect() {
  local dir=$1
  nvme connect -t tcp -a "$FABRICS_ADDR" -s "$FABRICS_PORT" -n "$FABRICS_NQN" -q "$FABRICS_HOSTNQN" \
    -I "$FABRICS_HOSTID" --nr-io-queues=1 > "$dir/connect.txt" 2>&1 || {
    say "nvme connect failed: $(cat "$dir/connect.txt")"
    return 1
  }
  fabrics_refresh
  echo "$fabrics_ctrl $fabrics_disk $fabrics_path_disk" > "$dir/controller.txt"
  fabrics_host_state "$dir/host.txt"
}

# pqt_snapshot OUT: the namespace's and the task's counters, one line each.
pqt_snapshot() {
  {
    echo "ns $(cat "$PQT_NS/pqt_enable") $(cat "$PQT_NS/pqt_stats")"
    echo "task $(cat "$PQT_SYS/state") $(cat "$PQT_SYS/stats")"
  } > "$1"
}

# pqt_fio DIR FIO_ARGS...: fio on the fabrics disk (libaio QD32, one job, 64 MiB) to DIR/fio.json; DIR/fio.status.
pqt_fio() {
  local dir=$1 status=0
  shift
  fio --filename="/dev/$fabrics_disk" --direct=1 --size=64M --ioengine=libaio --iodepth=32 --numjobs=1 \
    --group_reporting --name=pqt --time_based --eta=never --output-format=json --output="$dir/fio.json" "$@" ||
    status=$?
  echo "$status" > "$dir/fio.status"
  return 0
}

# pqt_route NAME 0|1: 4 KiB random reads with polled submission off or on, the backing and host completions per
# qid around them (hist keys ctrl_id,qid), the pqt counters before and after, the kernel's nvme lines.
pqt_route() {
  local name=$1 dir logged
  dir=$(results_subdir "route/$name")
  pqt_try "$PQT_NS/pqt_enable" "$2" > "$dir/enable.txt"
  pqt_snapshot "$dir/pqt.before"
  logged=$(dmesg | wc -l)
  hist_start nvme/nvme_complete_rq "$PQT_HIST_KEYS"
  pqt_fio "$dir" --rw=randread --bs=4k --runtime="${NVA_NVMET_ROUTE_SECONDS:-2}"
  hist_stop nvme/nvme_complete_rq "$PQT_HIST_KEYS" "$dir/hist-nvme.txt"
  pqt_snapshot "$dir/pqt.after"
  dmesg | tail -n "+$((logged + 1))" > "$dir/dmesg-during.txt"
  pqt_try "$PQT_NS/pqt_enable" 0 > "$dir/disable.txt"
  say "route $name: pqt $(cat "$dir/enable.txt"), $(head -1 "$dir/pqt.after"); fio status $(cat "$dir/fio.status")"
}

# pqt_alive PID: the background child PID still runs (not gone, not a zombie: bash reaps a child only when it
# forks or waits, and the switching loop does neither).
pqt_alive() {
  local stat=()
  [[ -r /proc/$1/stat ]] && read -r -a stat < "/proc/$1/stat" 2> /dev/null && [[ ${stat[2]} != Z ]]
}

# pqt_nap SECONDS: sleeps without a fork (a fork costs tens of ms under TCG): a read that times out on a FIFO
# this shell holds both ends of.
pqt_nap_fd=""
pqt_nap() {
  if [[ -z $pqt_nap_fd ]]; then
    mkfifo /tmp/pqt-nap
    exec {pqt_nap_fd}<> /tmp/pqt-nap
  fi
  read -r -t "$1" -u "$pqt_nap_fd" _ || true
}

# pqt_toggle DIR: a verifying randrw on the fabrics disk while polled submission goes on and off, as fast as the
# attribute lets it, until fio ends. After every switch-off the namespace must have no polled bio in flight
# (the drain). DIR/toggles.txt: switches, failed writes, drain violations; DIR/toggle-errors.txt.
pqt_toggle() {
  local dir=$1 fio_pid n=0 failed=0 undrained=0 stats logged
  logged=$(dmesg | wc -l)
  pqt_snapshot "$dir/pqt.before"
  hist_start nvme/nvme_complete_rq "$PQT_HIST_KEYS"
  pqt_fio "$dir" --rw=randrw --bs=4k --size=16M --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
    --runtime="${NVA_NVMET_TOGGLE_SECONDS:-15}" &
  fio_pid=$!
  : > "$dir/toggle-errors.txt"
  while pqt_alive "$fio_pid"; do
    for v in 1 0; do
      pqt_try -q "$PQT_NS/pqt_enable" "$v"
      n=$((n + 1))
      if [[ $pqt_result != ok ]]; then
        failed=$((failed + 1))
        echo "switch $n to $v: $pqt_result" >> "$dir/toggle-errors.txt"
      fi
      if [[ $v == 0 ]]; then
        read -r -a stats < "$PQT_NS/pqt_stats"
        if [[ ${stats[5]} != 0 ]]; then
          undrained=$((undrained + 1))
          echo "switch $n: inflight ${stats[5]} after the switch-off returned" >> "$dir/toggle-errors.txt"
        fi
      fi
      pqt_nap "${NVA_NVMET_TOGGLE_NAP:-0.005}"
    done
  done
  wait "$fio_pid" || true
  hist_stop nvme/nvme_complete_rq "$PQT_HIST_KEYS" "$dir/hist-nvme.txt"
  pqt_snapshot "$dir/pqt.after"
  dmesg | tail -n "+$((logged + 1))" > "$dir/dmesg-during.txt"
  echo "switches $n failed $failed undrained $undrained" > "$dir/toggles.txt"
  say "toggle: $(cat "$dir/toggles.txt"); fio status $(cat "$dir/fio.status"); $(head -1 "$dir/pqt.after")"
}

# pqt_compare DIR: the seed's comparison. NVMe/TCP over the loopback, one queue pair, QD32, one job; the target's
# work on one vCPU (NVA_NVMET_TARGET_CPU: the loopback's receive side steered there by RPS, so nvmet-tcp's
# io_work follows it, and the polling-queue task bound there unless NVA_NVMET_PQT_CPU names another), fio on
# another (NVA_NVMET_FIO_CPU). Per
# repetition one fio runs every workload in every arm, one job after the other (stonewall), the arms' order
# rotating from one repetition to the next; each job's exec_prerun and exec_postrun (guest/nvmet_poll_arm.sh)
# put the target in its arm, take it out again and record the pqt counters and the per-CPU ticks around it. The
# agent's arm is a hook: NVA_NVMET_AGENT_ARM names an executable run as `EXE on` before and `EXE off` after each
# of its runs. DIR/runs.jsonl lists the runs; DIR/rep-R.fio.json holds repetition R's jobs.
pqt_compare() {
  local dir=$1 reps=${NVA_NVMET_COMPARE_REPEATS:-3} r w i arm name jobs status
  local target_cpu=${NVA_NVMET_TARGET_CPU:-0} fio_cpu=${NVA_NVMET_FIO_CPU:-1}
  local pqt_cpu=${NVA_NVMET_PQT_CPU:-${NVA_NVMET_TARGET_CPU:-0}}
  local arms=(interrupt polled) workloads=(4k-randread 4k-randwrite 4k-randrw 2m-randread)
  [[ -n ${NVA_NVMET_AGENT_ARM:-} ]] && arms+=(agent)
  printf '%x\n' $((1 << target_cpu)) > /sys/class/net/lo/queues/rx-0/rps_cpus
  echo "$pqt_cpu" > "$PQT_PARAMS/pqt_affinity_core"
  export PQT_NS PQT_SYS PQT_RAMP=${NVA_NVMET_COMPARE_RAMP:-0.5} PQT_SECONDS=${NVA_NVMET_COMPARE_SECONDS:-2}
  {
    echo "rps_cpus $(cat /sys/class/net/lo/queues/rx-0/rps_cpus)"
    echo "pqt_affinity_core $(cat "$PQT_PARAMS/pqt_affinity_core")"
    echo "fio_cpu $fio_cpu"
    echo "arms ${arms[*]}"
    echo "ramp_seconds $PQT_RAMP"
    echo "seconds $PQT_SECONDS"
  } > "$dir/setup.txt"
  for ((r = 0; r < reps; r++)); do
    jobs=$dir/rep-$r.fio
    printf '%s\n' "[global]" "filename=/dev/$fabrics_disk" direct=1 size=64M ioengine=libaio iodepth=32 numjobs=1 \
      time_based "ramp_time=$PQT_RAMP" "runtime=$PQT_SECONDS" "cpus_allowed=$fio_cpu" stonewall > "$jobs"
    for w in "${workloads[@]}"; do
      for ((i = 0; i < ${#arms[@]}; i++)); do
        arm=${arms[$(((i + r) % ${#arms[@]}))]}
        name="$w-$arm-r$r"
        printf '%s\n' "" "[$name]" "rw=${w#*-}" "bs=${w%%-*}" \
          "exec_prerun=bash $NVA_VM_DIR/guest/nvmet_poll_arm.sh $arm on $name $w $r" \
          "exec_postrun=bash $NVA_VM_DIR/guest/nvmet_poll_arm.sh $arm off $name $w $r" >> "$jobs"
      done
    done
    # exec_prerun's output goes to <job>.prerun.txt in the working directory: the results dir.
    status=0
    (cd "$dir" && fio --eta=never --output-format=json --output="rep-$r.fio.json" "rep-$r.fio") || status=$?
    echo "$status" > "$dir/rep-$r.fio.status"
    say "compare: repetition $r done (fio status $status)"
  done
  echo -1 > "$PQT_PARAMS/pqt_affinity_core"
  echo 0 > /sys/class/net/lo/queues/rx-0/rps_cpus
}
