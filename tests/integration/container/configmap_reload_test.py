#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Config reload the Kubernetes way: the agent's config is a ConfigMap volume, updated by the kubelet's
atomic ..data symlink swap and no signal. A good update is applied (the policy over gRPC shows it, the
event stream and nvme_adapt_config_reloads_total say so); a bad one is refused, the running config
kept, and the refusal is in the log, on the event stream and in the metrics; a good one after it
applies again."""
import json
import os
import subprocess
import sys
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "daemon"), os.path.join(HERE, "..", "metrics")]

from daemon_harness import NVME_ADAPTCTL, Daemon, Workspace, require_root  # noqa: E402
from kubelet_volume import KubeletVolume  # noqa: E402
from prometheus_server import free_port  # noqa: E402


class ConfigMapReload(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("configmap-reload")
        self.port = free_port()
        self.api = {"unixSocket": self.ws.api_socket, "unixSocketGroup": "root"}
        self.volume = KubeletVolume(self.ws.path("configmap"), self.config_map(30000))
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme", "--metrics-listen", f"127.0.0.1:{self.port}"])
        self.daemon.config_path = os.path.join(self.volume.dir, "config.json")
        self.daemon.start()
        self.events_path = self.ws.path("events.json")
        self.watch = subprocess.Popen([NVME_ADAPTCTL, "--addr", self.ws.api_socket, "--json", "watch", "--kind", "policy"],
                                      stdout=open(self.events_path, "w"), stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # the stream is open before the first update

    def tearDown(self):
        self.watch.terminate()
        self.watch.wait(10)
        self.assertEqual(self.daemon.stop(), 0, self.daemon.log_text()[-3000:])
        self.ws.cleanup()

    def config_map(self, slack=None, text=None):
        return {"config.json": text if text is not None else
                json.dumps({"api": self.api, "policy": {"paceSlackNs": str(slack)}})}

    def slack(self):
        return self.daemon.ctl_json("policy", "get")["policy"]["policy"].get("paceSlackNs")

    def metric(self, name):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as answer:
            for line in answer.read().decode().splitlines():
                if line.startswith(name + " ") or line.startswith(name + "{"):
                    yield line.rsplit(" ", 1)[0], float(line.rsplit(" ", 1)[1])

    def reloads(self):
        values = dict(self.metric("nvme_adapt_config_reloads_total"))
        last = dict(self.metric("nvme_adapt_config_last_reload_successful"))
        return (values['nvme_adapt_config_reloads_total{outcome="applied"}'],
                values['nvme_adapt_config_reloads_total{outcome="refused"}'],
                last["nvme_adapt_config_last_reload_successful"])

    def events(self):
        with open(self.events_path) as f:
            return [json.loads(line)["message"] for line in f if line.strip()]

    def test_a_symlink_swap_reloads_and_a_bad_file_keeps_the_running_config(self):
        self.assertEqual(self.slack(), "30000")
        self.assertEqual(self.reloads(), (0, 0, 1))

        self.volume.update(self.config_map(40000))
        self.daemon.wait_for(lambda: self.slack() == "40000", 10, "the swapped-in config applied")
        self.daemon.wait_for(lambda: self.reloads() == (1, 0, 1), 5, "the applied reload counted")
        self.daemon.wait_for(lambda: any("reload (file changed)" in e and "applied" in e for e in self.events()), 5,
                             "the applied reload on the event stream")

        self.volume.update(self.config_map(text='{"policy": {"paceSlackNs": "-5"}}'))
        self.daemon.wait_for(lambda: self.reloads() == (1, 1, 0), 10, "the refused reload counted")
        refusal = [line for line in self.daemon.log_text().splitlines() if "reload refused (file changed)" in line]
        self.assertEqual(len(refusal), 1, self.daemon.log_text()[-3000:])
        self.assertIn("policy.pace_slack_ns", refusal[0])
        self.assertEqual(self.slack(), "40000", "a refused file changed the running policy")
        self.daemon.wait_for(lambda: any("reload refused" in e and "pace_slack_ns" in e for e in self.events()), 5,
                             "the refusal on the event stream")
        self.assertIsNone(self.daemon.process.poll(), "the daemon died on a bad ConfigMap")

        self.volume.update(self.config_map(50000))
        self.daemon.wait_for(lambda: self.slack() == "50000", 10, "a good config after the bad one applied")
        self.daemon.wait_for(lambda: self.reloads() == (2, 1, 1), 5, "the second applied reload counted")
        print("events:", *self.events(), sep="\n  ")


if __name__ == "__main__":
    unittest.main(verbosity=2)
