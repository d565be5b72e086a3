#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`nvme-adaptd --check-config FILE` as an operator (or a CI job before a rollout) runs it: exit 0 and "FILE: ok"
on every shipped config (deploy/config/*.json, the Kubernetes base's config.json), exit 2 with one line naming the
file and the field on a bad one. Run as root, it runs the checks as nobody too: they need no root, no BPF, no
socket and no state dir.

usage: check_config_binary_test.py SOURCE_DIR DAEMON_BINARY
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def run(daemon, path, as_nobody):
    command = [daemon, "--check-config", str(path)]
    if as_nobody:
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=30)


def main():
    src, daemon = pathlib.Path(sys.argv[1]), sys.argv[2]
    work = pathlib.Path(tempfile.mkdtemp(prefix="check-config-"))
    try:
        work.chmod(0o755)
        shipped = sorted((src / "deploy/config").glob("*.json")) + [src / "deploy/kubernetes/base/config.json"]
        bad = work / "bad.json"
        bad.write_text('{"policy": {"windowCompletions": 8, "mode": "CONTROLLER_MODE_ADAPTIVE"}}')
        readable = [shutil.copy(path, work / f"{i}-{path.name}") for i, path in enumerate(shipped)]
        users = [False, True] if os.geteuid() == 0 and shutil.which("setpriv") else [False]
        for as_nobody in users:
            who = "as nobody" if as_nobody else "as the caller"
            for path in readable:
                result = run(daemon, path, as_nobody)
                check(result.returncode == 0, f"{who}: {path}: exit {result.returncode}: {result.stderr.strip()}")
                check(result.stdout.strip() == f"{path}: ok", f"{who}: {path}: said {result.stdout.strip()!r}")
            result = run(daemon, bad, as_nobody)
            lines = result.stderr.strip().splitlines()
            check(result.returncode == 2, f"{who}: a bad file exits {result.returncode}, not 2: {result.stderr}")
            check(len(lines) == 1 and str(bad) in lines[0] and "policy.window_completions" in lines[0],
                  f"{who}: a bad file is not one line naming it and the field: {result.stderr!r}")
        check(sorted(p.name for p in work.iterdir()) == sorted([bad.name] + [pathlib.Path(p).name for p in readable]),
              f"the check left files behind: {sorted(p.name for p in work.iterdir())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(f"FAIL: {failure}")
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
