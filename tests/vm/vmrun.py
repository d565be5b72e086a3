#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Boots a Debian kernel (6.1, 6.12 or 7.3: vmpackages.py) under QEMU (TCG) with an emulated NVMe controller
and runs a guest script in it.

The guest sees the host root read-only over virtio-9p and chroots into it, so host binaries (fio, bpftool,
nvme-cli, the project's build tree) run unchanged at the same absolute paths. The results dir is a second,
writable 9p share mounted at its host path; the guest script writes files there and the host reads them
after the VM has powered off. The guest script gets the environment of guest.env (NVA_BUILD_DIR,
NVA_SOURCE_DIR, NVA_RESULTS_DIR, NVA_VM_DIR and any --env KEY=VALUE).

  tests/vm/vmrun.py [--build-dir build] [--kernel 6.1] [--shell] GUEST_SCRIPT    (see tests/vm/README.md)
"""

import argparse
import ctypes
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean of __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parent))
from vmkernel import KERNELS, VmSetupError, guest_kernel  # noqa: E402

VM_DIR = Path(__file__).resolve().parent
SOURCE_DIR = VM_DIR.parents[1]
QEMU = "qemu-system-x86_64"
INIT_FATAL_MARK = "NVA-INIT-FATAL:"
PR_SET_PDEATHSIG = 1
# PATH of the guest script: the host's system directories only (no per-user shims such as pyenv).
GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Directories of the host root that the guest covers with its own mounts (see init.sh).
GUEST_OWN_DIRS = ("/tmp", "/run", "/dev", "/proc", "/sys")
# Host programs the harness runs, with the Debian package that provides each.
HOST_TOOLS = {QEMU: "qemu-system-x86", "dpkg-deb": "dpkg", "depmod": "kmod", "cpio": "cpio"}
# Serves the shares to kernels without 9p (virtio-fs); QEMU 7.2's, in qemu-system-common.
VIRTIOFSD = "/usr/lib/qemu/virtiofsd"
# SeaBIOS and the guest clear the screen; keep the relayed console plain text.
TERMINAL_CONTROL = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[A-Za-z])")


# A guest kernel's own crash reports: what ends a guest (panic=-1, -no-reboot) before its script does.
KERNEL_CRASH = re.compile(r"(Oops: .*|Kernel panic - not syncing: .*|watchdog: BUG: soft lockup.*|"
                          r"BUG: (unable to handle|kernel NULL pointer).*|general protection fault.*|kernel BUG at .*)")
STEP_MARK = re.compile(r"== (\S+)")


class VmRunError(RuntimeError):
    """The VM did not run the guest script to its end (timeout, crash, init failure). `crash`: the guest kernel's
    crash report when the console has one (kernel_crash)."""

    def __init__(self, message, crash=None):
        super().__init__(message)
        self.crash = crash


def kernel_crash(console_log):
    """The guest kernel's first crash on the console, as one line: its report ("Oops: int3 ..."), the RIP line
    after it and the guest step it came in; None when the console has no crash report."""
    try:
        lines = [TERMINAL_CONTROL.sub("", raw).rstrip("\r")
                 for raw in Path(console_log).read_text(errors="replace").splitlines()]
    except OSError:
        return None
    step = "boot (before the guest script)"
    for i, line in enumerate(lines):
        mark = STEP_MARK.search(line)
        if mark:
            step = mark.group(1)
        found = KERNEL_CRASH.search(line)
        if found:
            rip = next((m.split("] ", 1)[-1].strip() for m in lines[i + 1:i + 30] if "RIP:" in m), "")
            return f"{found.group(1).strip()}{'; ' + rip if rip else ''}; in guest step {step}"
    return None


@dataclass
class VmOptions:
    guest_script: Path
    build_dir: Path = SOURCE_DIR / "build"
    results_dir: Path | None = None  # default: BUILD/vm-results/<guest script name, or shell>
    env: dict = field(default_factory=dict)
    timeout: float = 600.0
    shell: bool = False
    nvme_params: str = "poll_queues=1"
    disk_mib: int = 256
    smp: int = 2
    # More than smp: CPUs the guest may hotplug but does not start. maxcpus > 1 keeps TCG's parallel code (with
    # the guest's memory barriers, which QEMU's NVMe doorbell handshake needs) while one vCPU runs: no vCPU then
    # executes the kernel's text while another rewrites it (the int3 Oopses, tests/vm/README.md).
    max_cpus: int = 0
    memory: str = "1G"
    keep_work: bool = False
    kernel: str = "6.1"  # a key of vmpackages.KERNELS
    kernel_args: str = ""  # appended to the guest kernel's command line


@dataclass
class VmResult:
    exit_status: int
    results_dir: Path
    console_log: Path
    seconds: float
    kernel: object  # vmkernel.GuestKernel


class Clock:
    def __init__(self):
        self.start = time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.start

    def log(self, message):
        print(f"[vm +{self.elapsed():6.1f}s] {message}", flush=True)


def require_tools(tools, path=None):
    """Raises VmSetupError naming every missing program of {program: Debian package}."""
    missing = [f"{tool} (Debian package {package})" for tool, package in tools.items()
               if shutil.which(tool, path=path) is None]
    if missing:
        raise VmSetupError(f"not found{' in ' + path if path else ''}: {', '.join(missing)}; "
                           "install them (scripts/install-deps lists them)")


def _share_devices(kernel, results_dir, sockets):
    """QEMU arguments of the host-root and results shares: 9p, or virtio-fs through virtiofsd's sockets."""
    if kernel.share == "virtiofs":
        return ["-object", f"memory-backend-memfd,id=mem,size={sockets['memory']},share=on", "-numa", "node,memdev=mem",
                "-chardev", f"socket,id=hr,path={sockets['hostroot']}",
                "-device", "vhost-user-fs-pci,chardev=hr,tag=hostroot",
                "-chardev", f"socket,id=res,path={sockets['results']}",
                "-device", "vhost-user-fs-pci,chardev=res,tag=results"]
    return ["-fsdev", "local,id=hr,path=/,security_model=none,readonly=on,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=hr,mount_tag=hostroot",
            "-fsdev", f"local,id=res,path={results_dir},security_model=none",
            "-device", "virtio-9p-pci,fsdev=res,mount_tag=results"]


def _start_virtiofsd(work, results_dir, clock):
    """One virtiofsd per share (the host root, the results dir); returns (sockets, processes).

    This virtiofsd has no read-only export: the guest mounts the host root read-only (init.sh)."""
    require_tools({VIRTIOFSD: "qemu-system-common"})
    sockets, procs = {}, []
    # The host root: nothing on the host changes what the guest reads there while it runs (the build, the
    # guest scripts and the work dir are ready before boot; the guest writes only to the results share), so
    # the guest may keep what it read, as a local disk's page cache would, without asking virtiofsd again on
    # every open and exec (cache=loose of the 9p mount, init.sh). The results share is written by the guest and
    # read by the host: revalidated.
    for tag, source, cache in (("hostroot", "/", "always"), ("results", results_dir, "auto")):
        sockets[tag] = work / f"{tag}.sock"
        log = open(work / f"virtiofsd-{tag}.log", "wb")
        procs.append(subprocess.Popen([VIRTIOFSD, f"--socket-path={sockets[tag]}", "-o", f"source={source}",
                                       # pivot_root (the default sandbox) cannot move / onto itself
                                       "-o", f"cache={cache}", "-o", "sandbox=chroot"], stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT, preexec_fn=_die_with_parent))
    deadline = time.monotonic() + 30
    while not all(s.exists() for s in sockets.values()):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise VmRunError(f"virtiofsd did not come up; its logs: {work}/virtiofsd-*.log")
        time.sleep(0.1)
    clock.log("virtio-fs: virtiofsd serves the host root and the results dir")
    return sockets, procs


def _qemu_command(opts, kernel, disk, results_dir, sockets=None):
    append = "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init"
    if "nvme" in kernel.builtin:  # a built-in driver takes its parameters from the command line
        append += "".join(f" nvme.{p}" for p in opts.nvme_params.split())
    if kernel.share != "9p":
        append += f" nva.share={kernel.share}"
    if opts.kernel_args:
        append += " " + opts.kernel_args
    # Multi-threaded TCG, never thread=single with Debian 12's QEMU 7.2: single-threaded TCG there drops the
    # guest's memory barriers (QEMU 8.1 keeps them), and the NVMe shadow doorbell handshake between the vCPU and
    # QEMU's main loop then loses commands (tests/vm/README, Lost commands).
    return [
        QEMU, "-accel", "tcg,thread=multi", "-cpu", "max", "-smp", f"{opts.smp},maxcpus={max(opts.max_cpus, opts.smp)}", "-m", opts.memory,
        "-nographic", "-no-reboot", "-nic", "none",
        "-kernel", str(kernel.image), "-initrd", str(kernel.initramfs), "-append", append,
        "-drive", f"file={disk},if=none,id=nvm,format=raw,cache=none,aio=threads",
        "-device", "nvme,serial=deadbeef,drive=nvm,max_ioqpairs=4,msix_qsize=65",
        *_share_devices(kernel, results_dir, {**(sockets or {}), "memory": opts.memory}),
    ]


def _die_with_parent():
    # QEMU must not outlive this script, even when CTest kills it on a timeout.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _write_guest_env(opts, kernel, results_dir, path):
    env = {
        "NVA_GUEST_SCRIPT": str(opts.guest_script),
        "NVA_RESULTS_DIR": str(results_dir),
        "NVA_BUILD_DIR": str(opts.build_dir.resolve()),
        "NVA_SOURCE_DIR": str(SOURCE_DIR),
        "NVA_VM_DIR": str(VM_DIR),
        "NVA_NVME_PARAMS": opts.nvme_params,
        "NVA_KERNEL": kernel.name,
        "NVA_BUILTIN_MODULES": " ".join(kernel.builtin),
        "NVA_NVME_WAIT": "30",
        "NVA_SHELL": "1" if opts.shell else "0",
        "NVA_GUEST_PATH": GUEST_PATH,
        **opts.env,
    }
    path.write_text("".join(f"{k}={shlex.quote(str(v))}\n" for k, v in env.items()))


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _relay_console(proc, console, deadline, clock):
    """Copies the serial console to the log and to stdout until QEMU exits; returns the last lines seen."""
    tail, pending = [], b""
    fd = proc.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise VmRunError("timed out")
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        console.write(chunk)
        console.flush()
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = TERMINAL_CONTROL.sub("", raw.decode(errors="replace")).rstrip("\r")
            print(f"[vm +{clock.elapsed():6.1f}s] guest| {line}", flush=True)
            tail = (tail + [line])[-40:]
            if line.startswith(INIT_FATAL_MARK):
                clock.log(f"guest init failed: {line[len(INIT_FATAL_MARK):].strip()}")
    proc.wait()
    return tail


def _new_work_dir(parent):
    """A fresh run-PID-* dir; those of runs that died without cleaning up (SIGKILL) are removed."""
    parent.mkdir(exist_ok=True)
    for stale in parent.glob("run-*-*"):
        try:
            os.kill(int(stale.name.split("-")[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(stale, ignore_errors=True)
        except (ValueError, PermissionError):
            pass
    return Path(tempfile.mkdtemp(dir=parent, prefix=f"run-{os.getpid()}-"))


# Two vCPUs under TCG: a vCPU can still execute an int3 that another vCPU's text patching (jump labels,
# enabled tracepoints) has just replaced, and the guest kernel dies with "Oops: int3" in code nothing of ours
# touched (tests/vm/README.md). That is QEMU's, not the guest's or the agent's: such a guest is booted once
# more, and the first crash is kept beside the results.
TCG_PATCH_RACE = "Oops: int3"


def run_vm(opts, clock=None):
    """Boots the VM, runs opts.guest_script in it and returns its exit status; raises on setup or VM failure.
    A guest that dies of TCG's text-patching race before its script finished is booted once more."""
    clock = clock or Clock()
    try:
        return _run_vm_once(opts, clock)
    except VmRunError as first:
        if opts.shell or not first.crash or not first.crash.startswith(TCG_PATCH_RACE):
            raise
        clock.log(f"the guest kernel died of TCG's text-patching race before its script finished ({first.crash}); "
                  "booting it once more")
        first_console = _console_of(opts)
        result = _run_vm_once(opts, clock)
        (result.results_dir / "console-first-boot.log").write_text(first_console)
        (result.results_dir / "tcg-patch-race-retried.txt").write_text(first.crash + "\n")
        return result


def _results_dir(opts):
    # A shell session gets its own results dir so that it does not wipe the last test run's results.
    default = opts.build_dir.resolve() / "vm-results" / ("shell" if opts.shell else opts.guest_script.stem)
    return (opts.results_dir or default).resolve()


def _console_of(opts):
    try:
        return (_results_dir(opts) / "console.log").read_text(errors="replace")
    except OSError as e:
        return f"(the first boot's console could not be read: {e})\n"


def _run_vm_once(opts, clock):
    require_tools(HOST_TOOLS)
    if not opts.guest_script.is_file():
        raise VmSetupError(f"guest script {opts.guest_script} does not exist")
    build_dir = opts.build_dir.resolve()
    results_dir = _results_dir(opts)
    for path in (build_dir, results_dir, opts.guest_script.resolve()):
        hidden = next((d for d in GUEST_OWN_DIRS if path.is_relative_to(d)), None)
        if hidden:
            raise VmSetupError(f"{path} is under {hidden}, which the guest mounts its own file system over; "
                               "use a build dir (and script) elsewhere")
    kernel = guest_kernel(build_dir, VM_DIR / "init.sh", opts.kernel, log=clock.log)
    shutil.rmtree(results_dir, ignore_errors=True)
    results_dir.mkdir(parents=True)
    _write_guest_env(opts, kernel, results_dir, results_dir / "guest.env")
    work = _new_work_dir(build_dir / "vm-work")
    console_log = results_dir / "console.log"
    proc, daemons = None, []
    try:
        disk = work / "nvme.img"
        with open(disk, "wb") as f:
            f.truncate(opts.disk_mib << 20)
        sockets = None
        if kernel.share == "virtiofs":
            sockets, daemons = _start_virtiofsd(work, results_dir, clock)
        cmd = _qemu_command(opts, kernel, disk, results_dir, sockets)
        (work / "qemu-command").write_text(shlex.join(cmd) + "\n")
        clock.log(f"booting {kernel.version} under TCG ({opts.smp} vCPUs of {max(opts.max_cpus, opts.smp)})")
        if opts.shell:
            clock.log("interactive: exit the shell to power off, or Ctrl-A X to kill QEMU")
            proc = subprocess.Popen(cmd, preexec_fn=_die_with_parent)
            proc.wait()
            tail = []
        else:
            with open(console_log, "wb") as console:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
                try:
                    tail = _relay_console(proc, console, time.monotonic() + opts.timeout, clock)
                except VmRunError as e:
                    crash = kernel_crash(console_log)
                    raise VmRunError(f"VM {e} after {opts.timeout:.0f}s; QEMU killed"
                                     f"{'; the guest kernel crashed: ' + crash if crash else ''}; console: {console_log}",
                                     crash)
        status_file = results_dir / "guest-exit-status"
        if (results_dir / "init-error").exists():
            raise VmRunError(f"guest init failed: {(results_dir / 'init-error').read_text().strip()}")
        if not status_file.exists():
            crash = kernel_crash(console_log)
            if crash:
                raise VmRunError(f"the guest kernel crashed before the guest script finished, so no check ran on "
                                 f"its results: {crash}; QEMU exited with status {proc.returncode}; console: "
                                 f"{console_log}", crash)
            raise VmRunError(f"QEMU exited with status {proc.returncode} before the guest script finished; "
                             "last console lines:\n" + "\n".join(tail))
        status = int(status_file.read_text())
        clock.log(f"VM powered off; guest exit status {status}; results in {results_dir}")
        return VmResult(status, results_dir, console_log, clock.elapsed(), kernel)
    finally:
        for p in [proc, *daemons]:
            if p is not None:
                _stop(p)
        if not opts.keep_work:
            shutil.rmtree(work, ignore_errors=True)


def raise_on_sigterm():
    """Turns SIGTERM (CTest's timeout, a CI cancel) into KeyboardInterrupt so that cleanup runs."""
    def handler(signum, _frame):
        raise KeyboardInterrupt(f"interrupted by signal {signum}; QEMU stopped")
    signal.signal(signal.SIGTERM, handler)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("guest_script", type=Path, help="bash script run in the guest (host path)")
    parser.add_argument("--build-dir", type=Path, default=SOURCE_DIR / "build")
    parser.add_argument("--kernel", choices=sorted(KERNELS), default="6.1", help="Debian guest kernel")
    parser.add_argument("--results-dir", type=Path, help="default: BUILD/vm-results/<script name, or shell>")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before QEMU is killed")
    parser.add_argument("--shell", action="store_true", help="interactive shell in the guest instead of the script")
    parser.add_argument("--nvme-params", default="poll_queues=1", help="parameters of modprobe nvme")
    parser.add_argument("--kernel-args", default="", help="appended to the guest kernel's command line")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="extra guest variable")
    parser.add_argument("--keep-work", action="store_true", help="keep the work dir (disk image) for debugging")
    args = parser.parse_args(argv)
    env = dict(kv.split("=", 1) for kv in args.env)
    opts = VmOptions(guest_script=args.guest_script.resolve(), build_dir=args.build_dir,
                     results_dir=args.results_dir, env=env, timeout=args.timeout, shell=args.shell,
                     nvme_params=args.nvme_params, keep_work=args.keep_work, kernel=args.kernel,
                     kernel_args=args.kernel_args)
    raise_on_sigterm()
    try:
        result = run_vm(opts)
    except (VmSetupError, VmRunError, KeyboardInterrupt) as e:
        print(f"vmrun: FAILED: {e}", file=sys.stderr)
        return 2
    return result.exit_status


if __name__ == "__main__":
    sys.exit(main())
