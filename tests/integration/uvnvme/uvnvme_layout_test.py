#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""uvnvme-load, run as an unprivileged member of the driver group, against the runtime directory laid out
exactly as the package ships it (deploy/systemd/nvme-adapt.tmpfiles): the driver serves there, its socket
gets the directory's group and mode 0660, a user outside the group cannot connect, and a group-writable
directory without the sticky bit is refused with the reason (finding 4 of issue 15).
Run by CTest one case at a time: uvnvme_layout_test.py Class.test_name."""
import grp
import sys
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import unittest

from uvnvme_testlib import LOAD, Client, main

TMPFILES = os.path.join(os.path.dirname(__file__), "../../../deploy/systemd/nvme-adapt.tmpfiles")
NOBODY = 65534


def packaged_layout():
    """(mode, user, group) of /run/uvnvme in the tmpfiles.d file."""
    with open(TMPFILES) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 5 and fields[0] == "d" and fields[1] == "/run/uvnvme":
                return int(fields[2], 8), fields[3], fields[4]
    raise AssertionError(f"{TMPFILES} has no 'd /run/uvnvme' line")


def stand_in_gid(group):
    """The packaged group if this machine has it, else nogroup: a group the driver's user belongs to."""
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        return grp.getgrnam("nogroup").gr_gid


def as_driver_user(gid):
    def demote():
        os.setgroups([gid])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    return demote


class ShippedLayout(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.fail("this test needs root: it lays out a root-owned runtime dir and runs the driver as nobody")
        self.runtime = tempfile.mkdtemp(prefix="uvnvme-layout.")
        os.chmod(self.runtime, 0o755)
        self.dir = os.path.join(self.runtime, "uvnvme")
        self.proc = None

    def tearDown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        shutil.rmtree(self.runtime, ignore_errors=True)

    def lay_out(self, mode, gid):
        os.mkdir(self.dir)
        os.chown(self.dir, 0, gid)
        os.chmod(self.dir, mode)  # after chown, which clears setgid

    def start_driver(self, gid):
        self.proc = subprocess.Popen([LOAD, "--runtime-dir", self.runtime, "--json", "--mode", "external",
                                      "--runtime", "60s", "--qd", "4"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=as_driver_user(gid))
        return os.path.join(self.dir, f"{self.proc.pid}.sock")

    def test_the_driver_serves_from_the_packaged_directory(self):
        mode, user, group = packaged_layout()
        self.assertEqual(user, "root")
        gid = stand_in_gid(group)
        self.lay_out(mode, gid)
        path = self.start_driver(gid)
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.fail(f"no socket in the packaged layout (mode {mode:04o}): {self.proc.communicate()[1]}")
            time.sleep(0.01)
        st = os.lstat(path)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, gid), "the setgid directory gives its group")

        client = Client(path)  # the agent's side: root, or a member of the group
        listing = client.ask({"op": "list"})
        client.close()
        self.assertTrue(listing["ok"])
        self.assertEqual(listing["pid"], self.proc.pid)

        # Someone outside the group is kept out by the socket's mode.
        outsider = subprocess.run(
            ["python3", "-c", f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({path!r})"],
            capture_output=True, text=True, preexec_fn=self.outsider)
        self.assertNotEqual(outsider.returncode, 0)
        self.assertIn("PermissionError", outsider.stderr)

        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        self.assertEqual(self.proc.returncode, 0, err)
        self.assertTrue(json.loads(out)["interrupted"])
        self.assertFalse(os.path.exists(path), "the driver removes its socket")

    @staticmethod
    def outsider():
        os.setgroups([])
        os.setgid(NOBODY - 1)
        os.setuid(NOBODY - 1)

    def test_a_group_writable_directory_without_the_sticky_bit_is_refused(self):
        gid = stand_in_gid(packaged_layout()[2])
        self.lay_out(0o2770, gid)
        self.start_driver(gid)
        out, err = self.proc.communicate(timeout=60)
        self.assertNotEqual(self.proc.returncode, 0)
        self.assertIn("writable by its group without the sticky bit", err)


if __name__ == "__main__":
    main(sys.argv)
