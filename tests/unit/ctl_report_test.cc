// SPDX-License-Identifier: Apache-2.0
// nvme-adaptctl report: controllers assembled from ListQueues, lever risk classes, verdicts in plain words.
#include <gtest/gtest.h>

#include <sstream>

#include "agent/ctl/payoff_text.h"
#include "agent/ctl/report.h"

namespace nvmeadapt::ctl {
namespace {

v1::QueueInfo Queue(const std::string& controller, uint32_t qid, bool eligible, const std::string& lever,
                    v1::ControllerMode mode) {
  v1::QueueInfo q;
  q.mutable_id()->set_controller(controller);
  q.mutable_id()->set_queue(qid);
  q.set_source(v1::SOURCE_KERNEL);
  q.set_transport("pcie");
  q.set_eligible(eligible);
  if (!eligible) q.set_ineligible_reason("admin queue");
  q.set_lever(lever);
  q.set_controller_mode(mode);
  q.set_poll_threshold_ns(10'000);
  return q;
}

TEST(LeverRisk, ByLever) {
  EXPECT_EQ(LeverRiskOf("poll_queues_reset"), LeverRisk::kResetsController);
  EXPECT_EQ(LeverRiskOf("tcp_reconnect"), LeverRisk::kReconnectsHost);
  EXPECT_EQ(LeverRiskOf("coalescing"), LeverRisk::kNothingElse);
  EXPECT_EQ(LeverRiskOf("uvnvme_socket"), LeverRisk::kNothingElse);
  EXPECT_EQ(LeverRiskOf("gsim"), LeverRisk::kDriverSpecific);
  EXPECT_EQ(LeverRiskOf("adaptive_poll_sysfs"), LeverRisk::kDriverSpecific);
}

TEST(Report, ShadowControllerWouldPollShareAndVerdict) {
  v1::GetStatusResponse status;
  status.set_collector("bpf");
  status.set_kernel_release("6.1.0-test");
  status.set_kernel_btf(true);
  v1::ListQueuesResponse queues;
  *queues.add_queues() = Queue("nvme0", 0, false, "", v1::CONTROLLER_MODE_SHADOW);
  v1::QueueInfo q1 = Queue("nvme0", 1, true, "poll_queues_reset", v1::CONTROLLER_MODE_SHADOW);
  q1.mutable_payoff()->set_shadow_windows(10);
  q1.mutable_payoff()->set_shadow_would_poll_windows(4);
  q1.mutable_payoff()->set_shadow_completions(1000);
  q1.mutable_payoff()->set_shadow_would_poll_completions(400);
  *queues.add_queues() = q1;
  const v1::Report report = BuildReport(status, queues);
  ASSERT_EQ(report.controllers_size(), 1);
  const v1::ControllerReport& c = report.controllers(0);
  EXPECT_EQ(c.lever(), "poll_queues_reset");
  EXPECT_EQ(c.lever_risk(), "resets_controller");
  ASSERT_EQ(c.eligible_queues_size(), 1);
  EXPECT_EQ(c.eligible_queues(0), 1u);
  ASSERT_EQ(c.ineligible_queues_size(), 1);
  EXPECT_EQ(c.ineligible_queues(0), "q0: admin queue");
  EXPECT_DOUBLE_EQ(c.shadow_would_poll_share(), 0.4);
  EXPECT_EQ(c.verdict(), "would poll about 40 % of the time with poll_queues_reset; each switch resets the "
                         "controller (its I/O pauses)");
  std::ostringstream text;
  PrintReport(report, text);
  EXPECT_NE(text.str().find(c.verdict()), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("6.1.0-test (BTF)"), std::string::npos) << text.str();
}

TEST(Report, NeverFastEnoughNamesTheAverageAndTheThreshold) {
  v1::ControllerReport c;
  c.set_mode(v1::CONTROLLER_MODE_SHADOW);
  c.add_eligible_queues(1);
  c.set_lever("coalescing");
  c.set_shadow_windows(5);
  c.set_fastest_average_interval_ns(45'000);
  c.set_poll_threshold_ns(10'000);
  EXPECT_EQ(Verdict(c, false), "never fast enough to try: average 45.0 us between completions against the "
                               "10.0 us threshold");
}

TEST(Report, AdaptiveVerdicts) {
  v1::ControllerReport c;
  c.set_mode(v1::CONTROLLER_MODE_ADAPTIVE);
  c.add_eligible_queues(1);
  c.set_lever("uvnvme_socket");
  c.set_measured_windows(20);
  c.set_tries(6);
  EXPECT_EQ(Verdict(c, false), "tried polling 6 times, never faster than interrupt mode: stays in interrupt");
  c.set_kept_windows(3);
  c.set_speedup(1.3);
  c.set_polled_share(0.42);
  EXPECT_EQ(Verdict(c, false), "polls 42 % of completions, x1.30 the rate of interrupt mode when it does; no reset "
                               "needed");
  EXPECT_EQ(Verdict(c, true), "observed only: the procfs collector cannot time windows (BPF unavailable)");
  c.clear_eligible_queues();
  EXPECT_EQ(Verdict(c, false), "nothing to switch: no eligible queue");
}

TEST(PayoffText, QueueColumnAndJudgedWindow) {
  v1::Payoff p;
  EXPECT_EQ(PayoffText(p), "-");
  p.set_judged_windows(4);
  p.set_kept_windows(3);
  p.set_last_kept_speedup(1.25);
  p.set_completions_gained(819.4);
  p.set_cpu_measured(true);
  p.set_polling_cpu_ns(400'000'000);
  EXPECT_EQ(PayoffText(p), "x1.25 +819 cpu 0.40s");
  v1::Decision d;
  d.set_reason("poll_window_faster");
  d.set_measured_ns(4'000);
  d.set_limit_ns(5'000);
  EXPECT_EQ(JudgedText(d), "x1.25 vs baseline");
  d.set_reason("window_fast");
  EXPECT_EQ(JudgedText(d), "");
}

}  // namespace
}  // namespace nvmeadapt::ctl
