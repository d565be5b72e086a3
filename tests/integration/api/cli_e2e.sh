#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end test of nvme-adaptctl against a running server: every command, its -h, table, wide, JSON and
# YAML output, and the error paths with their exit codes (1 from the agent, 2 for the command line).
#
#   cli_e2e.sh --ctl PATH --fake-agent PATH      starts nvme-adapt-fake-agent on a private socket
#   cli_e2e.sh --ctl PATH --addr ADDRESS         uses a running agent (e.g. nvme-adaptd with uvnvme)
#
# Against a real agent, name an eligible queue, an ineligible one ("none" when the agent has none) and
# their controller: --queue nvme0:q1 --ineligible-queue nvme0:q3 --controller nvme0 (the fake agent's,
# the defaults)
set -euo pipefail

ctl="" fake="" addr="" queue="nvme0:q1" ineligible="nvme0:q3" controller="nvme0"
while (($#)); do
  case $1 in
    --ctl) ctl=$2; shift 2 ;;
    --fake-agent) fake=$2; shift 2 ;;
    --addr) addr=$2; shift 2 ;;
    --queue) queue=$2; shift 2 ;;
    --ineligible-queue) ineligible=$2; shift 2 ;;
    --controller) controller=$2; shift 2 ;;
    *) echo "cli_e2e: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$ctl" ]] || { echo "cli_e2e: --ctl must name the nvme-adaptctl binary" >&2; exit 2; }
command -v python3 >/dev/null || { echo "cli_e2e: python3 is missing (scripts/install-deps installs it)" >&2; exit 1; }

work=$(mktemp -d /tmp/nvme-adapt-cli-XXXXXX)
fake_pid=""
cleanup() {
  [[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -z "$addr" ]]; then
  [[ -x "$fake" ]] || { echo "cli_e2e: give --fake-agent PATH or --addr ADDRESS" >&2; exit 2; }
  addr="$work/agent.sock"
  "$fake" --unix "$addr" --group daemon >"$work/agent.log" 2>&1 &
  fake_pid=$!
  for _ in $(seq 100); do [[ -S "$addr" ]] && break; sleep 0.1; done
  [[ -S "$addr" ]] || { echo "cli_e2e: the fake agent did not start:" >&2; cat "$work/agent.log" >&2; exit 1; }
fi

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# run EXPECTED_EXIT ARGS...: runs nvme-adaptctl --addr ADDR ARGS, output in $out / $err.
run() {
  local expected=$1; shift
  local rc=0
  "$ctl" --addr "$addr" "$@" >"$work/out" 2>"$work/err" || rc=$?
  out=$(cat "$work/out"); err=$(cat "$work/err")
  if [[ $rc != "$expected" ]]; then
    fail "nvme-adaptctl $* exited $rc, expected $expected; stderr: $err"
  fi
}

# json_check PYTHON_EXPRESSION: evaluates it with `d` bound to the JSON of $out; must be true.
json_check() {
  if ! python3 -c "import json,sys; d=json.loads(sys.stdin.read()); sys.exit(0 if ($1) else 1)" <<<"$out"; then
    fail "JSON check '$1' failed on: $out"
  fi
}

expect_err() { [[ "$err" == "$1" ]] || fail "stderr was '$err', expected '$1'"; }
expect_out_has() { grep -qF -- "$1" <<<"$out" || fail "output lacks '$1': $out"; }

echo "== help, version, usage errors (exit 2)"
run 0 --help; expect_out_has "Usage: nvme-adaptctl"
run 0 -h; expect_out_has "Usage: nvme-adaptctl"; expect_out_has "queues"; expect_out_has "--output"
run 0 queues -h; expect_out_has "Usage: nvme-adaptctl queues"; expect_out_has "--controller"
run 0 policy set -h; expect_out_has "--pace-slack"
run 0 completion zsh; [[ "$out" == "#compdef nvme-adaptctl"* ]] || fail "completion zsh printed '${out:0:80}'"
run 0 completion bash; expect_out_has "complete -F _nvme_adaptctl nvme-adaptctl"
run 0 --version; [[ "$out" =~ ^nvme-adaptctl\ [0-9] ]] || fail "--version printed '$out'"
run 2 bogus; [[ "$err" == "nvme-adaptctl: unknown command 'bogus'"* ]] || fail "bogus: $err"
run 2 queues -o xml
run 2 status --count 3
run 2 override "$queue" fast
run 2 override "${queue%:q*}" poll
run 2 override "$queue" poll --for 5x
run 2 override "$queue" none --for 5m
run 2 policy set
run 2 policy set --window-completions many
run 2 watch --kind everything
"$ctl" --addr 10.0.0.1:1 --insecure-loopback-tcp status >/dev/null 2>"$work/err" && fail "insecure non-loopback accepted"
grep -q "only for loopback addresses" "$work/err" || fail "insecure non-loopback: $(cat "$work/err")"

echo "== status and queues"
run 0 status; expect_out_has "version"
run 0 status --json; json_check "'version' in d and 'queues' in d"
run 0 queues; expect_out_has "QUEUE"; expect_out_has "$queue"
run 0 queues -o wide; expect_out_has "LEVER"; expect_out_has "$queue"
run 0 queues -o yaml
python3 -c "import sys, yaml; d = yaml.safe_load(sys.stdin.read()); sys.exit(0 if d['queues'] and all('id' in q for q in d['queues']) else 1)" <<<"$out" ||
  fail "queues -o yaml is no YAML list of queues: $out"
[[ "$out" == ---* ]] || fail "queues -o yaml does not start a YAML document: $out"
run 0 queues --controller "$controller" --json
json_check "len(d['queues']) > 0 and all(q['id']['controller'] == '$controller' for q in d['queues'])"
run 0 queues --source kernel --json; json_check "all(q['source'] == 'SOURCE_KERNEL' for q in d['queues'])"
run 1 queues --controller nvme9; expect_err "nvme-adaptctl: NOT_FOUND: controller nvme9: no such controller"

echo "== report in every format"
run 0 report; expect_out_has "controller $controller"; expect_out_has "verdict"
run 0 report -o json; json_check "any(c['controller'] == '$controller' and 'verdict' in c for c in d['controllers'])"
run 0 report --json; json_check "any(c['controller'] == '$controller' and 'verdict' in c for c in d['controllers'])"
run 0 report -o yaml
[[ "$out" == ---* ]] || fail "report -o yaml does not start a YAML document: $out"
python3 -c "import sys, yaml; d = yaml.safe_load(sys.stdin.read()); sys.exit(0 if any(c['controller'] == '$controller' for c in d['controllers']) else 1)" <<<"$out" ||
  fail "report -o yaml is no YAML report naming $controller: $out"

echo "== policy explain"
run 0 policy explain "$queue"; expect_out_has "ENTRY"; expect_out_has "pace_slack_ns"
run 0 policy explain "$queue" -o json; json_check "len(d['fields']) > 10 and d['queue']['controller'] == '$controller'"
run 1 policy explain nvme9:q1; expect_err "nvme-adaptctl: NOT_FOUND: queue nvme9:q1: no such queue"
run 2 policy explain nvme0

echo "== watch --json while policy set and override run"
"$ctl" --addr "$addr" watch --json --kind policy --kind override --count 2 >"$work/watch" 2>"$work/watch.err" &
watch_pid=$!
for _ in $(seq 60); do
  kill -0 "$watch_pid" 2>/dev/null || break
  "$ctl" --addr "$addr" policy set --mode adaptive --window-completions 4096 >/dev/null ||
    { fail "policy set during watch"; break; }
  "$ctl" --addr "$addr" override "$queue" poll --for 30s >/dev/null || { fail "override during watch"; break; }
  sleep 0.2
done
if kill -0 "$watch_pid" 2>/dev/null; then
  kill "$watch_pid"
  fail "watch --count 2 did not end"
fi
wait "$watch_pid" || fail "watch exited $?: $(cat "$work/watch.err")"
python3 - "$work/watch" <<'PY' || fail "watch output: $(cat "$work/watch")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
events = [json.loads(line) for line in lines]
assert len(events) == 2, lines
assert {e["kind"] for e in events} == {"EVENT_KIND_POLICY", "EVENT_KIND_OVERRIDE"}, events
assert int(events[1]["sequence"]) > int(events[0]["sequence"]), events
PY

echo "== policy get / set"
run 0 policy get --json
json_check "d['policy']['policy']['mode'] == 'CONTROLLER_MODE_ADAPTIVE' and d['policy']['policy']['windowCompletions'] == 4096"
run 0 policy set --controller "$controller" --queue "${queue##*:q}" --pace-slack 5us --poll-threshold 12us
run 0 policy get; expect_out_has "queue $queue"; expect_out_has "12us"
echo '{"maxFailures": 5}' >"$work/policy.json"
run 0 policy set --file "$work/policy.json" --backoff-windows 8 --json
json_check "d['policy']['policy']['maxFailures'] == 5 and d['policy']['policy']['backoffWindows'] == 8"
echo '{"maxFailures": "lots"}' >"$work/bad.json"
run 2 policy set --file "$work/bad.json"
run 0 policy set --replace --mode off --json
json_check "d['policy']['policy'] == {'mode': 'CONTROLLER_MODE_OFF'}"
run 1 policy set --window-completions 0
expect_err "nvme-adaptctl: INVALID_ARGUMENT: policy.window_completions: must be in [1, 1048575] (got 0)"
run 1 policy set --controller nvme9 --mode adaptive
expect_err "nvme-adaptctl: NOT_FOUND: controller nvme9: no such controller"

echo "== override"
run 0 override "$queue" interrupt --for 5m --json
json_check "d['queue']['override']['mode'] == 'REAP_MODE_INTERRUPT' and int(d['queue']['override']['expiresUnixNs']) > 0"
run 0 override "$queue" none; expect_out_has "$queue"
run 1 override uvnvme:1:0:q9 poll; expect_err "nvme-adaptctl: NOT_FOUND: queue uvnvme:1:0:q9: no such queue"
if [[ "$ineligible" == none ]]; then
  echo "note: this agent has no ineligible queue (--ineligible-queue none): FAILED_PRECONDITION is checked against the fake agent and in the VM test"
else
  run 1 override "$ineligible" poll; [[ "$err" == "nvme-adaptctl: FAILED_PRECONDITION: queue $ineligible: not eligible"* ]] || fail "ineligible: $err"
fi

echo "== pause and resume"
run 0 pause --for 10m; expect_out_has "paused: every queue held in interrupt mode until"
run 0 status; expect_out_has "paused by"
run 0 status --json; json_check "d['pause']['mode'] == 'CONTROLLER_MODE_INTERRUPT' and int(d['pause']['endsUnixNs']) > 0"
run 2 pause --mode poll; [[ "$err" == "nvme-adaptctl: --mode: a pause holds queues in interrupt or off, not 'poll'"* ]] || fail "pause --mode poll: $err"
run 0 resume; expect_out_has "resumed: the policy is in force again"
run 0 status --json; json_check "'pause' not in d"

echo "== an agent that is not there"
"$ctl" --addr "$work/nothing.sock" status >/dev/null 2>"$work/err" && fail "status without an agent succeeded"
[[ $(cat "$work/err") == "nvme-adaptctl: UNAVAILABLE: "* ]] || fail "no agent: $(cat "$work/err")"

if ((failures)); then
  echo "cli_e2e: $failures failures" >&2
  exit 1
fi
echo "cli_e2e: all checks passed"
