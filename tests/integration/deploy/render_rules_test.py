#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""dashboards/prometheus/render-rules: the rule files of the tree are its render with the placeholder base, the
PrometheusRule of deploy/kubernetes/monitoring is its render (--check); with another base every runbook_url it
emits, in rule files and in the PrometheusRule, starts with that base (and so with http), and names its alert's
section; a base that is no http(s) URL is refused.

usage: render_rules_test.py SOURCE_DIR"""
import pathlib
import subprocess
import sys
import tempfile

import yaml

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def render(src, *args):
    return subprocess.run([str(src / "dashboards/prometheus/render-rules"), *args], capture_output=True, text=True)


def runbooks(groups):
    return {r["alert"]: r["annotations"]["runbook_url"] for g in groups for r in g["rules"] if "alert" in r}


def main():
    src = pathlib.Path(sys.argv[1])
    checked = render(src, "--check")
    check(checked.returncode == 0, f"render-rules --check: {checked.stderr.strip()}")
    base = "https://runbooks.example.org/nvme-adapt/operations.html"
    with tempfile.TemporaryDirectory() as out:
        done = render(src, "--runbook-base", base, "--out-dir", out)
        check(done.returncode == 0, f"render-rules --out-dir: {done.stderr.strip()}")
        groups = [g for path in sorted(pathlib.Path(out).glob("*.yml")) for g in yaml.safe_load(path.read_text())["groups"]]
        promtool = subprocess.run(["promtool", "check", "rules", *map(str, sorted(pathlib.Path(out).glob("*.yml")))],
                                  capture_output=True, text=True)
        check(promtool.returncode == 0, f"promtool check rules on the render: {promtool.stdout}{promtool.stderr}")
    rule = render(src, "--runbook-base", base, "--prometheus-rule")
    check(rule.returncode == 0, f"render-rules --prometheus-rule: {rule.stderr.strip()}")
    manifest = yaml.safe_load(rule.stdout)
    check(manifest["kind"] == "PrometheusRule", f"--prometheus-rule printed a {manifest.get('kind')}")
    for what, urls in (("rule files", runbooks(groups)), ("PrometheusRule", runbooks(manifest["spec"]["groups"]))):
        check(len(urls) >= 14, f"{what}: only {len(urls)} alerts")
        wrong = {a: u for a, u in urls.items() if u != f"{base}#{a.lower()}"}
        check(not wrong, f"{what}: runbook_url not {base}#<alert>: {wrong}")
        check(all(u.startswith("http") for u in urls.values()), f"{what}: a runbook_url without http")
    for bad in ("docs/operations.md", "ftp://x/y", "https://x/y#z"):
        refused = render(src, "--runbook-base", bad, "--prometheus-rule")
        check(refused.returncode == 2 and "http" in refused.stderr, f"base {bad!r} was taken: {refused.stderr}")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    print(f"render-rules: {len(failures)} problems")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
