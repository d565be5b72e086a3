#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks, on this kernel, that the capability set of nvme-adaptd.service is the one the agent needs.

Each probe runs in a child started by setpriv as uid 0 with exactly a given capability set (what systemd
does with CapabilityBoundingSet= for a root service). The probes do what the agent does, on objects that
exist on any machine:
  bpf_ringbuf   BPF_MAP_CREATE of a ring buffer                       (CAP_BPF)
  bpf_raw_tp    BPF_PROG_LOAD of a raw tracepoint program              (CAP_BPF + CAP_PERFMON)
  btf_fd        BPF_BTF_GET_NEXT_ID + BPF_BTF_GET_FD_BY_ID, the calls libbpf makes to load a kernel
                module's BTF (nvme_core) for tp_btf/fentry                 (CAP_SYS_ADMIN)
  proc_exe      readlink /proc/PID/exe and read /proc/PID/maps of a full-capability root process, as
                USDT/uprobe attachment does                                (CAP_SYS_PTRACE)
  owner_write   write a root-owned 0644 file and open a root-owned 0200 file for writing, as the sysfs,
                module-parameter, reset_controller and /proc/irq levers do   (no capability: uid 0 owns them)
  foreign_write write a 0600 file owned by another uid                     (must FAIL: no CAP_DAC_OVERRIDE)
  chgrp_member  chgrp the API socket's file to a supplementary group         (no capability)
  chgrp_other   chgrp to a group the process is not in                       (must FAIL: no CAP_CHOWN)
  uvnvme_connect connect to a 0660 driver socket of another uid through the group (no capability),
                and without the group                                      (must FAIL: no CAP_DAC_OVERRIDE)
Usage: capability_probe.py UNIT_FILE      (as root)
"""
import ctypes
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile

BPF_SYSCALL = {"x86_64": 321, "aarch64": 280}
BPF_MAP_CREATE, BPF_PROG_LOAD, BPF_BTF_GET_FD_BY_ID, BPF_BTF_GET_NEXT_ID = 0, 5, 19, 23
BPF_MAP_TYPE_RINGBUF = 27
BPF_PROG_TYPE_RAW_TRACEPOINT = 17
ATTR_SIZE = 128
SUPPLEMENTARY_GID = 4242  # any gid: the kernel does not look groups up by name


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def bpf(cmd, attr):
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(bytes(attr).ljust(ATTR_SIZE, b"\0"), ATTR_SIZE)
    rc = libc.syscall(BPF_SYSCALL[platform.machine()], cmd, buf, ATTR_SIZE)
    return rc, ctypes.get_errno(), buf


def u32s(*values):
    return b"".join(v.to_bytes(4, "little") for v in values)


def probe_bpf_ringbuf():
    # map_type, key_size, value_size, max_entries (one page multiple, power of two)
    rc, err, _ = bpf(BPF_MAP_CREATE, u32s(BPF_MAP_TYPE_RINGBUF, 0, 0, 1 << 16))
    return rc >= 0, err


def probe_bpf_raw_tp():
    insns = bytes([0xB7, 0, 0, 0, 0, 0, 0, 0,  # r0 = 0
                   0x95, 0, 0, 0, 0, 0, 0, 0])  # exit
    insns_buf = ctypes.create_string_buffer(insns, len(insns))
    license_buf = ctypes.create_string_buffer(b"GPL")
    attr = (u32s(BPF_PROG_TYPE_RAW_TRACEPOINT, 2)
            + ctypes.addressof(insns_buf).to_bytes(8, "little")
            + ctypes.addressof(license_buf).to_bytes(8, "little"))
    rc, err, _ = bpf(BPF_PROG_LOAD, attr)
    return rc >= 0, err


def probe_btf_fd():
    rc, err, buf = bpf(BPF_BTF_GET_NEXT_ID, u32s(0, 0))
    if rc < 0:
        return False, err
    next_id = int.from_bytes(buf.raw[4:8], "little")
    rc, err, _ = bpf(BPF_BTF_GET_FD_BY_ID, u32s(next_id))
    return rc >= 0, err


def probe_proc_exe(pid):
    try:
        os.readlink(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/maps") as maps:
            maps.read(1)
        return True, 0
    except PermissionError as e:
        return False, e.errno


def probe_write(*paths):
    try:
        for path in paths:
            with open(path, "w") as f:
                f.write("1\n")
        return True, 0
    except PermissionError as e:
        return False, e.errno


def probe_chgrp(path, gid):
    try:
        os.chown(path, -1, gid)
        return True, 0
    except PermissionError as e:
        return False, e.errno


def probe_connect(path):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
        return True, 0
    except PermissionError as e:
        return False, e.errno


def run_probe(argv):
    name, args = argv[0], argv[1:]
    probes = {"bpf_ringbuf": probe_bpf_ringbuf, "bpf_raw_tp": probe_bpf_raw_tp, "btf_fd": probe_btf_fd,
              "proc_exe": lambda: probe_proc_exe(int(args[0])), "write": lambda: probe_write(*args),
              "chgrp": lambda: probe_chgrp(args[0], int(args[1])), "connect": lambda: probe_connect(args[0])}
    ok, err = probes[name]()
    print(f"{name}: {'allowed' if ok else 'denied: ' + os.strerror(err)}")
    sys.exit(0 if ok else 3)


def unit_capabilities(unit_path):
    text = open(unit_path).read()
    sets = {}
    for key in ("CapabilityBoundingSet", "AmbientCapabilities"):
        found = re.findall(rf"^{key}=(.*)$", text, re.M)
        if len(found) != 1:
            fail(f"{unit_path}: expected one {key}= line, found {len(found)}")
        sets[key] = sorted(found[0].split())
    if sets["CapabilityBoundingSet"] != sets["AmbientCapabilities"]:
        fail(f"{unit_path}: CapabilityBoundingSet {sets['CapabilityBoundingSet']} differs from "
             f"AmbientCapabilities {sets['AmbientCapabilities']}")
    if "SupplementaryGroups=nvme-adapt" not in text:
        fail(f"{unit_path}: no SupplementaryGroups=nvme-adapt (the API socket chgrp relies on it)")
    return [c.lower().removeprefix("cap_") for c in sets["CapabilityBoundingSet"]]


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--probe":
        run_probe(sys.argv[2:])
    if len(sys.argv) != 2:
        fail("usage: capability_probe.py UNIT_FILE")
    if os.geteuid() != 0:
        fail("needs root: the probes run as uid 0 with a reduced capability set (run the tests as root)")
    caps = unit_capabilities(sys.argv[1])
    print(f"unit capabilities: {', '.join(caps)}")

    work = tempfile.mkdtemp(prefix="nvme-adapt-caps-")
    owned_0644 = os.path.join(work, "attr0644")
    owned_0200 = os.path.join(work, "reset0200")
    foreign = os.path.join(work, "foreign0600")
    socket_file = os.path.join(work, "agent.sock")
    for path, mode in ((owned_0644, 0o644), (owned_0200, 0o200), (foreign, 0o600), (socket_file, 0o660)):
        open(path, "w").close()
        os.chmod(path, mode)
    os.chown(foreign, 12345, 12345)
    os.chmod(work, 0o755)
    target = subprocess.Popen(["sleep", "60"])  # full capabilities, like a driver run as root
    driver_socket_path = os.path.join(work, "driver.sock")  # like /run/uvnvme/PID.sock of a user's driver
    driver_socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    driver_socket.bind(driver_socket_path)
    driver_socket.listen(4)
    os.chown(driver_socket_path, 12345, SUPPLEMENTARY_GID)
    os.chmod(driver_socket_path, 0o660)

    def check(label, probe, with_caps, expect_allowed, groups=None):
        cmd = ["setpriv", "--bounding-set=-all" + "".join(f",+{c}" for c in with_caps),
               "--inh-caps=-all", "--ambient-caps=-all"]
        cmd += [f"--groups={groups}"] if groups else ["--clear-groups"]
        cmd += ["--", sys.executable, os.path.abspath(__file__), "--probe"] + probe
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode not in (0, 3):
            fail(f"{label}: probe did not run (exit {result.returncode}): {result.stderr.strip()}")
        allowed = result.returncode == 0
        verdict = "ok" if allowed == expect_allowed else "WRONG"
        print(f"{verdict:5} {label}: {result.stdout.strip()} "
              f"(caps: {','.join(with_caps) or 'none'}; expected {'allowed' if expect_allowed else 'denied'})")
        return allowed == expect_allowed

    without = lambda cap: [c for c in caps if c != cap]
    results = [
        check("ring buffer map with the unit's set", ["bpf_ringbuf"], caps, True),
        check("ring buffer map with no capability", ["bpf_ringbuf"], [], False),
        check("raw_tp program with the unit's set", ["bpf_raw_tp"], caps, True),
        check("raw_tp program with CAP_BPF+CAP_PERFMON only", ["bpf_raw_tp"], ["bpf", "perfmon"], True),
        check("raw_tp program with CAP_BPF only", ["bpf_raw_tp"], ["bpf"], False),
        check("module BTF fd with the unit's set", ["btf_fd"], caps, True),
        check("module BTF fd without CAP_SYS_ADMIN", ["btf_fd"], without("sys_admin"), False),
        check("/proc/PID/exe of a root process with the unit's set", ["proc_exe", str(target.pid)], caps, True),
        check("/proc/PID/exe without CAP_SYS_PTRACE", ["proc_exe", str(target.pid)], without("sys_ptrace"), False),
        check("/proc/PID/exe with CAP_DAC_READ_SEARCH instead of CAP_SYS_PTRACE", ["proc_exe", str(target.pid)],
              without("sys_ptrace") + ["dac_read_search"], False),
        check("root-owned 0644 and 0200 files with the unit's set", ["write", owned_0644, owned_0200], caps, True),
        check("another uid's 0600 file with the unit's set", ["write", foreign], caps, False),
        check("chgrp to a supplementary group", ["chgrp", socket_file, str(SUPPLEMENTARY_GID)], caps, True,
              groups=str(SUPPLEMENTARY_GID)),
        check("chgrp to a group the process is not in", ["chgrp", socket_file, str(SUPPLEMENTARY_GID + 1)], caps,
              False),
        check("driver socket of another uid through the group", ["connect", driver_socket_path], caps, True,
              groups=str(SUPPLEMENTARY_GID)),
        check("driver socket of another uid without the group", ["connect", driver_socket_path], caps, False),
    ]
    driver_socket.close()
    os.unlink(driver_socket_path)
    target.kill()
    target.wait()
    for path in (owned_0644, owned_0200, foreign, socket_file):
        os.unlink(path)
    os.rmdir(work)
    wrong = results.count(False)
    print(f"{len(results) - wrong} passed, {wrong} failed")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
