"""Guest kernel and initramfs for the VM tests, cached in the build tree.

Debian 12's `linux-image-amd64` depends on one `linux-image-6.1.0-N-amd64`; that package is fetched once with
`apt-get download` into BUILD/vm-cache/ and kept there. Its kernel (decompressed to an ELF vmlinux that QEMU
boots through the PVH entry) and a small initramfs (static busybox, the init script, the modules the guest
needs with their dependencies from modules.dep) are built from it once per input set and kept as well: a
later run finds everything in the cache and neither downloads nor unpacks.
The host /boot and /lib/modules are never touched.
"""

import fcntl
import hashlib
import lzma
import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# What the guest loads: the NVMe driver under test, virtio PCI and the 9p file system that brings the host
# root in. Their dependencies (nvme-core, virtio_ring, netfs, fscache, ...) come from modules.dep.
GUEST_MODULES = ("nvme", "virtio_pci", "9pnet_virtio", "9p")
META_PACKAGE = "linux-image-amd64"
KERNEL_PACKAGE_RE = re.compile(r"^linux-image-(6\.1\.0-\d+-amd64)$")
BUSYBOX = Path("/bin/busybox")
# Bump when the cached kernel image or initramfs layout changes in a way the inputs below do not capture.
CACHE_FORMAT = "2"
PT_INTERP = 3
XZ_MAGIC = b"\xfd7zXZ\x00"


class VmSetupError(RuntimeError):
    """Something the VM needs cannot be had on this machine; the message says what."""


@dataclass
class GuestKernel:
    version: str
    package: Path
    image: Path  # an uncompressed ELF vmlinux booted through its PVH entry, or the bzImage
    initramfs: Path
    downloaded: bool
    built: bool


def _run(cmd, **kwargs):
    try:
        return subprocess.run(cmd, check=True, text=True, capture_output=True, **kwargs)
    except FileNotFoundError as e:
        raise VmSetupError(f"{cmd[0]} not found: install it (scripts/install-deps lists it)") from e
    except subprocess.CalledProcessError as e:
        raise VmSetupError(f"`{' '.join(map(str, cmd))}` failed with status {e.returncode}: "
                           f"{(e.stderr or e.stdout).strip()}") from e


def _kernel_package_name():
    """The linux-image-6.1.0-N-amd64 that Debian's linux-image-amd64 depends on, from the apt lists."""
    out = subprocess.run(["apt-cache", "depends", META_PACKAGE], text=True, capture_output=True)
    if out.returncode != 0:
        raise VmSetupError(f"apt-cache does not know {META_PACKAGE} ({out.stderr.strip()}); "
                           "this needs Debian 12 apt lists: run apt-get update")
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "Depends:" and KERNEL_PACKAGE_RE.match(fields[1]):
            return fields[1]
    raise VmSetupError(f"{META_PACKAGE} depends on no linux-image-6.1.0-N-amd64 here "
                       f"(apt-cache says: {out.stdout.strip()!r}); the VM test needs Debian 12's 6.1 kernel")


def _cached_package(cache):
    debs = sorted(cache.glob("linux-image-6.1.0-*-amd64_*_amd64.deb"))
    return debs[-1] if debs else None


def _download_package(cache, log):
    name = _kernel_package_name()
    log(f"kernel: downloading {name} with apt-get download (once; cached in {cache})")
    with tempfile.TemporaryDirectory(dir=cache, prefix="download-") as tmp:
        os.chmod(tmp, 0o777)  # apt drops privileges to _apt for the download when it can write there
        _run(["apt-get", "download", "-q", name], cwd=tmp)
        debs = list(Path(tmp).glob(f"{name}_*.deb"))
        if len(debs) != 1:
            raise VmSetupError(f"apt-get download {name} produced {len(debs)} packages in {tmp}")
        for old in cache.glob("linux-image-6.1.0-*-amd64_*_amd64.deb"):
            old.unlink()
        target = cache / debs[0].name
        shutil.move(debs[0], target)
    return target


def _package_version(deb):
    name = _run(["dpkg-deb", "-f", str(deb), "Package"]).stdout.strip()
    match = KERNEL_PACKAGE_RE.match(name)
    if not match:
        raise VmSetupError(f"{deb} holds package {name!r}, not linux-image-6.1.0-N-amd64")
    return match.group(1)


def _module_closure(unpacked, version, roots):
    """Relative paths of the root modules and everything they depend on, per modules.dep."""
    moddir = unpacked / "lib/modules" / version
    deps = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        path, _, needs = line.partition(":")
        deps[path] = needs.split()
    by_name = {re.sub(r"\.ko(\.\w+)?$", "", Path(p).name).replace("-", "_"): p for p in deps}
    wanted, todo = set(), []
    for root in roots:
        path = by_name.get(root.replace("-", "_"))
        if path is None:
            raise VmSetupError(f"module {root} is not in {moddir}/modules.dep (built into this kernel or absent)")
        todo.append(path)
    while todo:
        path = todo.pop()
        if path not in wanted:
            wanted.add(path)
            todo.extend(deps[path])
    return sorted(wanted)


def _check_busybox():
    if not BUSYBOX.exists():
        raise VmSetupError(f"{BUSYBOX} is missing: install busybox-static")
    # A dynamically linked busybox (Debian's `busybox` package) would need its loader in the initramfs.
    elf = BUSYBOX.read_bytes()
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    if any(struct.unpack_from("<I", elf, phoff + i * phentsize)[0] == PT_INTERP for i in range(phnum)):
        raise VmSetupError(f"{BUSYBOX} is dynamically linked: install busybox-static")


def _initramfs_key(version, init_script):
    h = hashlib.sha256()
    for part in (CACHE_FORMAT, version, " ".join(GUEST_MODULES)):
        h.update(part.encode() + b"\0")
    h.update(init_script.read_bytes())
    h.update(BUSYBOX.read_bytes())
    return h.hexdigest()[:12]


def _build_initramfs(unpacked, version, init_script, target, log):
    modules = _module_closure(unpacked, version, GUEST_MODULES)
    log(f"initramfs: {len(modules)} modules: {' '.join(Path(m).name for m in modules)}")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="initramfs-") as tmp:
        root = Path(tmp)
        for d in ("bin", "dev", "proc", "sys", "tmp", "host", "results"):
            (root / d).mkdir()
        shutil.copy2(BUSYBOX, root / "bin/busybox")
        shutil.copy2(init_script, root / "init")
        os.chmod(root / "init", 0o755)
        src_moddir = unpacked / "lib/modules" / version
        dst_moddir = root / "lib/modules" / version
        for rel in modules:
            (dst_moddir / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src_moddir / rel, dst_moddir / rel)
        for meta in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
            if (src_moddir / meta).exists():
                shutil.copy2(src_moddir / meta, dst_moddir / meta)
        _run(["depmod", "-b", str(root), version])
        files = _run(["find", ".", "-mindepth", "1"], cwd=root).stdout
        # Uncompressed on purpose: decompressing under TCG costs more boot time than reading a few MB.
        partial = target.with_suffix(".partial")
        with open(partial, "wb") as out:
            subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=root, input=files.encode(),
                           stdout=out, check=True)
        partial.rename(target)


def _pvh_vmlinux(unpacked, version, target):
    """Writes the bzImage's xz payload, an ELF vmlinux, to target when the kernel has a PVH entry point.

    QEMU boots such an ELF directly; the bzImage would decompress itself in the guest, which under TCG takes
    several seconds of a boot that is otherwise about 3 s. Returns False (bzImage it is) when not possible.
    """
    config = (unpacked / "boot" / f"config-{version}").read_text().splitlines()
    bzimage = (unpacked / "boot" / f"vmlinuz-{version}").read_bytes()
    setup_sects = bzimage[0x1F1] or 4
    payload_offset, payload_length = struct.unpack_from("<II", bzimage, 0x248)
    start = (setup_sects + 1) * 512 + payload_offset
    payload = bzimage[start:start + payload_length]
    if "CONFIG_PVH=y" not in config or not payload.startswith(XZ_MAGIC):
        return False
    elf = lzma.LZMADecompressor().decompress(payload)
    if not elf.startswith(b"\x7fELF"):
        return False
    partial = target.with_suffix(".partial")
    partial.write_bytes(elf)
    partial.rename(target)
    return True


def guest_kernel(build_dir, init_script, log=print):
    """Returns the cached guest kernel and initramfs, fetching and building what is missing."""
    cache = Path(build_dir) / "vm-cache"
    cache.mkdir(parents=True, exist_ok=True)
    _check_busybox()
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once share one download
        deb = _cached_package(cache)
        downloaded = deb is None
        if downloaded:
            deb = _download_package(cache, log)
        else:
            log(f"kernel: cached {deb.name} (no download)")
        version = _package_version(deb)
        kdir = cache / version
        kdir.mkdir(exist_ok=True)
        initramfs = kdir / f"initramfs-{_initramfs_key(version, init_script)}.cpio"
        image = next((kdir / name for name in ("vmlinux", "vmlinuz") if (kdir / name).exists()), None)
        built = image is None or not initramfs.exists()
        if built:
            with tempfile.TemporaryDirectory(dir=cache, prefix="unpack-") as tmp:
                unpacked = Path(tmp)
                log(f"kernel: unpacking {deb.name} with dpkg-deb -x into {unpacked}")
                _run(["dpkg-deb", "-x", str(deb), str(unpacked)])
                _run(["depmod", "-b", str(unpacked), version])
                for old in [*kdir.glob("initramfs-*.cpio"), kdir / "vmlinux", kdir / "vmlinuz"]:
                    old.unlink(missing_ok=True)
                _build_initramfs(unpacked, version, init_script, initramfs, log)
                image = kdir / "vmlinux"
                if not _pvh_vmlinux(unpacked, version, image):
                    image = kdir / "vmlinuz"
                    shutil.copy2(unpacked / "boot" / f"vmlinuz-{version}", image)
                log(f"kernel: {'ELF vmlinux, PVH entry' if image.name == 'vmlinux' else 'bzImage'} in {image}")
        else:
            log(f"kernel: cached {image.name} and {initramfs.name} for {version}")
    return GuestKernel(version, deb, image, initramfs, downloaded, built)
