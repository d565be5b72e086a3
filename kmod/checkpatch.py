#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Runs the kernel's checkpatch.pl over our kernel code: every file of kmod/*/src and every patch of
kmod/*/patches, with the newest checkpatch.pl that kmod/build_module.py extracted from a linux-source package
(BUILD/vm-cache/kmod/src/<version>/scripts/). Exit status 1 on any error or warning but the one this project
keeps on purpose: LINUX_VERSION_CODE in src/, where one file serves several kernels (kmod/README.md).

  kmod/checkpatch.py [--build-dir build]
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KMOD_DIR = Path(__file__).resolve().parent
# Out-of-tree code for several kernels: the version test is the point (hrtimer_setup came in 6.13).
ACCEPTED = re.compile(r"LINUX_VERSION_CODE should be avoided|Comparisons should place the constant on the right")


def _version_key(path):
    return [int(n) if n.isdigit() else 0 for n in re.split(r"[.~+-]", path.parents[1].name)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=KMOD_DIR.parent / "build")
    args = parser.parse_args(argv)
    found = sorted((args.build_dir / "vm-cache/kmod/src").glob("*/scripts/checkpatch.pl"), key=_version_key)
    if not found:
        print("kmod/checkpatch.py: no checkpatch.pl under BUILD/vm-cache/kmod/src: run kmod/build_module.py first",
              file=sys.stderr)
        return 1
    checkpatch = found[-1]
    problems, checked = [], 0
    # checkpatch inside a git work tree checks the file instead of the patch: copies in a temporary dir.
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(KMOD_DIR.glob("*/src/*")) + sorted(KMOD_DIR.glob("*/patches/*/*.patch")):
            copy = Path(tmp) / path.name
            shutil.copy2(path, copy)
            cmd = ["perl", str(checkpatch), "--no-tree", "--terse", "--show-types"]
            if path.suffix != ".patch":
                cmd.append("-f")
            out = subprocess.run([*cmd, copy.name], cwd=tmp, text=True, capture_output=True).stdout
            checked += 1
            for line in out.splitlines():
                if (": ERROR:" in line or ": WARNING:" in line) and not ACCEPTED.search(line):
                    problems.append(f"{path.relative_to(KMOD_DIR.parent)}: {line.split(': ', 1)[1]}")
    print(f"kmod/checkpatch.py: {checked} files and patches checked with {checkpatch}: {len(problems)} problems")
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
