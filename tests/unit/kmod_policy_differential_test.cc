// SPDX-License-Identifier: Apache-2.0
// The nvme-pci module's in-driver policy (kmod/nvme-pci/src/nvme-adaptive-policy.h, compiled here as plain
// C++, the very header the module builds) against the agent's engine under the `patch` preset, over the same
// streams of reaps. The engine gets what the BPF side would send it (bpf/na_queue.bpf.h): a record when a
// window closes at `window` completions, and one when a polling reap is behind pace. Both must switch at the
// same reap, to the same mode, for the same reason, and agree on failures, backoff and the polling run after
// every reap. The driver's own stall rule (a poll run that finds nothing) has no counterpart in the engine,
// whose timer works on another clock: its tests stand apart below.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "agent/engine/engine.h"
#include "agent/engine/policy_fields.h"

extern "C" {
#include "kmod/nvme-pci/src/nvme-adaptive-policy.h"
}

namespace nvmeadapt::engine {
namespace {

struct Reap {
  Nanos at;
  uint32_t n;
};

// The engine with a BPF-side collector in front of it, as the daemon runs it for a kernel queue.
class AgentSide {
 public:
  explicit AgentSide(const Policy& policy) : policy_(policy) {
    QueueSetup setup;
    setup.eligible = true;
    setup.policy = policy;
    handle_ = engine_.AddQueue(setup, 0).handle;
  }

  // The decision this reap led to, if it switches the queue.
  std::optional<Decision> OnReap(const Reap& r) {
    count_ += r.n;
    std::optional<Decision> d;
    if (count_ >= policy_.window_completions) {
      d = engine_.OnWindow(WindowRecord{handle_, mode_, count_, start_, r.at, std::nullopt});
      start_ = r.at;
      count_ = 0;
      miss_sent_ = false;
    } else if (mode_ == ReapMode::kPoll && !miss_sent_) {
      const QueueView v = engine_.View(handle_);
      if (na_behind_pace(static_cast<__u64>(r.at - start_), na_pace_index(count_, r.n, false),
                         static_cast<__u64>(v.baseline_span), v.baseline_completions,
                         static_cast<__u64>(policy_.pace_slack))) {
        miss_sent_ = true;
        d = engine_.OnWindow(WindowRecord{handle_, mode_, count_, start_, r.at, PaceMiss{count_, r.at - start_, r.n}});
      }
    }
    if (!d || !d->Switches()) return std::nullopt;
    mode_ = d->to;
    start_ = r.at;  // a kernel lever: the window starts where the switch took effect
    count_ = 0;
    miss_sent_ = false;
    return d;
  }

  QueueView View() const { return engine_.View(handle_); }

 private:
  Policy policy_;
  Engine engine_;
  QueueHandle handle_ = 0;
  ReapMode mode_ = ReapMode::kInterrupt;
  Nanos start_ = 0;
  uint32_t count_ = 0;
  bool miss_sent_ = false;
};

Policy PatchAdaptive(uint32_t window) {
  Policy p = PatchPreset();
  p.mode = ControllerMode::kAdaptive;
  p.window_completions = window;
  return p;
}

nap_params DriverParams(const Policy& p) {
  return nap_params{p.window_completions, static_cast<__u64>(p.poll_threshold), static_cast<__u64>(p.pace_slack),
                    p.max_failures, p.backoff_windows, p.max_poll_windows};
}

std::optional<Reason> ReasonOf(uint8_t reason) {
  switch (reason) {
    case NAP_WINDOW_FAST: return Reason::kWindowFast;
    case NAP_BEHIND_PACE: return Reason::kBehindPace;
    case NAP_NOT_FASTER: return Reason::kNotFaster;
    case NAP_MAX_POLL_WINDOWS: return Reason::kMaxPollWindows;
    default: return std::nullopt;
  }
}

QueueState StateOf(uint8_t state) {
  switch (state) {
    case NAP_POLL: return QueueState::kPolling;
    case NAP_BACKOFF: return QueueState::kBackoff;
    default: return QueueState::kMeasuring;
  }
}

// A device whose completions come `irq_gap` apart in interrupt mode and `poll_gap` apart while polled, each
// with jitter, now and then a stall, and reaped in batches of up to `max_batch`; the gaps depend on the mode
// both sides agree the queue is in.
struct Device {
  Nanos irq_gap, poll_gap, jitter, stall;
  double stall_chance;
  uint32_t max_batch;
};

struct Totals {
  uint64_t reaps = 0, switches = 0, tries = 0, pace_fails = 0, slower_fails = 0, backoffs = 0, runs_ended = 0;
};

void RunStream(const Device& dev, uint32_t window, uint64_t seed, uint64_t reaps, Totals& totals) {
  const Policy policy = PatchAdaptive(window);
  const nap_params params = DriverParams(policy);
  AgentSide agent(policy);
  nap_queue driver{};
  nap_reset(&driver, 0);
  bool polling = false;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<Nanos> jitter(0, dev.jitter);
  std::uniform_int_distribution<uint32_t> batch(1, dev.max_batch);
  std::bernoulli_distribution stalls(dev.stall_chance);
  Nanos now = 0;
  for (uint64_t i = 0; i < reaps; ++i) {
    const uint32_t n = batch(rng);
    now += (polling ? dev.poll_gap : dev.irq_gap) * n + jitter(rng) + (stalls(rng) ? dev.stall : 0);
    const std::optional<Decision> d = agent.OnReap(Reap{now, n});
    const nap_verdict v = nap_on_reap(&driver, &params, static_cast<__u64>(now), n);
    const std::string where = "seed " + std::to_string(seed) + " reap " + std::to_string(i) + " at " +
                              std::to_string(now) + " n " + std::to_string(n);
    ASSERT_EQ(d.has_value(), v != NAP_STAY) << where << ": engine " << (d ? ReasonName(d->reason) : "stays")
                                            << ", driver verdict " << v << " reason " << int(driver.reason);
    if (d) {
      ASSERT_EQ(d->to == ReapMode::kPoll, v == NAP_TO_POLL) << where;
      ASSERT_EQ(ReasonOf(driver.reason), d->reason) << where << ": driver reason " << int(driver.reason);
      nap_switched(&driver, static_cast<__u64>(now));
      polling = v == NAP_TO_POLL;
      ++totals.switches;
      totals.tries += v == NAP_TO_POLL;
      totals.pace_fails += driver.reason == NAP_BEHIND_PACE;
      totals.slower_fails += driver.reason == NAP_NOT_FASTER;
      totals.runs_ended += driver.reason == NAP_MAX_POLL_WINDOWS;
      totals.backoffs += d->backoff_started;
    }
    const QueueView view = agent.View();
    ASSERT_EQ(view.state, StateOf(driver.state)) << where;
    ASSERT_EQ(view.failures, driver.failures) << where;
    ASSERT_EQ(view.backoff_left, driver.backoff_left) << where;
    ASSERT_EQ(view.poll_windows, driver.poll_windows) << where;
    if (driver.state == NAP_POLL) {
      ASSERT_EQ(view.baseline_span, static_cast<Nanos>(driver.baseline_span)) << where;
      ASSERT_EQ(view.baseline_completions, driver.baseline_count) << where;
    }
  }
  totals.reaps += reaps;
}

// Devices that cover every rule: polling pays (tries kept until the run ends), polling loses by a little (not
// faster at the window's end), stalls behind pace (fails at once), slow devices that never try, and batches.
TEST(KmodPolicyDifferential, DriverAndEngineDecideAlikeOnRandomStreams) {
  const Device devices[] = {
      {8'000, 6'000, 1'500, 400'000, 0.0005, 1},     // polling pays, a rare stall
      {8'000, 8'050, 400, 0, 0.0, 1},                // polling a hair slower: fails at the window's end
      {5'000, 4'000, 4'000, 90'000, 0.002, 1},       // noisy, stalls fail tries behind pace
      {20'000, 15'000, 1'000, 0, 0.0, 1},            // above the threshold: never tries
      {9'000, 7'000, 2'000, 60'000, 0.001, 8},       // batches of up to 8 at once
      {9'900, 9'900, 200, 0, 0.0, 4},                // at the threshold's edge, equal rates
      {7'000, 7'500, 1'000, 300'000'000, 0.0003, 2}, // idle pauses: windows many times their baseline's time
  };
  Totals totals;
  uint64_t seed = 1;
  for (const Device& dev : devices) {
    for (const uint32_t window : {64u, 512u, 8192u}) {
      RunStream(dev, window, seed++, window == 8192 ? 400'000 : 60'000, totals);
      if (HasFatalFailure()) return;
    }
  }
  // The streams reached every rule, or the agreement says little.
  EXPECT_GT(totals.tries, 100u);
  EXPECT_GT(totals.pace_fails, 10u);
  EXPECT_GT(totals.slower_fails, 10u);
  EXPECT_GT(totals.runs_ended, 2u);
  EXPECT_GT(totals.backoffs, 5u);
  std::printf("kmod policy vs engine (patch): %llu reaps, %llu switches, %llu tries, %llu behind pace, "
              "%llu not faster, %llu runs ended, %llu backoffs, 0 disagreements\n",
              static_cast<unsigned long long>(totals.reaps), static_cast<unsigned long long>(totals.switches),
              static_cast<unsigned long long>(totals.tries), static_cast<unsigned long long>(totals.pace_fails),
              static_cast<unsigned long long>(totals.slower_fails),
              static_cast<unsigned long long>(totals.runs_ended), static_cast<unsigned long long>(totals.backoffs));
}

// The cover letter's numbers as the edges: a window averaging exactly 10 us tries, 1 ns more does not.
TEST(KmodPolicy, ThresholdIsInclusive) {
  const nap_params p{8192, 10'000, 20'000, 3, 64, 64};
  nap_queue q{};
  nap_reset(&q, 0);
  EXPECT_EQ(nap_on_reap(&q, &p, 8192ull * 10'000, 8192), NAP_TO_POLL);
  nap_reset(&q, 0);
  EXPECT_EQ(nap_on_reap(&q, &p, 8192ull * 10'000 + 1, 8192), NAP_STAY);
  EXPECT_EQ(q.reason, NAP_WINDOW_SLOW);
}

// A poll run with nothing: stays while the next completion could still be on pace, fails once it could not.
TEST(KmodPolicy, EmptyPollFailsOnlyOnceTheNextCompletionWouldBeLate) {
  const nap_params p{8192, 10'000, 20'000, 3, 64, 64};
  nap_queue q{};
  nap_reset(&q, 0);
  ASSERT_EQ(nap_on_reap(&q, &p, 8192ull * 8'000, 8192), NAP_TO_POLL);  // baseline 8 us per completion
  nap_switched(&q, 1'000'000'000);
  ASSERT_EQ(nap_on_reap(&q, &p, 1'000'000'000 + 80'000, 10), NAP_STAY);  // on pace at k = 10
  // Completion 11 is due by 11 x 8 us + 20 us after the window's start.
  EXPECT_EQ(nap_on_empty_poll(&q, &p, 1'000'000'000 + 11 * 8'000 + 20'000), NAP_STAY);
  EXPECT_EQ(nap_on_empty_poll(&q, &p, 1'000'000'000 + 11 * 8'000 + 20'001), NAP_TO_INTERRUPT);
  EXPECT_EQ(q.reason, NAP_STALLED);
  EXPECT_EQ(q.failures, 1u);
  EXPECT_EQ(q.state, NAP_MEASURE);
}

// Three failures in a row back off for backoff_windows windows, then measure again; no backoff (0) measures.
TEST(KmodPolicy, ThreeFailuresBackOffThenMeasure) {
  const nap_params p{16, 10'000, 0, 3, 2, 64};
  nap_queue q{};
  nap_reset(&q, 0);
  __u64 t = 0;
  for (int i = 0; i < 3; ++i) {
    t += 16 * 5'000;
    ASSERT_EQ(nap_on_reap(&q, &p, t, 16), NAP_TO_POLL);
    nap_switched(&q, t);
    t += 16 * 5'000;  // as fast as the baseline: not strictly faster
    ASSERT_EQ(nap_on_reap(&q, &p, t, 16), NAP_TO_INTERRUPT);
    ASSERT_EQ(q.reason, NAP_NOT_FASTER);
    nap_switched(&q, t);
  }
  EXPECT_EQ(q.state, NAP_BACKOFF);
  EXPECT_EQ(q.failures, 0u);
  t += 16 * 5'000;
  EXPECT_EQ(nap_on_reap(&q, &p, t, 16), NAP_STAY);
  EXPECT_EQ(q.reason, NAP_BACKING_OFF);
  t += 16 * 5'000;
  EXPECT_EQ(nap_on_reap(&q, &p, t, 16), NAP_STAY);
  EXPECT_EQ(q.reason, NAP_BACKOFF_OVER);
  EXPECT_EQ(q.state, NAP_MEASURE);
  t += 16 * 5'000;
  EXPECT_EQ(nap_on_reap(&q, &p, t, 16), NAP_TO_POLL);
}

}  // namespace
}  // namespace nvmeadapt::engine
