// SPDX-License-Identifier: Apache-2.0
// The BPF collector attached to the real uvnvme driver (uvnvme-load): per queue it counts exactly the
// completions and reaps the driver itself reports, in both reaping modes, through the default `tally`
// probe and through the per-reap `complete` probe, and its windows cover them.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/collect/collector.h"
#include "tests/bpf/test_support.h"

namespace nvmeadapt::collect {
namespace {

constexpr uint32_t kWindow = 256;

struct CrossCase {
  const char* mode;
  bool per_reap;
};

class UvnvmeCross : public ::testing::TestWithParam<CrossCase> {};

TEST_P(UvnvmeCross, CountsEqualTheDriversOwnReportPerQueue) {
  if (std::string missing = testing::MissingForBpfTests(); !missing.empty()) FAIL() << missing;
  CollectorOptions options;
  options.default_window = kWindow;
  options.block = options.irqs = options.kernel_nvme = false;
  options.userspace_wakeups = true;
  options.userspace_per_reap = GetParam().per_reap;
  auto collector = OpenCollector(options);
  ASSERT_TRUE(collector.ok()) << collector.error().message;
  ASSERT_EQ((*collector)->Name(), "bpf");
  // The idle first phase leaves time to attach: the probes' semaphores are 0 until then and fire nothing.
  auto load = testing::Spawn({NA_UVNVME_LOAD, "--queues", "2", "--jobs", "2", "--qd", "8", "--mode", GetParam().mode,
                              "--phases", "1500ms:idle,2s:qd8", "--no-socket", "--json"});
  ASSERT_TRUE(load.ok()) << load.error().message;
  const pid_t pid = load->pid;  // Wait forgets it
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Status attached = (*collector)->AttachProcess(pid, NA_UVNVME_LOAD);
  ASSERT_TRUE(attached.ok()) << attached.error().message;
  const std::string probe = GetParam().per_reap ? "usdt/uvnvme:complete" : "usdt/uvnvme:tally";
  const auto hooks = (*collector)->Hooks();
  EXPECT_NE(std::find(hooks.begin(), hooks.end(), probe + " pid=" + std::to_string(pid)), hooks.end()) << probe;
  std::map<QueueKey, uint64_t> windowed;
  std::string out, err;
  std::atomic<bool> done{false};
  std::thread drain([&] {
    while (!done.load()) {
      (void)(*collector)->Poll(50, [&](const WindowEvent& e) { windowed[e.key] += e.completions; });
    }
  });
  auto exit_code = testing::Wait(*load, 60, &out, &err);
  done.store(true);
  drain.join();
  (void)(*collector)->Poll(0, [&](const WindowEvent& e) { windowed[e.key] += e.completions; });
  ASSERT_TRUE(exit_code.ok());
  ASSERT_EQ(*exit_code, 0) << err;
  const auto report = nlohmann::json::parse(out);
  ASSERT_EQ(report["queues"].size(), 2u);
  for (const auto& queue : report["queues"]) {
    const QueueKey key{Source::kUvnvme, queue["ctrl"].get<uint32_t>(), queue["qid"].get<uint32_t>(),
                       static_cast<uint32_t>(pid)};
    auto counters = (*collector)->ReadCounters(key);
    ASSERT_TRUE(counters.ok()) << key.ToString() << ": " << counters.error().message;
    const uint64_t reported = queue["completed"].get<uint64_t>();
    EXPECT_GT(reported, 10u * kWindow) << key.ToString();
    EXPECT_EQ(counters->completions, reported) << key.ToString();
    EXPECT_EQ(windowed[key] + counters->progress.completions, reported) << key.ToString();
    EXPECT_EQ(counters->batches, queue["reaps"].get<uint64_t>()) << key.ToString();
    if (std::string(GetParam().mode) == "poll") {
      EXPECT_EQ(counters->poll_completions, reported) << key.ToString();
    } else {
      EXPECT_EQ(counters->interrupt_completions, reported) << key.ToString();
      EXPECT_EQ(counters->wakeups, queue["wakeups"].get<uint64_t>()) << key.ToString();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, UvnvmeCross,
                         ::testing::Values(CrossCase{"interrupt", false}, CrossCase{"poll", false},
                                           CrossCase{"interrupt", true}, CrossCase{"poll", true}),
                         [](const auto& info) {
                           return std::string(info.param.mode) + (info.param.per_reap ? "PerReap" : "Tally");
                         });

}  // namespace
}  // namespace nvmeadapt::collect
