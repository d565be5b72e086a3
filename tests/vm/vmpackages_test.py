#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of vmpackages.py without network or root: the mirror read from apt sources in either format, the
errors when there is none, and the kernel table's package-name patterns."""

import re
import sys
import tempfile
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import vmpackages  # noqa: E402

DEB822 = """Types: deb
# a comment line
URIs: http://mirror.invalid/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: {keyring}

Types: deb
URIs: http://mirror.invalid/debian-security
Suites: bookworm-security
Components: main
"""


class DebianMirror(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        self.sources, self.parts = root / "sources.list", root / "sources.list.d"
        self.parts.mkdir()
        self.keyring = root / "keyring.gpg"
        self.keyring.write_text("key")
        self.saved = vmpackages.APT_SOURCES, vmpackages.APT_SOURCE_PARTS, vmpackages.DEBIAN_KEYRING
        vmpackages.APT_SOURCES, vmpackages.APT_SOURCE_PARTS = self.sources, self.parts
        vmpackages.DEBIAN_KEYRING = self.keyring

    def tearDown(self):
        vmpackages.APT_SOURCES, vmpackages.APT_SOURCE_PARTS, vmpackages.DEBIAN_KEYRING = self.saved
        self.tmp.cleanup()

    def test_deb822_source_with_its_keyring(self):
        (self.parts / "debian.sources").write_text(DEB822.format(keyring=self.keyring))
        self.assertEqual(vmpackages.debian_mirror(), ("http://mirror.invalid/debian", self.keyring))

    def test_one_line_source_with_options_and_the_default_keyring(self):
        self.sources.write_text("# deb http://old.invalid/debian bookworm main\n"
                                "deb-src http://src.invalid/debian bookworm main\n"
                                "deb [arch=amd64 trusted=no] http://mirror.invalid/debian bookworm main contrib\n")
        self.assertEqual(vmpackages.debian_mirror(), ("http://mirror.invalid/debian", self.keyring))

    def test_security_only_is_not_the_archive(self):
        (self.parts / "security.list").write_text("deb http://mirror.invalid/debian-security bookworm-security main\n")
        with self.assertRaisesRegex(vmpackages.VmSetupError, "no apt source for Debian's bookworm suite"):
            vmpackages.debian_mirror()

    def test_missing_keyring_names_its_package(self):
        (self.parts / "debian.sources").write_text(DEB822.format(keyring=self.keyring.with_name("absent.gpg")))
        with self.assertRaisesRegex(vmpackages.VmSetupError, "install debian-archive-keyring"):
            vmpackages.debian_mirror()


class KernelSpecs(unittest.TestCase):
    def test_release_patterns_match_their_flavour_only(self):
        cases = {"6.1": "6.1.0-41-amd64", "6.12": "6.12.117+deb13-amd64", "7.3": "7.3.4+deb13-amd64",
                 "7.3-cloud": "7.3.4+deb13-cloud-amd64"}
        for name, release in cases.items():
            spec = vmpackages.KERNELS[name]
            for other, other_release in cases.items():
                matched = re.fullmatch(spec.release, other_release) is not None
                self.assertEqual(matched, other == name, f"{name} pattern vs {other_release}")


if __name__ == "__main__":
    unittest.main()
