#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Builds one of our kernel modules (kmod/README.md) for a Debian kernel, from Debian's own sources.

  kmod/build_module.py [--build-dir build] [--module nvme-pci|nvmet] --kernel 6.1|6.12|7.3

Prints the path of the built module (for nvmet: nvmet.ko; nvmet-tcp.ko and nvme-loop.ko, built with it against
its changed structures, lie beside it). For the kernel that Debian's package of that name depends on today (the
same one the VM tests boot, tests/vm/vmpackages.py): the `linux-source-X` package of the image's exact version
(its tarball; only the driver's folder is extracted), the matching `linux-headers-*` and `linux-kbuild-*`, our
patch series for that kernel (kmod/<module>/patches/<kernel>/), our source files (kmod/<module>/src/) and
the project files the module shares (nvme-pci: bpf/na_pace.h). Bookworm's kernel builds with the host's gcc-12;
trixie's need gcc-14 and a newer glibc, so they build in a trixie chroot made once with mmdebstrap. Module BTF
comes from the image's own vmlinux.

Everything lands in BUILD/vm-cache/kmod/ and is reused: the downloads, the extracted sources and headers, the
chroot, and the module itself, keyed by the patches, sources, kernel version and compiler. A patch that does
not apply or a build that fails is an error naming the step (exit status 1).
"""

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.dont_write_bytecode = True
KMOD_DIR = Path(__file__).resolve().parent
SOURCE_DIR = KMOD_DIR.parent
sys.path.insert(0, str(SOURCE_DIR / "tests" / "vm"))
from vmkernel import kernel_file, module_dir, vmlinux_elf  # noqa: E402
from vmpackages import HOST_SUITE, KERNELS, PrivateApt, VmSetupError, debian_mirror, kernel_packages, run  # noqa: E402

# Trixie's kernels need its compiler and glibc (modpost links against GLIBC_2.38); objtool and pahole run
# there too.
CHROOT_PACKAGES = "gcc-14,make,libc6-dev,libelf1t64,libssl3t64,zlib1g,pahole"
CHROOT_FORMAT = "1"  # bump when CHROOT_PACKAGES changes


@dataclass(frozen=True)
class ModuleSpec:
    name: str  # the folder under kmod/
    subdir: str  # the driver's folder in the kernel tree
    kbuild: str  # what the out-of-tree build compiles (the tree's own Makefile builds every module there)
    product: str
    extra_products: tuple = ()  # built by the same make beside product, cached and kept with it
    shared_sources: tuple = ("bpf/na_pace.h",)  # project files copied beside src/ (and keyed)
    include_dirs: tuple = ()  # other extracted folders of the tree the driver's files include, copied as they are


MODULES = {
    "nvme-pci": ModuleSpec("nvme-pci", "drivers/nvme/host",
                           "obj-m := nvme.o\nnvme-y := pci.o nvme-adaptive.o nvme-adaptive-sysfs.o\n"
                           "ccflags-y += -I$(src)\n", "nvme.ko"),
    # The patched tree's own Makefile (it adds nvmet-pqt.o), for the three modules the VM loads: the patch
    # changes struct nvmet_ns, so the transports must come from the same build as nvmet.ko.
    "nvmet": ModuleSpec("nvmet", "drivers/nvme/target",
                        "include $(dir $(lastword $(MAKEFILE_LIST)))Makefile\n"
                        "obj-m := nvmet.o nvmet-tcp.o nvme-loop.o\n", "nvmet.ko",
                        extra_products=("nvmet-tcp.ko", "nvme-loop.ko"), shared_sources=(),
                        include_dirs=("drivers/nvme/host",)),  # nvme-loop includes ../host/nvme.h
}


class KmodBuildError(RuntimeError):
    """A step of the build failed; the message names it."""


class Steps:
    """Times each step for the record (build.json) and the log."""

    def __init__(self, log):
        self.log, self.rows, self.start = log, [], time.monotonic()

    def run(self, name, fn, *args):
        t = time.monotonic()
        try:
            result = fn(*args)
        except (VmSetupError, subprocess.CalledProcessError, OSError) as e:
            raise KmodBuildError(f"{name}: {e}") from e
        seconds = round(time.monotonic() - t, 1)
        self.rows.append({"step": name, "seconds": seconds})
        self.log(f"kmod: {name}: {seconds} s")
        return result


def _sh(cmd, **kwargs):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kwargs)


def _deb_field(deb, field):
    return _sh(["dpkg-deb", "-f", str(deb), field]).stdout.strip()


def _apt_options(cache, spec, log):
    if not spec.private_lists:
        return []
    apt = PrivateApt(cache, spec.suite)
    apt.ensure_lists(log)
    return apt.options()


def _download(names, target, options, log):
    """The .debs of `names` (name=version) in target, downloading those not there yet."""
    target.mkdir(parents=True, exist_ok=True)
    os.chmod(target, 0o777)  # apt downloads as _apt when it can
    debs = []
    for name in names:
        package, _, version = name.partition("=")
        found = sorted(target.glob(f"{package}_{version.replace(':', '%3a')}_*.deb"))
        if not found:
            log(f"kmod: apt-get download {name}")
            run(["apt-get", "download", "-q", *options, name], cwd=target)
            found = sorted(target.glob(f"{package}_{version.replace(':', '%3a')}_*.deb"))
        if not found:
            raise KmodBuildError(f"download: apt-get download {name} left no package in {target}")
        debs.append(found[0])
    return debs


def _header_packages(release, version, options):
    """linux-headers-<release> and the headers and kbuild packages it depends on, pinned to `version`."""
    out = run(["apt-cache", *options, "depends", f"linux-headers-{release}={version}"]).stdout
    deps = sorted({f[1] for f in (line.split() for line in out.splitlines())
                   if len(f) == 2 and f[0] in ("Depends:", "|Depends:")
                   and f[1].startswith(("linux-headers-", "linux-kbuild-"))})
    return [f"linux-headers-{release}={version}", *(f"{d}={version}" for d in deps)]


# What is extracted from a linux-source tarball: the drivers, and checkpatch.pl with its data (kmod/checkpatch.py).
EXTRACTED = ("drivers/nvme/host", "drivers/nvme/target", "scripts/checkpatch.pl", "scripts/spelling.txt",
             "scripts/const_structs.checkpatch")


def _extract_sources(source_deb, series, target, subdirs):
    """The driver folders of linux-source-<series>'s tarball, extracted once (the whole xz stream is read)."""
    marker = target / (".extracted-" + hashlib.sha256(" ".join(subdirs).encode()).hexdigest()[:8])
    if marker.exists():
        return
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    tarball = f"./usr/src/linux-source-{series}.tar.xz"
    deb = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(source_deb)], stdout=subprocess.PIPE)
    inner = subprocess.Popen(["tar", "-xO", tarball], stdin=deb.stdout, stdout=subprocess.PIPE)
    deb.stdout.close()
    _sh(["tar", "-xJ", "-C", str(target), "--strip-components=1",
         *(f"linux-source-{series}/{d}" for d in subdirs)], stdin=inner.stdout)
    if inner.wait() or deb.wait():
        raise KmodBuildError(f"extract: {tarball} not read from {source_deb.name}")
    marker.touch()


def _unpack(debs, root, marker_name):
    marker = root / marker_name
    if marker.exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    for deb in debs:
        _sh(["dpkg-deb", "-x", str(deb), str(root)])
    marker.touch()


def _trixie_chroot(cache, log):
    root = cache / "kmod" / "chroot-trixie"
    marker = root / ".nvme-adapt-chroot"
    if marker.exists() and marker.read_text() == CHROOT_FORMAT:
        return root
    shutil.rmtree(root, ignore_errors=True)
    uri, keyring = debian_mirror()
    log(f"kmod: mmdebstrap trixie chroot with {CHROOT_PACKAGES} (mirror of the machine's {HOST_SUITE} source)")
    run(["mmdebstrap", "--quiet", "--variant=minbase", f"--include={CHROOT_PACKAGES}", "trixie", str(root),
         f"deb [signed-by={keyring}] {uri} trixie main"])
    marker.write_text(CHROOT_FORMAT)
    return root


def _vmlinux(image_deb, release, target):
    """The image's ELF vmlinux beside the headers, where kbuild's BTF step looks for it."""
    if target.exists():
        return
    unpacked = target.parent / ".image"
    shutil.rmtree(unpacked, ignore_errors=True)
    _sh(["dpkg-deb", "-x", str(image_deb), str(unpacked)])
    _, moddir = module_dir(unpacked, release)
    elf = vmlinux_elf(kernel_file(unpacked, moddir, release, "vmlinuz", "vmlinuz"))
    shutil.rmtree(unpacked)
    if elf is None:
        raise KmodBuildError(f"btf: no ELF vmlinux in {image_deb.name}'s bzImage")
    target.write_bytes(elf)


def _key(module, release, version, toolchain):
    h = hashlib.sha256()
    for part in (module.name, module.kbuild, release, version, toolchain):
        h.update(part.encode() + b"\0")
    for path in sorted((KMOD_DIR / module.name / "src").iterdir()) + [SOURCE_DIR / s for s in module.shared_sources]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h


def _patch(workdir, patches):
    for patch in patches:
        result = subprocess.run(["patch", "-p1", "--forward", "--batch", "-d", str(workdir), "-i", str(patch)],
                                text=True, capture_output=True)
        if result.returncode:
            raise KmodBuildError(f"patch: {patch.relative_to(SOURCE_DIR)} does not apply: "
                                 f"{(result.stdout + result.stderr).strip()[-600:]}")


def build(kernel, build_dir, module_name="nvme-pci", log=print):
    """Path of the module built for `kernel` (a key of vmpackages.KERNELS without a flavour suffix)."""
    module = MODULES[module_name]
    spec = KERNELS.get(kernel)
    if spec is None or kernel.endswith("-cloud"):
        raise KmodBuildError(f"no module build for kernel {kernel!r}; known: 6.1, 6.12, 7.3")
    patches = sorted((KMOD_DIR / module.name / "patches" / kernel).glob("*.patch"))
    if not patches:
        raise KmodBuildError(f"patch: no patch series for {kernel} in kmod/{module.name}/patches/{kernel}")
    cache = Path(build_dir).resolve() / "vm-cache"
    kcache = cache / "kmod"
    kcache.mkdir(parents=True, exist_ok=True)
    steps = Steps(log)
    with open(kcache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        image = steps.run("kernel packages", kernel_packages, cache, spec, log)
        image_deb = next(d for d in image.debs if Path(d).name.startswith(f"linux-image-{image.release}_"))
        version = _deb_field(image_deb, "Version")
        series = ".".join(version.split(".")[:2])
        options = steps.run("apt lists", _apt_options, cache, spec, log)
        chroot = steps.run("chroot", _trixie_chroot, cache, log) if spec.private_lists else None
        toolchain = (_sh(["chroot", str(chroot), "dpkg-query", "-W", "gcc-14"]).stdout.strip() if chroot
                     else _sh(["gcc-12", "--version"]).stdout.splitlines()[0])
        key = _key(module, image.release, version, toolchain)
        for patch in patches:
            key.update(patch.name.encode() + b"\0" + patch.read_bytes())
        out_dir = kcache / "modules" / f"{image.release}-{module.name}-{key.hexdigest()[:12]}"
        product = out_dir / module.product
        if all((out_dir / p).exists() for p in (module.product, *module.extra_products)):
            log(f"kmod: cached {product}")
            return product
        debs = steps.run("download", _download, [f"linux-source-{series}={version}",
                                                   *_header_packages(image.release, version, options)],
                         kcache / "debs", options, log)
        sources = kcache / "src" / version
        steps.run("extract sources", _extract_sources, debs[0], series, sources, EXTRACTED)
        root = chroot if chroot else kcache / "headers" / image.release
        steps.run("unpack headers", _unpack, debs[1:], root, f".headers-{image.release}")
        headers = root / "usr/src" / f"linux-headers-{image.release}"
        if not chroot:  # its Makefile includes the -common tree by absolute path
            makefile = headers / "Makefile"
            makefile.write_text(makefile.read_text().replace("include /usr/src/", f"include {root}/usr/src/"))
        if not (headers / "vmlinux").exists():
            steps.run("vmlinux for BTF", _vmlinux, image_deb, image.release, headers / "vmlinux")

        work = kcache / "work" / out_dir.name
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(sources / module.subdir, work / module.subdir)
        for folder in module.include_dirs:
            shutil.copytree(sources / folder, work / folder)
        steps.run("patch", _patch, work, patches)
        driver = work / module.subdir
        for path in (KMOD_DIR / module.name / "src").iterdir():
            shutil.copy2(path, driver / path.name)
        for shared in module.shared_sources:
            shutil.copy2(SOURCE_DIR / shared, driver / Path(shared).name)
        (driver / "Kbuild").write_text(module.kbuild)
        make = ["make", f"-j{os.cpu_count() or 1}", "modules"]
        if not (headers / "scripts/../tools/bpf/resolve_btfids/resolve_btfids").exists():
            make.append("RESOLVE_BTFIDS=true")  # the headers lack it (bookworm's): BTF without the ID fix-up
        if chroot:
            inside = Path("/kmod-build")
            script = (f"mkdir -p {chroot}{inside} && mount --bind {work} {chroot}{inside} && "
                      f"mount -t proc proc {chroot}/proc && "
                      f"chroot {chroot} {' '.join(make)} -C /usr/src/linux-headers-{image.release} "
                      f"M={inside / module.subdir}")
            cmd = ["unshare", "--mount", "--fork", "sh", "-c", script]
        else:
            cmd = [*make, "-C", str(headers), f"M={driver}"]
        result = steps.run("compile", lambda: subprocess.run(cmd, text=True, capture_output=True))
        (work / "build.log").write_text(result.stdout + result.stderr)
        if result.returncode or not all((driver / p).exists() for p in (module.product, *module.extra_products)):
            raise KmodBuildError(f"compile: make failed with status {result.returncode} (log {work / 'build.log'}): "
                                 f"{(result.stdout + result.stderr).strip()[-1500:]}")
        out_dir.mkdir(parents=True, exist_ok=True)
        for extra in module.extra_products:  # before the product, whose presence marks the build complete
            shutil.copy2(driver / extra, out_dir / extra)
        shutil.copy2(driver / module.product, product.with_suffix(".partial"))
        (out_dir / "build.json").write_text(json.dumps(
            {"module": module.name, "kernel": kernel, "release": image.release, "source_version": version,
             "toolchain": toolchain, "patches": [p.name for p in patches], "steps": steps.rows,
             "seconds": round(time.monotonic() - steps.start, 1)}, indent=1) + "\n")
        shutil.copy2(work / "build.log", out_dir / "build.log")
        product.with_suffix(".partial").rename(product)
        shutil.rmtree(work)
        for stale in out_dir.parent.glob(f"{image.release}-{module.name}-*"):
            if stale != out_dir:
                shutil.rmtree(stale)
    return product


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=SOURCE_DIR / "build")
    parser.add_argument("--kernel", required=True, choices=("6.1", "6.12", "7.3"))
    parser.add_argument("--module", default="nvme-pci", choices=sorted(MODULES))
    args = parser.parse_args(argv)
    try:
        print(build(args.kernel, args.build_dir, args.module, log=lambda m: print(m, file=sys.stderr)))
    except KmodBuildError as e:
        print(f"kmod/build_module.py: {args.module} for {args.kernel}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
