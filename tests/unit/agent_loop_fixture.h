// SPDX-License-Identifier: Apache-2.0
// The closed loop's test fixture: the agent with fake collector, discovery and levers on a fake clock.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "agent/daemon/agent.h"
#include "tests/unit/agent_fakes.h"

namespace nvmeadapt::daemon::testing {

constexpr uint32_t kWindow = 16;
constexpr engine::Nanos kUs = 1000;

class AgentLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    state_dir_ = ::testing::TempDir() + "/agent_loop_" + std::to_string(getpid()) + "_" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(system(("rm -rf '" + state_dir_ + "'").c_str()), 0);
    policies_.mutable_policy()->set_mode(v1::CONTROLLER_MODE_ADAPTIVE);
    policies_.mutable_policy()->set_window_completions(kWindow);
    discovery_.queues = {UvnvmeQueue(1), UvnvmeQueue(2)};
  }

  // The state directory and the recorded trace go with the test (fixtures stop their loop threads in TearDown,
  // which runs before this): thousands of them were left in the temporary directory.
  ~AgentLoop() override {
    agent_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(state_dir_, ignored);
    for (const char* suffix : {".trace", ".trace.decisions", ".labels"}) {
      std::filesystem::remove(state_dir_ + suffix, ignored);
    }
  }

  std::unique_ptr<Agent> MakeAgent() {
    AgentOptions options;
    options.state_dir = state_dir_;
    options.config_policies = policies_;
    options.policy_file_authoritative = file_authoritative_;
    options.discovery_interval = 1'000'000'000'000;  // rescans only when a test asks
    options.record_windows_path = state_dir_ + ".trace";
    options.version = "test";
    options.rpc_wait = rpc_wait_;
    options.lever_timeout = lever_timeout_;
    options.counters_interval = counters_interval_;
    options.node = node_;
    options.node_facts_root = node_facts_root_;
    options.node_identity = node_identity_;
    AgentDeps deps{&collector_, &discovery_, &levers_, [this] { return now_.load(); },
                   [this] { return now_.load() + 1; }, &metrics_};
    return std::make_unique<Agent>(options, deps);
  }

  void Start() {
    agent_ = MakeAgent();
    Status started = agent_->Start();
    ASSERT_TRUE(started) << started.error().message;
  }

  // One window of queue `qid` averaging `avg` per completion, in `mode`, under the queue's generation.
  void Window(uint32_t qid, ReapMode mode, engine::Nanos avg, uint32_t generation) {
    QueueWindow(qid, mode, avg, generation);
    agent_->RunOnce();
  }
  // The same window, left for the loop to take.
  void QueueWindow(uint32_t qid, ReapMode mode, engine::Nanos avg, uint32_t generation) {
    collect::WindowEvent event;
    event.key = UvnvmeQueue(qid).key;
    event.mode = mode;
    event.completions = kWindow;
    event.start = now_;
    now_ += avg * kWindow;
    event.end = now_;
    event.generation = generation;
    collector_.pending.push_back(event);
    collector_.counters[event.key.ToString()].progress = {now_, 0};  // the next window starts here
  }

  v1::QueueInfo Queue(uint32_t qid) {
    v1::ListQueuesRequest request;
    auto list = agent_->api().ListQueues(request);
    EXPECT_TRUE(list);
    for (const auto& q : list->queues()) {
      if (q.id().queue() == qid) return q;
    }
    ADD_FAILURE() << "no queue " << qid;
    return {};
  }

  std::string state_dir_;
  v1::PolicySet policies_;
  bool file_authoritative_ = false;
  FakeCollector collector_;
  FakeDiscovery discovery_;
  FakeLevers levers_;
  metrics::AgentMetrics metrics_;
  std::atomic<engine::Nanos> now_ = 1'000'000'000;  // read by the agent's workers too
  engine::Nanos rpc_wait_ = 2'000'000'000;
  engine::Nanos lever_timeout_ = 10'000'000'000;
  engine::Nanos counters_interval_ = 1'000'000'000;
  config::NodeLayerConfig node_;        // off, as AgentOptions has it
  std::string node_facts_root_ = "/";
  engine::NodeIdentity node_identity_;  // what node selectors match
  std::unique_ptr<Agent> agent_;
};

}  // namespace nvmeadapt::daemon::testing
