// SPDX-License-Identifier: Apache-2.0
// /proc/interrupts is read whole however large the machine makes it (issue #37: a 512-CPU host's file is
// over 16 MiB, which a fixed cap turned into "no kernel queues").
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "agent/discover/discovery.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::discover {
namespace {

using nvmeadapt::testing::CopyTree;
using nvmeadapt::testing::SysfsCase;
using nvmeadapt::testing::TempDir;
using nvmeadapt::testing::WriteFile;

constexpr int kCpus = 512;

// The captured two-CPU line `line` as a kCpus-CPU host prints it: the counts spread over every CPU.
std::string Widen(const std::string& line) {
  std::istringstream in(line);
  std::string label, first, second;
  in >> label >> first >> second;
  std::string rest;
  std::getline(in, rest);
  std::ostringstream out;
  out << label;
  for (int cpu = 0; cpu < kCpus; ++cpu) out << ' ' << std::setw(10) << (cpu == 0 ? first : cpu == 1 ? second : "0");
  out << rest << '\n';
  return out.str();
}

TEST(DiscoverBounds, AProcInterruptsLargerThan16MiBIsReadWhole) {
  TempDir tmp;
  CopyTree(SysfsCase("qemu-poll"), tmp.path());
  const std::string path = tmp.path() + "/proc/interrupts";
  std::ifstream captured(SysfsCase("qemu-poll") + "/proc/interrupts");
  std::string line;
  std::getline(captured, line);
  std::ostringstream text;
  for (int cpu = 0; cpu < kCpus; ++cpu) text << "  CPU" << cpu;
  text << '\n';
  // Other devices' IRQs first, so that the NVMe lines are past the 16 MiB mark.
  for (int irq = 1000; text.tellp() < (17 << 20); ++irq) {
    text << Widen(std::to_string(irq) + ": 1 2 PCI-MSI " + std::to_string(irq) + "-edge eth0-rx-" +
                  std::to_string(irq));
  }
  while (std::getline(captured, line)) {
    if (line.find(':') != std::string::npos && std::isdigit(static_cast<unsigned char>(line[line.find_first_not_of(' ')]))) {
      text << Widen(line);
    } else {
      text << line << '\n';
    }
  }
  ASSERT_GT(text.str().size(), size_t{16} << 20);
  WriteFile(path, text.str());

  DiscoveryOptions options = DiscoveryOptions::UnderRoot(tmp.path());
  options.uvnvme = false;
  const Snapshot snapshot = Discover(options);
  ASSERT_TRUE(snapshot.skipped.empty()) << snapshot.skipped.front().error.message;
  ASSERT_EQ(snapshot.controllers.size(), 1u);
  // The same vectors as the captured two-CPU file gives (its poll queue has none).
  DiscoveryOptions captured_options = DiscoveryOptions::UnderRoot(SysfsCase("qemu-poll"));
  captured_options.uvnvme = false;
  const Snapshot as_captured = Discover(captured_options);
  ASSERT_EQ(as_captured.controllers.size(), 1u);
  const std::vector<Queue>& queues = snapshot.controllers.front().queues;
  const std::vector<Queue>& expected = as_captured.controllers.front().queues;
  ASSERT_EQ(queues.size(), expected.size());
  size_t with_vector = 0;
  for (size_t i = 0; i < queues.size(); ++i) {
    ASSERT_EQ(queues[i].vector.has_value(), expected[i].vector.has_value()) << "q" << queues[i].qid;
    if (!queues[i].vector) continue;
    ++with_vector;
    EXPECT_EQ(queues[i].vector->irq, expected[i].vector->irq) << "q" << queues[i].qid;
  }
  EXPECT_GE(with_vector, 3u);
}

}  // namespace
}  // namespace nvmeadapt::discover
