// SPDX-License-Identifier: Apache-2.0
// slot_reservation (issue #37): the BPF queue table is split between the machine's own kernel queues and the
// sources a peer can multiply. A flood of uvnvme queues from one driver (every slot it can get, through the
// agent's own allocation, as a driver listing thousands of queues makes the daemon do) then a kernel queue
// appearing (a loop device under direct I/O): the kernel queue still gets its slot and every completion is
// counted. With the table first come, first served the flood took every slot and the loop device's
// completions found none (slots_exhausted).
#include <gtest/gtest.h>

#include "agent/collect/collector.h"
#include "bpf/nvme_adapt.h"
#include "tests/bpf/test_support.h"

namespace nvmeadapt::collect {
namespace {

using nvmeadapt::testing::LoopDevice;
using nvmeadapt::testing::ReadBlockStat;
using nvmeadapt::testing::RunFio;

TEST(BpfSlots, SlotReservationKeepsKernelQueuesSlotsUnderAUvnvmeFlood) {
  const std::string missing = nvmeadapt::testing::MissingForBpfTests();
  ASSERT_EQ(missing, "") << "BPF test cannot run: " << missing;
  auto opened = OpenCollector(CollectorOptions{});
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  Collector& collector = **opened;
  ASSERT_EQ(collector.Name(), "bpf") << "the BPF collector must load as root here";

  // One driver's flood: keys until the table refuses them.
  size_t flooded = 0;
  Status refused = OkStatus();
  for (uint32_t i = 0; i < 2 * NA_MAX_QUEUES && refused.ok(); ++i) {
    refused = collector.SetQueueControl(QueueKey{Source::kUvnvme, i / 64, i % 64 + 1, 4242}, QueueControl{});
    if (refused.ok()) ++flooded;
  }
  ASSERT_FALSE(refused.ok()) << "the table took " << flooded << " queues of one driver";
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable) << refused.error().message;
  EXPECT_LT(flooded, size_t{NA_MAX_QUEUES}) << "one driver's queues filled the whole table";
  EXPECT_GE(flooded, size_t{NA_MAX_QUEUES} / 2 - 1) << "the flood did not fill its half";

  // Now a kernel queue appears and completes I/O.
  auto loop = LoopDevice::Create(16ull << 20);
  ASSERT_TRUE(loop.ok()) << loop.error().message;
  const QueueKey key{Source::kBlock, loop->dev(), 1, 0};
  const uint64_t exhausted_before = collector.Stats().slots_exhausted;
  auto before = ReadBlockStat(loop->name());
  ASSERT_TRUE(before.ok()) << before.error().message;
  ASSERT_TRUE(RunFio(loop->path(), "randread", 8ull << 20).ok());
  auto after = ReadBlockStat(loop->name());
  ASSERT_TRUE(after.ok()) << after.error().message;
  auto counters = collector.ReadCounters(key);
  ASSERT_TRUE(counters.ok()) << "the loop device's queue got no slot: " << counters.error().message;
  const uint64_t device = after->completions - before->completions;
  EXPECT_GE(static_cast<double>(counters->completions), 0.98 * static_cast<double>(device))
      << "BPF counted " << counters->completions << " of " << device << " completions";
  EXPECT_EQ(collector.Stats().slots_exhausted, exhausted_before) << "kernel completions found no slot";
  // And the agent can still manage it.
  EXPECT_TRUE(collector.SetQueueControl(key, QueueControl{}).ok());
}

}  // namespace
}  // namespace nvmeadapt::collect
