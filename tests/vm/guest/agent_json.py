#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lines for bash from nvme-adaptctl's --json output, so that the guest script can wait on the agent's state.

  agent_json.py queues FILE        one line per queue: NAME MODE eligible|ineligible COMPLETIONS
  agent_json.py lever-errors FILE  the number of lever errors in a GetStatus answer
"""

import json
import sys


def queues(answer):
    for q in answer.get("queues", []):
        name = f"{q['id']['controller']}:q{q['id'].get('queue', 0)}"
        mode = q.get("mode", "REAP_MODE_UNSPECIFIED").removeprefix("REAP_MODE_").lower()
        print(name, mode, "eligible" if q.get("eligible") else "ineligible", q.get("completions", "0"))


def lever_errors(answer):
    print(sum(int(lever.get("errors", "0")) for lever in answer.get("levers", [])))


def main(argv):
    if len(argv) != 3 or argv[1] not in ("queues", "lever-errors"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[2]) as f:
        answer = json.load(f)
    (queues if argv[1] == "queues" else lever_errors)(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
