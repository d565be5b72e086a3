# SPDX-License-Identifier: Apache-2.0
"""podman run options from the rendered DaemonSet: what Kubernetes would give the container.

Every field of the pod and container spec is either turned into podman options, or named here as
one that does not reach the container runtime (scheduling, rollout, probes run by the kubelet);
a field neither handled nor named fails the test, so a manifest change cannot be silently ignored.

Host paths: a `Directory` hostPath is the kernel's (/sys, /sys/kernel/btf, /sys/fs/bpf) and is the host's
own; a `DirectoryOrCreate` one is node-local state of the agent (/run/uvnvme, /run/nvme-adapt,
/var/lib/nvme-adapt) and is re-rooted under the test's directory, so that the test neither sees nor
leaves anything in the host's real ones.
"""
import os
import re

from engine import fail
from kubelet_volume import KubeletVolume

# Fields that are not container runtime settings.
POD_FIELDS_ELSEWHERE = {"nodeSelector", "tolerations", "priorityClassName", "terminationGracePeriodSeconds",
                        "serviceAccountName"}
CONTAINER_FIELDS_ELSEWHERE = {"name", "image", "imagePullPolicy", "ports", "startupProbe", "livenessProbe",
                              "readinessProbe"}


def quantity_bytes(quantity):
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(quantity))
    if not match:
        fail(f"resource quantity {quantity!r} is not understood by the test")
    return int(match.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}[match.group(2)]


def cpus(quantity):
    quantity = str(quantity)
    return int(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def unhandled(where, spec, handled):
    extra = sorted(set(spec) - handled)
    if extra:
        fail(f"{where}: the test does not turn {extra} into podman options: handle them in pod_spec.py")


def security_options(pod, sc):
    unhandled("securityContext", sc, {"privileged", "runAsUser", "runAsGroup", "readOnlyRootFilesystem",
                                      "capabilities", "seccompProfile", "appArmorProfile"})
    unhandled("pod securityContext", pod.get("securityContext", {}), {"supplementalGroups"})
    options = []
    if sc.get("privileged"):
        options.append("--privileged")
    if "runAsUser" in sc:
        options.append(f"--user={sc['runAsUser']}:{sc.get('runAsGroup', 0)}")
    for gid in pod.get("securityContext", {}).get("supplementalGroups", []):
        options.append(f"--group-add={gid}")
    if sc.get("readOnlyRootFilesystem"):
        # Kubernetes mounts no tmpfs of its own on /run, /tmp: only the volumes the spec names.
        options += ["--read-only", "--read-only-tmpfs=false"]
    capabilities = sc.get("capabilities") or {}
    unhandled("capabilities", capabilities, {"add", "drop"})
    options += [f"--cap-drop={c}" for c in capabilities.get("drop", [])]
    options += [f"--cap-add=CAP_{c}" for c in capabilities.get("add", [])]
    seccomp = sc.get("seccompProfile", {}).get("type", "RuntimeDefault")
    if seccomp == "Unconfined":
        options.append("--security-opt=seccomp=unconfined")
    elif seccomp != "RuntimeDefault":
        fail(f"seccompProfile {seccomp}: the test knows RuntimeDefault and Unconfined")
    apparmor = sc.get("appArmorProfile", {}).get("type", "RuntimeDefault")
    if apparmor == "Unconfined":
        options.append("--security-opt=apparmor=unconfined")
    elif apparmor != "RuntimeDefault":
        fail(f"appArmorProfile {apparmor}: the test knows RuntimeDefault and Unconfined")
    return options


def volume_options(pod, container, config_maps, host_root):
    """The mount options, and the ConfigMap volumes made (mount path -> KubeletVolume)."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    options, config_volumes = [], {}
    for mount in container.get("volumeMounts", []):
        unhandled(f"volumeMount {mount['name']}", mount, {"name", "mountPath", "readOnly"})
        volume = volumes.get(mount["name"]) or fail(f"volumeMount {mount['name']} names no volume")
        target, ro = mount["mountPath"], ",ro" if mount.get("readOnly") else ""
        if "hostPath" in volume:
            path, kind = volume["hostPath"]["path"], volume["hostPath"].get("type", "")
            if kind == "Directory":
                if not os.path.isdir(path):
                    fail(f"hostPath {path} (type Directory) does not exist on this host")
                source = path
            elif kind == "DirectoryOrCreate":
                source = os.path.join(host_root, path.lstrip("/"))
                os.makedirs(source, exist_ok=True)
            else:
                fail(f"hostPath {path}: type {kind!r} is not handled by the test")
            options.append(f"--volume={source}:{target}:rbind{ro}")
        elif "configMap" in volume:
            name = volume["configMap"]["name"]
            data = config_maps.get(name) or fail(f"volume {mount['name']}: no rendered ConfigMap {name}")
            directory = os.path.join(host_root, "configmaps", name)
            config_volumes[target] = KubeletVolume(directory, data)
            options.append(f"--volume={directory}:{target}{':ro' if ro else ''}")
        elif "emptyDir" in volume:
            empty = volume["emptyDir"]
            if empty.get("medium") != "Memory":
                fail(f"emptyDir {mount['name']}: only medium Memory is handled by the test")
            size = f",size={quantity_bytes(empty['sizeLimit'])}" if "sizeLimit" in empty else ""
            options.append(f"--tmpfs={target}:rw{size}")
        else:
            fail(f"volume {mount['name']}: kind {sorted(volume)} is not handled by the test")
    return options, config_volumes


def resource_options(container):
    limits = container.get("resources", {}).get("limits", {})
    unhandled("resources.limits", limits, {"cpu", "memory"})
    options = []
    if "memory" in limits:
        options.append(f"--memory={quantity_bytes(limits['memory'])}")
    if "cpu" in limits:
        options.append(f"--cpus={cpus(limits['cpu'])}")
    return options  # requests only place the pod on a node


def podman_run_options(objects, host_root):
    """(options before the image, the arguments after it, ConfigMap volumes, the container spec)."""
    daemonset = next(o for o in objects if o["kind"] == "DaemonSet")
    config_maps = {o["metadata"]["name"]: o.get("data", {}) for o in objects if o["kind"] == "ConfigMap"}
    pod = daemonset["spec"]["template"]["spec"]
    unhandled("pod spec", pod, POD_FIELDS_ELSEWHERE | {"hostPID", "securityContext", "containers", "volumes",
                                                       "automountServiceAccountToken"})
    # podman mounts no service account token, which is what the manifest asks for only when it turns it off.
    if pod.get("automountServiceAccountToken", True) is not False:
        fail("pod spec: automountServiceAccountToken is not false: the agent never uses a token, and the test "
             "mounts none")
    if len(pod["containers"]) != 1:
        fail(f"the pod has {len(pod['containers'])} containers; the test runs one")
    container = pod["containers"][0]
    unhandled("container spec", container, CONTAINER_FIELDS_ELSEWHERE |
              {"command", "args", "env", "securityContext", "resources", "volumeMounts"})
    # The kubelet runs the probes; an image's HEALTHCHECK is not run in Kubernetes.
    options = ["--no-healthcheck"] + (["--pid=host"] if pod.get("hostPID") else [])
    options += security_options(pod, container.get("securityContext", {}))
    mounts, config_volumes = volume_options(pod, container, config_maps, host_root)
    options += mounts + resource_options(container)
    for env in container.get("env", []):
        if "value" not in env:
            fail(f"env {env['name']}: only literal values are handled by the test")
        options.append(f"--env={env['name']}={env['value']}")
    command = container.get("command")
    if command:
        if len(command) != 1:
            fail(f"command {command}: the test passes one entrypoint")
        options.append(f"--entrypoint={command[0]}")
    return options, list(container.get("args", [])), config_volumes, container
