// SPDX-License-Identifier: Apache-2.0
// Fires the uvnvme USDT probes exactly as the contract says (docs/probes.md): provider uvnvme, u32
// arguments, semaphores uvnvme_<probe>_semaphore in .probes, a probe fired only while its semaphore is
// non-zero. It waits until the complete and mode semaphores are set (the collector attached; it attaches
// irq, when it wants it, between those two, and mode last), then runs one thread
// per queue from argv and exits. Usage: uvnvme_probe_fixture CTRL QID:BATCHES:N:MODE...
//   MODE 0: interrupt (irq() before every batch); MODE 1: poll (one mode(ctrl, qid, 1) first).
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

extern "C" {
__extension__ unsigned short uvnvme_complete_semaphore __attribute__((unused)) __attribute__((section(".probes")));
__extension__ unsigned short uvnvme_irq_semaphore __attribute__((unused)) __attribute__((section(".probes")));
__extension__ unsigned short uvnvme_mode_semaphore __attribute__((unused)) __attribute__((section(".probes")));
}

namespace {

bool Enabled(const unsigned short& semaphore) { return *static_cast<const volatile unsigned short*>(&semaphore) != 0; }

struct QueuePlan {
  uint32_t qid, batches, n, mode;
};

void Reap(uint32_t ctrl, QueuePlan plan) {
  if (plan.mode == 1 && Enabled(uvnvme_mode_semaphore)) STAP_PROBE3(uvnvme, mode, ctrl, plan.qid, plan.mode);
  for (uint32_t batch = 0; batch < plan.batches; ++batch) {
    if (plan.mode == 0 && Enabled(uvnvme_irq_semaphore)) STAP_PROBE2(uvnvme, irq, ctrl, plan.qid);
    if (Enabled(uvnvme_complete_semaphore)) STAP_PROBE4(uvnvme, complete, ctrl, plan.qid, plan.n, plan.mode);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CTRL QID:BATCHES:N:MODE...\n", argv[0]);
    return 2;
  }
  const uint32_t ctrl = static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10));
  std::vector<QueuePlan> plans;
  for (int i = 2; i < argc; ++i) {
    QueuePlan plan{};
    if (std::sscanf(argv[i], "%u:%u:%u:%u", &plan.qid, &plan.batches, &plan.n, &plan.mode) != 4) {
      std::fprintf(stderr, "bad queue plan '%s'\n", argv[i]);
      return 2;
    }
    plans.push_back(plan);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(Enabled(uvnvme_complete_semaphore) && Enabled(uvnvme_mode_semaphore))) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "uvnvme_probe_fixture: semaphores never set: nothing attached\n");
      return 3;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<std::thread> reapers;
  for (const QueuePlan& plan : plans) reapers.emplace_back(Reap, ctrl, plan);
  for (std::thread& reaper : reapers) reaper.join();
  return 0;
}
