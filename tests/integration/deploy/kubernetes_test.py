#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Renders the Kubernetes manifests with `kubectl kustomize deploy/kubernetes/overlays/NAME` alone, which must
print no warning, and checks the objects against the rest of the project: the capability set of the systemd
unit, its resource bounds and paths, the daemon's default metrics port, the default config (authoritative in
the ConfigMap), the Prometheus rule files; and that the kustomizations use no deprecated field.

usage: kubernetes_test.py SOURCE_DIR DAEMON_BINARY PROJECT_VERSION
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


DEPRECATED_FIELDS = {"bases", "commonLabels", "patchesStrategicMerge", "patchesJson6902", "vars", "imageTags"}


def render(src, overlay):
    result = subprocess.run(["kubectl", "kustomize", str(src / "deploy/kubernetes/overlays" / overlay)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: kubectl kustomize overlays/{overlay}: {result.stderr.strip()}")
    check(result.stderr.strip() == "", f"kubectl kustomize overlays/{overlay} warns: {result.stderr.strip()}")
    objects = {}
    for document in yaml.safe_load_all(result.stdout):
        objects[document["kind"]] = document  # one object of each kind
    return objects


def unit_settings(unit_path):
    settings = {}
    for line in unit_path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            settings[key] = value
    return settings


def rule_groups(rules_dir):
    groups = []
    for path in sorted(rules_dir.glob("*.y*ml")):
        document = yaml.safe_load(path.read_text())
        if isinstance(document, dict) and "groups" in document:
            groups.extend(document["groups"])
    return groups


def mebibytes(quantity):
    """'256Mi' (Kubernetes) or '256M' (systemd, base 1024) in MiB."""
    match = re.fullmatch(r"(\d+)(Mi|M|Gi|G)", quantity)
    if not match:
        return None
    value, unit = int(match.group(1)), match.group(2)
    return value * 1024 if unit.startswith("G") else value


def millicores(quantity):
    """'500m' (Kubernetes) or '50%' (systemd CPUQuota) in millicores."""
    if quantity.endswith("m"):
        return int(quantity[:-1])
    if quantity.endswith("%"):
        return int(quantity[:-1]) * 10
    return int(float(quantity) * 1000)


def default_metrics_port(daemon):
    help_text = subprocess.run([daemon, "--help"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"--metrics-listen ADDR.*default [^:]+:(\d+)", help_text)
    if not match:
        sys.exit(f"FAIL: no default port for --metrics-listen in {daemon} --help")
    return int(match.group(1))


def flag_values(args):
    return dict(arg[2:].split("=", 1) for arg in args if arg.startswith("--") and "=" in arg)


def check_default(objects, src, daemon, version):
    unit = unit_settings(src / "deploy/systemd/nvme-adaptd.service")
    for kind in ("Namespace", "ServiceAccount", "ConfigMap", "Service", "DaemonSet", "ServiceMonitor",
                 "PrometheusRule"):
        check(kind in objects, f"no {kind} rendered")
    if failures:
        return
    ns = objects["Namespace"]["metadata"]
    check(ns["labels"].get("pod-security.kubernetes.io/enforce") == "privileged",
          "namespace lacks pod-security.kubernetes.io/enforce: privileged (hostPID and hostPath need it)")
    for kind, obj in objects.items():
        if kind != "Namespace":
            check(obj["metadata"].get("namespace") == ns["name"], f"{kind} is not in namespace {ns['name']}")
            check(obj["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "nvme-adapt",
                  f"{kind} lacks label app.kubernetes.io/name=nvme-adapt")

    ds = objects["DaemonSet"]
    pod = ds["spec"]["template"]["spec"]
    containers = pod["containers"]
    check(len(containers) == 1, f"expected one container, found {len(containers)}")
    c = containers[0]
    # The agent calls no Kubernetes API: its own ServiceAccount, and no token mounted.
    check(pod.get("serviceAccountName") == objects["ServiceAccount"]["metadata"]["name"],
          "the DaemonSet does not use the rendered ServiceAccount")
    check(pod.get("automountServiceAccountToken") is False and
          objects["ServiceAccount"].get("automountServiceAccountToken") is False,
          "a ServiceAccount token is mounted (automountServiceAccountToken must be false)")
    sc = c.get("securityContext", {})
    check(sc.get("privileged") is not True, "the default DaemonSet runs privileged")
    wanted_caps = sorted(cap.removeprefix("CAP_") for cap in unit["CapabilityBoundingSet"].split())
    check(sorted(sc.get("capabilities", {}).get("add", [])) == wanted_caps,
          f"capabilities.add {sc.get('capabilities', {}).get('add')} != the unit's {wanted_caps}")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities.drop is not [ALL]")
    check(not ("SYS_ADMIN" in wanted_caps and sc.get("allowPrivilegeEscalation") is False),
          "allowPrivilegeEscalation: false with CAP_SYS_ADMIN is refused by the API server")
    check(sc.get("runAsUser") == 0, "the agent must run as uid 0 (it writes root-owned sysfs attributes)")
    check(sc.get("readOnlyRootFilesystem") is True, "root filesystem is writable")
    check(pod.get("hostPID") is True, "hostPID is not set (USDT/uprobe targets and BPF PIDs are the host's)")
    check(pod.get("nodeSelector") == {"nvme-adapt.io/enabled": "true"},
          f"nodeSelector is {pod.get('nodeSelector')}, expected nvme-adapt.io/enabled: \"true\"")

    # Three probes, three questions: started (restored, API open), alive (the loop takes calls), ready (metrics).
    for probe in ("startupProbe", "livenessProbe"):
        command = c.get(probe, {}).get("exec", {}).get("command", [])
        check(command[:1] == ["nvme-adaptctl"] and command[-1:] == ["status"],
              f"{probe} does not run nvme-adaptctl status: {c.get(probe)}")
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        check(c.get(probe, {}).get("timeoutSeconds", 0) >= 1, f"{probe} has no timeout")
    ready = c.get("readinessProbe", {}).get("httpGet", {})
    check(ready.get("path") == "/metrics" and ready.get("port") in ("metrics", 9464),
          f"readinessProbe does not ask the metrics endpoint: {c.get('readinessProbe')}")
    check(c.get("startupProbe") != c.get("livenessProbe"), "startup and liveness probes are the same probe")
    startup = c.get("startupProbe", {})
    check(startup.get("periodSeconds", 0) * startup.get("failureThreshold", 0) >= 60,
          "the startup probe gives a restore less than 60 s")

    resources = c.get("resources", {})
    for kind in ("requests", "limits"):
        for what in ("cpu", "memory"):
            check(what in resources.get(kind, {}), f"resources.{kind}.{what} missing")
    if "memory" in resources.get("limits", {}):
        check(mebibytes(resources["limits"]["memory"]) == mebibytes(unit["MemoryMax"]),
              f"memory limit {resources['limits']['memory']} != unit MemoryMax {unit['MemoryMax']}")
    if "cpu" in resources.get("limits", {}):
        check(millicores(resources["limits"]["cpu"]) == millicores(unit["CPUQuota"]),
              f"cpu limit {resources['limits']['cpu']} != unit CPUQuota {unit['CPUQuota']}")

    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    host_paths = {v["hostPath"]["path"]: name for name, v in volumes.items() if "hostPath" in v}
    expected = {"/sys", "/sys/kernel/btf", "/sys/fs/bpf", "/run/uvnvme", "/run/nvme-adapt", "/var/lib/nvme-adapt"}
    check(set(host_paths) == expected, f"hostPath volumes {sorted(host_paths)} != {sorted(expected)}")
    for path, name in host_paths.items():
        if check(name in mounts, f"hostPath {path} ({name}) is not mounted"):
            check(mounts[name]["mountPath"] == path, f"hostPath {path} mounted at {mounts[name]['mountPath']}")
    check(not mounts.get(host_paths.get("/sys"), {}).get("readOnly"), "/sys must be writable (sysfs levers)")
    check(mounts.get(host_paths.get("/sys/kernel/btf"), {}).get("readOnly") is True, "/sys/kernel/btf not read-only")

    flags = flag_values(c.get("args", []))
    exec_start = unit["ExecStart"].split()
    check(c.get("command") == exec_start[:1], f"command {c.get('command')} != the unit's {exec_start[:1]}")
    unit_flags = flag_values(exec_start[1:])
    for flag in ("config", "state-dir", "runtime-dir", "api-socket"):
        check(flags.get(flag) == unit_flags.get(flag), f"--{flag} {flags.get(flag)} != the unit's {unit_flags.get(flag)}")
    port = default_metrics_port(daemon)
    listen_port = int(flags.get("metrics-listen", ":0").rsplit(":", 1)[1])
    container_ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check(listen_port == port == container_ports.get("metrics"),
          f"metrics port: --metrics-listen {listen_port}, daemon default {port}, containerPort {container_ports}")
    check(c["image"] == f"nvme-adapt:{version}", f"image {c['image']} is not nvme-adapt:{version}")

    cm = objects["ConfigMap"]
    config_volume = volumes.get("config", {}).get("configMap", {}).get("name")
    check(config_volume == cm["metadata"]["name"], f"config volume names {config_volume}, not {cm['metadata']['name']}")
    check(mounts.get("config", {}).get("mountPath") == str(pathlib.Path(flags.get("config", "")).parent),
          "the ConfigMap is not mounted where --config points")
    # The package's default config, with the file (the ConfigMap) authoritative over policy set over the API.
    shipped = json.loads((src / "deploy/config/config.json").read_text())
    check(shipped.get("policyFileAuthoritative") is not True, "the package's config makes the file authoritative")
    check(json.loads(cm["data"].get("config.json", "null")) == {**shipped, "policyFileAuthoritative": True},
          "ConfigMap config.json is not deploy/config/config.json with policyFileAuthoritative: true")
    # The rendered ConfigMap's config as the agent would take it, checked offline by the agent itself.
    with tempfile.NamedTemporaryFile("w", suffix=".json") as rendered:
        rendered.write(cm["data"].get("config.json", ""))
        rendered.flush()
        checked = subprocess.run([daemon, "--check-config", rendered.name], capture_output=True, text=True)
        check(checked.returncode == 0, f"nvme-adaptd --check-config on the rendered ConfigMap's config.json: "
                                       f"exit {checked.returncode}: {checked.stderr.strip()}")

    svc = objects["Service"]
    check(svc["spec"].get("clusterIP") == "None", "metrics Service is not headless")
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    check(svc_ports.get("metrics", {}).get("port") == port, f"Service metrics port {svc_ports} != {port}")
    template_labels = ds["spec"]["template"]["metadata"]["labels"]
    check(all(template_labels.get(k) == v for k, v in svc["spec"]["selector"].items()),
          "Service selector does not select the DaemonSet's pods")
    sm = objects["ServiceMonitor"]
    check(all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items()),
          "ServiceMonitor does not select the Service")
    check([e.get("port") for e in sm["spec"]["endpoints"]] == ["metrics"], "ServiceMonitor endpoint is not 'metrics'")

    groups = rule_groups(src / "dashboards/prometheus")
    check(len(groups) > 0, "dashboards/prometheus has no rule groups")
    by_name = lambda gs: {g["name"]: g for g in gs}  # noqa: E731
    check(by_name(objects["PrometheusRule"]["spec"]["groups"]) == by_name(groups),
          "PrometheusRule groups differ from dashboards/prometheus/*.yml")
    urls = [r["annotations"]["runbook_url"] for g in objects["PrometheusRule"]["spec"]["groups"]
            for r in g["rules"] if "alert" in r]
    check(urls and all(u.startswith("https://") for u in urls), f"runbook_url not absolute: {urls}")


def check_kustomizations(src):
    for path in sorted((src / "deploy/kubernetes").rglob("kustomization.yaml")):
        used = DEPRECATED_FIELDS & set(yaml.safe_load(path.read_text()))
        check(not used, f"{path.relative_to(src)} uses deprecated fields {sorted(used)}")


def check_privileged(objects):
    pod = objects["DaemonSet"]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    check(c["securityContext"].get("privileged") is True, "privileged overlay: container not privileged")
    check("capabilities" not in c["securityContext"], "privileged overlay: capability list left in")
    dev = [v for v in pod["volumes"] if v.get("hostPath", {}).get("path") == "/dev"]
    check(len(dev) == 1, "privileged overlay: no /dev hostPath")
    check(any(m["mountPath"] == "/dev" for m in c["volumeMounts"]), "privileged overlay: /dev not mounted")


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: kubernetes_test.py SOURCE_DIR DAEMON_BINARY PROJECT_VERSION")
    src, daemon, version = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    if not shutil.which("kubectl"):
        sys.exit("FAIL: kubectl not found (it renders the kustomization): install a kubectl with kustomize >= 4.5 "
                 "(scripts/install-deps; docs/operations.md, \"Install on Kubernetes\")")
    check_kustomizations(src)
    default = render(src, "default")
    check_default(default, src, daemon, version)
    default_failures = len(failures)
    check_privileged(render(src, "privileged"))
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    print(f"default overlay ({', '.join(sorted(default))}): {default_failures} problems; "
          f"privileged overlay: {len(failures) - default_failures} problems")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
