#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent's arm of the nvmet polling-queue task's comparison: nvmet_poll_test.py --compare --agent-arm gives
# this script, and guest/nvmet_poll_arm.sh runs it as `nvmet_agent_arm.sh on|off` around each of the arm's runs.
# on: the running agent (guest/nvmet_agent_lib.sh pqt_agent_start, started by nvmet_poll.sh for the comparison)
# decides on the target's controller NVA_NVMET_TARGET_CTRL (nvmet:cN) in adaptive mode; off: its policy is off
# again, which puts the target back in interrupt, and the script returns once pqt_enable reads 0 (the next
# arm starts from the target as loaded).
set -euo pipefail
ctl=("$NVA_BUILD_DIR/agent/ctl/nvme-adaptctl" --addr /tmp/nva/agent.sock)
# The comparison's policy, replacing the controller's level: the agent deciding by the patch's rules with windows
# and a threshold for TCG's pace (as the kmod comparison's), not the switching step's stress policy (one-window
# runs), which the state dir would otherwise keep for the controller.
readonly COMPARE_POLICY=(--replace --mode adaptive --profile patch --window-completions 256 --poll-threshold 5ms
  --pace-slack 1s --backoff-windows 4)
case $1 in
  on) "${ctl[@]}" policy set --controller "$NVA_NVMET_TARGET_CTRL" "${COMPARE_POLICY[@]}" > /dev/null ;;
  off)
    "${ctl[@]}" policy set --controller "$NVA_NVMET_TARGET_CTRL" --mode off > /dev/null
    for ((tenths = 0; tenths < 100; tenths++)); do
      [[ $(cat "$PQT_NS/pqt_enable") == 0 ]] && exit 0
      sleep 0.1
    done
    echo "nvmet_agent_arm.sh: pqt_enable still $(cat "$PQT_NS/pqt_enable") 10 s after the policy went off" >&2
    exit 1
    ;;
  *)
    echo "usage: nvmet_agent_arm.sh on|off" >&2
    exit 2
    ;;
esac
