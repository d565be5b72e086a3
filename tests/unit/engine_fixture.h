// SPDX-License-Identifier: Apache-2.0
// Drives one Engine with windows laid end to end on a fake clock.
#pragma once

#include <gtest/gtest.h>

#include "agent/engine/engine.h"
#include "agent/engine/policy_fields.h"

namespace nvmeadapt::engine::testing {

inline constexpr uint32_t kWindow = 8192;
inline constexpr Nanos kUs = 1000;

// The patch's rules (the `patch` profile: tests/unit/engine_patch_preset_test.cc checks each), deciding.
// tests/unit/engine_settle_test.cc covers settling, tests/unit/engine_credit_test.cc the credit and the
// backoff's doubling and load-change end, tests/unit/engine_poll_run_test.cc the growing polling runs,
// tests/unit/engine_stall_backoff_test.cc the stalled try's backoff, engine_batch_pace_test.cc the allowance.
inline Policy Adaptive() {
  Policy p = PatchPreset();
  p.mode = ControllerMode::kAdaptive;
  return p;
}

class EngineFixture : public ::testing::Test {
 protected:
  QueueHandle Add(const Policy& policy = Adaptive(), bool eligible = true,
                  ReapMode current = ReapMode::kInterrupt, ReapMode safe = ReapMode::kInterrupt) {
    return engine_.AddQueue(QueueSetup{eligible, policy, current, safe}, now_).handle;
  }

  // A window of `n` completions spanning `span` ns, starting where the clock stands.
  std::optional<Decision> Window(QueueHandle q, ReapMode mode, Nanos span, uint32_t n = kWindow) {
    WindowRecord r{q, mode, n, now_, now_ + span, std::nullopt};
    now_ += span;
    return engine_.OnWindow(r);
  }
  std::optional<Decision> Interrupt(QueueHandle q, Nanos span, uint32_t n = kWindow) {
    return Window(q, ReapMode::kInterrupt, span, n);
  }
  std::optional<Decision> Poll(QueueHandle q, Nanos span, uint32_t n = kWindow) {
    return Window(q, ReapMode::kPoll, span, n);
  }
  // The BPF side's early record: behind pace at completion k, `elapsed` after the window start.
  // `batch`: the reap that brought the window to k reaped that many completions at once.
  std::optional<Decision> Miss(QueueHandle q, uint32_t k, Nanos elapsed, uint32_t batch = 1) {
    WindowRecord r{q, ReapMode::kPoll, k, now_, now_ + elapsed, PaceMiss{k, elapsed, batch}};
    now_ += elapsed;
    return engine_.OnWindow(r);
  }
  // A measuring window averaging `avg` per completion, which must start a try.
  void StartTry(QueueHandle q, Nanos avg = 5 * kUs) {
    auto d = Interrupt(q, avg * kWindow);
    ASSERT_TRUE(d);
    ASSERT_TRUE(d->Switches());
    ASSERT_EQ(d->reason, Reason::kWindowFast);
  }

  Engine engine_;
  Nanos now_ = 1'000'000'000;
};

}  // namespace nvmeadapt::engine::testing
