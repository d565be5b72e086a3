#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# collect_during.sh OUT [NA-COLLECT ARGS...] -- COMMAND...: runs COMMAND while the build tree's na-collect is
# attached (--until-eof --counters), once na-collect has printed its hooks; na-collect's output goes to OUT,
# its errors to OUT.err. An io_run wrapper (io_wrapper in lib.sh). Fails if na-collect does not attach.
set -euo pipefail
out=$1
shift
args=()
while (($#)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
(($#)) || { echo "collect_during.sh: no -- COMMAND" >&2; exit 2; }
shift
fifo=$(mktemp -u /tmp/collect-during-XXXXXX)
mkfifo "$fifo"
"$NVA_BUILD_DIR/tests/bpf/na-collect" --until-eof --counters "${args[@]}" < "$fifo" > "$out" 2> "$out.err" &
collector=$!
exec 3> "$fifo"  # na-collect runs until this is closed
rm -f "$fifo"
for ((tenths = 0; tenths < 1200; tenths++)); do  # loading under TCG takes seconds
  grep -q '^hook ' "$out" 2> /dev/null && break
  kill -0 "$collector" 2> /dev/null || { echo "collect_during.sh: na-collect exited: $(cat "$out.err")" >&2; exit 1; }
  sleep 0.1
done
grep -q '^hook ' "$out" || { echo "collect_during.sh: na-collect attached no hook in 120 s" >&2; exit 1; }
status=0
"$@" || status=$?
exec 3>&-
wait "$collector" || { echo "collect_during.sh: na-collect failed: $(cat "$out.err")" >&2; exit 1; }
exit "$status"
