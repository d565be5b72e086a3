// SPDX-License-Identifier: Apache-2.0
// Operable across a fleet (issue 32) in the closed loop with fakes: policy by selector over the API and the
// config, `policy explain`, and a controller's stable identity when it comes back under another kernel name.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "agent/config/config_file.h"
#include "agent/daemon/config_watch.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

constexpr const char* kPm1743Id = "nvme-00000000000000aa";

// A queue of a PCIe drive as the real discovery reports it (its facts and stable ID), under `name`.
DiscoveredQueue DriveQueue(uint32_t qid, const std::string& name, uint32_t ctrl) {
  DiscoveredQueue q = UvnvmeQueue(qid, name);
  q.key.ctrl = ctrl;
  q.transport = "pcie";
  q.layer = "local";
  q.controller_id = kPm1743Id;
  q.model = "SAMSUNG MZWLO3T8HCLS-00A07";
  q.serial = "S6CRNA0T100001";
  q.subsysnqn = "nqn.1994-11.com.samsung:pm1743";
  q.pci_address = "0000:3b:00.0";
  return q;
}

class FleetPolicy : public AgentLoop {
 protected:
  void SetUp() override {
    AgentLoop::SetUp();
    discovery_.queues.push_back(DriveQueue(1, "nvme0", 1));
    discovery_.queues.push_back(DriveQueue(2, "nvme0", 1));
  }

  v1::QueueInfo QueueOf(const std::string& controller, uint32_t qid) {
    v1::ListQueuesRequest request;
    request.set_controller(controller);
    auto list = agent_->api().ListQueues(request);
    if (!list) {
      ADD_FAILURE() << list.error().message;
      return {};
    }
    for (const auto& q : list->queues()) {
      if (q.id().queue() == qid) return q;
    }
    ADD_FAILURE() << "no queue " << controller << ":q" << qid;
    return {};
  }

  // Discovery finds the drive under `name` now; the loop rescans.
  void Renumber(const std::string& name, uint32_t ctrl) {
    discovery_.queues = {UvnvmeQueue(1), UvnvmeQueue(2), DriveQueue(1, name, ctrl), DriveQueue(2, name, ctrl)};
    now_ += 1'000'000'000'000;
    agent_->RunOnce();
  }

  static v1::SetPolicyRequest SelectorRequest(const std::string& name) {
    v1::SetPolicyRequest request;
    request.set_selector(name);
    return request;
  }
};

TEST_F(FleetPolicy, selector_set_over_the_api_reaches_matching_queues_only) {
  Start();
  v1::SetPolicyRequest request = SelectorRequest("samsung-first-queue");
  request.mutable_match()->set_model("SAMSUNG*");
  request.mutable_match()->set_queues("1");
  request.mutable_policy()->set_mode(v1::CONTROLLER_MODE_POLL);
  auto set = agent_->api().SetPolicy(request);
  ASSERT_TRUE(set) << set.error().message;
  ASSERT_EQ(set->policy().selectors_size(), 1);
  EXPECT_EQ(QueueOf("nvme0", 1).controller_mode(), v1::CONTROLLER_MODE_POLL);
  EXPECT_EQ(QueueOf("nvme0", 2).controller_mode(), v1::CONTROLLER_MODE_ADAPTIVE);
  EXPECT_EQ(QueueOf("uvnvme:7:0", 1).controller_mode(), v1::CONTROLLER_MODE_ADAPTIVE);
  // An existing entry keeps its criteria when only fields change; `remove` drops it.
  v1::SetPolicyRequest change = SelectorRequest("samsung-first-queue");
  change.mutable_policy()->set_mode(v1::CONTROLLER_MODE_SHADOW);
  ASSERT_TRUE(agent_->api().SetPolicy(change));
  EXPECT_EQ(QueueOf("nvme0", 1).controller_mode(), v1::CONTROLLER_MODE_SHADOW);
  v1::SetPolicyRequest remove = SelectorRequest("samsung-first-queue");
  remove.set_remove(true);
  ASSERT_TRUE(agent_->api().SetPolicy(remove));
  EXPECT_EQ(QueueOf("nvme0", 1).controller_mode(), v1::CONTROLLER_MODE_ADAPTIVE);
  EXPECT_EQ(agent_->api().GetPolicy().policy().selectors_size(), 0);
}

TEST_F(FleetPolicy, selector_bad_requests_are_refused_and_lose_nothing) {
  Start();
  v1::SetPolicyRequest good = SelectorRequest("samsung");
  good.mutable_match()->set_model("SAMSUNG*");
  good.mutable_policy()->set_pace_slack_ns(30'000);
  ASSERT_TRUE(agent_->api().SetPolicy(good));
  const std::string before = agent_->api().GetPolicy().policy().SerializeAsString();

  v1::SetPolicyRequest no_match = SelectorRequest("new");
  no_match.mutable_policy()->set_max_failures(4);
  auto refused = agent_->api().SetPolicy(no_match);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("match: a new selector entry (new) needs its criteria"), std::string::npos)
      << refused.error().message;

  v1::SetPolicyRequest overlapping = SelectorRequest("pcie");
  overlapping.mutable_match()->set_transport("pcie");
  overlapping.mutable_policy()->set_max_failures(4);
  refused = agent_->api().SetPolicy(overlapping);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("'samsung'"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("'pcie'"), std::string::npos) << refused.error().message;

  v1::SetPolicyRequest bad_range = SelectorRequest("ranges");
  bad_range.mutable_match()->set_queues("3-1");
  bad_range.mutable_policy()->set_max_failures(4);
  refused = agent_->api().SetPolicy(bad_range);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("selectors[1].match.queues"), std::string::npos) << refused.error().message;

  v1::SetPolicyRequest gone = SelectorRequest("never-made");
  gone.set_remove(true);
  EXPECT_EQ(agent_->api().SetPolicy(gone).error().code, ErrorCode::kNotFound);

  EXPECT_EQ(agent_->api().GetPolicy().policy().SerializeAsString(), before);
  EXPECT_EQ(collector_.controls[DriveQueue(1, "nvme0", 1).key.ToString()].pace_slack, 30'000);
}

TEST_F(FleetPolicy, selector_in_the_config_file_reaches_queues_on_reload) {
  Start();
  v1::PolicySet reloaded = policies_;
  auto* entry = reloaded.add_selectors();
  entry->set_name("pm1743");
  entry->mutable_match()->set_serial("S6CRNA0T100001");
  entry->mutable_policy()->set_mode(v1::CONTROLLER_MODE_SHADOW);
  auto outcome = agent_->ReloadConfigPolicies(reloaded);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(QueueOf("nvme0", 2).controller_mode(), v1::CONTROLLER_MODE_SHADOW);
  EXPECT_EQ(QueueOf("uvnvme:7:0", 2).controller_mode(), v1::CONTROLLER_MODE_ADAPTIVE);
}

// A config file whose selectors cannot stand is refused at reload with the entries named, the running policy
// kept whole.
TEST_F(FleetPolicy, selector_refused_at_reload_keeps_the_running_policy) {
  auto* entry = policies_.add_selectors();
  entry->set_name("pm1743");
  entry->mutable_match()->set_serial("S6CRNA0T100001");
  entry->mutable_policy()->set_mode(v1::CONTROLLER_MODE_SHADOW);
  Start();
  const std::string before = agent_->api().GetPolicy().policy().SerializeAsString();
  ConfigReloader reloader("config.json", [] {
    return config::ParseConfigJson(R"({"selectors": [
        {"name": "by-model", "match": {"model": "SAMSUNG*"}, "policy": {"mode": "CONTROLLER_MODE_POLL"}},
        {"name": "by-serial", "match": {"serial": "S6CRNA0T100001"}, "policy": {"mode": "CONTROLLER_MODE_OFF"}}]})");
  }, *agent_, &metrics_);
  auto refused = reloader.Reload("test");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("'by-model'"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("'by-serial'"), std::string::npos) << refused.error().message;
  EXPECT_EQ(agent_->api().GetPolicy().policy().SerializeAsString(), before);
  EXPECT_EQ(QueueOf("nvme0", 1).controller_mode(), v1::CONTROLLER_MODE_SHADOW);
}

TEST_F(FleetPolicy, policy_explain_gives_each_field_its_entry_and_source) {
  auto* entry = policies_.add_selectors();
  entry->set_name("samsung");
  entry->mutable_match()->set_model("SAMSUNG*");
  entry->mutable_policy()->set_profile("patch");
  Start();
  v1::SetPolicyRequest api;
  api.set_controller("nvme0");
  api.mutable_policy()->set_pace_slack_ns(40'000);
  ASSERT_TRUE(agent_->api().SetPolicy(api));

  v1::ExplainPolicyRequest request;
  request.mutable_queue()->set_controller("nvme0");
  request.mutable_queue()->set_queue(1);
  auto explained = agent_->api().ExplainPolicy(request);
  ASSERT_TRUE(explained) << explained.error().message;
  EXPECT_EQ(explained->controller_id(), kPm1743Id);
  std::map<std::string, v1::PolicyFieldOrigin> fields;
  for (const auto& field : explained->fields()) fields[field.field()] = field;
  EXPECT_EQ(fields["mode"].entry(), "global");
  EXPECT_EQ(fields["mode"].source(), v1::POLICY_SOURCE_CONFIG_FILE);
  EXPECT_EQ(fields["mode"].value().mode(), v1::CONTROLLER_MODE_ADAPTIVE);
  // The selector lays over the global level: its profile's window wins over the fixture's global 16.
  EXPECT_EQ(fields["window_completions"].entry(), "selector samsung (profile patch)");
  EXPECT_EQ(fields["window_completions"].value().window_completions(), 8192u);
  EXPECT_EQ(fields["max_failures"].entry(), "selector samsung (profile patch)");
  EXPECT_EQ(fields["max_failures"].source(), v1::POLICY_SOURCE_CONFIG_FILE);
  EXPECT_EQ(fields["pace_slack_ns"].entry(), std::string("controller ") + kPm1743Id);
  EXPECT_EQ(fields["pace_slack_ns"].source(), v1::POLICY_SOURCE_API);
  EXPECT_EQ(fields["pace_slack_ns"].value().pace_slack_ns(), 40'000);
  EXPECT_EQ(explained->effective().pace_slack_ns(), 40'000);
  v1::ExplainPolicyRequest on_uvnvme = request;
  on_uvnvme.mutable_queue()->set_controller("uvnvme:7:0");
  auto plain = agent_->api().ExplainPolicy(on_uvnvme);
  ASSERT_TRUE(plain);
  for (const auto& field : plain->fields()) {
    if (field.field() == "settle_windows") {
      EXPECT_EQ(field.entry(), "default");
      EXPECT_EQ(field.source(), v1::POLICY_SOURCE_DEFAULT);
    }
  }
  request.mutable_queue()->set_queue(9);
  EXPECT_EQ(agent_->api().ExplainPolicy(request).error().code, ErrorCode::kNotFound);
}

TEST_F(FleetPolicy, stable_identity_is_the_controller_label_and_the_kernel_name_an_info_label) {
  Start();
  EXPECT_EQ(QueueOf("nvme0", 1).controller_id(), kPm1743Id);
  EXPECT_EQ(QueueOf("uvnvme:7:0", 1).controller_id(), "uvnvme:7:0");
  const std::string scrape = metrics_.Render();
  EXPECT_NE(scrape.find(std::string("controller=\"") + kPm1743Id + "\""), std::string::npos);
  EXPECT_NE(scrape.find("kernel_name=\"nvme0\""), std::string::npos);
}

// A reboot (or a reset) that brings the drive back as nvme3: what the operator set on nvme0, and the series
// they graph, stay with the drive.
TEST_F(FleetPolicy, stable_identity_renumbered_controller_keeps_its_policy_and_metric_label) {
  Start();
  v1::SetPolicyRequest request;
  request.set_controller("nvme0");
  request.mutable_policy()->set_mode(v1::CONTROLLER_MODE_SHADOW);
  request.mutable_policy()->set_pace_slack_ns(7'000);
  auto set = agent_->api().SetPolicy(request);
  ASSERT_TRUE(set) << set.error().message;
  ASSERT_EQ(set->policy().controllers_size(), 1);
  EXPECT_EQ(set->policy().controllers(0).controller(), kPm1743Id);  // kept by the drive's ID, not its name

  Renumber("nvme3", 3);
  EXPECT_EQ(QueueOf("nvme3", 1).controller_mode(), v1::CONTROLLER_MODE_SHADOW);
  EXPECT_EQ(QueueOf("nvme3", 1).controller_id(), kPm1743Id);
  EXPECT_EQ(collector_.controls[DriveQueue(1, "nvme3", 3).key.ToString()].pace_slack, 7'000);
  v1::ListQueuesRequest gone;
  gone.set_controller("nvme0");
  EXPECT_EQ(agent_->api().ListQueues(gone).error().code, ErrorCode::kNotFound);
  const std::string scrape = metrics_.Render();
  EXPECT_NE(scrape.find("kernel_name=\"nvme3\""), std::string::npos);
  EXPECT_EQ(scrape.find("kernel_name=\"nvme0\""), std::string::npos);
  const std::string series = std::string("controller=\"") + kPm1743Id + "\",queue=\"1\"";
  EXPECT_NE(scrape.find("nvme_adapt_queue_eligible{source=\"uvnvme\"," + series), std::string::npos) << scrape;
  // The persisted policy holds no kernel name: a restart after the renumbering finds it too.
  agent_.reset();
  Start();
  EXPECT_EQ(QueueOf("nvme3", 2).controller_mode(), v1::CONTROLLER_MODE_SHADOW);
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
