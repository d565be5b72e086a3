# SPDX-License-Identifier: Apache-2.0
"""podman as this host needs it, and what the kernel must have for it.

Workarounds of a host like the CI machine, none needed on a normal systemd host (docs/operations.md):
- a hybrid cgroup layout (v1 controllers, cgroup2 at /sys/fs/cgroup/unified), which crun refuses: podman
  runs in a private mount namespace in which that cgroup2 mount is gone;
- no systemd to own the containers' cgroups: --cgroup-manager=cgroupfs;
- hard limits below podman's defaults (nofile 1048576) and no CAP_SYS_RESOURCE to raise them:
  --ulimit nofile and nproc at the hard limits (nproc at most kernel.pid_max: podman's conmon, which
  starts crun, has no more).
"""
import os
import resource
import shutil
import subprocess
import sys

HYBRID_CGROUP2 = "/sys/fs/cgroup/unified"


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def mounts():
    with open("/proc/self/mounts") as f:
        return [line.split() for line in f]


def missing_kernel_features():
    """What podman needs of the kernel and this kernel lacks, each named."""
    missing = []
    for ns in ("mnt", "pid", "net", "ipc", "uts"):
        if not os.path.exists(f"/proc/self/ns/{ns}"):
            missing.append(f"{ns} namespaces (/proc/self/ns/{ns} absent)")
    with open("/proc/filesystems") as f:
        filesystems = {line.split()[-1] for line in f if line.strip()}
    if "overlay" not in filesystems:
        missing.append("overlayfs (CONFIG_OVERLAY_FS; podman's storage driver): not in /proc/filesystems")
    if "cgroup" not in filesystems and "cgroup2" not in filesystems:
        missing.append("control groups (CONFIG_CGROUPS): neither cgroup nor cgroup2 in /proc/filesystems")
    if not any(m[2] in ("cgroup", "cgroup2") for m in mounts()):
        missing.append("a mounted cgroup hierarchy under /sys/fs/cgroup")
    with open("/proc/self/status") as f:
        if not any(line.startswith("Seccomp:") for line in f):
            missing.append("seccomp (CONFIG_SECCOMP; the runtime's default profile)")
    if not os.path.exists("/sys/class/net") or not os.path.exists("/proc/sys/net/ipv4/ip_forward"):
        missing.append("IPv4 networking in /proc/sys/net (the container's own network namespace)")
    return missing


def enter_private_mount_namespace():
    """Re-runs this script in a private mount namespace without the hybrid cgroup2 mount, once."""
    if not any(m[1] == HYBRID_CGROUP2 for m in mounts()):
        return
    if os.environ.get("NVME_ADAPT_PRIVATE_MNT") == "1":
        subprocess.run(["umount", HYBRID_CGROUP2], check=True)
        return
    unshare = shutil.which("unshare") or fail("unshare not found: install Debian package util-linux")
    os.environ["NVME_ADAPT_PRIVATE_MNT"] = "1"
    os.execv(unshare, [unshare, "--mount", "--propagation", "private", sys.executable, *sys.argv])


def preflight():
    if os.geteuid() != 0:
        fail("needs root (rootful podman, BPF in the container): run the test command as root")
    for tool, package in (("podman", "podman"), ("crun", "crun"), ("mmdebstrap", "mmdebstrap")):
        if not shutil.which(tool):
            fail(f"{tool} not found: install Debian package {package} (scripts/install-deps)")
    missing = missing_kernel_features()
    if missing:
        fail("the container engine cannot run on this kernel, it lacks: " + "; ".join(missing))
    enter_private_mount_namespace()


def ulimit_flags():
    """The hard limits; nproc also at most kernel.pid_max, the limit podman gives its conmon (and crun)."""
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    flags = []
    for name, limit, cap in (("nofile", resource.RLIMIT_NOFILE, 1048576), ("nproc", resource.RLIMIT_NPROC, pid_max)):
        hard = resource.getrlimit(limit)[1]
        value = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
        flags.append(f"--ulimit={name}={value}:{value}")
    return flags


def podman(*args, check=True, timeout=600, capture=True):
    command = ["podman", "--cgroup-manager=cgroupfs", *args]
    result = subprocess.run(command, capture_output=capture, text=True, timeout=timeout)
    if check and result.returncode != 0:
        fail(f"{' '.join(command)}: exit {result.returncode}: {(result.stderr or '').strip()[-3000:]}")
    return result
