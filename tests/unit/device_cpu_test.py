#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of bench/device_cpu.py: exclusive(cpu) moves tasks off the CPU, leaves the calling process (and
what it starts inside) alone, and puts every affinity back on exit, also for tasks the moved ones started
meanwhile and when a signal ends the run. Only this test's own helper processes are moved (`only`), so it
needs no root and leaves the machine's other work alone; it needs two CPUs.

Usage: device_cpu_test.py PATH_TO_bench"""
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else "bench")
import device_cpu  # noqa: E402

CPUS = os.sched_getaffinity(0)
CPU = max(CPUS)


def threads_of(pid):
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


@unittest.skipIf(len(CPUS) < 2, "needs two CPUs")
class ExclusiveTest(unittest.TestCase):
    def setUp(self):
        # A helper that starts a child of its own when told to (a line on stdin), as a build starts compilers.
        script = "import subprocess,sys,threading,time\n" \
                 "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n" \
                 "sys.stdin.readline()\n" \
                 "c = subprocess.Popen(['sleep', '60'])\n" \
                 "print(c.pid, flush=True)\n" \
                 "sys.stdin.readline()\n"
        self.helper = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True)
        time.sleep(0.3)  # its thread is up

    def tearDown(self):
        self.helper.kill()
        self.helper.wait()
        self.helper.stdin.close()
        self.helper.stdout.close()

    def test_moves_off_and_restores(self):
        pid = self.helper.pid
        self.assertEqual(len(threads_of(pid)), 2)
        with device_cpu.exclusive(CPU, only={pid}) as record:
            for tid in threads_of(pid):
                self.assertNotIn(CPU, os.sched_getaffinity(tid), f"thread {tid} of the helper")
            self.assertEqual(record["moved_user_threads"], 2)
            self.assertEqual(record["refused"], 0)
            self.assertEqual(record["host_cpus"], sorted(CPUS - {CPU}))
            self.assertEqual(os.sched_getaffinity(0), CPUS, "the calling process is left alone")
            inside = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                                    capture_output=True, text=True)
            self.assertEqual(inside.stdout.strip(), str(sorted(CPUS)), "what it starts may use the device CPU")
            self.helper.stdin.write("\n")
            self.helper.stdin.flush()
            grandchild = int(self.helper.stdout.readline())
            self.assertNotIn(CPU, os.sched_getaffinity(grandchild), "started meanwhile: inherits the narrowed mask")
        for tid in threads_of(pid):
            self.assertEqual(os.sched_getaffinity(tid), CPUS, f"thread {tid} restored")
        self.assertEqual(os.sched_getaffinity(grandchild), CPUS, "the inherited mask restored too")
        self.assertEqual(record["restored"], 2)
        self.assertEqual(record["inherited_restored"], 1)
        os.kill(grandchild, signal.SIGKILL)

    def test_restores_on_sigterm(self):
        pid = self.helper.pid
        with self.assertRaises(SystemExit) as ended:
            with device_cpu.exclusive(CPU, only={pid}):
                self.assertNotIn(CPU, os.sched_getaffinity(pid))
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
                self.fail("SIGTERM did not end the context")
        self.assertEqual(ended.exception.code, 128 + signal.SIGTERM)
        self.assertEqual(os.sched_getaffinity(pid), CPUS)
        self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL, "the previous handler is back")

    def test_cpu_not_ours(self):
        with device_cpu.exclusive(4096, only=set()) as record:
            self.assertFalse(record["exclusive"])


if __name__ == "__main__":
    unittest.main()
