#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""With stderr on the journal, a hostile name makes one journal entry with its fields intact (issue 45, item 3).

The test runs in a mount namespace of its own, with a tmpfs over /run/systemd: the socket at
/run/systemd/journal/socket, where libsystemd's sd_journal_send writes, is the test's own. The daemon runs
with JOURNAL_STREAM naming its stderr, as under systemd. A file in the driver socket directory is named
"x\\n<2>error journal: restored all.sock": discovery skips it, and the daemon logs the skip.

Before the fix the daemon printed that line raw to stderr, where journald would have split it into two entries,
the second at the priority its "<2>" chose; nothing reached the journal's socket. Now exactly one entry names
the file: PRIORITY=4 (warn), its MESSAGE one line with the newline written as \\x0a, REASON= the refusal with
the name as it is, newline included; no entry has priority 2, and nothing of the log goes to stderr.
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

from daemon_harness import Daemon, Workspace, require_root
from reliability_harness import FakeDriver

HOSTILE = "x\n<2>error journal: restored all.sock"
IN_NAMESPACE = "NVA_JOURNAL_TEST_NAMESPACE"


def parse_native(datagram):
    """The journal's native protocol: KEY=value\\n, or KEY\\n, a little-endian 64-bit length, the value, \\n."""
    fields, at = {}, 0
    while at < len(datagram):
        end = datagram.index(b"\n", at)
        line = datagram[at:end]
        if b"=" in line:
            key, value = line.split(b"=", 1)
            at = end + 1
        else:
            key = line
            (length,) = struct.unpack_from("<Q", datagram, end + 1)
            value = datagram[end + 9:end + 9 + length]
            at = end + 9 + length + 1
        fields[key.decode()] = value.decode(errors="replace")
    return fields


class JournalLogFields(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("journal-fields")
        self.daemon = None
        run = "/run/systemd" if os.path.isdir("/run/systemd") else "/run"
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", run], check=True)
        self.mount = run
        os.makedirs("/run/systemd/journal", exist_ok=True)
        self.journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.journal.bind("/run/systemd/journal/socket")
        self.journal.settimeout(0.2)

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)
        self.journal.close()
        subprocess.run(["umount", "-l", self.mount], check=False)
        self.ws.cleanup()

    def entries(self, seconds):
        got, deadline = [], time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                got.append(parse_native(self.journal.recv(1 << 20)))
            except socket.timeout:
                continue
        return got

    def test_a_name_with_a_newline_and_a_priority_prefix_is_one_entry_with_its_fields(self):
        directory = os.path.join(self.ws.runtime_dir, "uvnvme")
        os.makedirs(directory, mode=0o750)
        open(os.path.join(directory, HOSTILE), "w").close()
        log = self.ws.path("daemon.log")
        open(log, "w").close()
        st = os.stat(log)
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"], env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
        self.daemon.start()
        entries = self.entries(3)
        self.assertEqual(self.daemon.stop(), 0)
        self.daemon = None
        entries += self.entries(0.5)
        naming = [e for e in entries if "restored all" in e.get("MESSAGE", "") + e.get("REASON", "")]
        for e in naming:
            print({k: e[k] for k in ("PRIORITY", "MESSAGE", "REASON") if k in e}, flush=True)
        self.assertEqual(len(naming), 1, f"entries naming the file: {naming}\n{len(entries)} entries in all; "
                         f"stderr:\n{self.daemon_stderr()}")
        entry = naming[0]
        self.assertEqual(entry["PRIORITY"], "4")
        self.assertEqual(entry.get("SYSLOG_IDENTIFIER"), "nvme-adaptd")
        self.assertNotIn("\n", entry["MESSAGE"])
        self.assertIn("x\\x0a<2>error journal: restored all.sock", entry["MESSAGE"])
        self.assertIn(os.path.join(directory, HOSTILE), entry.get("REASON", ""), "REASON lost the name as it is")
        self.assertEqual([e for e in entries if e.get("PRIORITY") == "2"], [])
        self.assertGreater(len(entries), 3, "the daemon's other lines did not reach the journal either")
        self.assertEqual([line for line in self.daemon_stderr().splitlines() if line.startswith("<")], [],
                         "lines went to stderr beside the journal")

    def read_until(self, done, into):
        while not done.is_set():
            into.extend(self.entries(0.2))

    def journal_daemon(self):
        log = self.ws.path("daemon.log")
        open(log, "w").close()
        st = os.stat(log)
        return Daemon(self.ws, flags=["--sources", "uvnvme"], env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})

    def test_queue_lines_carry_the_queue_its_controller_and_the_reason(self):
        """Item 3 at the queue's lines: found, an override's switch and its refusal, dropped; each an entry with
        QUEUE=, CONTROLLER= and REASON=, so that `journalctl QUEUE=...` finds a queue's story."""
        # Read while the daemon runs, as journald does: a socket holds 10 datagrams (net.unix.max_dgram_qlen),
        # then the daemon's next entry waits.
        entries, done = [], threading.Event()
        reader = threading.Thread(target=self.read_until, args=(done, entries))
        reader.start()
        driver = FakeDriver(self.ws, "--queues", "2", "--refuse-poll")
        try:
            controller, queue = f"uvnvme:{driver.pid}:0", f"uvnvme:{driver.pid}:0:q1"
            self.daemon = self.journal_daemon()
            self.daemon.start()
            self.daemon.wait_for(lambda: len(self.daemon.queues()) == 2, 10, "the driver's two queues")
            self.daemon.ctl("override", f"{controller}:q1", "poll", check=False)  # the driver refuses it
            driver.stop()
            self.daemon.wait_for(lambda: not self.daemon.queues(), 10, "the driver's queues dropped")
            self.assertEqual(self.daemon.stop(), 0)
            self.daemon = None
        finally:
            driver.stop()
            time.sleep(0.5)
            done.set()
            reader.join()
        of_queue = [e for e in entries if e.get("QUEUE") == queue]
        for e in of_queue:
            print({k: e[k] for k in ("PRIORITY", "MESSAGE", "QUEUE", "CONTROLLER", "REASON") if k in e}, flush=True)

        def one(part, priority, reason=None):
            found = [e for e in of_queue if part in e["MESSAGE"]]
            self.assertEqual(len(found), 1, f"entries of {queue} with '{part}': {of_queue}")
            self.assertEqual(found[0].get("CONTROLLER"), controller, found[0])
            self.assertEqual(found[0]["PRIORITY"], priority, found[0])
            if reason is not None:
                self.assertIn(reason, found[0].get("REASON", ""), found[0])

        one(" found: ", "6")
        one("interrupt->poll reason=override", "6", "override")
        one("could not put", "4", "refused")
        one("vanished: dropped", "6", "vanished")

    def daemon_stderr(self):
        with open(self.ws.path("daemon.log")) as f:
            return f.read()


if __name__ == "__main__":
    if os.environ.get(IN_NAMESPACE) != "1" and os.geteuid() == 0:
        # Our own /run/systemd, seen by this process and its children only.
        os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, *sys.argv],
                   {**os.environ, IN_NAMESPACE: "1"})
    unittest.main(verbosity=2)
