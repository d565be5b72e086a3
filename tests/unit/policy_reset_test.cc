// SPDX-License-Identifier: Apache-2.0
// Precedence that shows (issue 32): a policy set over the API says so (GetPolicy, GetStatus, the metric),
// overrides the file until `policy reset`, and lasts only until the next reload where the file is
// authoritative.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <string>

#include "agent/state/state_json.h"
#include "common/files.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

using PolicyReset = AgentLoop;

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// The nvme_adapt_policy_info line of a scrape.
std::string PolicyInfoLine(const std::string& scrape) {
  const size_t at = scrape.find("nvme_adapt_policy_info{");
  return at == std::string::npos ? "" : scrape.substr(at, scrape.find('\n', at) - at);
}

TEST_F(PolicyReset, policy_reset_goes_back_to_the_file_and_every_view_says_which_is_in_force) {
  policies_.mutable_policy()->set_pace_slack_ns(30'000);
  Start();
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_CONFIG_FILE);
  EXPECT_NE(PolicyInfoLine(metrics_.Render()).find("source=\"config_file\""), std::string::npos);
  const std::string file_hash = agent_->api().GetPolicy().origin().hash();
  ASSERT_EQ(file_hash.size(), 16u);

  v1::SetPolicyRequest set;
  set.mutable_policy()->set_pace_slack_ns(50'000);
  set.set_caller("uid 0 (unix:/run/agent.sock)");
  now_ += 1'000'000'000;
  ASSERT_TRUE(agent_->api().SetPolicy(set));
  const v1::PolicyOrigin origin = agent_->api().GetPolicy().origin();
  EXPECT_EQ(origin.source(), v1::POLICY_SOURCE_API);
  EXPECT_EQ(origin.set_by(), "uid 0 (unix:/run/agent.sock)");
  EXPECT_GT(origin.set_unix_ns(), 0);
  EXPECT_NE(origin.hash(), file_hash);
  EXPECT_EQ(agent_->api().GetStatus().policy_origin().source(), v1::POLICY_SOURCE_API);
  const std::string info = PolicyInfoLine(metrics_.Render());
  EXPECT_NE(info.find("source=\"api\""), std::string::npos) << info;
  EXPECT_NE(info.find("hash=\"" + origin.hash() + "\""), std::string::npos) << info;

  // A reload does not replace it, and says who set it.
  auto reload = agent_->ReloadConfigPolicies(policies_);
  ASSERT_TRUE(reload);
  EXPECT_FALSE(reload->policy_applied);
  EXPECT_NE(reload->why_not.find("uid 0"), std::string::npos) << reload->why_not;
  // A restart keeps it, and who set it.
  agent_.reset();
  Start();
  EXPECT_EQ(agent_->api().GetPolicy().origin().set_by(), "uid 0 (unix:/run/agent.sock)");
  EXPECT_EQ(agent_->api().GetPolicy().policy().policy().pace_slack_ns(), 50'000);

  v1::SetPolicyRequest reset;
  reset.set_reset(true);
  ASSERT_TRUE(agent_->api().SetPolicy(reset));
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_CONFIG_FILE);
  EXPECT_EQ(agent_->api().GetPolicy().policy().policy().pace_slack_ns(), 30'000);
  EXPECT_EQ(agent_->api().GetPolicy().origin().hash(), file_hash);
  EXPECT_FALSE(Exists(state_dir_ + "/policy.json"));
  EXPECT_EQ(collector_.controls[UvnvmeQueue(1).key.ToString()].pace_slack, 30'000);
  EXPECT_NE(PolicyInfoLine(metrics_.Render()).find("source=\"config_file\""), std::string::npos);
  // The file's reloads apply again.
  v1::PolicySet reloaded = policies_;
  reloaded.mutable_policy()->set_pace_slack_ns(40'000);
  reload = agent_->ReloadConfigPolicies(reloaded);
  ASSERT_TRUE(reload);
  EXPECT_TRUE(reload->policy_applied) << reload->why_not;
}

TEST_F(PolicyReset, policy_reset_needless_where_the_file_is_authoritative) {
  file_authoritative_ = true;
  policies_.mutable_policy()->set_pace_slack_ns(30'000);
  Start();
  EXPECT_TRUE(agent_->api().GetPolicy().origin().file_authoritative());
  v1::SetPolicyRequest set;
  set.mutable_policy()->set_pace_slack_ns(50'000);
  ASSERT_TRUE(agent_->api().SetPolicy(set));
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_API);
  EXPECT_FALSE(Exists(state_dir_ + "/policy.json")) << "persisted although the file is authoritative";
  auto reload = agent_->ReloadConfigPolicies(policies_);
  ASSERT_TRUE(reload);
  EXPECT_TRUE(reload->policy_applied) << reload->why_not;
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_CONFIG_FILE);
  EXPECT_EQ(agent_->api().GetPolicy().policy().policy().pace_slack_ns(), 30'000);
}

// A downgrade (issue 46): the policy a newer version persisted is kept byte for byte, not dropped as "ignored";
// the file's policy runs meanwhile, GetStatus says why, a policy set over the API is refused rather than written
// over it, and `policy reset` is the one way to drop it.
TEST_F(PolicyReset, state_schema_version_a_newer_persisted_policy_is_kept_and_reported_on_a_downgrade) {
  policies_.mutable_policy()->set_pace_slack_ns(30'000);
  ASSERT_EQ(system(("mkdir -p '" + state_dir_ + "'").c_str()), 0);
  const std::string newer = "{\"schema_version\": " + std::to_string(state::kStateSchemaVersion + 1) +
                            ", \"policy\": {\"pace_slack_ns\": \"50000\", \"a_later_field\": 1}}\n";
  const std::string path = state_dir_ + "/policy.json";
  ASSERT_TRUE(WriteFileAtomically(path, newer));
  Start();
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_CONFIG_FILE);
  EXPECT_EQ(agent_->api().GetPolicy().policy().policy().pace_slack_ns(), 30'000);
  const v1::GetStatusResponse status = agent_->api().GetStatus();  // held: degraded() is a view of it
  std::string degraded;
  for (const std::string& line : status.degraded()) degraded += line + "\n";
  EXPECT_NE(degraded.find(path + ": written by a newer nvme-adaptd"), std::string::npos) << degraded;

  v1::SetPolicyRequest set;
  set.mutable_policy()->set_pace_slack_ns(40'000);
  auto refused = agent_->api().SetPolicy(set);
  ASSERT_FALSE(refused) << "written over the newer version's policy";
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(agent_->api().GetPolicy().policy().policy().pace_slack_ns(), 30'000);
  EXPECT_EQ(*ReadWholeFile(path), newer);
  // A restart keeps it too.
  agent_.reset();
  Start();
  EXPECT_EQ(*ReadWholeFile(path), newer);

  v1::SetPolicyRequest reset;
  reset.set_reset(true);
  ASSERT_TRUE(agent_->api().SetPolicy(reset));
  EXPECT_FALSE(Exists(path));
  const v1::GetStatusResponse after = agent_->api().GetStatus();
  for (const std::string& line : after.degraded()) EXPECT_EQ(line.find("newer"), std::string::npos) << line;
  ASSERT_TRUE(agent_->api().SetPolicy(set));
  EXPECT_EQ(agent_->api().GetPolicy().origin().source(), v1::POLICY_SOURCE_API);
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
