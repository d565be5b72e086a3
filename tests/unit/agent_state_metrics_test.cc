// SPDX-License-Identifier: Apache-2.0
// The two gauges an operator alerts on besides the loop's (issue 46): a policy set over the API that holds the
// node off its config file's (nvme_adapt_policy_drift_timestamp_seconds), and journal entries a restore could
// not put back (nvme_adapt_journal_unrestored_entries).
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

using StateMetrics = AgentLoop;

// The sample line of an unlabelled gauge in a scrape ("" when absent).
std::string Sample(const std::string& scrape, const std::string& name) {
  const size_t at = scrape.find("\n" + name + " ");
  return at == std::string::npos ? "" : scrape.substr(at + 1, scrape.find('\n', at + 1) - at - 1);
}

TEST_F(StateMetrics, policy_drift_metric_is_when_the_api_policy_was_set_and_absent_under_the_file) {
  Start();
  EXPECT_EQ(Sample(metrics_.Render(), "nvme_adapt_policy_drift_timestamp_seconds"), "");
  v1::SetPolicyRequest set;
  set.mutable_policy()->set_pace_slack_ns(50'000);
  ASSERT_TRUE(agent_->api().SetPolicy(set));
  const int64_t set_unix_ns = agent_->api().GetPolicy().origin().set_unix_ns();
  ASSERT_GT(set_unix_ns, 0);
  const std::string line = Sample(metrics_.Render(), "nvme_adapt_policy_drift_timestamp_seconds");
  ASSERT_NE(line, "") << metrics_.Render();
  EXPECT_NEAR(std::stod(line.substr(line.find(' ') + 1)), static_cast<double>(set_unix_ns) / 1e9, 1e-3) << line;
  // A restart keeps the drift, and its time.
  agent_.reset();
  Start();
  const std::string again = Sample(metrics_.Render(), "nvme_adapt_policy_drift_timestamp_seconds");
  EXPECT_EQ(again, line);

  v1::SetPolicyRequest reset;
  reset.set_reset(true);
  ASSERT_TRUE(agent_->api().SetPolicy(reset));
  EXPECT_EQ(Sample(metrics_.Render(), "nvme_adapt_policy_drift_timestamp_seconds"), "");
}

TEST_F(StateMetrics, journal_unrestored_metric_counts_the_entries_a_restore_kept_until_one_puts_them_back) {
  Start();
  EXPECT_EQ(Sample(metrics_.Render(), "nvme_adapt_journal_unrestored_entries"),
            "nvme_adapt_journal_unrestored_entries 0");
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(levers_.values["uvnvme:7:0:q1"], "poll");
  EXPECT_EQ(Sample(metrics_.Render(), "nvme_adapt_journal_unrestored_entries"),
            "nvme_adapt_journal_unrestored_entries 0")
      << "a change in force is not an unrestored entry";
  agent_.reset();  // a crash: no Shutdown
  levers_.refuse_restores = 1;
  Start();  // its restore at start fails: the entry is kept
  EXPECT_EQ(Sample(metrics_.Render(), "nvme_adapt_journal_unrestored_entries"),
            "nvme_adapt_journal_unrestored_entries 1");
  ASSERT_TRUE(agent_->Shutdown());  // the next try succeeds
  EXPECT_EQ(Sample(metrics_.Render(), "nvme_adapt_journal_unrestored_entries"),
            "nvme_adapt_journal_unrestored_entries 0");
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
