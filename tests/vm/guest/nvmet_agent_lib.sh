# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2154  # fabrics_ctrl, fabrics_disk: set by fabrics_lib.sh
# The agent's steps of the nvmet polling-queue task's guest script (tests/vm/guest/nvmet_poll.sh): nvme-adaptd
# from the build tree drives the target's controller through its lever (nvmet_poll_task: pqt_enable of the
# bed's namespace), the collector sees the task's reaps of the backing disk as poll, the lever switches under
# a verifying fio, and SIGTERM or kill -9 and a restart put pqt_enable back as found. Source after lib.sh,
# agent_lib.sh, fabrics_lib.sh and nvmet_poll_lib.sh.

# The engine under fio --verify: the patch's rules with short windows and one-window polling runs, so that it
# switches every few dozen completions (the kmod test's agent policy).
readonly PQT_AGENT_POLICY=(--mode adaptive --profile patch --window-completions 16 --poll-threshold 5ms
  --pace-slack 50ms --max-poll-windows 1 --backoff-windows 1)
readonly PQT_MIN_SWITCHES=${NVA_NVMET_AGENT_SWITCHES:-200}
pqt_agent_target=""  # nvmet:cN: the target's controller of the host's connection (the host's cntlid)

pqt_enable_is() { [[ $(cat "$PQT_NS/pqt_enable") == "$1" ]]; }

# pqt_agent_start NAME DIR: nvme-adaptd with the default levers (AUTO) and its metrics on 127.0.0.1:9464; a few
# reads make the target's I/O queue complete, and so listed. DIR/queues-listed.json: its first list with it.
pqt_agent_start() {
  agent_config "$1" ""
  agent_start "$1" "$2" --metrics-listen 127.0.0.1:9464
  pqt_agent_target=nvmet:c$(cat "/sys/class/nvme/$fabrics_ctrl/cntlid")
  dd if="/dev/$fabrics_disk" of=/dev/null bs=4k count=64 iflag=direct 2> /dev/null
  wait_until 30 "the agent to list $pqt_agent_target q1" _agent_lists_queue "$pqt_agent_target" 1 "$2/queues-listed.json"
}

# pqt_agent_metrics OUT: the agent's Prometheus text.
pqt_agent_metrics() {
  python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
    http://127.0.0.1:9464/metrics > "$1"
}

# _pqt_agent_mode_is MODE: the agent lists the target's I/O queue in MODE (poll, interrupt).
_pqt_agent_mode_is() {
  ctl --json queues | tr -d ' ' | grep -q "\"id\":{\"controller\":\"$pqt_agent_target\",\"queue\":1},[^}]*\"mode\":\"REAP_MODE_${1^^}\""
}

# pqt_agent_hold MODE DIR: an override holds the target's I/O queue in MODE (none: clears it) until pqt_enable
# reads what the lever makes of it and, for poll and interrupt, the agent lists the queue in it (the next
# override is then a switch, not a change of mind before the first was made).
pqt_agent_hold() {
  local want=0
  [[ $1 == poll ]] && want=1
  ctl override "$pqt_agent_target:q1" "$1" >> "$2/override.txt"
  wait_until 20 "pqt_enable $want after override $1" pqt_enable_is "$want"
  [[ $1 == none ]] || wait_until 20 "the agent to list the target's queue in $1" _pqt_agent_mode_is "$1"
}

# _pqt_agent_switches FILE: the mode switches the agent made of the target controller's queues (a queue list).
_pqt_agent_switches() {
  python3 -c 'import json, sys
print(sum(int(q.get("modeSwitches", "0")) for q in json.load(open(sys.argv[1])).get("queues", [])
          if q["id"]["controller"] == sys.argv[2]))' "$1" "$pqt_agent_target"
}

# pqt_agent_route DIR: the agent holds the target polling while fio reads 4 KiB at random; the agent's queue
# list around it (idle before: one read), its metrics after (nothing reached the backing poll queue before:
# its counts are the run's), and the backing controller's completions per qid (tracefs hist): the task's
# reaps of the backing disk are the agent's poll completions of its poll queue.
pqt_agent_route() {
  local dir=$1
  pqt_agent_hold poll "$dir"
  pqt_snapshot "$dir/pqt.before"
  ctl --json queues > "$dir/queues-before.json"
  hist_start nvme/nvme_complete_rq "$PQT_HIST_KEYS"
  pqt_fio "$dir" --rw=randread --bs=4k --runtime="${NVA_NVMET_ROUTE_SECONDS:-2}"
  hist_stop nvme/nvme_complete_rq "$PQT_HIST_KEYS" "$dir/hist-nvme.txt"
  pqt_snapshot "$dir/pqt.after"
  fabrics_settled_queues "$dir/queues-after.json"
  pqt_agent_metrics "$dir/metrics-after.txt"
  pqt_agent_hold none "$dir"
  say "agent route: fio status $(cat "$dir/fio.status"), $(head -1 "$dir/pqt.after")"
}

# pqt_agent_switching DIR: the target controller adaptive with PQT_AGENT_POLICY under verifying randrw runs
# until the agent has switched it PQT_MIN_SWITCHES times (6 runs at most: the first 20 s, enough at TCG's pace
# on this bed, 13 to 22 switches a second on an idle host and 8 at load 11, since each fio start costs seconds;
# then 8 s ones while short); then off, which puts it back in interrupt. DIR/run-N/ per fio run, the queue
# lists, status and dmesg around it all.
pqt_agent_switching() {
  local dir=$1 run switches=0 logged
  logged=$(dmesg | wc -l)
  pqt_snapshot "$dir/pqt.before"
  ctl --json queues > "$dir/queues-before.json"
  hist_start nvme/nvme_complete_rq "$PQT_HIST_KEYS"
  ctl --json policy set --controller "$pqt_agent_target" "${PQT_AGENT_POLICY[@]}" > "$dir/policy.json"
  for ((run = 0; run < 6; run++)); do
    mkdir -p "$dir/run-$run"
    pqt_fio "$dir/run-$run" --rw=randrw --bs=4k --size=16M --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
      --runtime="$((run ? 8 : ${NVA_NVMET_AGENT_SECONDS:-20}))"
    ctl --json queues > "$dir/queues-after.json"
    switches=$(_pqt_agent_switches "$dir/queues-after.json")
    say "agent switching run $run: fio status $(cat "$dir/run-$run/fio.status"), $switches switches so far"
    ((switches < PQT_MIN_SWITCHES)) || break
  done
  ctl --json status > "$dir/status.json"
  ctl --json policy set --controller "$pqt_agent_target" --mode off > "$dir/policy-off.json"
  wait_until 20 "pqt_enable 0 once the target's policy is off" pqt_enable_is 0
  hist_stop nvme/nvme_complete_rq "$PQT_HIST_KEYS" "$dir/hist-nvme.txt"
  pqt_snapshot "$dir/pqt.after"
  dmesg | tail -n "+$((logged + 1))" > "$dir/dmesg-during.txt"
}

# pqt_agent_checks DIR: the agent's steps, each in a folder of DIR. Two agents, to keep the step short: the first
# decides, then is killed -9 while it holds the target polling (found 0); the second restores 0 from the
# journal at its start, then holds the target in interrupt, found 1 this time (so that "as found" is not the
# module's default), and SIGTERM puts 1 back.
pqt_agent_checks() {
  local dir=$1 a k r
  a=$dir/agent
  k=$dir/agent-kill
  r=$dir/agent-restart
  mkdir -p "$a/route" "$a/switching" "$k" "$r"
  cat "$PQT_NS/pqt_enable" > "$a/pqt-found.txt"
  pqt_agent_start nvmet "$a"
  ctl --json report > "$a/report.json"
  pqt_agent_route "$a/route"
  pqt_agent_switching "$a/switching"

  # kill -9 leaves the namespace as the agent put it; the next start restores it from the journal first.
  cp "$a/pqt-found.txt" "$k/pqt-found.txt"
  pqt_agent_hold poll "$k"
  agent_stop "$k" KILL
  cat "$PQT_NS/pqt_enable" > "$k/pqt-after-kill.txt"
  cp "$AGENT_DIR/state/journal.log" "$k/journal.log" 2> /dev/null || true
  pqt_agent_start restart "$r"
  cat "$PQT_NS/pqt_enable" > "$r/pqt-after-restart.txt"

  # SIGTERM puts the namespace back as found: 1, set behind the agent's back, which lists the queue in
  # interrupt whatever pqt_enable says (docs/fabrics.md); poll records 1 as found, interrupt writes 0.
  echo 1 > "$PQT_NS/pqt_enable"
  cat "$PQT_NS/pqt_enable" > "$r/pqt-found.txt"
  pqt_agent_hold poll "$r"
  pqt_agent_hold interrupt "$r"
  cat "$PQT_NS/pqt_enable" > "$r/pqt-held.txt"
  cp "$AGENT_DIR/state/journal.log" "$r/journal.log" 2> /dev/null || true
  agent_stop "$r" TERM
  cat "$PQT_NS/pqt_enable" > "$r/pqt-after-term.txt"
  echo 0 > "$PQT_NS/pqt_enable"
  say "agent restore: found $(cat "$k/pqt-found.txt"), after kill -9 $(cat "$k/pqt-after-kill.txt"), after the" \
    "restart $(cat "$r/pqt-after-restart.txt"); found $(cat "$r/pqt-found.txt"), held $(cat "$r/pqt-held.txt")," \
    "after SIGTERM $(cat "$r/pqt-after-term.txt")"
}
