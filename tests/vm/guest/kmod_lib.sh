# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for the kmod guest script: our nvme-pci module's sysfs files (kmod/README.md) read and set, the agent's
# policy for the run, a background sampler, and the four-arm comparison. Source after lib.sh and agent_lib.sh.

readonly KMOD_QUEUES=$NVME_CTRL/adaptive
sampler_pid=""
readonly CPU_TICKS=(awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6 }' /proc/stat)

# kmod_queues OUT: one line per I/O queue slot: qN mode state stats... | policy (bash builtins: no fork per file).
kmod_queues() {
  local q mode state stats policy
  for q in "$KMOD_QUEUES"/q*; do
    read -r mode < "$q/mode"
    read -r state < "$q/state"
    read -r stats < "$q/stats"
    read -r policy < "$q/policy"
    echo "${q##*/} $mode $state $stats | $policy"
  done > "$1"
}

# kmod_modes OUT: qN MODE of the eligible queues (those whose state is interrupt or poll).
kmod_modes() {
  local q state
  for q in "$KMOD_QUEUES"/q*; do
    state=$(cat "$q/state")
    if [[ $state == interrupt || $state == poll ]]; then echo "${q##*/} $(cat "$q/mode") $state"; fi
  done > "$1"
}

# kmod_none_polled: no eligible queue's mode file says poll.
kmod_none_polled() {
  local q
  for q in "$KMOD_QUEUES"/q*; do [[ $(cat "$q/mode") != poll ]] || return 1; done
}

# kmod_switches BEFORE AFTER: the switches the driver counted between two kmod_queues files.
kmod_switches() {
  awk '{ n = $8 + $9 } FNR == NR { before[$1] = n; next } { total += n - before[$1] } END { print total + 0 }' "$1" "$2"
}

# kmod_all_modes MODE: every eligible queue's mode file says MODE.
kmod_all_modes() {
  local f
  f=$(mktemp)
  kmod_modes "$f"
  ! awk -v m="$1" '$2 != m { found = 1 } END { exit !found }' "$f"
  local status=$?
  rm -f "$f"
  return $status
}

# kmod_agent_policy NAME FIELDS: adds "policy": {FIELDS} to the agent config NAME written by agent_config.
kmod_agent_policy() {
  python3 - "$AGENT_DIR/$1.json" "$2" << 'EOF'
import json, sys
path, fields = sys.argv[1], sys.argv[2]
config = json.load(open(path))
config["policy"] = json.loads("{" + fields + "}")
json.dump(config, open(path, "w"))
EOF
}

# kmod_sample_start OUT / kmod_sample_stop: every 0.25 s, the uptime and each queue's state and stats, and the
# nvme vectors' interrupt counts, until stopped. Bash builtins only: a fork costs tens of ms under TCG.
kmod_sample_start() {
  (
    local q state stats up line words n i
    while :; do
      read -r up _ < /proc/uptime
      echo "t $up"
      for q in "$KMOD_QUEUES"/q*; do
        read -r state < "$q/state"
        read -r stats < "$q/stats"
        echo "${q##*/} $state $stats"
      done
      while read -r line; do
        [[ $line == *nvme0q* ]] || continue
        read -ra words <<< "$line"
        n=0
        for ((i = 1; i < ${#words[@]} - 3; i++)); do n=$((n + words[i])); done
        echo "irq ${words[-1]} $n"
      done < /proc/interrupts
      sleep 0.25
    done
  ) > "$1" 2>&1 &
  sampler_pid=$!
}
kmod_sample_stop() {
  kill "$sampler_pid" 2> /dev/null || true
  wait "$sampler_pid" 2> /dev/null || true
  sampler_pid=""
}

# kmod_arm ARM on|off: puts the device in one arm of the comparison, or takes it out again.
kmod_arm() {
  local q
  case $1:$2 in
    interrupt:*) ;;
    poll:on) for q in "$KMOD_QUEUES"/q*; do [[ $(cat "$q/state") == offline ]] || echo poll > "$q/mode"; done ;;
    poll:off) for q in "$KMOD_QUEUES"/q*; do [[ $(cat "$q/state") == offline ]] || echo auto > "$q/mode"; done ;;
    driver:on) echo 1 > "$NVME_CTRL/adaptive_poll" ;;
    driver:off) echo 0 > "$NVME_CTRL/adaptive_poll" ;;
    agent:on) ctl policy set --mode adaptive > /dev/null ;;
    agent:off)
      # Off puts the agent's queues in its safe mode, interrupt; the other arms want them as loaded.
      ctl policy set --mode off > /dev/null
      wait_until 20 "the agent to leave no queue polling" kmod_none_polled
      for q in "$KMOD_QUEUES"/q*; do [[ $(cat "$q/state") == offline ]] || echo auto > "$q/mode"; done
      ;;
  esac
}

# kmod_compare DIR: 4 KiB random reads at each point (queue depth x jobs) in each arm; each repetition takes the
# arms in another order (rotated), each arm its points in turn. Per run DIR/runs.jsonl gets the fio file, CPU
# ticks over the measured seconds and the queues' counters around it.
kmod_compare() {
  local dir=$1 reps=${NVA_KMOD_COMPARE_REPEATS:-3} seconds=${NVA_KMOD_COMPARE_SECONDS:-2}
  local arms=(interrupt poll driver agent) points=() r p i arm name cpu0 cpu1 cpu_reader
  for p in ${NVA_KMOD_COMPARE_POINTS:-1:1 1:2 32:1 32:2 128:1 128:2}; do points+=("$p"); done
  agent_config compare ""
  kmod_agent_policy compare "$NVA_KMOD_COMPARE_AGENT_POLICY"
  agent_start compare "$dir/agent" --metrics-listen off
  for ((r = 0; r < reps; r++)); do
    for ((i = 0; i < ${#arms[@]}; i++)); do
      arm=${arms[$(((i + r) % ${#arms[@]}))]}
      kmod_arm "$arm" on
      for p in "${points[@]}"; do
        name="qd${p%%:*}-j${p##*:}-$arm-r$r"
        kmod_queues "$dir/$name.before"
        # CPU ticks over the measured seconds, after fio's ramp: a reader beside fio.
        ( sleep 0.5; "${CPU_TICKS[@]}"; sleep "$seconds"; "${CPU_TICKS[@]}" ) > "$dir/$name.cpu" &
        cpu_reader=$!
        fio --filename="/dev/$NVME_NS" --rw=randread --bs=4k --direct=1 --size=64M --ioengine=libaio \
          --iodepth="${p%%:*}" --numjobs="${p##*:}" --group_reporting --name=c --time_based --ramp_time=500ms \
          --runtime="$seconds" --eta=never --output-format=json --output="$dir/$name.fio.json"
        wait "$cpu_reader"
        kmod_queues "$dir/$name.after"
        { read -r cpu0; read -r cpu1; } < "$dir/$name.cpu"
        printf '{"run": "%s", "qd": %s, "jobs": %s, "arm": "%s", "rep": %s, "cpu_before": "%s", "cpu_after": "%s"}\n' \
          "$name" "${p%%:*}" "${p##*:}" "$arm" "$r" "$cpu0" "$cpu1" >> "$dir/runs.jsonl"
      done
      kmod_arm "$arm" off
      say "compare: repetition $r, arm $arm done"
    done
  done
  agent_stop "$dir/agent" TERM
}
