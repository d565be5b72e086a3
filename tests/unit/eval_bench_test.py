#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of bench/eval's pure parts: reading the agent's trace and decisions, the poll-time share, the
failed-try details, and the aggregation and goal checks of the summary. Synthetic inputs only.

Usage: eval_bench_test.py PATH_TO_bench/eval"""
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else "bench/eval")
import evaluation  # noqa: E402
import latency  # noqa: E402
import phased  # noqa: E402
import node_goals  # noqa: E402
import summary  # noqa: E402
import switches  # noqa: E402
import traces  # noqa: E402

Q = "uvnvme:4242:0:q1"
TRACE = f"""queue {Q} eligible=1 reap=interrupt safe=interrupt window=8192 mode=adaptive
window {Q} interrupt 8192 1000 2000
# a comment
window {Q} poll 8192 3000 3500 miss=17:900
timer {Q} 4000 3500 0
window uvnvme:7:0:q1 interrupt 10 0 5
"""
DECISIONS = f"""{Q} at=2000 interrupt->poll reason=window_fast state=polling failures=0 measured=1000 limit=81920000
{Q} at=3500 poll->poll reason=poll_window_faster state=polling failures=0 measured=500 limit=1000
{Q} at=4000 poll->interrupt reason=stalled state=backoff failures=3 k=1 measured=500 limit=300 backoff
uvnvme:7:0:q1 at=4100 interrupt->poll reason=window_fast state=polling failures=0 measured=1 limit=2
"""


class TraceTest(unittest.TestCase):
    def test_windows(self):
        windows = traces.parse_trace(TRACE)
        self.assertEqual([w.mode for w in windows], ["interrupt", "poll", "interrupt"])
        self.assertEqual((windows[1].completions, windows[1].start, windows[1].end), (8192, 3000, 3500))
        self.assertTrue(windows[1].pace_miss)
        self.assertFalse(windows[0].pace_miss)

    def test_short_window_line_is_an_error(self):
        with self.assertRaises(ValueError):
            traces.parse_trace(f"window {Q} poll 8192 3000")

    def test_decisions_with_flags(self):
        decisions = traces.parse_decisions(DECISIONS)
        self.assertEqual(len(decisions), 4)
        last_of_q = decisions[2]
        self.assertEqual((last_of_q.before, last_of_q.after, last_of_q.reason), ("poll", "interrupt", "stalled"))
        self.assertIs(last_of_q.fields.get("backoff"), True)
        self.assertEqual(last_of_q.fields["k"], "1")

    def test_not_a_decision(self):
        with self.assertRaises(ValueError):
            traces.parse_decisions("garbage line")

    def test_queue_pid(self):
        self.assertEqual(traces.queue_pid(Q), 4242)
        self.assertIsNone(traces.queue_pid("nvme0:q1"))

    def test_poll_time_share(self):
        decisions = traces.parse_decisions(DECISIONS)
        # poll from 2000 to 4000 within [1000, 5000]
        self.assertAlmostEqual(traces.poll_time_share(decisions, Q, 1000, 5000), 0.5)
        # a span that starts while polling
        self.assertAlmostEqual(traces.poll_time_share(decisions, Q, 3000, 5000), 0.5)
        self.assertIsNone(traces.poll_time_share(decisions, Q, 5000, 5000))

    def test_adaptive_summary_keeps_to_its_process(self):
        s = traces.adaptive_summary(traces.parse_trace(TRACE), traces.parse_decisions(DECISIONS), 4242, 0, 10000)
        self.assertEqual(s["queues"], 1)
        self.assertEqual((s["tries"], s["polling_windows_kept"], s["backoffs"], s["switches"]), (1, 1, 1, 2))
        self.assertEqual(s["failed_tries"], {"stalled": 1})
        self.assertEqual(s["failures"], [{"reason": "stalled", "k": 1, "measured_us": 0.5, "limit_us": 0.3,
                                          "since_try_ms": 0.002, "kept_windows_before": 1}])
        self.assertAlmostEqual(s["poll_completion_share_of_recorded_windows"], 0.5)


class NodeTraceTest(unittest.TestCase):
    def test_a_deferred_try_is_no_try_and_no_switch(self):
        decisions = traces.parse_decisions(
            f"{Q} at=2000 interrupt->poll reason=window_fast state=measuring failures=0 deferred=cpu_busy\n"
            f"{Q} at=2500 interrupt->poll reason=window_fast state=measuring failures=0 deferred=staggered\n"
            f"{Q} at=3000 interrupt->poll reason=window_fast state=polling failures=0\n"
            f"{Q} at=4000 poll->interrupt reason=node_ended state=measuring failures=0\n")
        s = traces.adaptive_summary(traces.parse_trace(TRACE), decisions, 4242, 0, 10000)
        self.assertEqual((s["tries"], s["switches"], s["node_ended_runs"]), (1, 2, 1))
        self.assertEqual(s["deferred_tries"], {"cpu_busy": 1, "staggered": 1})
        self.assertAlmostEqual(traces.poll_time_share(decisions, Q, 0, 10000), 0.1)


def node_runs(node_iops, tries, work=None):
    runs = []
    for rep, n in enumerate(node_iops):
        for mode, iops in (("interrupt", 100), ("poll", 50), ("adaptive", 98), ("node", n)):
            r = {"mode": mode, "rep": rep, "iops": iops, "app_work_per_second": work.get(mode) if work else None}
            if mode in ("adaptive", "node"):
                r["engine"] = {"tries": tries if mode == "node" else 40, "polling_windows_kept": 0,
                               "failed_tries": {}, "backoffs": 0, "max_poll_windows_reached": 0}
            runs.append(r)
    return runs


class NodeGoalsTest(unittest.TestCase):
    CONTENDED = {"controllers": 4, "queues": 2, "jobs": 8, "qd": 32, "label": "c"}

    def test_contended_needs_the_better_static_mode_and_few_tries(self):
        s = summary.summarize_config(self.CONTENDED, node_runs((99.6, 99.8, 99.0), tries=2))
        self.assertTrue(s["goal_node_contended"]["met"])
        self.assertAlmostEqual(s["goal_node_contended"]["ratio"], 0.996)
        self.assertNotIn("goal_node_vs_adaptive", s)
        s = summary.summarize_config(self.CONTENDED, node_runs((99.6, 99.8, 99.7), tries=6))
        self.assertFalse(s["goal_node_contended"]["met"], "6 tries in a run is over the limit")

    def test_elsewhere_against_the_per_queue_agent(self):
        single = {"controllers": 1, "queues": 1, "jobs": 1, "qd": 32, "label": "s"}
        s = summary.summarize_config(single, node_runs((97.1, 97.5, 96.0), tries=20))
        self.assertTrue(s["goal_node_vs_adaptive"]["met"])  # 97.1 / 98 >= 0.99
        s = summary.summarize_config(single, node_runs((96.0, 95.0, 97.5), tries=20))
        self.assertFalse(s["goal_node_vs_adaptive"]["met"])

    def test_application_work_against_interrupt_with_per_queues_beside(self):
        config = dict(self.CONTENDED, io_work_us=2, label="w")
        s = summary.summarize_config(config, node_runs((99, 99, 99), 1, {"interrupt": 0.5, "adaptive": 0.4,
                                                                         "node": 0.49}))
        goal = s["goal_node_app_work"]
        self.assertTrue(goal["met"])
        self.assertAlmostEqual(goal["ratio"], 0.98)
        self.assertAlmostEqual(goal["adaptive_ratio"], 0.8)
        self.assertIn("goal_node_vs_adaptive", s, "the work configuration is no plain contended one")
        self.assertIn("Node arm", summary.markdown({"configs": [s]}))

    def test_no_node_arm_no_node_goal(self):
        s = summary.summarize_config(self.CONTENDED, [r for r in node_runs((99,), 1) if r["mode"] != "node"])
        self.assertFalse([k for k in s if "node" in k and k != "config"])
        self.assertIs(node_goals.contended({"controllers": 4, "jobs": 8, "hog": True}), False)


class DeviceConfigTest(unittest.TestCase):
    JITTERED = dict(controllers=1, queues=1, jobs=1, qd=32, rwmixread=70, write_latency_us=50, jitter_us=40)

    def command(self, config, arm):
        ev = evaluation.Evaluation.__new__(evaluation.Evaluation)  # no binaries: command() only reads these
        ev.load, ev.placement = "uvnvme-load", []
        ev.agent = type("Agent", (), {"runtime_dir": "/run/x"})()
        return ev.command(config, arm, "1s:qd32")

    def test_a_jittered_device_reaches_uvnvme_load_and_the_label(self):
        command = self.command(self.JITTERED, "patch")
        for option, value in (("--rwmixread", "70"), ("--write-latency-us", "50"), ("--jitter-us", "40")):
            self.assertEqual(command[command.index(option) + 1], value)
        self.assertEqual(command[-4:], ["--mode", "external", "--runtime-dir", "/run/x"])  # patch is an agent arm
        self.assertEqual(evaluation.label(self.JITTERED),
                         "1 dev QD32 mixed 70% reads, writes 50us, jitter 40us")

    def test_the_default_device_adds_no_option(self):
        command = self.command(dict(controllers=1, queues=1, jobs=1, qd=8), "poll")
        self.assertFalse({"--rwmixread", "--write-latency-us", "--jitter-us"} & set(command))
        self.assertEqual(command[-3:], ["--mode", "poll", "--no-socket"])


def run(mode, rep, iops, host=1.0, agent=None):
    r = {"mode": mode, "rep": rep, "iops": iops, "host_cpu_us": host, "process_cpu_us": 2 * host,
         "host_plus_agent_cpu_us": host + (agent or 0), "process_plus_agent_cpu_us": 2 * host + (agent or 0)}
    if agent is not None:
        r["agent_cpu_us"] = agent
    return r


class SummaryTest(unittest.TestCase):
    def test_medians_spread_and_iops_goal(self):
        runs = [run("interrupt", i, v) for i, v in enumerate((100, 90, 110))]
        runs += [run("poll", i, v) for i, v in enumerate((200, 210, 190))]
        runs += [run("adaptive", i, v, agent=0.1) for i, v in enumerate((199, 209, 195))]
        s = summary.summarize_config({"qd": 8, "label": "x"}, runs)
        self.assertEqual(s["modes"]["poll"]["iops"]["median"], 200)
        self.assertEqual((s["modes"]["interrupt"]["iops"]["min"], s["modes"]["interrupt"]["iops"]["max"]), (90, 110))
        self.assertEqual(s["best_static"], "poll")
        self.assertAlmostEqual(s["adaptive_vs_best_static_pct"], (199 / 200 - 1) * 100)
        self.assertAlmostEqual(s["adaptive_vs_interrupt_pct"], (199 / 100 - 1) * 100)
        self.assertEqual(s["paired_adaptive_over_best_static"], [199 / 200, 209 / 210, 195 / 190])
        self.assertAlmostEqual(s["paired_adaptive_over_best_static_median"], 209 / 210)
        self.assertTrue(s["goal_iops"]["met"])  # the median of the paired ratios, 0.995 >= 0.99
        self.assertNotIn("goal_qd1_cpu", s)

    def test_iops_goal_missed(self):
        runs = [run("interrupt", 0, 100), run("poll", 0, 200), run("adaptive", 0, 193)]
        self.assertFalse(summary.summarize_config({"qd": 8, "label": "x"}, runs)["goal_iops"]["met"])

    def test_iops_goal_is_0_99_of_the_better_static_mode(self):
        runs = [run("interrupt", 0, 100), run("poll", 0, 200), run("adaptive", 0, 197)]
        self.assertFalse(summary.summarize_config({"qd": 8, "label": "x"}, runs)["goal_iops"]["met"])  # 0.985

    def test_gain_kept_where_polling_pays(self):
        runs = [run("interrupt", i, 100) for i in range(3)] + [run("poll", i, 200) for i in range(3)]
        runs += [run("adaptive", i, v) for i, v in enumerate((195, 180, 196))]
        runs += [run("patch", i, v) for i, v in enumerate((150, 160, 170))]
        s = summary.summarize_config({"qd": 32, "label": "x"}, runs)
        self.assertEqual(s["adaptive_gain_kept"], [0.95, 0.8, 0.96])
        self.assertTrue(s["goal_gain_kept"]["met"])  # median 0.95 >= 0.9
        self.assertEqual(s["patch_gain_kept"], [0.5, 0.6, 0.7])
        self.assertAlmostEqual(s["paired_patch_over_best_static_median"], 0.8)
        self.assertIn("met (0.95) >= 0.9: 0.95, 0.80, 0.96; 0.50, 0.60, 0.70", summary.markdown({"configs": [s]}))
        runs = [r for r in runs if r["mode"] != "adaptive"] + [run("adaptive", i, 185) for i in range(3)]
        self.assertFalse(summary.summarize_config({"qd": 32, "label": "x"}, runs)["goal_gain_kept"]["met"])

    def test_no_gain_goal_where_polling_pays_5_percent_or_less_or_below_qd8(self):
        runs = [run("interrupt", 0, 100), run("poll", 0, 105), run("adaptive", 0, 100)]
        self.assertNotIn("goal_gain_kept", summary.summarize_config({"qd": 32, "label": "x"}, runs))
        runs = [run("interrupt", 0, 100), run("poll", 0, 200), run("adaptive", 0, 100)]
        self.assertNotIn("goal_gain_kept", summary.summarize_config({"qd": 1, "label": "x"}, runs))

    def test_qd1_iops_goal_against_interrupt(self):
        runs = [run("interrupt", 0, 100), run("poll", 0, 130), run("adaptive", 0, 96)]
        s = summary.summarize_config({"qd": 1, "label": "x"}, runs)
        self.assertNotIn("goal_iops", s)
        self.assertTrue(s["goal_qd1_iops"]["met"])
        self.assertAlmostEqual(s["goal_qd1_iops"]["ratio"], 0.96)

    def test_shadow_goal_both_ways(self):
        base = [run("interrupt", 0, 100), run("poll", 0, 90), run("adaptive", 0, 100)]
        for shadow, met in ((97.5, True), (102.5, True), (96.5, False), (103.5, False)):
            s = summary.summarize_config({"qd": 32, "label": "x"}, base + [run("shadow", 0, shadow, agent=0.0)])
            self.assertEqual(s["goal_shadow"]["met"], met, shadow)
            self.assertAlmostEqual(s["paired_shadow_over_interrupt"][0], shadow / 100)

    def test_qd1_cpu_goal_counts_the_agent(self):
        runs = [run("interrupt", 0, 100, host=10.0), run("poll", 0, 120, host=30.0)]
        within = summary.summarize_config({"qd": 1, "label": "x"}, runs + [run("adaptive", 0, 100, 10.5, agent=0.4)])
        self.assertTrue(within["goal_qd1_cpu"]["met"])
        self.assertAlmostEqual(within["goal_qd1_cpu"]["host_ratio"], 1.09)
        over = summary.summarize_config({"qd": 1, "label": "x"}, runs + [run("adaptive", 0, 100, 10.5, agent=0.6)])
        self.assertFalse(over["goal_qd1_cpu"]["met"])

    def test_qd1_cpu_goal_is_the_median_of_paired_ratios_not_moved_by_a_bimodal_run(self):
        # Two repetitions whose arms both woke at the slow cost (3 us), one where only adaptive did: the
        # medians' ratio (3.1 / 1.6) would miss the goal, the pairs (1.06, 1.06, 1.94, 1.03, 1.03) meet it.
        interrupt = (1.6, 1.6, 1.6, 3.0, 3.0)
        adaptive = (1.7, 1.7, 3.1, 3.1, 3.1)
        runs = [run("interrupt", i, 100, host=h) for i, h in enumerate(interrupt)]
        runs += [run("poll", i, 120, host=30.0) for i in range(5)]
        runs += [run("adaptive", i, 100, host=h, agent=0.0) for i, h in enumerate(adaptive)]
        goal = summary.summarize_config({"qd": 1, "label": "x"}, runs)["goal_qd1_cpu"]
        self.assertEqual(goal["host_paired_ratios"], [a / i for a, i in zip(adaptive, interrupt)])
        self.assertAlmostEqual(goal["host_ratio"], 1.7 / 1.6)
        self.assertAlmostEqual(goal["host_ratio_of_medians"], 3.1 / 1.6)
        self.assertTrue(goal["met"])

    def test_markdown_names_every_configuration(self):
        runs = [run("interrupt", 0, 100), run("poll", 0, 200), run("adaptive", 0, 150, agent=0.0)]
        configs = [summary.summarize_config({"qd": 8, "label": "cfg A"}, runs),
                   summary.summarize_config({"qd": 1, "label": "cfg B"}, runs)]
        text = summary.markdown({"configs": configs})
        self.assertEqual(text.count("| cfg A |"), 3)
        self.assertEqual(text.count("| cfg B |"), 3)
        self.assertIn("NOT met", text)


def phase(name, iops, host, agent=None):
    p = {"name": name, "qd": 1, "iops": iops, "host_cpu_us": host}
    if agent is not None:
        p["host_plus_agent_cpu_us"] = host + agent
    return p


class PhasedTest(unittest.TestCase):
    def test_the_oracle_takes_the_faster_mode_when_heavy_and_the_cheaper_when_light(self):
        statics = {"interrupt": {"phases": [phase("light", 10, 10.0), phase("heavy", 100, 1.0), phase("light", 10, 9.0)]},
                   "poll": {"phases": [phase("light", 12, 30.0), phase("heavy", 200, 2.0), phase("light", 30, 8.0)]}}
        self.assertEqual(phased.oracle_modes(statics), ["interrupt", "poll", "poll"])

    def test_goals_are_against_the_oracle_in_every_phase(self):
        modes = {"interrupt": {"phases": [phase("light", 10, 10.0), phase("heavy", 100, 1.0), phase("light", 10, 10.0)]},
                 "poll": {"phases": [phase("light", 12, 30.0), phase("heavy", 200, 2.0), phase("light", 12, 30.0)]},
                 "oracle": {"phases": [phase("light", 10, 9.0), phase("heavy", 196, 2.0), phase("light", 10, 10.0)],
                            "phase_modes": ["interrupt", "poll", "interrupt"]},
                 "adaptive": {"phases": [phase("light", 10, 9.0, 0.4), phase("heavy", 191, 1.5, 0.1),
                                         phase("light", 10, 10.0, 0.6)]}}
        goals = phased.goals([modes])
        heavy = goals["heavy_iops"][0]
        self.assertEqual((heavy["phase"], heavy["oracle"], heavy["met"]), (1, "poll", True))
        self.assertAlmostEqual(heavy["ratio"], 191 / 196)
        self.assertAlmostEqual(heavy["versus_best_static"], 191 / 200)
        self.assertEqual([(g["phase"], g["met"]) for g in goals["light_host_cpu"]], [(0, True), (2, False)])
        self.assertAlmostEqual(goals["light_host_cpu"][0]["ratio"], 9.4 / 9.0)
        self.assertAlmostEqual(goals["light_host_cpu"][1]["versus_interrupt"], 1.06)

    def test_goals_are_medians_of_ratios_paired_within_a_repetition(self):
        def rep(oracle_heavy, adaptive_heavy, adaptive_light_host):
            return {"interrupt": {"phases": [phase("light", 10, 10.0), phase("heavy", 100, 1.0)]},
                    "poll": {"phases": [phase("light", 12, 30.0), phase("heavy", oracle_heavy, 2.0)]},
                    "oracle": {"phases": [phase("light", 10, 10.0), phase("heavy", oracle_heavy, 2.0)],
                               "phase_modes": ["interrupt", "poll"]},
                    "adaptive": {"phases": [phase("light", 10, adaptive_light_host), phase("heavy", adaptive_heavy, 1.5)]}}
        # Repetition 2 is the outlier: its heavy phase and its light CPU alone miss.
        repetitions = [rep(200, 196, 10.4), rep(400, 200, 14.0), rep(200, 198, 10.3)]
        goals = phased.goals(repetitions)
        heavy = goals["heavy_iops"][0]
        self.assertEqual(heavy["ratios"], [0.98, 0.5, 0.99])
        self.assertAlmostEqual(heavy["ratio"], 0.98)
        self.assertTrue(heavy["met"])
        light = goals["light_host_cpu"][0]
        self.assertAlmostEqual(light["ratio"], 1.04)
        self.assertTrue(light["met"])

    def test_median_phases(self):
        runs = [{"phases": [dict(phase("heavy", v, 1.0), qd=16)]} for v in (300, 100, 200)]
        merged = phased.median_phases(runs)
        self.assertEqual(merged[0]["iops"], 200)
        self.assertEqual((merged[0]["name"], merged[0]["qd"]), ("heavy", 16))


def latency_run(arm, rep, iops, p50, host_cpu_us, polled=0.0):
    return {"mode": arm, "rep": rep, "iops": iops, "lat_p50_us": p50, "lat_p99_us": 2 * p50,
            "host_cpu_us": host_cpu_us, "host_plus_agent_cpu_us": host_cpu_us, "poll_completion_share": polled}


class LatencyPointTest(unittest.TestCase):
    def runs(self, latency_p50s, latency_cpu_us=20.0, default_polled=0.0):
        out = []
        for rep, p50 in enumerate(latency_p50s):
            out += [latency_run("interrupt", rep, 30_000, 30.0, 4.0), latency_run("poll", rep, 47_000, 20.0, 21.0, 1.0),
                    latency_run("adaptive", rep, 30_000, 30.0, 4.2, default_polled),
                    latency_run("latency", rep, 45_000, p50, latency_cpu_us, 0.95)]
        return out

    def test_the_goals_are_paired_p50_the_reapers_cores_and_the_default_at_qd1(self):
        point = latency.summarize("1 dev QD1", self.runs([21.0, 30.0, 21.5]))
        self.assertEqual(point["goal_latency_p50"]["ratios"], [1.05, 1.5, 1.075])
        self.assertAlmostEqual(point["goal_latency_p50"]["ratio"], 1.075)
        self.assertTrue(point["goal_latency_p50"]["met"])
        self.assertAlmostEqual(point["goal_latency_cpu"]["ratio"], 0.9)  # 20 us x 45k per second
        self.assertTrue(point["goal_latency_cpu"]["met"])
        self.assertTrue(point["goal_default_qd1"]["met"])
        self.assertEqual(point["arms"]["poll"]["lat_p50_us"], 20.0)

    def test_over_the_budget_slower_than_poll_or_a_default_that_polls_misses(self):
        point = latency.summarize("1 dev QD1", self.runs([23.0, 23.0, 23.0], latency_cpu_us=24.0, default_polled=0.5))
        self.assertFalse(point["goal_latency_p50"]["met"])
        self.assertFalse(point["goal_latency_cpu"]["met"])  # 24 us x 45k = 1.08 cores
        self.assertFalse(point["goal_default_qd1"]["met"])

    def test_qd8_has_no_default_goal_and_the_goals_reach_the_summary(self):
        point = latency.summarize("1 dev QD8", self.runs([21.0]))
        self.assertNotIn("goal_default_qd1", point)
        entries = summary.goal_entries({"configs": [], "latency": {"points": [point], "budget_cores": 1.0}})
        self.assertEqual([(where, name) for where, name, _ in entries],
                         [("latency 1 dev QD8", "latency_cpu"), ("latency 1 dev QD8", "latency_p50")])
        text = "\n".join(summary.latency_table({"points": [point]}))
        self.assertIn("| 1 dev QD8 | latency | 45.0k | 21 |", text)


class PollShareTest(unittest.TestCase):
    def test_sources(self):
        self.assertEqual(evaluation.poll_share({"mode_switches": 3}, {"completed": 100, "poll_completed": 25},
                                               "adaptive")[0], 0.25)
        self.assertEqual(evaluation.poll_share({"mode_switches": 0}, {"completed": 100}, "poll")[0], 1.0)
        share, source = evaluation.poll_share({"mode_switches": 3}, {"completed": 100}, "adaptive", 0.4)
        self.assertEqual((share, source.split(":")[0]), (0.4, "trace"))


SWITCHES = [
    f"switch {Q} 2 interrupt->poll reason=window_fast lever=uvnvme_socket evidence=100 decided=200 journaled=+1000 "
    "published=+2000 requested=+2000 acked=+9000 effect=+5000 by=driver first=+6000 verdict=behind_pace k=16 n=16 "
    "measured=500 limit=400 at=+7000",
    f"switch {Q} 3 poll->interrupt reason=behind_pace lever=uvnvme_socket evidence=300 decided=400 journaled=+0 "
    "published=+1000 requested=+1000 acked=+3000 effect=+3000 by=lever first=+0 verdict=none",
    f"window {Q} interrupt 8192 1000 2000",
]


class SwitchesTest(unittest.TestCase):
    def test_a_switch_line_parses_with_signed_offsets(self):
        s = switches.parse_switch(SWITCHES[0])
        self.assertEqual((s["queue"], s["generation"], s["from"], s["to"]), (Q, 2, "interrupt", "poll"))
        self.assertEqual((s["effect"], s["by"], s["k"], s["n"], s["verdict"]), (5000, "driver", 16, 16, "behind_pace"))
        with self.assertRaises(ValueError):
            switches.parse_switch(SWITCHES[2])

    def test_steps_are_grouped_by_lever_and_direction_and_absent_steps_left_out(self):
        out = switches.summarize(SWITCHES)
        self.assertEqual(sorted(out), ["uvnvme_socket interrupt->poll", "uvnvme_socket poll->interrupt"])
        up = out["uvnvme_socket interrupt->poll"]
        self.assertEqual(up["effect_by"], {"driver": 1, "lever": 0})
        self.assertEqual(up["steps_after_decision"]["effect"], {"median_us": 5.0, "p90_us": 5.0})
        self.assertEqual(up["first_completion_after_effect_us"], {"median": 1.0, "p90": 1.0})
        down = out["uvnvme_socket poll->interrupt"]
        self.assertNotIn("journaled", down["steps_after_decision"])  # the journal had it: +0
        self.assertIsNone(down["first_completion_after_effect_us"])
        self.assertEqual(down["verdicts"], {"none": 1})


if __name__ == "__main__":
    unittest.main()
