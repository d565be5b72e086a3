// SPDX-License-Identifier: Apache-2.0
// Userspace-driver hooks on real processes: the uvnvme USDT probes (with semaphores) on a fixture that
// fires a known plan per queue, and the SPDK uprobe/uretprobe pair on a fixture defining
// spdk_nvme_qpair_process_completions.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "agent/collect/collector.h"
#include "tests/bpf/test_support.h"

namespace nvmeadapt::collect {
namespace {

using nvmeadapt::testing::Child;
using nvmeadapt::testing::ReadLine;
using nvmeadapt::testing::Spawn;
using nvmeadapt::testing::Wait;

constexpr uint32_t kWindow = 64;

std::unique_ptr<Collector> OpenUserspaceOnly(bool wakeups = true) {
  CollectorOptions options;
  options.userspace_wakeups = wakeups;
  options.default_window = kWindow;
  options.block = false;
  options.irqs = false;
  options.kernel_nvme = false;
  auto opened = OpenCollector(options);
  EXPECT_TRUE(opened.ok()) << opened.error().message;
  if (!opened.ok()) return nullptr;
  EXPECT_EQ((*opened)->Name(), "bpf");
  return std::move(*opened);
}

std::map<QueueKey, std::vector<WindowEvent>> DrainWindows(Collector& collector) {
  std::map<QueueKey, std::vector<WindowEvent>> windows;
  for (;;) {
    auto polled = collector.Poll(0, [&](const WindowEvent& e) { windows[e.key].push_back(e); });
    EXPECT_TRUE(polled.ok());
    if (!polled.ok() || *polled == 0) break;
  }
  return windows;
}

// The windows a queue must close for batches of n, as the BPF side closes them: at the batch that
// reaches the window, with the whole batch in it.
std::vector<uint32_t> ExpectedWindows(const std::vector<uint32_t>& batches, uint32_t& in_flight) {
  std::vector<uint32_t> windows;
  in_flight = 0;
  for (uint32_t n : batches) {
    in_flight += n;
    if (in_flight >= kWindow) {
      windows.push_back(in_flight);
      in_flight = 0;
    }
  }
  return windows;
}

struct QueuePlan {
  uint32_t qid, batches, n, mode;
};

// Runs the probe fixture for controller ctrl with these queues, attached to the collector, to its end.
// Returns its pid (0 after a failure, which it reports).
pid_t RunFixture(Collector& collector, uint32_t ctrl, const std::vector<QueuePlan>& plans) {
  std::vector<std::string> argv = {NA_UVNVME_FIXTURE, std::to_string(ctrl)};
  for (const QueuePlan& p : plans)
    argv.push_back(std::to_string(p.qid) + ":" + std::to_string(p.batches) + ":" + std::to_string(p.n) + ":" +
                   std::to_string(p.mode));
  auto child = Spawn(argv);
  if (!child.ok()) {
    ADD_FAILURE() << child.error().message;
    return 0;
  }
  const pid_t pid = child->pid;
  Status attached = collector.AttachProcess(pid, NA_UVNVME_FIXTURE);
  std::string err;
  auto exit_code = Wait(*child, 60, nullptr, &err);
  if (!attached.ok()) ADD_FAILURE() << attached.error().message;
  if (!exit_code.ok() || *exit_code != 0) ADD_FAILURE() << "fixture did not exit 0: " << err;
  return attached.ok() && exit_code.ok() && *exit_code == 0 ? pid : 0;
}

TEST(BpfUserspace, UvnvmeProbesAreCountedPerQueueAndFormWindows) {
  const std::string missing = nvmeadapt::testing::MissingForBpfTests();
  ASSERT_EQ(missing, "") << "BPF test cannot run: " << missing;
  auto collector = OpenUserspaceOnly();
  ASSERT_NE(collector, nullptr);

  const uint32_t ctrl = 3;
  const std::vector<QueuePlan> plans = {{1, 500, 3, 0}, {2, 300, 5, 1}, {4, 40, 1, 0}};
  const pid_t pid = RunFixture(*collector, ctrl, plans);
  ASSERT_NE(pid, 0);
  const auto hooks = collector->Hooks();
  EXPECT_NE(std::find(hooks.begin(), hooks.end(), "usdt/uvnvme:complete pid=" + std::to_string(pid)), hooks.end());

  const auto windows = DrainWindows(*collector);
  for (const QueuePlan& p : plans) {
    const QueueKey key{Source::kUvnvme, ctrl, p.qid, static_cast<uint32_t>(pid)};
    auto counters = collector->ReadCounters(key);
    ASSERT_TRUE(counters.ok()) << key.ToString() << ": " << counters.error().message;
    EXPECT_EQ(counters->batches, p.batches) << key.ToString() << ": every complete() fire is counted";
    EXPECT_EQ(counters->completions, uint64_t{p.batches} * p.n) << key.ToString();
    EXPECT_EQ(counters->wakeups, p.mode == 0 ? p.batches : 0u) << key.ToString();
    EXPECT_EQ(counters->mode_switches, p.mode == 1 ? 1u : 0u) << key.ToString();
    EXPECT_EQ(p.mode == 1 ? counters->poll_completions : counters->interrupt_completions, counters->completions);

    uint32_t in_flight = 0;
    const std::vector<uint32_t> expected = ExpectedWindows(std::vector<uint32_t>(p.batches, p.n), in_flight);
    std::vector<uint32_t> seen;
    const auto it = windows.find(key);
    if (it != windows.end()) {
      for (const WindowEvent& e : it->second) {
        seen.push_back(e.completions);
        EXPECT_TRUE(e.mode_known);
        EXPECT_EQ(e.mode, p.mode == 1 ? ReapMode::kPoll : ReapMode::kInterrupt);
      }
    }
    EXPECT_EQ(seen, expected) << key.ToString();
    EXPECT_EQ(counters->progress.completions, in_flight) << key.ToString();
  }
  EXPECT_EQ(collector->Stats().ringbuf_drops, 0u);

  ASSERT_TRUE(collector->DetachProcess(pid).ok());
  for (const QueueKey& key : collector->ObservedQueues()) EXPECT_NE(key.pid, static_cast<uint32_t>(pid));
}

// By default the irq probe stays detached (one uprobe trap less per interrupt): completions, batches and
// windows are all there, the wakeup count is not.
TEST(BpfUserspace, ByDefaultTheUvnvmeIrqProbeIsNotAttached) {
  const std::string missing = nvmeadapt::testing::MissingForBpfTests();
  ASSERT_EQ(missing, "") << "BPF test cannot run: " << missing;
  auto collector = OpenUserspaceOnly(/*wakeups=*/false);
  ASSERT_NE(collector, nullptr);

  const uint32_t ctrl = 2, batches = 200, n = 2;
  const pid_t pid = RunFixture(*collector, ctrl, {{1, batches, n, 0}});
  ASSERT_NE(pid, 0);
  const auto hooks = collector->Hooks();
  const std::string suffix = " pid=" + std::to_string(pid);
  EXPECT_NE(std::find(hooks.begin(), hooks.end(), "usdt/uvnvme:complete" + suffix), hooks.end());
  EXPECT_NE(std::find(hooks.begin(), hooks.end(), "usdt/uvnvme:mode" + suffix), hooks.end());
  EXPECT_EQ(std::find(hooks.begin(), hooks.end(), "usdt/uvnvme:irq" + suffix), hooks.end());

  const QueueKey key{Source::kUvnvme, ctrl, 1, static_cast<uint32_t>(pid)};
  auto counters = collector->ReadCounters(key);
  ASSERT_TRUE(counters.ok()) << key.ToString() << ": " << counters.error().message;
  EXPECT_EQ(counters->batches, batches);
  EXPECT_EQ(counters->completions, uint64_t{batches} * n);
  EXPECT_EQ(counters->interrupt_completions, uint64_t{batches} * n);
  EXPECT_EQ(counters->wakeups, 0u);
  ASSERT_TRUE(collector->DetachProcess(pid).ok());
}

TEST(BpfUserspace, SpdkProcessCompletionsReturnValuesAreCountedPerQpair) {
  const std::string missing = nvmeadapt::testing::MissingForBpfTests();
  ASSERT_EQ(missing, "") << "BPF test cannot run: " << missing;
  auto collector = OpenUserspaceOnly();
  ASSERT_NE(collector, nullptr);

  const uint32_t calls = 600;
  auto child = Spawn({NA_SPDK_FIXTURE, std::to_string(calls)});
  ASSERT_TRUE(child.ok()) << child.error().message;
  const pid_t pid = child->pid;
  std::vector<uint64_t> qpairs;
  for (int i = 0; i < 2; ++i) {
    const std::string line = ReadLine(child->out);
    ASSERT_TRUE(line.starts_with("qpair 0x")) << "fixture said: " << line;
    qpairs.push_back(std::stoull(line.substr(6), nullptr, 16));
  }
  // No binary path: the collector attaches to /proc/<pid>/exe.
  Status attached = collector->AttachProcess(pid, "");
  ASSERT_TRUE(attached.ok()) << attached.error().message;
  ASSERT_EQ(write(child->in, "go\n", 3), 3);
  std::string out, err;
  auto exit_code = Wait(*child, 60, &out, &err);
  ASSERT_TRUE(exit_code.ok());
  ASSERT_EQ(*exit_code, 0) << "fixture: " << err;

  // Call i returns i % 6 - 1: errors and empty polls are not completions.
  std::vector<uint32_t> batches;
  uint64_t completions = 0;
  for (uint32_t i = 0; i < calls; ++i) {
    const int32_t reaped = static_cast<int32_t>(i % 6) - 1;
    if (reaped > 0) {
      batches.push_back(static_cast<uint32_t>(reaped));
      completions += static_cast<uint64_t>(reaped);
    }
  }
  EXPECT_NE(out.find("reaped " + std::to_string(completions) + " " + std::to_string(completions)), std::string::npos)
      << out;
  const auto windows = DrainWindows(*collector);
  for (uint64_t qpair : qpairs) {
    const QueueKey key{Source::kSpdk, static_cast<uint32_t>(qpair >> 32), static_cast<uint32_t>(qpair),
                       static_cast<uint32_t>(pid)};
    auto counters = collector->ReadCounters(key);
    ASSERT_TRUE(counters.ok()) << key.ToString() << ": " << counters.error().message;
    EXPECT_EQ(counters->completions, completions) << key.ToString();
    EXPECT_EQ(counters->batches, batches.size()) << key.ToString();
    uint32_t in_flight = 0;
    const std::vector<uint32_t> expected = ExpectedWindows(batches, in_flight);
    std::vector<uint32_t> seen;
    if (auto it = windows.find(key); it != windows.end()) {
      for (const WindowEvent& e : it->second) seen.push_back(e.completions);
    }
    EXPECT_EQ(seen, expected) << key.ToString();
    EXPECT_EQ(counters->progress.completions, in_flight) << key.ToString();
  }
}

}  // namespace
}  // namespace nvmeadapt::collect
