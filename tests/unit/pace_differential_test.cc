// SPDX-License-Identifier: Apache-2.0
// The BPF pace function (bpf/na_pace.h, compiled here as plain C++) against the engine's rule over the
// same cases: the edges (index 0, slack 0, the limit and one nanosecond either side, fractional and huge
// baselines, batches with and without the allowance) and 200,000 pseudo-random ones. No root: nothing is
// loaded; the very header the BPF program includes is compiled into this test.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "agent/engine/engine.h"
#include "bpf/na_pace.h"

namespace nvmeadapt::engine {
namespace {

struct PaceCase {
  uint32_t k, n;
  Nanos elapsed, span;
  uint32_t baseline;
  Nanos slack;
  bool allowance;
};

void ExpectSameVerdict(const PaceCase& c) {
  const uint32_t engine_index = Engine::PaceIndex(c.k, c.n, c.allowance);
  const uint32_t bpf_index = na_pace_index(c.k, c.n, c.allowance);
  ASSERT_EQ(engine_index, bpf_index) << "k=" << c.k << " n=" << c.n;
  const bool engine_behind = Engine::BehindPace(engine_index, c.elapsed, c.span, c.baseline, c.slack);
  const bool bpf_behind = na_behind_pace(static_cast<__u64>(c.elapsed), bpf_index, static_cast<__u64>(c.span),
                                         c.baseline, static_cast<__u64>(c.slack));
  ASSERT_EQ(engine_behind, bpf_behind) << "k=" << c.k << " n=" << c.n << " elapsed=" << c.elapsed
                                       << " span=" << c.span << " N=" << c.baseline << " slack=" << c.slack
                                       << " allowance=" << c.allowance;
}

TEST(PaceDifferential, EdgesAgree) {
  const Nanos spans[] = {1, 8192, 5'000 * 8192LL, 5'000 * 8192LL + 1, 37'830'000, 1'000'000'000'000LL};
  const uint32_t baselines[] = {1, 3, 8192, (1u << 20) - 1};
  const uint32_t ks[] = {0, 1, 2, 16, 8191, 8192, (1u << 20) - 1};
  const uint32_t ns[] = {1, 2, 16, 64};
  const Nanos slacks[] = {0, 1, 20'000};
  for (Nanos span : spans)
    for (uint32_t baseline : baselines)
      for (uint32_t k : ks)
        for (uint32_t n : ns)
          for (Nanos slack : slacks)
            for (bool allowance : {true, false}) {
              const uint32_t index = Engine::PaceIndex(k, n, allowance);
              const Nanos limit = Engine::PaceLimit(index, span, baseline, slack);
              for (Nanos elapsed : {Nanos{0}, Nanos{1}, slack, limit - 1, limit, limit + 1}) {
                if (elapsed < 0) continue;
                ExpectSameVerdict({k, n, elapsed, span, baseline, slack, allowance});
              }
            }
}

TEST(PaceDifferential, RandomCasesAgree) {
  std::mt19937_64 rng(20261201);
  for (int i = 0; i < 200'000; ++i) {
    PaceCase c;
    c.baseline = 1 + static_cast<uint32_t>(rng() % ((1u << 20) - 1));
    c.span = static_cast<Nanos>(rng() % (100'000'000'000ULL));
    c.k = static_cast<uint32_t>(rng() % (1u << 20));
    c.n = 1 + static_cast<uint32_t>(rng() % 256);
    c.slack = static_cast<Nanos>(rng() % 1'000'000);
    c.allowance = rng() & 1;
    const Nanos limit = Engine::PaceLimit(Engine::PaceIndex(c.k, c.n, c.allowance), c.span, c.baseline, c.slack);
    c.elapsed = std::max<Nanos>(0, limit + static_cast<Nanos>(rng() % 5) - 2);
    ExpectSameVerdict(c);
  }
}

}  // namespace
}  // namespace nvmeadapt::engine
