// SPDX-License-Identifier: Apache-2.0
// The payoff listener: windows and timer looks pair with the decision that judged them, and the poller's CPU
// counts only between two readings of one polling run.
#include "agent/daemon/payoff_listener.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/daemon/poller_cpu.h"

namespace nvmeadapt::daemon {
namespace {

class PayoffListenerTest : public ::testing::Test {
 protected:
  PayoffListenerTest() : listener_([this](const ManagedQueue&) -> Result<engine::Nanos> {
    if (cpu_error_) return MakeError(ErrorCode::kUnsupported, "no poller here");
    return cpu_;
  }) {
    queue_.serial = 7;
    listener_.QueueAdded(queue_, engine::QueueSetup{});
  }

  engine::Decision Kept(engine::Nanos measured, engine::Nanos limit) {
    engine::Decision d;
    d.from = d.to = ReapMode::kPoll;
    d.reason = engine::Reason::kPollWindowFaster;
    d.state = engine::QueueState::kPolling;
    d.measured = measured;
    d.limit = limit;
    return d;
  }

  ManagedQueue queue_;
  engine::Nanos cpu_ = 0;
  bool cpu_error_ = false;
  PayoffListener listener_;
};

TEST_F(PayoffListenerTest, DecisionTakesTheCompletionsOfTheWindowItJudged) {
  engine::WindowRecord record;
  record.completions = 1000;
  listener_.Window(queue_, record);
  listener_.Decided(queue_, Kept(4'000'000, 5'000'000));
  const QueuePayoffRecord* r = listener_.Of(queue_);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->payoff.polled_completions, 1000u);
  EXPECT_DOUBLE_EQ(r->payoff.completions_gained, 200.0);
  engine::WindowProgress progress;
  progress.completions = 30;
  listener_.Timer(queue_, 0, progress);
  engine::Decision stalled = Kept(9'000'000, 3'000'000);
  stalled.reason = engine::Reason::kStalled;
  listener_.Decided(queue_, stalled);
  EXPECT_EQ(r->payoff.polled_completions, 1030u);
  EXPECT_EQ(r->payoff.failed_polling_time, 9'000'000);
}

TEST_F(PayoffListenerTest, CpuCountsFromEachReadingInPollModeToTheNext) {
  queue_.mode = ReapMode::kPoll;
  cpu_ = 1'000;
  listener_.SwitchApplied(queue_, engine::Reason::kWindowFast, SwitchTimeline{});  // the run starts
  cpu_ = 5'000;
  listener_.Counters(queue_);
  EXPECT_EQ(listener_.Of(queue_)->polling_cpu, 4'000);
  queue_.mode = ReapMode::kInterrupt;
  cpu_ = 9'000;
  listener_.SwitchApplied(queue_, engine::Reason::kBehindPace, SwitchTimeline{});  // the run ends
  EXPECT_EQ(listener_.Of(queue_)->polling_cpu, 8'000);
  cpu_ = 20'000;
  listener_.Counters(queue_);  // interrupt mode: not polling
  EXPECT_EQ(listener_.Of(queue_)->polling_cpu, 8'000);
  EXPECT_TRUE(listener_.Of(queue_)->cpu_measured);
}

TEST_F(PayoffListenerTest, UnmeasurableCpuKeepsTheReason) {
  ManagedQueue other;
  other.serial = 8;
  cpu_error_ = true;
  listener_.QueueAdded(other, engine::QueueSetup{});
  EXPECT_FALSE(listener_.Of(other)->cpu_measured);
  EXPECT_EQ(listener_.Of(other)->cpu_unmeasured_reason, "no poller here");
  listener_.QueueRemoved(other, "gone");
  EXPECT_EQ(listener_.Of(other), nullptr);
}

TEST(PollerCpu, ReadsTheUvnvmeReaperThreadByName) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "poller_cpu_proc";
  std::filesystem::remove_all(root);
  const std::filesystem::path task = root / "1234" / "task" / "1240";
  std::filesystem::create_directories(task / "fd");
  std::ofstream(task / "comm") << "uvnvme-c0q1\n";
  // pid (comm) state ... utime=150 stime=50 ticks (fields 14 and 15).
  std::ofstream(task / "stat") << "1240 (uvnvme-c0q1) R 1 1 1 0 -1 0 0 0 0 0 150 50 0 0 20 0 1 0 100 0 0\n";
  ManagedQueue q;
  q.desc.key = QueueKey{Source::kUvnvme, 0, 1, 1234};
  auto cpu = ReadPollerCpu(q, root.string());  // without schedstat: the clock ticks of stat
  ASSERT_TRUE(cpu) << cpu.error().message;
  EXPECT_GT(*cpu, 0);
  std::ofstream(task / "schedstat") << "123456789 1000 42\n";
  cpu = ReadPollerCpu(q, root.string());
  ASSERT_TRUE(cpu) << cpu.error().message;
  EXPECT_EQ(*cpu, 123456789);
  q.desc.key.qid = 2;
  auto missing = ReadPollerCpu(q, root.string());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("uvnvme-c0q2"), std::string::npos) << missing.error().message;
  q.desc.key.source = Source::kKernelNvme;
  auto kernel = ReadPollerCpu(q, root.string());
  ASSERT_FALSE(kernel);
  EXPECT_NE(kernel.error().message.find("nvme_poll"), std::string::npos);
}

}  // namespace
}  // namespace nvmeadapt::daemon
