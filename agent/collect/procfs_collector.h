// SPDX-License-Identifier: Apache-2.0
// The fallback where BPF cannot load: per-queue deltas of /proc/interrupts (nvme vectors, "nvme%dq%d")
// and /sys/block/*/stat, sampled at most every interval. Too coarse to decide on: observe only.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "agent/collect/collector.h"

namespace nvmeadapt::collect {

class ProcfsCollector final : public Collector {
 public:
  // root: where proc/ and sys/ are ("/" on a live system, a captured tree in tests).
  ProcfsCollector(std::string root, int interval_ms);

  std::string Name() const override { return "procfs"; }
  bool ObserveOnly() const override { return true; }
  std::vector<std::string> Hooks() const override;
  // The first call takes the baseline; later calls hand over one event per queue whose counters moved.
  Result<int> Poll(int timeout_ms, const std::function<void(const WindowEvent&)>& sink) override;
  void Wake() override;
  Status SetQueueControl(const QueueKey& key, const QueueControl& control) override;
  Status ForgetQueue(const QueueKey& key) override;
  Result<QueueCounters> ReadCounters(const QueueKey& key) const override;
  std::vector<QueueKey> ObservedQueues() const override;
  Status AttachProcess(pid_t pid, const std::string& binary_path) override;
  Status DetachProcess(pid_t pid) override;
  CollectorStats Stats() const override;

  struct Sample {
    uint64_t completions = 0;
    uint64_t bytes = 0;
    uint64_t interrupts = 0;
  };
  using Snapshot = std::map<QueueKey, Sample>;
  // One reading of every queue under root; block devices whose stat cannot be read are left out.
  Result<Snapshot> Read() const;

 private:
  std::string root_;
  int interval_ms_;
  Snapshot last_;
  engine::Nanos last_at_ = 0;
  bool have_last_ = false;
  uint64_t records_ = 0;
  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  bool woken_ = false;
};

}  // namespace nvmeadapt::collect
