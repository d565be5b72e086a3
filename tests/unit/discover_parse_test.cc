// SPDX-License-Identifier: Apache-2.0
// The procfs/sysfs text parsers, on the layouts the kernel prints.
#include <gtest/gtest.h>

#include "agent/discover/procfs_parse.h"

namespace nvmeadapt::discover {
namespace {

using Names = std::vector<std::string>;
using Cpus = std::vector<uint32_t>;

TEST(ParseInterrupts, Kernel61Layout) {
  const auto lines = ParseInterrupts(
      "           CPU0       CPU1       \n"
      "  0:         37          0   IO-APIC   2-edge      timer\n"
      " 28:         23          0   PCI-MSI 81920-edge      nvme0q0\n"
      " 29:       1337          5   PCI-MSI 81921-edge      nvme0q1\n"
      "NMI:          0          0   Non-maskable interrupts\n"
      "ERR:          0\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].irq, 0u);
  EXPECT_EQ(lines[0].chip, "IO-APIC");
  EXPECT_EQ(lines[0].handlers, Names{"timer"});
  EXPECT_EQ(lines[2].irq, 29u);
  EXPECT_EQ(lines[2].chip, "PCI-MSI");
  EXPECT_EQ(lines[2].handlers, Names{"nvme0q1"});
  EXPECT_EQ(lines[2].count, 1342u);
}

TEST(ParseInterrupts, PerDeviceMsiDomainLayout) {  // 6.2+: the chip names the device
  const auto lines = ParseInterrupts(
      "            CPU0       CPU1       CPU2       CPU3       \n"
      " 122:          0          0          0         17  PCI-MSIX-0000:01:00.0   3-edge      nvme1q3\n"
      " 123:          0          0          0          0  IR-PCI-MSIX-0000:02:00.0    0-edge      nvme2q0\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].chip, "PCI-MSIX-0000:01:00.0");
  EXPECT_EQ(lines[0].handlers, Names{"nvme1q3"});
  EXPECT_EQ(lines[0].count, 17u);
  EXPECT_EQ(lines[1].chip, "IR-PCI-MSIX-0000:02:00.0");
  EXPECT_EQ(lines[1].handlers, Names{"nvme2q0"});
}

TEST(ParseInterrupts, SharedVectorListsEveryHandler) {
  const auto lines = ParseInterrupts(
      "           CPU0       CPU1       \n"
      " 11:       1290       1187   IO-APIC  11-fasteoi   nvme0q0, nvme0q1, uhci_hcd:usb1\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].handlers, (Names{"nvme0q0", "nvme0q1", "uhci_hcd:usb1"}));
}

TEST(ParseInterrupts, AnIrqWithoutHandlerHasNone) {
  const auto lines = ParseInterrupts("           CPU0\n 40:          0   PCI-MSI 81923-edge\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].handlers.empty());
}

TEST(ParseCpuList, BlkMqAndCpulistForms) {
  EXPECT_EQ(*ParseCpuList("0, 1\n"), (Cpus{0, 1}));
  EXPECT_EQ(*ParseCpuList("5\n"), (Cpus{5}));
  EXPECT_EQ(*ParseCpuList("0-3,8\n"), (Cpus{0, 1, 2, 3, 8}));
  EXPECT_EQ(*ParseCpuList("4, 2, 2"), (Cpus{2, 4}));
  EXPECT_TRUE(ParseCpuList("\n")->empty());
}

TEST(ParseCpuList, GarbageIsAnError) {
  for (const char* bad : {"zero", "3-1", "1-", "0, x"}) {
    auto cpus = ParseCpuList(bad);
    EXPECT_FALSE(cpus) << bad;
    if (!cpus) {
      EXPECT_NE(cpus.error().message.find("cpu list"), std::string::npos);
    }
  }
}

TEST(ParseNvmeHandler, NamesOfTheKernelDriver) {
  auto h = ParseNvmeHandler("nvme12q34");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->instance, 12u);
  EXPECT_EQ(h->qid, 34u);
  for (const char* other : {"nvme0", "nvmeq1", "nvme0q", "nvme0q1x", "xnvme0q1", "nvme0n1", "nvme-1q1"}) {
    EXPECT_FALSE(ParseNvmeHandler(other)) << other;
  }
}

TEST(Cmdline, WholeOptionsOnly) {
  EXPECT_TRUE(CmdlineHasOption("root=/dev/vda1 threadirqs quiet\n", "threadirqs"));
  EXPECT_FALSE(CmdlineHasOption("root=/dev/vda1 nothreadirqs quiet\n", "threadirqs"));
  EXPECT_FALSE(CmdlineHasOption("threadirqs=0", "threadirqs"));
}

TEST(ModuleParameters, BoolAndIntForms) {
  EXPECT_TRUE(ParamIsTrue("Y\n"));
  EXPECT_TRUE(ParamIsTrue("1\n"));
  EXPECT_FALSE(ParamIsTrue("N\n"));
  EXPECT_FALSE(ParamIsTrue("0\n"));
}

}  // namespace
}  // namespace nvmeadapt::discover
