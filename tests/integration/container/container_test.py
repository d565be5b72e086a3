#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The agent's image, built and run as the DaemonSet runs it, against a uvnvme-load on the host.

Builds the image (image.py: cached by its inputs), renders deploy/kubernetes/overlays/default with
`kubectl kustomize` (through an overlay of its own that only sets the image, as an operator's would), turns
the DaemonSet into podman options (pod_spec.py) and runs the container with them. Then: the startup,
liveness and readiness probes pass as the kubelet runs them; the
agent discovers the host's uvnvme queue and attaches its probes; a real Prometheus on the host scrapes
the container's address (the pod IP); nvme-adaptctl on the host is answered through the mounted socket;
a ConfigMap update (the kubelet's ..data swap, no signal) turns the controller from the shipped `off`
mode to adaptive and the agent polls the loaded queue; it holds exactly the manifest's capabilities; and `podman stop` ends
it with every queue put back to interrupt mode.

usage: container_test.py SOURCE_DIR DEB NVME_ADAPTCTL UVNVME_LOAD
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "daemon"), os.path.join(HERE, "..", "metrics")]

import yaml  # noqa: E402

import engine  # noqa: E402
from engine import fail, podman, ulimit_flags  # noqa: E402
from image import agent_image, image_size  # noqa: E402
from pod_spec import podman_run_options  # noqa: E402

CAPABILITY_BITS = {"CHOWN": 0, "DAC_OVERRIDE": 1, "SYS_PTRACE": 19, "SYS_ADMIN": 21, "PERFMON": 38, "BPF": 39}
started = time.monotonic()


def log(message):
    print(f"[{time.monotonic() - started:6.1f} s] {message}", flush=True)


def wait_for(predicate, timeout, what, details=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    fail(f"timed out after {timeout} s waiting for {what}\n{details()}")


class HostWorkspace:
    """What daemon_harness.Load needs: the host's runtime dir, where the container's /run/uvnvme comes from."""

    def __init__(self, directory):
        self.dir = directory
        self.runtime_dir = os.path.join(directory, "run")

    def path(self, name):
        return os.path.join(self.dir, name)


def render(src, image, work):
    """The default overlay as `kubectl kustomize` renders it, with `image`: an overlay on top sets it."""
    repository, _, tag = image.rpartition(":")
    overlay = os.path.join(work, "overlay")
    os.makedirs(overlay)
    with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
        # kustomize takes no absolute path to another kustomization.
        yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                        "resources": [os.path.relpath(os.path.join(src, "deploy/kubernetes/overlays/default"), overlay)],
                        "images": [{"name": "nvme-adapt", "newName": repository, "newTag": tag}]}, f)
    result = subprocess.run(["kubectl", "kustomize", overlay], capture_output=True, text=True)
    if result.returncode != 0 or result.stderr.strip():
        fail(f"kubectl kustomize: exit {result.returncode}: {result.stderr.strip()}")
    return list(yaml.safe_load_all(result.stdout))


def http_probe(address, probe, ports):
    """The kubelet's httpGet probe against the container's address: a 2xx or 3xx answer within the timeout."""
    get = probe["httpGet"]
    port = get["port"] if isinstance(get["port"], int) else ports[get["port"]]
    try:
        with urllib.request.urlopen(f"http://{address}:{port}{get['path']}", timeout=probe["timeoutSeconds"]) as answer:
            return 200 <= answer.status < 400
    except OSError:
        return False


def ctl_json(ctl, socket, *args):
    result = subprocess.run([ctl, "--addr", socket, "--json", *args], capture_output=True, text=True, timeout=30)
    return json.loads(result.stdout) if result.returncode == 0 else None


def capability_mask(names):
    mask = 0
    for name in names:
        if name not in CAPABILITY_BITS:
            fail(f"capability {name}: add its bit to CAPABILITY_BITS")
        mask |= 1 << CAPABILITY_BITS[name]
    return mask


def process_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def check_version(image, deb):
    version = subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    upstream = version.rsplit("-", 1)[0]
    said = podman("run", "--rm", "--network=none", "--no-healthcheck", *ulimit_flags(), image, "--version").stdout.strip()
    if not said.startswith(f"nvme-adaptd {upstream} "):
        fail(f"nvme-adaptd --version in the image says {said!r}; the package is {version}")
    log(f"image: {said} (package {version})")


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: container_test.py SOURCE_DIR DEB NVME_ADAPTCTL UVNVME_LOAD")
    src, deb, ctl, load_binary = sys.argv[1:]
    os.environ["UVNVME_LOAD"] = load_binary
    engine.preflight()
    from daemon_harness import Load  # noqa: E402 (after UVNVME_LOAD is set)
    from prometheus_server import PrometheusServer  # noqa: E402

    # Containers of a run that was killed (a CTest timeout) would keep their probes attached.
    for stale in podman("ps", "--all", "--quiet", "--filter", "name=^nvme-adapt-test-").stdout.split():
        podman("rm", "--force", stale, check=False)
    image = agent_image(src, deb, log)
    log(f"image size {image_size(image) / 1e6:.1f} MB")
    check_version(image, deb)

    work = tempfile.mkdtemp(prefix="nvme-adapt-container-", dir="/var/tmp")
    host = HostWorkspace(work)
    objects = render(src, image, work)
    options, args, config_volumes, spec = podman_run_options(objects, os.path.join(work, "host"))
    host.runtime_dir = os.path.join(work, "host", "run")  # the re-rooted /run of the DaemonSet's hostPaths
    socket = os.path.join(work, "host", "run", "nvme-adapt", "agent.sock")
    name = f"nvme-adapt-test-{os.getpid()}"
    load = Load(host, "--mode", "external", "--controller-rt", "--qd", "16", "--runtime", "300s")
    container_started = False
    logs = lambda: podman("logs", name, check=False).stderr[-4000:]  # noqa: E731
    try:
        load.start()
        wait_for(lambda: os.path.exists(load.socket()), 20, "uvnvme-load's control socket")
        podman("run", "--detach", f"--name={name}", *ulimit_flags(), *options, image, *args)
        container_started = True
        log(f"container {name} started: podman run {' '.join(options)} {image} {' '.join(args)}")

        # The kubelet's startup probe, as the manifest gives it.
        probe = spec["startupProbe"]
        wait_for(lambda: podman("exec", name, *probe["exec"]["command"], check=False).returncode == 0,
                 probe["periodSeconds"] * probe["failureThreshold"], "the startup probe", logs)
        log("startup probe passed")
        probe = spec["livenessProbe"]
        if podman("exec", name, *probe["exec"]["command"], check=False).returncode != 0:
            fail(f"the liveness probe fails on a running agent: {probe['exec']['command']}\n{logs()}")
        address = podman("inspect", "--format", "{{.NetworkSettings.IPAddress}}", name).stdout.strip()
        ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
        probe = spec["readinessProbe"]
        wait_for(lambda: http_probe(address, probe, ports), probe["periodSeconds"] * probe["failureThreshold"],
                 f"the readiness probe ({probe['httpGet']})", logs)
        log("liveness and readiness probes passed")

        controller = f"uvnvme:{load.process.pid}:0"
        queues = wait_for(lambda: (ctl_json(ctl, socket, "queues", "--controller", controller) or {}).get("queues"),
                          30, f"the agent in the container to discover {controller}", logs)
        status = ctl_json(ctl, socket, "status")
        log(f"nvme-adaptctl on the host: {len(queues)} queue(s) of {controller}; status {json.dumps(status)[:300]}")
        if status.get("collector") != "bpf" or status.get("observeOnly"):
            fail(f"the agent in the container does not run its BPF collector: {status}\n{logs()}")

        pid = int(podman("inspect", "--format", "{{.State.Pid}}", name).stdout)
        caps = process_status(pid)
        wanted = capability_mask(spec["securityContext"]["capabilities"]["add"])
        if int(caps["CapEff"], 16) != wanted or int(caps["CapBnd"], 16) != wanted:
            fail(f"the agent holds CapEff {caps['CapEff']} CapBnd {caps['CapBnd']}, the manifest grants {wanted:016x}")
        if caps["Uid"].split()[0] != str(spec["securityContext"]["runAsUser"]):
            fail(f"the agent runs as uid {caps['Uid']}")
        log(f"agent pid {pid} (host PID namespace): uid {caps['Uid'].split()[0]}, CapEff {caps['CapEff']}")

        port = ports["metrics"]
        with PrometheusServer(os.path.join(work, "prometheus"), [f"{address}:{port}"], []) as prometheus:
            prometheus.wait_until('up{job="nvme-adapt"} == 1', 30, "Prometheus scrapes the container")
            prometheus.wait_until("nvme_adapt_bpf_programs_attached > 0", 30, "BPF probes attached")
            prometheus.wait_until(f'nvme_adapt_queue_completions_total{{controller="{controller}"}} > 0', 30,
                                  "completions of the host's queue counted in the container")
            log(f"Prometheus scrapes {address}:{port}: up, probes attached, completions of {controller}")

            # The ConfigMap changes as Kubernetes changes it: the kubelet swaps ..data, no signal.
            volume = config_volumes["/etc/nvme-adapt"]
            config = json.loads(objects[[o["kind"] for o in objects].index("ConfigMap")]["data"]["config.json"])
            # A controller keeps the global mode it was discovered with (docs/architecture.md): the update
            # names the running one.
            config["controllers"] = [{"controller": controller, "policy": {"mode": "CONTROLLER_MODE_ADAPTIVE"}}]
            volume.update({"config.json": json.dumps(config)})
            prometheus.wait_until('nvme_adapt_config_reloads_total{outcome="applied"} == 1', 30,
                                  "the ConfigMap update applied")
            # A try may last milliseconds (the engine drops a poll that falls behind pace): the switch
            # counter, not the mode gauge a 1 s scrape may miss, shows the decisions.
            switches = prometheus.wait_until(
                f'sum(nvme_adapt_queue_switches_total{{controller="{controller}"}}) > 0', 60,
                "the agent's decisions to poll the loaded queue")
            log(f"ConfigMap swapped, the controller adaptive: reload applied, {switches[0]['value']:.0f} switch(es)")
        # The engine's tries come and go; an override through the mounted socket leaves the queue polling
        # for certain, so that the stop has something to put back.
        qid = int(queues[0]["id"]["queue"])
        queue = f"{controller}:q{qid}"
        if ctl_json(ctl, socket, "override", queue, "poll") is None:
            fail(f"nvme-adaptctl override {queue} poll through the mounted socket was refused\n{logs()}")
        wait_for(lambda: load.queue_modes().get(qid) == "poll", 10, f"{queue} polling after the override", logs)
        log(f"nvme-adaptctl override {queue} poll: uvnvme-load reports {load.queue_modes()}")

        grace = objects[[o["kind"] for o in objects].index("DaemonSet")]["spec"]["template"]["spec"][
            "terminationGracePeriodSeconds"]
        stop_started = time.monotonic()
        podman("stop", f"--time={grace}", name, timeout=grace + 30)
        exit_code = int(podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout)
        modes = load.queue_modes()
        if exit_code != 0:
            fail(f"the agent exited {exit_code} on podman stop\n{logs()}")
        if set(modes.values()) != {"interrupt"}:
            fail(f"after podman stop the queues are {modes}: not all put back to interrupt\n{logs()}")
        log(f"podman stop: exit 0 in {time.monotonic() - stop_started:.1f} s, queues {modes}")
    except AssertionError as e:  # a Prometheus wait that timed out
        fail(f"{e}\nthe agent's log in the container:\n{logs()}")
    finally:
        load.stop()
        if container_started:
            podman("rm", "--force", name, check=False)
        shutil.rmtree(work, ignore_errors=True)
    log("container scenario passed")


if __name__ == "__main__":
    main()
