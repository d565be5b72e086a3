// SPDX-License-Identifier: Apache-2.0
// Two CPUs completing on one queue at once, through BPF_PROG_TEST_RUN pinned to each: every window record
// is a whole window (at least its size, with a first completion) and the records with the
// window in flight account for every completion. A completion that read the close claim after another CPU
// took it, but added to the window before that CPU emptied it, once closed the next window with nothing in
// it (first 0): BpfBlock saw it on loop devices under fio.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "tests/bpf/window_fixture.h"

namespace nvmeadapt::collect {
namespace {

constexpr uint32_t kRounds = 20;
constexpr uint32_t kPerCpuPerRound = 20'000;  // 625 records a round: the ring buffer holds them until drained

Status PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int error = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (error != 0) return SysError("pthread_setaffinity_np", "cpu " + std::to_string(cpu), error);
  return OkStatus();
}

TEST_F(WindowLogicTest, TwoCpusClosingWindowsAtOnceSendOnlyWholeWindows) {
  ASSERT_GE(sysconf(_SC_NPROCESSORS_ONLN), 2) << "this test needs two online CPUs to race the close claim";
  std::atomic<uint64_t> clock{1'000'000};
  std::vector<WindowEvent> events;
  for (uint32_t round = 0; round < kRounds; ++round) {
    std::atomic<int> ready{0};
    auto complete_on = [&](int cpu) {
      Status pinned = PinToCpu(cpu);
      ASSERT_TRUE(pinned.ok()) << pinned.error().message;
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      for (uint32_t i = 0; i < kPerCpuPerRound; ++i) Complete(key_, clock.fetch_add(10));
    };
    std::thread first(complete_on, 0), second(complete_on, 1);
    first.join();
    second.join();
    for (const WindowEvent& event : Drain()) events.push_back(event);
  }
  ASSERT_FALSE(::testing::Test::HasFatalFailure());

  uint64_t in_windows = 0, partial = 0;
  for (const WindowEvent& event : events) {
    in_windows += event.completions;
    // Not first >= start: each completion's clock is taken before its syscall, so a CPU can add a
    // completion stamped before the close the other CPU made (the kernel's stamped hooks can too).
    if (event.completions < kWindow || event.first == 0 || event.first > event.end) {
      if (++partial <= 3)
        ADD_FAILURE() << "a window record of " << event.completions << " completions, start " << event.start
                      << " first " << event.first << " end " << event.end;
    }
  }
  EXPECT_EQ(partial, 0u) << "of " << events.size() << " records";
  const QueueCounters counters = Counters(key_);
  EXPECT_EQ(counters.completions, 2ull * kRounds * kPerCpuPerRound);
  EXPECT_EQ(in_windows + counters.progress.completions, counters.completions);
  EXPECT_EQ(collector_->Stats().ringbuf_drops, 0u);
}

}  // namespace
}  // namespace nvmeadapt::collect
