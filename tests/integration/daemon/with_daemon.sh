#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a command against a live nvme-adaptd (adaptive mode) that manages a running uvnvme-load (QD16, one
# queue), then stops both and checks that the daemon exits 0 and that no completion was lost.
#   with_daemon.sh --daemon PATH --ctl PATH --uvnvme-load PATH [--expect-decisions] -- COMMAND...
# COMMAND sees NVA_ADDR (the API socket), NVA_DAEMON_PID, NVA_CONTROLLER and NVA_QUEUE (uvnvme:PID:0:q1).
set -euo pipefail
daemon="" ctl="" load="" expect_decisions=0
while (($#)); do
  case $1 in
    --daemon) daemon=$2; shift 2 ;;
    --ctl) ctl=$2; shift 2 ;;
    --uvnvme-load) load=$2; shift 2 ;;
    --expect-decisions) expect_decisions=1; shift ;;
    --) shift; break ;;
    *) echo "with_daemon: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "with_daemon: needs root (BPF, USDT)" >&2; exit 1; }
work=$(mktemp -d /tmp/nvme-adapt-with-daemon-XXXXXX)
daemon_pid="" load_pid="" watch_pid=""
cleanup() {
  for pid in $watch_pid $load_pid $daemon_pid; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "{\"api\": {\"unixSocket\": \"$work/agent.sock\", \"unixSocketGroup\": \"root\"}}" > "$work/config.json"
"$daemon" --config "$work/config.json" --state-dir "$work/state" --runtime-dir "$work" --sources uvnvme \
  --default-mode adaptive --metrics-listen off 2> "$work/daemon.log" &
daemon_pid=$!
"$load" --runtime-dir "$work" --mode external --controller-rt --qd 16 --runtime 600s --json > "$work/load.json" &
load_pid=$!
export NVA_ADDR=$work/agent.sock NVA_DAEMON_PID=$daemon_pid NVA_CONTROLLER=uvnvme:$load_pid:0
export NVA_QUEUE=$NVA_CONTROLLER:q1
for _ in $(seq 200); do
  "$ctl" --addr "$NVA_ADDR" queues --controller "$NVA_CONTROLLER" > /dev/null 2>&1 && break
  sleep 0.1
done
"$ctl" --addr "$NVA_ADDR" queues --controller "$NVA_CONTROLLER" > /dev/null ||
  { echo "with_daemon: the daemon never found $NVA_CONTROLLER:" >&2; cat "$work/daemon.log" >&2; exit 1; }
"$ctl" --addr "$NVA_ADDR" --json watch --kind decision > "$work/decisions.json" 2> /dev/null &
watch_pid=$!
rc=0
"$@" || rc=$?
kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
watch_pid=""
decisions=$(grep -c . "$work/decisions.json" || true)
echo "with_daemon: $decisions decision events reached a separate watcher during the command"
kill -TERM "$load_pid"
wait "$load_pid" || { echo "with_daemon: uvnvme-load failed" >&2; rc=1; }
load_pid=""
python3 - "$work/load.json" <<'PY' || rc=1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["submitted"] == r["completed"], f"lost completions: {r['submitted']} submitted, {r['completed']} completed"
print(f"with_daemon: uvnvme-load completed all {r['completed']} commands ({r['iops']:.0f} IOPS), {r['mode_switches']} switches")
PY
kill -TERM "$daemon_pid"
if ! wait "$daemon_pid"; then echo "with_daemon: the daemon did not exit cleanly:" >&2; tail -20 "$work/daemon.log" >&2; rc=1; fi
daemon_pid=""
if ((expect_decisions)) && ((decisions == 0)); then
  echo "with_daemon: no decision reached the watcher: decisions stopped flowing" >&2
  rc=1
fi
exit $rc
