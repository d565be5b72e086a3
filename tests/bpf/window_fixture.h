// SPDX-License-Identifier: Apache-2.0
// The fixture of the BPF accounting tests: the collector loaded with its test entries (nothing attached),
// completions and driver mode probes injected with a chosen clock through BPF_PROG_TEST_RUN.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "agent/collect/bpf_collector.h"
#include "agent/engine/engine.h"
#include "tests/bpf/test_support.h"

namespace nvmeadapt::collect {

constexpr uint32_t kWindow = 64;

class WindowLogicTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = nvmeadapt::testing::MissingForBpfTests();
    ASSERT_EQ(missing, "") << "BPF test cannot run: " << missing;
    CollectorOptions options;
    options.default_window = kWindow;
    HookPlan plan;  // nothing attached: only the userspace programs and the test entry load
    plan.use_bpf = true;
    auto opened = BpfCollector::Open(options, plan, MakeSystemFeatureProbe(), BpfOpenOptions{.test_entry = true});
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    collector_ = std::move(*opened);
  }

  void Complete(const QueueKey& key, uint64_t now, uint32_t n = 1, uint64_t bytes = 4096,
                uint32_t mode = NA_MODE_UNKNOWN) {
    Status run = collector_->TestAccount(key, now, n, bytes, mode);
    ASSERT_TRUE(run.ok()) << run.error().message;
  }

  // A driver's tally (uvnvme:tally): n completions, the last reap of last_reap at now, the first at first.
  void Tally(const QueueKey& key, uint64_t now, uint64_t first, uint32_t n, uint32_t last_reap,
             uint32_t mode = NA_MODE_POLL) {
    Status run = collector_->TestTally(key, now, first, n, last_reap, mode);
    ASSERT_TRUE(run.ok()) << run.error().message;
  }

  std::vector<WindowEvent> Drain() {
    std::vector<WindowEvent> events;
    auto polled = collector_->Poll(0, [&](const WindowEvent& e) { events.push_back(e); });
    EXPECT_TRUE(polled.ok());
    return events;
  }

  void DriverSwitched(const QueueKey& key, uint64_t now, ReapMode mode) {
    Status run = collector_->TestDriverSwitched(key, now, mode);
    ASSERT_TRUE(run.ok()) << run.error().message;
  }

  QueueCounters Counters(const QueueKey& key) {
    auto counters = collector_->ReadCounters(key);
    EXPECT_TRUE(counters.ok()) << counters.error().message;
    return counters.ok() ? *counters : QueueCounters{};
  }

  std::unique_ptr<BpfCollector> collector_;
  const QueueKey key_{Source::kUvnvme, 7, 3, 424242};
};

}  // namespace nvmeadapt::collect
