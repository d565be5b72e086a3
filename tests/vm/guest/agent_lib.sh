# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for guest steps that run the project's agent (nvme-adaptd) and CLI (nvme-adaptctl) from the build
# tree. Source after lib.sh. The host root is read-only in the guest: the agent's config, state dir, runtime
# dir and API socket live under /tmp/nva; what the host asserts on is copied under $NVA_RESULTS_DIR.

readonly AGENT_DIR=/tmp/nva
readonly AGENT_SOCKET=$AGENT_DIR/agent.sock
readonly AGENT_JSON=(python3 "$NVA_VM_DIR/guest/agent_json.py")
agent_pid=""
watch_pid=""

ctl() { "$NVA_BUILD_DIR/agent/ctl/nvme-adaptctl" --addr "$AGENT_SOCKET" "$@"; }

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 0.2 s until it succeeds; fails after SECONDS.
wait_until() {
  local deadline
  deadline=$(awk -v u="$(uptime_s)" -v s="$1" 'BEGIN { print u + s }')
  local what=$2
  shift 2
  until "$@"; do
    if awk -v u="$(uptime_s)" -v d="$deadline" 'BEGIN { exit !(u > d) }'; then
      say "timed out waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

# agent_config NAME LEVERS_JSON: /tmp/nva/NAME.json with the API on $AGENT_SOCKET (group root: the guest has
# no nvme-adapt group) and the given levers section ("" for the defaults).
agent_config() {
  mkdir -p "$AGENT_DIR"
  local levers=${2:+, \"levers\": $2}
  echo "{\"api\": {\"unixSocket\": \"$AGENT_SOCKET\", \"unixSocketGroup\": \"root\"}$levers}" > "$AGENT_DIR/$1.json"
}

# agent_start CONFIG_NAME DIR [FLAGS...]: starts nvme-adaptd with the kernel collectors and waits until the
# API answers. DIR gets daemon.log, start-seconds and status.json (the first answer).
agent_start() {
  local config=$1 dir=$2 start
  shift 2
  mkdir -p "$dir" "$AGENT_DIR/state" "$AGENT_DIR/run"
  cp "$AGENT_DIR/$config.json" "$dir/config.json"
  start=$(uptime_s)
  # The test switches one controller back and forth within seconds: the reset spacing (30 s by default,
  # unit-tested in AgentLoop.DisruptiveChanges...) would hold the second switch back.
  "$NVA_BUILD_DIR/agent/daemon/nvme-adaptd" --config "$AGENT_DIR/$config.json" --state-dir "$AGENT_DIR/state" \
    --runtime-dir "$AGENT_DIR/run" --sources kernel --min-disruptive-interval 0 "$@" > "$dir/daemon.log" 2>&1 &
  agent_pid=$!
  wait_until 120 "nvme-adaptd to answer" _agent_answers "$dir/status.json"
  awk -v a="$start" -v b="$(uptime_s)" 'BEGIN { printf "%.2f\n", b - a }' > "$dir/start-seconds"
  say "nvme-adaptd (pid $agent_pid) answered after $(cat "$dir/start-seconds") s: hooks $(tr -d '\n' < "$dir/status.json" |
    grep -o '"hooks":\[[^]]*\]')"
}
_agent_answers() {
  kill -0 "$agent_pid" 2>/dev/null || { say "nvme-adaptd exited: $(tail -3 "$(dirname "$1")/daemon.log")"; return 2; }
  ctl --json status > "$1" 2>/dev/null
}

# agent_stop DIR SIGNAL: stops nvme-adaptd with SIGNAL (TERM: a clean stop; KILL: a crash) and records its exit
# status in DIR/exit-status; the watch stream (if any) ends with it.
agent_stop() {
  local status=0
  kill "-$2" "$agent_pid"
  wait "$agent_pid" || status=$?
  echo "$status" > "$1/exit-status"
  say "nvme-adaptd stopped by SIG$2: exit status $status"
  agent_pid=""
  if [[ -n $watch_pid ]]; then
    sleep 0.5
    kill "$watch_pid" 2>/dev/null || true
    wait "$watch_pid" || true
    watch_pid=""
  fi
}

# agent_watch FILE: streams every event as JSON lines into FILE in the background, from now on.
agent_watch() {
  ctl --json watch > "$1" 2> "$1.err" &
  watch_pid=$!
  sleep 1.5  # the stream is subscribed once the CLI has connected: TCG makes that slow
}

# agent_settled_queues OUT: ListQueues once the agent's counters (refreshed about once a second) stopped moving.
# Two equal reads more than a refresh apart. The reads and their uptimes go to OUT.reads.
agent_settled_queues() {
  local out=$1 previous="" current tries
  for tries in 1 2 3 4 5 6 7 8 9 10; do
    ctl --json queues > "$out"
    # Each queue's own counter is the only quoted (int64) "completions"; its last window's is a plain number.
    current=$(grep -o '"completions":"[0-9]*"' "$out" | tr -dc '0-9\n' | tr '\n' ' ')
    echo "$(uptime_s) $current" >> "$out.reads"
    [[ $current == "$previous" ]] && return 0
    previous=$current
    sleep 1.1
  done
  say "agent counters still moving after $tries reads"
  return 1
}

# kernel_poll_queues: nvme0's blk-mq hardware queues without an interrupt vector (poll queues).
kernel_poll_queues() {
  local h n=0
  for h in /sys/block/"$NVME_NS"/mq/*; do
    grep -qw "nvme0q$((${h##*/} + 1))" /proc/interrupts || n=$((n + 1))
  done
  echo "$n"
}

# switch_controller MODE DIR: `policy set --controller nvme0 --mode MODE` through the CLI, then waits until
# the kernel has the queue split the poll_queues lever makes (poll: the config's levers.pollQueues, 1 by
# default; interrupt: none) and the agent has rediscovered it. DIR gets the CLI's answer, the kernel's layout
# (snapshot_queues), the agent's queues and the uptimes at the call, its answer, the kernel's and the agent's.
switch_controller() {
  local mode=$1 dir=$2 start called kernel_done poll_queues=0
  [[ $mode == poll ]] && poll_queues=1
  mkdir -p "$dir"
  dmesg | grep -c 'default/read/poll queues' > "$dir/splits-before" || true
  start=$(uptime_s)
  ctl --json policy set --controller nvme0 --mode "$mode" > "$dir/set-policy.json"
  called=$(uptime_s)
  wait_until 30 "nvme0 with $poll_queues poll queue(s)" _kernel_split_is "$poll_queues"
  kernel_done=$(uptime_s)
  wait_until 30 "the agent to see nvme0 in $mode with $poll_queues poll queue(s)" _agent_sees "$mode" "$dir/queues.json"
  echo "$start $called $kernel_done $(uptime_s)" > "$dir/uptimes"
  snapshot_queues "$dir"
  say "nvme0 $mode: kernel $(tail -1 "$dir/dmesg-queues.txt" | grep -o '[0-9/]* default/read/poll queues'), agent: $(
    "${AGENT_JSON[@]}" queues "$dir/queues.json" | awk '{ printf "%s %s, ", $1, $2 }')"
}
_kernel_split_is() {
  [[ $(cat /sys/module/nvme/parameters/poll_queues) == "$1" && $(cat "$NVME_CTRL/state") == live &&
     -e /dev/$NVME_NS && $(kernel_poll_queues) == "$1" ]]
}
_agent_sees() {
  local lines hw
  ctl --json queues > "$2" || return 1
  lines=$("${AGENT_JSON[@]}" queues "$2")
  hw=$(find /sys/block/"$NVME_NS"/mq -mindepth 1 -maxdepth 1 | wc -l)
  # Every hardware queue and the admin queue listed, every eligible queue in the mode asked for.
  [[ $(grep -c '^nvme0:' <<< "$lines") == $((hw + 1)) ]] && ! grep ' eligible ' <<< "$lines" | grep -qv " $1 "
}
_agent_reports_lever_error() {
  ctl --json status > "$1" && (($("${AGENT_JSON[@]}" lever-errors "$1") > 0))
}
