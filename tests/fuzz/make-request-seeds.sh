#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the request fuzzer's seed corpus (tests/fuzz/corpus/requests/): one byte naming the target (as
# fuzz_requests.cc reads it) and the input, requests encoded from text format with protoc. Run it again
# after a change to agent.proto; the files are checked in.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/tests/fuzz/corpus/requests"
mkdir -p "$out"

seed() {  # seed NAME SELECTOR MESSAGE TEXT
  { printf "\\x$(printf %02x "$2")"; printf '%s' "$4" | protoc --proto_path="$root/proto" \
      --encode="nvmeadapt.v1.$3" nvmeadapt/v1/agent.proto; } >"$out/$1"
}
raw() {  # raw NAME SELECTOR TEXT (printf %b escapes: \x00 separates command-line words)
  { printf "\\x$(printf %02x "$2")"; printf '%b' "$3"; } >"$out/$1"
}

seed list_filtered 0 ListQueuesRequest 'source: SOURCE_UVNVME controller: "uvnvme:1234:0"'
seed list_bad_source 0 ListQueuesRequest 'source: 9'
seed policy_global 1 SetPolicyRequest 'policy { window_completions: 4096 mode: CONTROLLER_MODE_ADAPTIVE }'
seed policy_queue 1 SetPolicyRequest 'controller: "nvme0" queue: 2 policy { pace_slack_ns: 5000 poll_threshold_ns: 12000 } replace: true'
seed policy_bad 1 SetPolicyRequest 'queue: 1 policy { timer_granularity_ns: 5 mode: 42 }'
seed override_poll 2 SetQueueModeRequest 'queue { controller: "nvme0" queue: 1 } mode: REAP_MODE_POLL duration_ns: 30000000000'
seed override_clear 2 SetQueueModeRequest 'queue { controller: "uvnvme:1:0" queue: 9 }'
seed override_bad 2 SetQueueModeRequest 'queue { controller: "a b" } mode: 7 duration_ns: -1'
seed watch_kinds 3 WatchEventsRequest 'kinds: EVENT_KIND_DECISION kinds: EVENT_KIND_OVERRIDE source: SOURCE_KERNEL controller: "nvme0" queue: 1'
seed watch_bad 3 WatchEventsRequest 'kinds: 99 kinds: EVENT_KIND_UNSPECIFIED'
raw duration_compound 4 '1h30m15.5s'
raw duration_small 4 '10us'
raw duration_big 4 '106751d23h47m16.854775807s'
raw queue_kernel 5 'nvme0:q1'
raw queue_uvnvme 5 'uvnvme:1234:0:q2'
raw args_policy 6 'policy\x00set\x00--mode=adaptive\x00--queue\x00nvme0:q1\x00--replace'
raw args_watch 6 'watch\x00--kind\x00decision\x00--json\x00--count\x003'
echo "make-request-seeds: wrote $(ls "$out" | wc -l) seeds to $out"
