// SPDX-License-Identifier: Apache-2.0
// The BPF collector: loads bpf/nvme_adapt.bpf.c with the programs a HookPlan chose, attaches them, and
// turns ring buffer records into WindowEvents. libbpf types stay out of this header.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/collect/bpf_queue_slots.h"
#include "agent/collect/collector.h"
#include "agent/collect/feature_probe.h"
#include "agent/collect/hook_plan.h"
#include "agent/collect/loop_waker.h"
#include "agent/collect/nvme_disks.h"

struct nvme_adapt_bpf;
struct ring_buffer;
struct bpf_link;

namespace nvmeadapt::collect {

struct BpfOpenOptions {
  bool test_entry = false;  // also load na_test_account, for BPF_PROG_TEST_RUN fixtures (tests/bpf)
};

class BpfCollector final : public Collector {
 public:
  static Result<std::unique_ptr<BpfCollector>> Open(const CollectorOptions& options, const HookPlan& plan,
                                                    std::shared_ptr<FeatureProbe> probe,
                                                    const BpfOpenOptions& extra = {});
  ~BpfCollector() override;

  std::string Name() const override { return "bpf"; }
  bool ObserveOnly() const override { return false; }
  std::vector<std::string> Hooks() const override;
  // Call from one thread at a time.
  Result<int> Poll(int timeout_ms, const std::function<void(const WindowEvent&)>& sink) override;
  void Wake() override;
  Status SetQueueControl(const QueueKey& key, const QueueControl& control) override;
  Status ForgetQueue(const QueueKey& key) override;
  Result<QueueCounters> ReadCounters(const QueueKey& key) const override;
  std::vector<QueueKey> ObservedQueues() const override;
  // pid 0: every process that maps the binary. binary empty: /proc/<pid>/exe. The binary is opened once
  // (CheckedBinary): its notes are read and its probes attached through that descriptor.
  Status AttachProcess(pid_t pid, const std::string& binary_path) override;
  Status DetachProcess(pid_t pid) override;
  CollectorStats Stats() const override;

  // Runs na_account for `key` with the caller's clock through BPF_PROG_TEST_RUN (BpfOpenOptions::test_entry).
  Status TestAccount(const QueueKey& key, uint64_t now_ns, uint32_t n, uint64_t bytes, uint32_t mode);
  // The test entry na_test_mode: a driver's mode probe (uvnvme:mode) for `key` at `now_ns`.
  Status TestDriverSwitched(const QueueKey& key, uint64_t now_ns, ReapMode mode);
  // The test entry na_test_tally: a driver's tally (uvnvme:tally) of n completions, the last reap of
  // last_reap at now_ns, the first at first_ns.
  Status TestTally(const QueueKey& key, uint64_t now_ns, uint64_t first_ns, uint32_t n, uint32_t last_reap,
                   uint32_t mode);
  // Per-interrupt-line count and time in handler (irq_handler_entry/exit).
  struct IrqStats {
    uint64_t count = 0;
    uint64_t time_ns = 0;
  };
  Result<IrqStats> ReadIrq(uint32_t irq) const;

 private:
  struct AttachedProcess {
    std::string binary;
    std::vector<std::string> hooks;
    std::vector<bpf_link*> links;
  };

  BpfCollector() = default;
  Status Load(const CollectorOptions& options, const HookPlan& plan, const BpfOpenOptions& extra,
              const std::vector<NvmeDisk>& disks);
  Status AttachKernelHooks(const HookPlan& plan);
  // Fills the block program's table of nvme disks (bpf/nvme_adapt.bpf.c, na_nvme_disks).
  void TellNvmeDisks(const std::vector<NvmeDisk>& disks);
  static int OnRecord(void* context, void* data, size_t size);
  // The epoll Poll waits on: the ring buffer and the waker.
  Status OpenWait();
  static constexpr uint32_t kRingReady = 0;
  static constexpr uint32_t kWoken = 1;

  nvme_adapt_bpf* skel_ = nullptr;
  ring_buffer* ring_ = nullptr;
  // Poll waits on this epoll: the ring buffer's own epoll and the waker (libbpf's epoll tags its events with
  // ring indexes, so another fd cannot join it).
  int wait_epoll_ = -1;
  std::optional<LoopWaker> waker_;
  std::unique_ptr<BpfQueueSlots> queues_;
  std::shared_ptr<FeatureProbe> probe_;
  bool userspace_wakeups_ = false;
  bool userspace_per_reap_ = false;
  std::vector<bpf_link*> kernel_links_;
  std::vector<std::string> kernel_hooks_;
  std::vector<std::string> loaded_programs_;
  std::map<pid_t, AttachedProcess> processes_;
  mutable std::mutex processes_mutex_;  // held only to read or change processes_: Hooks() runs on the loop
  // One attach or detach at a time (libbpf's USDT bookkeeping is not thread-safe), held across the binary's
  // reads; nothing on the loop takes it.
  std::mutex attach_mutex_;
  const std::function<void(const WindowEvent&)>* sink_ = nullptr;  // set during Poll
  int handed_ = 0;
  uint64_t bad_records_ = 0;
};

}  // namespace nvmeadapt::collect
