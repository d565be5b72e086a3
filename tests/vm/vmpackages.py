# SPDX-License-Identifier: Apache-2.0
"""Debian kernel packages for the VM tests, fetched with `apt-get download` and cached in the build tree.

Three kernels a fleet meets: Debian 12's 6.1 (bookworm, from the machine's own apt lists) and trixie's 6.12
and trixie-backports' 7.3. The trixie suites come through a private apt sources list, lists dir and cache
dir under BUILD/vm-cache/apt/<suite>/ whose mirror is the one the machine's own apt sources use for bookworm,
read at run time; the machine's sources and lists stay untouched. Packages land in
BUILD/vm-cache/packages/<kernel>/ with a `release` file written once every package of the kernel is there:
a later run finds them and touches no network.
"""

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

META_PACKAGE = "linux-image-amd64"
APT_SOURCES = Path("/etc/apt/sources.list")
APT_SOURCE_PARTS = Path("/etc/apt/sources.list.d")
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
HOST_SUITE = "bookworm"  # the suite whose mirror the machine's sources name


class VmSetupError(RuntimeError):
    """Something the VM needs cannot be had on this machine; the message says what."""


@dataclass(frozen=True)
class KernelSpec:
    name: str  # as in the test names: 6.1, 6.12, 7.3
    suite: str
    release: str  # regular expression of the kernel release (uname -r) in the image package's name
    private_lists: bool  # False: the machine's own apt lists (its own suite)
    meta: str = META_PACKAGE  # the suite's package that depends on the current kernel of the flavour


KERNELS = {
    "6.1": KernelSpec("6.1", "bookworm", r"6\.1\.0-\d+-amd64", private_lists=False),
    "6.12": KernelSpec("6.12", "trixie", r"6\.12\.\d+\+deb13-amd64", private_lists=True),
    "7.3": KernelSpec("7.3", "trixie-backports", r"7\.3\.\d+\+deb13-amd64", private_lists=True),
    # The cloud flavour builds nvme and nvme_core into vmlinux (no module BTF) and has no 9p (virtio-fs then).
    "7.3-cloud": KernelSpec("7.3-cloud", "trixie-backports", r"7\.3\.\d+\+deb13-cloud-amd64", private_lists=True,
                            meta="linux-image-cloud-amd64"),
}


@dataclass
class KernelPackages:
    release: str
    debs: list  # every .deb of the kernel: the image and the packages of the same release it depends on
    downloaded: bool


def run(cmd, **kwargs):
    try:
        return subprocess.run(cmd, check=True, text=True, capture_output=True, **kwargs)
    except FileNotFoundError as e:
        raise VmSetupError(f"{cmd[0]} not found: install it (scripts/install-deps lists it)") from e
    except subprocess.CalledProcessError as e:
        raise VmSetupError(f"`{' '.join(map(str, cmd))}` failed with status {e.returncode}: "
                           f"{(e.stderr or e.stdout).strip()}") from e


ONE_LINE_SOURCE = re.compile(r"^deb\s+(?:\[(?P<options>[^\]]*)\]\s+)?(?P<uri>\S+)\s+(?P<suite>\S+)")


def _one_line_sources(text):
    """(uri, [suites], signed_by) of each `deb` line of a sources.list file."""
    for line in text.splitlines():
        match = ONE_LINE_SOURCE.match(line.split("#", 1)[0].strip())
        if match:
            options = dict(o.partition("=")[::2] for o in (match.group("options") or "").split())
            yield match.group("uri"), [match.group("suite")], options.get("signed-by")


def _deb822_sources(text):
    """(uri, [suites], signed_by) of each deb stanza of a .sources file."""
    for stanza in re.split(r"\n\s*\n", text):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[0].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and fields.get("uris"):
            yield fields["uris"].split()[0], fields.get("suites", "").split(), fields.get("signed-by")


def debian_mirror():
    """(uri, keyring) of the machine's own apt source for Debian's bookworm suite."""
    sources = []
    if APT_SOURCES.exists():
        sources += _one_line_sources(APT_SOURCES.read_text())
    for path in sorted(APT_SOURCE_PARTS.glob("*.list")):
        sources += _one_line_sources(path.read_text())
    for path in sorted(APT_SOURCE_PARTS.glob("*.sources")):
        sources += _deb822_sources(path.read_text())
    for uri, suites, signed_by in sources:
        if HOST_SUITE in suites:
            keyring = Path(signed_by) if signed_by and signed_by.startswith("/") else DEBIAN_KEYRING
            if not keyring.exists():
                raise VmSetupError(f"{keyring} is missing: install debian-archive-keyring")
            return uri, keyring
    raise VmSetupError(f"no apt source for Debian's {HOST_SUITE} suite in {APT_SOURCES} or {APT_SOURCE_PARTS}: "
                       "the other suites' mirror is derived from it")


class PrivateApt:
    """apt-get and apt-cache on one suite's private sources list, lists dir and cache dir."""

    def __init__(self, cache, suite):
        self.dir = cache / "apt" / suite
        self.suite = suite
        self.updated = False

    def options(self):
        return ["-o", f"Dir::Etc::sourcelist={self.dir / 'sources.list'}",
                "-o", f"Dir::Etc::sourceparts={self.dir / 'sources.list.d'}",
                "-o", f"Dir::State::Lists={self.dir / 'lists'}",
                "-o", f"Dir::Cache={self.dir / 'cache'}"]

    def update(self, log):
        uri, keyring = debian_mirror()
        for sub in ("sources.list.d", "lists/partial", "cache"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir / "lists/partial", 0o777)  # apt downloads as _apt when it can
        (self.dir / "sources.list").write_text(f"deb [signed-by={keyring}] {uri} {self.suite} main\n")
        log(f"apt: updating the private lists of {self.suite} (mirror of the machine's {HOST_SUITE} source)")
        run(["apt-get", "-q", *self.options(), "update"])
        self.updated = True

    def ensure_lists(self, log):
        if not any((self.dir / "lists").glob("*_Packages")):
            self.update(log)


def _image_package(spec, apt_options):
    """linux-image-<release> that the suite's linux-image-amd64 (or the spec's meta package) depends on."""
    out = subprocess.run(["apt-cache", *apt_options, "depends", spec.meta], text=True, capture_output=True)
    pattern = re.compile(rf"^linux-image-({spec.release})$")
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "Depends:" and pattern.match(fields[1]):
            return fields[1], pattern.match(fields[1]).group(1)
    hint = "run apt-get update" if not spec.private_lists else f"the {spec.suite} lists were updated"
    raise VmSetupError(f"cannot fetch the {spec.name} kernel: {spec.meta} of {spec.suite} depends on no package "
                       f"matching linux-image-{spec.release} ({hint}; apt-cache said: "
                       f"{(out.stdout + out.stderr).strip()[:300]!r})")


def _same_release_dependencies(image, release, apt_options):
    """The packages of the same release the image package depends on (7.3: linux-binary, -modules, -base)."""
    out = run(["apt-cache", *apt_options, "depends", image]).stdout
    return sorted({f[1] for f in (line.split() for line in out.splitlines())
                   if len(f) == 2 and f[0] == "Depends:" and f[1].endswith(f"-{release}") and f[1] != image})


def _download(names, target, apt_options, log):
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="download-") as tmp:
        os.chmod(tmp, 0o777)  # apt drops privileges to _apt for the download when it can write there
        for name in names:
            log(f"kernel: apt-get download {name}")
            try:
                run(["apt-get", "download", "-q", *apt_options, name], cwd=tmp)
            except VmSetupError as e:
                raise VmSetupError(f"cannot fetch kernel package {name}: {e}") from e
        debs = sorted(Path(tmp).glob("*.deb"))
        if len(debs) != len(names):
            raise VmSetupError(f"apt-get download of {' '.join(names)} left {len(debs)} packages in {tmp}")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        for deb in debs:
            shutil.move(deb, target / deb.name)
    return sorted(target.glob("*.deb"))


def kernel_packages(cache, spec, log):
    """The cached packages of the kernel `spec`, downloading them when the cache lacks them."""
    target = cache / "packages" / spec.name
    marker = target / "release"
    if marker.exists():
        log(f"kernel: cached packages of {spec.name} ({marker.read_text().strip()}; no download)")
        return KernelPackages(marker.read_text().strip(), sorted(target.glob("*.deb")), False)
    target.parent.mkdir(parents=True, exist_ok=True)
    apt = PrivateApt(cache, spec.suite) if spec.private_lists else None
    if apt:
        apt.ensure_lists(log)
    options = apt.options() if apt else []
    try:
        image, release = _image_package(spec, options)
    except VmSetupError:
        if not apt or apt.updated:
            raise
        apt.update(log)  # lists older than the archive: the package they name may be gone
        image, release = _image_package(spec, options)
    names = [image, *_same_release_dependencies(image, release, options)]
    debs = _download(names, target, options, log)
    marker.write_text(release + "\n")
    return KernelPackages(release, debs, True)
