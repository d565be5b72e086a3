#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bad config at start: exit 2 and one line naming the problem. The same errors on SIGHUP keep the running
config; a good file on SIGHUP is applied."""
import os
import signal
import subprocess
import sys
import time
import unittest

from daemon_harness import NVME_ADAPTD, Daemon, Workspace, require_root

BAD = [
    ("unknown field", '{"polcy": {}}', "polcy"),
    ("negative slack", '{"policy": {"paceSlackNs": -1}}', "policy.pace_slack_ns"),
    ("malformed json", '{"policy": {', "config"),
    ("unknown mode", '{"policy": {"mode": "CONTROLLER_MODE_SOMETIMES"}}', "CONTROLLER_MODE_SOMETIMES"),
]


class ConfigErrors(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("config")

    def tearDown(self):
        self.ws.cleanup()

    def test_bad_config_at_start_exits_2_with_one_line(self):
        for name, text, expected in BAD:
            with self.subTest(name):
                path = self.ws.path(name.replace(" ", "_") + ".json")
                with open(path, "w") as f:
                    f.write(text)
                result = subprocess.run([NVME_ADAPTD, "--config", path, "--state-dir", self.ws.state_dir],
                                        capture_output=True, text=True, timeout=30)
                self.assertEqual(result.returncode, 2, result.stderr)
                lines = result.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, result.stderr)
                self.assertIn(expected, lines[0])
                self.assertIn(path, lines[0])
        result = subprocess.run([NVME_ADAPTD, "--frobnicate"], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stderr.strip(), "nvme-adaptd: unknown argument '--frobnicate' (see --help)")

    def test_api_start_refusals_exit_2(self):
        """Refusals found only when the API server starts are config errors too: exit 2, so that the unit's
        RestartPreventExitStatus=2 does not restart (and reload BPF) every 5 s."""
        token = self.ws.path("token")
        with open(token, "w") as f:
            f.write("s3cret-token-of-enough-length\n")
        os.chmod(token, 0o644)
        cases = [
            ("token file readable by others", {"tokenFile": token, "tcpAddress": "127.0.0.1:0",
                                               "insecureLoopbackTcp": True}, "token"),
            ("unknown socket group", {"unixSocketGroup": "no-such-group-nva"}, "no-such-group-nva"),
            ("missing TLS certificate", {"tcpAddress": "127.0.0.1:0", "tls": {"certFile": self.ws.path("nope.crt"),
                                         "keyFile": self.ws.path("nope.key")}}, "nope.crt"),
        ]
        for name, api, expected in cases:
            with self.subTest(name):
                merged = {"unixSocket": self.ws.api_socket, "unixSocketGroup": "root", **api}
                path = self.ws.write_config({"api": merged}, name.replace(" ", "_") + ".json")
                result = subprocess.run([NVME_ADAPTD, "--config", path, "--state-dir", self.ws.state_dir,
                                         "--runtime-dir", self.ws.runtime_dir, "--sources", "uvnvme",
                                         "--metrics-listen", "off"], capture_output=True, text=True, timeout=60)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(expected, result.stderr)

    def test_journal_stream_gets_syslog_priorities_and_no_timestamp(self):
        """Under systemd, stderr is the journal (JOURNAL_STREAM names it). Lines go to the journal's socket as
        entries (reliability.journal_log_fields); where that socket is not there, as here, each line goes to
        stderr starting with its syslog priority, <3> for errors, with no timestamp of its own (journalctl -p
        err filters on it), and none is lost."""
        log = self.ws.path("journal.log")
        open(log, "w").close()
        st = os.stat(log)
        daemon = Daemon(self.ws, config={}, flags=["--sources", "uvnvme"], log_name="journal.log",
                        env={"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}).start()
        try:
            with open(daemon.config_path, "w") as f:
                f.write('{"polcy": {}}')
            daemon.send(signal.SIGHUP)
            daemon.wait_for(lambda: "reload refused" in daemon.log_text(), 10, "the refused reload")
        finally:
            self.assertEqual(daemon.stop(), 0)
        lines = daemon.log_text().splitlines()
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, r"^<[3467]>(debug|info|warn|error) ")
        refused = [line for line in lines if "reload refused" in line]
        self.assertTrue(refused and all(line.startswith("<3>error ") for line in refused), refused)
        self.assertTrue(any(line.startswith("<6>info ") for line in lines))

    def test_sighup_says_so_when_a_persisted_policy_wins_over_the_file(self):
        daemon = Daemon(self.ws, config={"policy": {"paceSlackNs": "30000"}}, flags=["--sources", "uvnvme"]).start()
        try:
            slack = lambda: daemon.ctl_json("policy", "get")["policy"]["policy"].get("paceSlackNs")
            daemon.ctl("policy", "set", "--pace-slack", "50us")
            self.ws.write_config({"policy": {"paceSlackNs": "40000"}})
            daemon.send(signal.SIGHUP)
            daemon.wait_for(lambda: "reload (SIGHUP): config" in daemon.log_text(), 10, "the reload's report")
            self.assertIn("policy NOT applied", daemon.log_text())
            self.assertNotIn("policy applied", daemon.log_text())
            self.assertEqual(slack(), "50000")
        finally:
            self.assertEqual(daemon.stop(), 0)

    def test_sighup_keeps_the_running_config_on_error_and_applies_a_good_one(self):
        daemon = Daemon(self.ws, config={"policy": {"paceSlackNs": "30000"}}, flags=["--sources", "uvnvme"]).start()
        try:
            slack = lambda: daemon.ctl_json("policy", "get")["policy"]["policy"].get("paceSlackNs")
            self.assertEqual(slack(), "30000")
            for name, text, expected in BAD:
                with open(daemon.config_path, "w") as f:
                    f.write(text)
                before = daemon.log_text().count("reload refused")
                daemon.send(signal.SIGHUP)
                daemon.wait_for(lambda: daemon.log_text().count("reload refused") > before, 10, f"refusal of {name}")
                self.assertIn(expected, daemon.log_text().splitlines()[-1])
                self.assertIsNone(daemon.process.poll(), "the daemon died on a bad reload")
                self.assertEqual(slack(), "30000")
            self.ws.write_config({"policy": {"paceSlackNs": "40000"}})
            daemon.send(signal.SIGHUP)
            daemon.wait_for(lambda: slack() == "40000", 10, "the good config applied")
        finally:
            self.assertEqual(daemon.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
