# SPDX-License-Identifier: Apache-2.0
"""The agent's image, built as production builds it and cached by its inputs.

The base: Debian 12 from the machine's own configured Debian mirror (its apt sources, copied as they
are), minbase plus the package's Depends, slimmed as debian:12-slim is, made by mmdebstrap and imported
into podman. The image:
deploy/docker/Dockerfile with PACKAGE_FROM=context, i.e. the .deb that make package (dpkg-buildpackage) made,
installed by apt-get as on debian:12-slim. Each is tagged by a hash of what went into it (for the package: its
fields and files, not the build's timestamps); a tag that exists is used as it is,
so a second run builds nothing. Older tags of the test's images are removed once a new one is built.
"""
import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time

from engine import fail, podman, ulimit_flags

BASE_REPO = "localhost/nvme-adapt-test-base"
IMAGE_REPO = "localhost/nvme-adapt-test"
SUITE = "bookworm"
# As debian:12-slim: /usr merged by mmdebstrap's hook (not by the usrmerge package, which brings perl), no
# Recommends, and no documentation, man pages or translations but the copyrights.
SLIM_OPTIONS = ["--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
                "--aptopt=APT::Install-Recommends \"false\"", "--aptopt=Acquire::Retries \"3\"",
                *(f"--dpkgopt=path-exclude=/usr/share/{d}/*" for d in ("doc", "man", "info", "locale", "lintian")),
                "--dpkgopt=path-include=/usr/share/doc/*/copyright"]


def apt_source_files():
    """The machine's apt sources that name the suite, in apt's order."""
    candidates = ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list")),
                  *sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))]
    chosen = []
    for path in candidates:
        if os.path.isfile(path):
            with open(path) as f:
                text = f.read()
            if re.search(rf"^\s*(deb\s.*\s{SUITE}\s|Suites:.*\b{SUITE}\b)", text, re.M):
                chosen.append(path)
    if not chosen:
        fail(f"no apt source for {SUITE} under /etc/apt: the base image is made from the machine's Debian mirror")
    return chosen


def package_depends(deb):
    """The package names of the .deb's Depends (the first of alternatives, versions dropped)."""
    depends = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True, check=True).stdout
    return sorted({part.split("|")[0].split("(")[0].strip() for part in depends.split(",") if part.strip()})


def digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def package_identity(deb):
    """The .deb's control fields and its files (names, modes, contents), not its timestamps: each build
    stamps them, and an unchanged package must not rebuild the image."""
    h = hashlib.sha256()
    h.update(subprocess.run(["dpkg-deb", "--field", deb], capture_output=True, check=True).stdout)
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            h.update(f"{member.name}\0{member.mode}\0{member.type}\0{member.linkname}\0".encode())
            if member.isfile():
                h.update(archive.extractfile(member).read())
    return h.hexdigest()


def image_exists(reference):
    return podman("image", "exists", reference, check=False).returncode == 0


def remove_other_tags(repository, keep):
    listed = podman("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", f"reference={repository}")
    for reference in listed.stdout.split():
        if reference != keep:
            podman("rmi", "--force", reference, check=False)


def base_image(deb, log):
    sources = apt_source_files()
    includes = package_depends(deb)
    source_text = "".join(open(path).read() for path in sources)
    reference = f"{BASE_REPO}:{digest(SUITE, 'minbase', ','.join(includes), source_text, *SLIM_OPTIONS)}"
    if image_exists(reference):
        log(f"base {reference}: cached")
        return reference
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nvme-adapt-base-", dir="/var/tmp") as work:
        rootfs = os.path.join(work, "rootfs.tar")
        command = ["mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(includes)}",
                   *SLIM_OPTIONS, SUITE, rootfs, *sources]
        result = subprocess.run(command, capture_output=True, text=True, timeout=1200)
        if result.returncode != 0:
            fail(f"mmdebstrap (the Debian 12 base) failed: {result.stderr.strip()[-3000:]}")
        podman("import", "--change", "CMD [\"/bin/bash\"]", rootfs, reference, timeout=600)
    remove_other_tags(BASE_REPO, reference)
    log(f"base {reference}: made by mmdebstrap in {time.monotonic() - started:.0f} s")
    return reference


def agent_image(src, deb, log):
    """The image reference, built unless an image of the same inputs exists."""
    base = base_image(deb, log)
    dockerfile = os.path.join(src, "deploy", "docker", "Dockerfile")
    with open(dockerfile, "rb") as f:
        reference = f"{IMAGE_REPO}:{digest(base, f.read(), package_identity(deb))}"
    if image_exists(reference):
        log(f"image {reference}: cached")
        return reference
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nvme-adapt-context-") as context:
        shutil.copy(deb, context)
        podman("build", "--pull=never", "--format=docker", *ulimit_flags(), "--build-arg", f"BASE={base}",
               "--build-arg", "PACKAGE_FROM=context", "--file", dockerfile, "--tag", reference, context,
               timeout=1200)
    remove_other_tags(IMAGE_REPO, reference)
    log(f"image {reference}: built in {time.monotonic() - started:.0f} s")
    return reference


def image_size(reference):
    return int(podman("image", "inspect", "--format", "{{.Size}}", reference).stdout.strip())
