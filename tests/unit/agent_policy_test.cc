// One policy applier behind SetPolicy and the config reload (issue 19): whichever path changes a queue's
// policy, the engine, the trace, the BPF control and the metrics all hear of it alike.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

// The queue's nvme_adapt_queue_poll_threshold_seconds line of a scrape ("" when there is none).
std::string ThresholdLine(const std::string& scrape, uint32_t qid) {
  const std::string family = "nvme_adapt_queue_poll_threshold_seconds{";
  const std::string queue = "queue=\"" + std::to_string(qid) + "\"";
  for (size_t at = scrape.find(family); at != std::string::npos; at = scrape.find(family, at + 1)) {
    const std::string line = scrape.substr(at, scrape.find('\n', at) - at);
    if (line.find(queue) != std::string::npos) return line;
  }
  return "";
}

using AgentPolicy = AgentLoop;

TEST_F(AgentPolicy, AConfigReloadMovesThePollThresholdGaugeAsSetPolicyDoes) {
  policies_.mutable_policy()->set_poll_threshold_ns(10'000);
  Start();
  EXPECT_NE(ThresholdLine(metrics_.Render(), 1).find(" 1e-05"), std::string::npos) << metrics_.Render();

  v1::PolicySet reloaded = policies_;
  reloaded.mutable_policy()->set_poll_threshold_ns(30'000);
  auto outcome = agent_->ReloadConfigPolicies(reloaded);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_TRUE(outcome->policy_applied) << outcome->why_not;
  const std::string after_reload = ThresholdLine(metrics_.Render(), 1);
  EXPECT_NE(after_reload.find(" 3e-05"), std::string::npos) << "the gauge after a reload: " << after_reload;

  v1::SetPolicyRequest request;
  request.mutable_policy()->set_poll_threshold_ns(20'000);
  ASSERT_TRUE(agent_->SetPolicy(request));
  const std::string after_set = ThresholdLine(metrics_.Render(), 1);
  EXPECT_NE(after_set.find(" 2e-05"), std::string::npos) << "the gauge after SetPolicy: " << after_set;
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
