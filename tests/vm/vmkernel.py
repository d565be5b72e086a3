# SPDX-License-Identifier: Apache-2.0
"""Guest kernel and initramfs for the VM tests, cached in the build tree.

The kernel's Debian packages come from vmpackages.py (apt-get download, cached). Its kernel (decompressed to an
ELF vmlinux that QEMU boots through the PVH entry) and a small initramfs (static busybox, the init script, the
modules the guest needs with their dependencies from modules.dep, decompressed) are built from them once per
input set and kept in BUILD/vm-cache/<release>/: a later run finds everything in the cache and neither
downloads nor unpacks. Modules the kernel has built in (modules.builtin) are left out; /init does not load them.
The host /boot and /lib/modules are never touched.
"""

import fcntl
import gzip
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

from vmpackages import KERNELS, VmSetupError, kernel_packages, run as _run

# What the guest loads: the NVMe driver under test, virtio PCI and the file system that brings the host root
# in: 9p, or virtio-fs on kernels without 9p (the cloud flavours). Their dependencies (nvme-core, virtio_ring,
# netfs, fscache, ...) come from modules.dep.
SHARE_MODULES = {"9p": ("9pnet_virtio", "9p"), "virtiofs": ("virtiofs",)}
# NVMe over Fabrics (the fabrics test bed): the target with its TCP transport and the kernel's TCP host. In every
# initramfs (a few hundred KB); /init loads them only when guest.env names them (NVA_EXTRA_MODULES).
FABRICS_MODULES = ("configfs", "nvmet", "nvmet_tcp", "nvme_fabrics", "nvme_tcp")
# Packed where the kernel has them as modules, loaded only when a test names them: crc32c for NVMe/TCP's
# header and data digests (nvme_tcp asks the crypto API for it, which a guest without modprobe cannot load).
OPTIONAL_MODULES = ("crc32c_generic",)
GUEST_MODULES = ("nvme", "virtio_pci", *SHARE_MODULES["9p"], *SHARE_MODULES["virtiofs"], *FABRICS_MODULES)
# The modules whose BTF the collectors read (/sys/kernel/btf/<name> when they are modules).
BTF_MODULES = ("nvme_core", "nvme")
BUSYBOX = Path("/bin/busybox")
# Bump when the cached kernel image or initramfs layout changes in a way the inputs below do not capture.
CACHE_FORMAT = "3"
PT_INTERP = 3
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MODULE_SUFFIX = re.compile(r"\.ko(\.(xz|zst|gz))?$")

__all__ = ["KERNELS", "VmSetupError", "GuestKernel", "guest_kernel", "vmlinux_elf", "kernel_file", "module_dir"]


@dataclass
class GuestKernel:
    name: str  # 6.1, 6.12, 7.3
    version: str  # the kernel release, uname -r
    packages: list
    image: Path  # an uncompressed ELF vmlinux booted through its PVH entry, or the bzImage
    initramfs: Path
    builtin: list  # which of GUEST_MODULES and BTF_MODULES this kernel has built in
    share: str  # how the guest mounts the host root and the results: "9p" or "virtiofs"
    downloaded: bool
    built: bool


def _module_name(path):
    return MODULE_SUFFIX.sub("", Path(path).name).replace("-", "_")


def module_dir(unpacked, version):
    """The unpacked lib/modules/<release>: /usr/lib/modules on trixie (merged /usr), /lib/modules on bookworm."""
    for base in (unpacked, unpacked / "usr"):
        if (base / "lib/modules" / version).is_dir():
            return base, base / "lib/modules" / version
    raise VmSetupError(f"the kernel packages hold no lib/modules/{version}")


def kernel_file(unpacked, moddir, version, boot_name, moddir_name):
    """boot/<boot_name>-<release> (bookworm, trixie) or lib/modules/<release>/<moddir_name> (7.3's split packages)."""
    for path in (unpacked / "boot" / f"{boot_name}-{version}", moddir / moddir_name):
        if path.exists():
            return path
    raise VmSetupError(f"the kernel packages hold neither boot/{boot_name}-{version} nor {moddir / moddir_name}")


def _builtin_modules(moddir):
    builtin = moddir / "modules.builtin"
    return {_module_name(line) for line in builtin.read_text().split()} if builtin.exists() else set()


def _module_closure(moddir, roots, builtin):
    """Relative paths of the root modules that are not built in and everything they depend on, per modules.dep."""
    deps = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        path, _, needs = line.partition(":")
        deps[path] = needs.split()
    by_name = {_module_name(p): p for p in deps}
    wanted, todo = set(), []
    for root in roots:
        name = root.replace("-", "_")
        if name in builtin:
            continue
        if name not in by_name:
            raise VmSetupError(f"module {root} is neither in {moddir}/modules.dep nor in modules.builtin")
        todo.append(by_name[name])
    while todo:
        path = todo.pop()
        if path not in wanted:
            wanted.add(path)
            todo.extend(deps[path])
    return sorted(wanted)


def _decompressed_module(path):
    """The module's bytes, uncompressed (trixie ships .ko.xz): busybox modprobe then needs no decompressor."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".gz"):
        return gzip.decompress(data)
    if path.name.endswith(".zst"):
        return _run_bytes(["zstd", "-d", "-c", "-q"], data, "zstd (Debian package zstd)")
    return data


def _run_bytes(cmd, data, what):
    try:
        return subprocess.run(cmd, input=data, capture_output=True, check=True).stdout
    except FileNotFoundError as e:
        raise VmSetupError(f"{cmd[0]} not found: install {what}") from e
    except subprocess.CalledProcessError as e:
        raise VmSetupError(f"`{' '.join(cmd)}` failed with status {e.returncode}: {e.stderr.decode().strip()}") from e


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
    for part in (CACHE_FORMAT, version, " ".join(GUEST_MODULES + OPTIONAL_MODULES)):
        h.update(part.encode() + b"\0")
    h.update(init_script.read_bytes())
    h.update(BUSYBOX.read_bytes())
    return h.hexdigest()[:12]


def _share(moddir, builtin):
    """9p where the kernel has it (the tests' first transport), else virtio-fs; neither fails the run."""
    available = builtin | {_module_name(line.partition(":")[0])
                           for line in (moddir / "modules.dep").read_text().splitlines()}
    for share, modules in SHARE_MODULES.items():
        if all(m in available for m in modules):
            return share
    raise VmSetupError(f"the kernel in {moddir} has neither 9p nor virtio-fs: the guest cannot mount the host root")


def _build_initramfs(moddir, version, builtin, share, init_script, target, log):
    present = {_module_name(line.partition(":")[0]) for line in (moddir / "modules.dep").read_text().splitlines()}
    optional = tuple(m for m in OPTIONAL_MODULES if m in present)
    roots = ("nvme", "virtio_pci", *SHARE_MODULES[share], *FABRICS_MODULES, *optional)
    modules = _module_closure(moddir, roots, builtin)
    built_in = [m for m in roots if m in builtin]
    log(f"initramfs: {len(modules)} modules: {' '.join(Path(m).name for m in modules)}"
        f"{'; built in: ' + ' '.join(built_in) if built_in else ''}")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="initramfs-") as tmp:
        root = Path(tmp)
        for d in ("bin", "dev", "proc", "sys", "tmp", "host", "results"):
            (root / d).mkdir()
        shutil.copy2(BUSYBOX, root / "bin/busybox")
        shutil.copy2(init_script, root / "init")
        os.chmod(root / "init", 0o755)
        dst_moddir = root / "lib/modules" / version
        dst_moddir.mkdir(parents=True)  # also with no module to load (everything built in)
        for rel in modules:
            dst = dst_moddir / MODULE_SUFFIX.sub(".ko", rel)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(_decompressed_module(moddir / rel))
        for meta in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
            if (moddir / meta).exists():
                shutil.copy2(moddir / meta, dst_moddir / meta)
        _run(["depmod", "-b", str(root), version])
        files = _run(["find", ".", "-mindepth", "1"], cwd=root).stdout
        # Uncompressed on purpose: decompressing under TCG costs more boot time than reading a few MB.
        partial = target.with_suffix(".partial")
        with open(partial, "wb") as out:
            subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=root, input=files.encode(),
                           stdout=out, check=True)
        partial.rename(target)


def vmlinux_elf(bzimage_path):
    """The ELF vmlinux a bzImage carries (its payload, xz on bookworm, zstd on trixie, decompressed), or None
    when the payload is in another format."""
    bzimage = bzimage_path.read_bytes()
    setup_sects = bzimage[0x1F1] or 4
    payload_offset, payload_length = struct.unpack_from("<II", bzimage, 0x248)
    start = (setup_sects + 1) * 512 + payload_offset
    payload = bzimage[start:start + payload_length]
    if payload.startswith(XZ_MAGIC):
        elf = lzma.LZMADecompressor().decompress(payload)
    elif payload.startswith(ZSTD_MAGIC):
        # The build appends the uncompressed size (4 bytes) after the zstd frame.
        elf = _run_bytes(["zstd", "-d", "-c", "-q"], payload[:-4], "zstd (Debian package zstd)")
    else:
        return None
    return elf if elf.startswith(b"\x7fELF") else None


def _pvh_vmlinux(config, bzimage_path, target):
    """Writes the bzImage's ELF vmlinux to target when the kernel has a PVH entry point.

    QEMU boots such an ELF directly; the bzImage would decompress itself in the guest, which under TCG takes
    several seconds of a boot that is otherwise about 3 s. Returns False (bzImage it is) when not possible.
    """
    if "CONFIG_PVH=y" not in config.read_text().splitlines():
        return False
    elf = vmlinux_elf(bzimage_path)
    if elf is None:
        return False
    partial = target.with_suffix(".partial")
    partial.write_bytes(elf)
    partial.rename(target)
    return True


def _build(packages, kdir, initramfs, init_script, log):
    """Unpacks the packages and writes kdir's image, initramfs and builtin.txt; returns the image."""
    version = packages.release
    with tempfile.TemporaryDirectory(dir=kdir.parent, prefix="unpack-") as tmp:
        unpacked = Path(tmp)
        for deb in packages.debs:
            log(f"kernel: unpacking {deb.name} with dpkg-deb -x into {unpacked}")
            _run(["dpkg-deb", "-x", str(deb), str(unpacked)])
        base, moddir = module_dir(unpacked, version)
        _run(["depmod", "-b", str(base), version])
        for old in [*kdir.glob("initramfs-*.cpio"), *(kdir / n for n in ("vmlinux", "vmlinuz", "builtin.txt", "share.txt"))]:
            old.unlink(missing_ok=True)
        builtin = _builtin_modules(moddir)
        share = _share(moddir, builtin)
        _build_initramfs(moddir, version, builtin, share, init_script, initramfs, log)
        (kdir / "share.txt").write_text(share + "\n")
        bzimage = kernel_file(unpacked, moddir, version, "vmlinuz", "vmlinuz")
        image = kdir / "vmlinux"
        if not _pvh_vmlinux(kernel_file(unpacked, moddir, version, "config", "config"), bzimage, image):
            image = kdir / "vmlinuz"
            shutil.copy2(bzimage, image)
        (kdir / "builtin.txt").write_text(
            "".join(f"{m}\n" for m in sorted(set(GUEST_MODULES + BTF_MODULES)) if m in builtin))
        log(f"kernel: {'ELF vmlinux, PVH entry' if image.name == 'vmlinux' else 'bzImage'} in {image}")
    return image


def guest_kernel(build_dir, init_script, kernel="6.1", log=print):
    """Returns the cached guest kernel `kernel` (a key of KERNELS) and its initramfs, fetching and building what
    is missing."""
    if kernel not in KERNELS:
        raise VmSetupError(f"unknown guest kernel {kernel!r}; known: {', '.join(KERNELS)}")
    cache = Path(build_dir) / "vm-cache"
    cache.mkdir(parents=True, exist_ok=True)
    _check_busybox()
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once share one download
        packages = kernel_packages(cache, KERNELS[kernel], log)
        version = packages.release
        kdir = cache / version
        kdir.mkdir(exist_ok=True)
        initramfs = kdir / f"initramfs-{_initramfs_key(version, init_script)}.cpio"
        image = next((kdir / name for name in ("vmlinux", "vmlinuz") if (kdir / name).exists()), None)
        built = image is None or not initramfs.exists() or not all((kdir / n).exists() for n in ("builtin.txt", "share.txt"))
        if built:
            image = _build(packages, kdir, initramfs, init_script, log)
        else:
            log(f"kernel: cached {image.name} and {initramfs.name} for {version}")
        builtin = (kdir / "builtin.txt").read_text().split()
        share = (kdir / "share.txt").read_text().strip()
    return GuestKernel(kernel, version, [d.name for d in packages.debs], image, initramfs, builtin, share,
                       packages.downloaded, built)
