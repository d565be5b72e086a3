// SPDX-License-Identifier: Apache-2.0
// irq_handler_entry/exit into na_irq_stats: per-line counts against /proc/interrupts over the same
// interval, with disk writes (virtio-blk completions) to make interrupts happen.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "agent/collect/bpf_collector.h"
#include "tests/bpf/test_support.h"

namespace nvmeadapt::collect {
namespace {

// irq number -> interrupts summed over CPUs, for lines with exactly one handler (no ',' in the names):
// irq_handler_entry fires once per handler, /proc/interrupts counts once per line.
std::map<uint32_t, uint64_t> ProcInterrupts() {
  std::map<uint32_t, uint64_t> counts;
  std::ifstream in("/proc/interrupts");
  std::string line;
  std::getline(in, line);
  size_t cpus = 0;
  {
    std::istringstream header(line);
    for (std::string word; header >> word;) ++cpus;
  }
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string irq;
    fields >> irq;
    if (irq.empty() || irq.back() != ':' || irq.find_first_not_of("0123456789:") != std::string::npos) continue;
    uint64_t total = 0, value = 0;
    for (size_t i = 0; i < cpus && fields >> value; ++i) total += value;
    if (line.find(',') != std::string::npos) continue;
    counts[static_cast<uint32_t>(std::stoul(irq))] = total;
  }
  return counts;
}

void WriteAndSync(const std::string& path) {
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  std::string block(1 << 20, 'x');
  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ(write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
    ASSERT_EQ(fsync(fd), 0);
  }
  close(fd);
  unlink(path.c_str());
}

TEST(BpfIrq, HandlerCountsFollowProcInterrupts) {
  const std::string missing = nvmeadapt::testing::MissingForBpfTests();
  ASSERT_EQ(missing, "") << "BPF test cannot run: " << missing;
  CollectorOptions options;
  options.block = false;
  options.kernel_nvme = false;
  options.irqs = true;  // off by default: this test is what asks for them
  auto probe = MakeSystemFeatureProbe();
  const HookPlan plan = PlanHooks(*probe, options);
  ASSERT_TRUE(plan.use_bpf) << plan.fallback_cause;
  auto opened = BpfCollector::Open(options, plan, std::move(probe));
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  BpfCollector& collector = **opened;

  auto bpf_counts = [&](const std::map<uint32_t, uint64_t>& lines) {
    std::map<uint32_t, BpfCollector::IrqStats> stats;
    for (const auto& [irq, count] : lines) {
      auto read = collector.ReadIrq(irq);
      EXPECT_TRUE(read.ok());
      if (read.ok()) stats[irq] = *read;
    }
    return stats;
  };
  const auto proc_before = ProcInterrupts();
  const auto bpf_before = bpf_counts(proc_before);
  WriteAndSync("/var/tmp/na-irq-test." + std::to_string(getpid()));
  const auto proc_after = ProcInterrupts();
  const auto bpf_after = bpf_counts(proc_before);

  uint64_t busiest = 0;
  for (const auto& [irq, before] : proc_before) {
    if (!proc_after.contains(irq) || !bpf_after.contains(irq) || !bpf_before.contains(irq)) continue;
    const uint64_t proc = proc_after.at(irq) - before;
    const uint64_t counted = bpf_after.at(irq).count - bpf_before.at(irq).count;
    // The two readings are not atomic together: interrupts between them may land on either side.
    const uint64_t slack = std::max<uint64_t>(3, proc / 100);
    EXPECT_LE(counted, proc + slack) << "irq " << irq;
    EXPECT_GE(counted + slack, proc) << "irq " << irq;
    if (proc > busiest) {
      busiest = proc;
      EXPECT_GT(bpf_after.at(irq).time_ns, bpf_before.at(irq).time_ns) << "irq " << irq << ": time in handler";
    }
  }
  EXPECT_GE(busiest, 10u) << "the disk writes raised no interrupts to compare";
}

}  // namespace
}  // namespace nvmeadapt::collect
