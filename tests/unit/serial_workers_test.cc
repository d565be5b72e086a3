// SPDX-License-Identifier: Apache-2.0
// The workers that keep blocking jobs off the loop: one key's jobs in order, a blocked key holds no other.
#include "agent/daemon/serial_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/unit/agent_fakes.h"

namespace nvmeadapt::daemon {
namespace {

TEST(SerialWorkers, BeforeStartAJobRunsInlineOnTheCallersThread) {
  SerialWorkers workers("test");
  std::thread::id ran_on;
  workers.Run("a", [&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(SerialWorkers, AKeysJobsRunInOrderAndABlockedKeyHoldsNoOther) {
  SerialWorkers workers("test");
  workers.Start();
  testing::Latch blocked;
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<bool> other_ran{false};
  workers.Run("hung", [&] { blocked.Wait(); });
  for (int i = 0; i < 3; ++i) {
    workers.Run("hung", [&, i] {
      std::lock_guard lock(mutex);
      order.push_back(i);
    });
  }
  workers.Run("other", [&] { other_ran = true; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!other_ran && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(other_ran) << "a job of another key waited behind the blocked one";
  {
    std::lock_guard lock(mutex);
    EXPECT_TRUE(order.empty()) << "a job ran before the blocked one of its key ended";
  }
  blocked.Open();
  workers.Join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  // After Join, a key's thread is gone and jobs run inline again.
  std::thread::id ran_on;
  workers.Run("hung", [&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

}  // namespace
}  // namespace nvmeadapt::daemon
