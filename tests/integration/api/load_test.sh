#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The API under load: 100 WatchEvents streams (20 never read) and 20 clients calling SetPolicy and
# ListQueues for 30 s while the agent publishes events at a steady rate. Prints the figures; fails on
# a failed call, a reading stream starved of events, server RSS over the bound, or (fake agent) a
# publisher slowed down by the streams.
#
#   load_test.sh --driver PATH --fake-agent PATH [--duration 30s] [--json-out FILE]
#   load_test.sh --driver PATH --addr ADDRESS --server-pid PID [...]     e.g. nvme-adaptd with uvnvme
#
# Bounds (override with the flags): server RSS <= 256 MiB; with the fake agent, publishing at 200
# events/s, each Publish p99 <= 5 ms and no tick more than 5 % late in total.
set -euo pipefail

driver="" fake="" addr="" server_pid="" duration="30s" json_out="" rss_limit=256 rate=100 p99_limit_us=5000 client_interval=100ms
while (($#)); do
  case $1 in
    --driver) driver=$2; shift 2 ;;
    --fake-agent) fake=$2; shift 2 ;;
    --addr) addr=$2; shift 2 ;;
    --server-pid) server_pid=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --json-out) json_out=$2; shift 2 ;;
    --rss-limit-mib) rss_limit=$2; shift 2 ;;
    --publish-rate) rate=$2; shift 2 ;;
    --publish-p99-limit-us) p99_limit_us=$2; shift 2 ;;
    --client-interval) client_interval=$2; shift 2 ;;
    *) echo "load_test: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$driver" ]] || { echo "load_test: --driver must name nvme-adapt-api-load" >&2; exit 2; }

work=$(mktemp -d /tmp/nvme-adapt-load-XXXXXX)
fake_pid=""
cleanup() {
  [[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

driver_args=()
if [[ -z "$addr" ]]; then
  [[ -x "$fake" ]] || { echo "load_test: give --fake-agent PATH or --addr ADDRESS --server-pid PID" >&2; exit 2; }
  addr="$work/agent.sock"
  echo '{"api": {"maxWatchStreams": 128, "watchQueueEvents": 1024}}' >"$work/config.json"
  "$fake" --config "$work/config.json" --unix "$addr" --group daemon --publish-rate "$rate" \
    --stats-file "$work/publisher.json" --max-publish-p99-us "$p99_limit_us" >"$work/agent.log" 2>&1 &
  fake_pid=$!
  server_pid=$fake_pid
  for _ in $(seq 100); do [[ -S "$addr" ]] && break; sleep 0.1; done
  [[ -S "$addr" ]] || { echo "load_test: the fake agent did not start:" >&2; cat "$work/agent.log" >&2; exit 1; }
  driver_args+=(--check-stalled-missed)
fi
[[ -n "$server_pid" ]] || { echo "load_test: --server-pid is needed with --addr (to watch its RSS)" >&2; exit 2; }

rc=0
"$driver" --addr "$addr" --duration "$duration" --streams 100 --stalled 20 --clients 20 \
  --client-interval "$client_interval" --server-pid "$server_pid" --rss-limit-mib "$rss_limit" --json-out "$work/load.json" "${driver_args[@]}" || rc=1

if [[ -n "$fake_pid" ]]; then
  kill -TERM "$fake_pid"
  wait "$fake_pid" || rc=1
  fake_pid=""
  grep -E "publisher|shutdown took|FAIL" "$work/agent.log" || true
fi

if [[ -n "$json_out" ]]; then
  python3 - "$work/load.json" "$work/publisher.json" "$json_out" <<'PY'
import json, os, sys
load = json.load(open(sys.argv[1]))
if os.path.exists(sys.argv[2]):
    for key, value in json.load(open(sys.argv[2])).items():
        load["summary"]["publisher_" + key] = value
json.dump(load, open(sys.argv[3], "w"), indent=1)
PY
fi
((rc == 0)) && echo "load_test: passed" || echo "load_test: FAILED" >&2
exit $rc
