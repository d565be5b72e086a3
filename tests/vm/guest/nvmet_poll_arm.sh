#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# One arm of the nvmet polling-queue task's comparison (guest/nvmet_poll_lib.sh pqt_compare), run by fio in the
# compare dir as a job's exec_prerun and exec_postrun:
#   nvmet_poll_arm.sh ARM on|off NAME WORKLOAD REP
# on: puts the target in ARM (interrupt: as it is; polled: pqt_enable 1; agent: the hook `$NVA_NVMET_AGENT_ARM on`),
# records the pqt counters (NAME.before) and starts a reader of the per-CPU ticks over the measured seconds, after
# the ramp (NAME.cpu); off: waits for the reader, records the counters (NAME.after), takes the target out of ARM
# and adds the run to runs.jsonl. PQT_NS, PQT_SYS, PQT_RAMP and PQT_SECONDS come from pqt_compare.
set -euo pipefail
arm=$1 what=$2 name=$3 workload=$4 rep=$5

# snapshot OUT: pqt_snapshot's lines with bash builtins only (a fork costs tens of ms under TCG).
snapshot() {
  local enable stats state task
  read -r enable < "$PQT_NS/pqt_enable"
  read -r stats < "$PQT_NS/pqt_stats"
  read -r state < "$PQT_SYS/state"
  read -r task < "$PQT_SYS/stats"
  printf 'ns %s %s\ntask %s %s\n' "$enable" "$stats" "$state" "$task" > "$1"
}
# shellcheck disable=SC2016  # awk's fields
cpu_lines() { awk '/^cpu[0-9]* / { print $1, $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

case $what in
  on)
    case $arm in
      polled) echo 1 > "$PQT_NS/pqt_enable" ;;
      agent) "$NVA_NVMET_AGENT_ARM" on ;;
    esac
    snapshot "$name.before"
    # Detached from fio's system(): the job starts while the reader sleeps through the ramp.
    (sleep "$PQT_RAMP"; cpu_lines; echo; sleep "$PQT_SECONDS"; cpu_lines; echo; echo "done") > "$name.cpu" 2>&1 < /dev/null &
    ;;
  off)
    for ((tenths = 0; tenths < 100; tenths++)); do
      [[ $(tail -n 1 "$name.cpu") == "done" ]] && break
      sleep 0.1
    done
    snapshot "$name.after"
    case $arm in
      polled) echo 0 > "$PQT_NS/pqt_enable" ;;
      agent) "$NVA_NVMET_AGENT_ARM" off ;;
    esac
    printf '{"run": "%s", "workload": "%s", "arm": "%s", "rep": %s, "fio": "rep-%s.fio.json"}\n' \
      "$name" "$workload" "$arm" "$rep" "$rep" >> runs.jsonl
    ;;
esac
