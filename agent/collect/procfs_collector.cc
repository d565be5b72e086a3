// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/procfs_collector.h"

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "agent/collect/nvme_disks.h"
#include "common/clock.h"

namespace nvmeadapt::collect {
namespace {

namespace fs = std::filesystem;

// "nvme0q3" -> (0, 3); the admin vector "nvme0q0" too.
bool ParseNvmeVector(const std::string& name, uint32_t& ctrl, uint32_t& qid) {
  unsigned c = 0, q = 0;
  int consumed = 0;
  if (std::sscanf(name.c_str(), "nvme%uq%u%n", &c, &q, &consumed) != 2 || consumed != static_cast<int>(name.size()))
    return false;
  ctrl = c;
  qid = q;
  return true;
}

Status ReadInterrupts(const fs::path& path, ProcfsCollector::Snapshot& out) {
  std::ifstream in(path);
  if (!in) return SysError("open", path.string(), errno);
  std::string line;
  if (!std::getline(in, line)) return MakeError(ErrorCode::kInvalidArgument, path.string() + ": empty");
  size_t cpus = 0;
  {
    std::istringstream header(line);
    for (std::string word; header >> word;) cpus += word.starts_with("CPU");
  }
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string irq;
    fields >> irq;
    if (irq.empty() || irq.back() != ':') continue;
    uint64_t total = 0;
    size_t counted = 0;
    for (; counted < cpus; ++counted) {
      uint64_t count = 0;
      if (!(fields >> count)) break;
      total += count;
    }
    if (counted != cpus) continue;  // ERR:, MIS: and other summary lines
    for (std::string word; fields >> word;) {
      uint32_t ctrl = 0, qid = 0;
      if (ParseNvmeVector(word, ctrl, qid)) out[QueueKey{Source::kKernelNvme, ctrl, qid, 0}].interrupts += total;
    }
  }
  return OkStatus();
}

// Documentation/block/stat.rst: reads completed [0], sectors read [2], writes completed [4], sectors
// written [6], discards completed [11], flushes completed [15] (the last two on newer kernels).
void ReadBlockDevices(const fs::path& block, ProcfsCollector::Snapshot& out) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(block, ec)) {
    const auto dev = ReadDevNumber(entry.path() / "dev");
    std::ifstream stat(entry.path() / "stat");
    if (!dev || !stat) continue;
    std::vector<uint64_t> f;
    for (uint64_t value; stat >> value;) f.push_back(value);
    if (f.size() < 11) continue;
    size_t hardware_queues = 0;
    for (const auto& hctx : fs::directory_iterator(entry.path() / "mq", ec)) hardware_queues += hctx.is_directory();
    // Per-hardware-queue counts are not in sysfs: a single-queue device is its queue (hctx 0 -> qid 1),
    // any other device reports as qid 0, the whole device.
    const uint32_t qid = hardware_queues == 1 ? 1 : 0;
    ProcfsCollector::Sample& sample = out[QueueKey{Source::kBlock, *dev, qid, 0}];
    sample.completions = f[0] + f[4] + (f.size() > 11 ? f[11] : 0) + (f.size() > 15 ? f[15] : 0);
    sample.bytes = (f[2] + f[6]) * 512;
  }
}

uint64_t Delta(uint64_t now, uint64_t before) { return now >= before ? now - before : 0; }

}  // namespace

ProcfsCollector::ProcfsCollector(std::string root, int interval_ms)
    : root_(std::move(root)), interval_ms_(interval_ms < 0 ? 0 : interval_ms) {}

std::vector<std::string> ProcfsCollector::Hooks() const {
  return {"procfs:" + (fs::path(root_) / "proc/interrupts").string(),
          "sysfs:" + (fs::path(root_) / "sys/block").string() + "/*/stat"};
}

Result<ProcfsCollector::Snapshot> ProcfsCollector::Read() const {
  Snapshot snapshot;
  if (Status irqs = ReadInterrupts(fs::path(root_) / "proc/interrupts", snapshot); !irqs.ok())
    return std::move(irqs).take_error();
  ReadBlockDevices(fs::path(root_) / "sys/block", snapshot);
  return snapshot;
}

void ProcfsCollector::Wake() {
  std::lock_guard lock(wake_mutex_);
  woken_ = true;
  wake_cv_.notify_one();
}

Result<int> ProcfsCollector::Poll(int timeout_ms, const std::function<void(const WindowEvent&)>& sink) {
  engine::Nanos now = MonotonicNanos();
  if (have_last_) {
    const engine::Nanos due = last_at_ + static_cast<engine::Nanos>(interval_ms_) * 1'000'000;
    if (now < due) {
      const engine::Nanos wait = std::min<engine::Nanos>(due - now, static_cast<engine::Nanos>(timeout_ms) * 1'000'000);
      if (wait > 0) {
        std::unique_lock lock(wake_mutex_);
        wake_cv_.wait_for(lock, std::chrono::nanoseconds(wait), [&] { return woken_; });
        woken_ = false;
      }
      now = MonotonicNanos();
      if (now < due) return 0;
    }
  }
  auto snapshot = Read();
  if (!snapshot.ok()) return std::move(snapshot).take_error();
  int handed = 0;
  if (have_last_) {
    for (const auto& [key, sample] : *snapshot) {
      auto before = last_.find(key);
      if (before == last_.end()) continue;  // appeared since the last reading: its baseline is now
      WindowEvent event;
      event.key = key;
      event.mode_known = false;
      event.completions = static_cast<uint32_t>(Delta(sample.completions, before->second.completions));
      event.bytes = Delta(sample.bytes, before->second.bytes);
      event.interrupts = Delta(sample.interrupts, before->second.interrupts);
      event.start = last_at_;
      event.end = now;
      if (event.completions == 0 && event.interrupts == 0) continue;
      sink(event);
      ++handed;
    }
  }
  last_ = std::move(*snapshot);
  last_at_ = now;
  have_last_ = true;
  records_ += static_cast<uint64_t>(handed);
  return handed;
}

Status ProcfsCollector::SetQueueControl(const QueueKey& key, const QueueControl&) {
  return MakeError(ErrorCode::kUnsupported, "queue " + key.ToString() + ": the procfs collector is observe-only");
}

Status ProcfsCollector::ForgetQueue(const QueueKey& key) {
  if (last_.erase(key) == 0) return MakeError(ErrorCode::kNotFound, "queue " + key.ToString() + ": not observed");
  return OkStatus();
}

Result<QueueCounters> ProcfsCollector::ReadCounters(const QueueKey& key) const {
  auto it = last_.find(key);
  if (it == last_.end()) return MakeError(ErrorCode::kNotFound, "queue " + key.ToString() + ": not observed");
  QueueCounters counters;
  counters.completions = it->second.completions;
  counters.bytes = it->second.bytes;
  counters.interrupts = it->second.interrupts;
  counters.last_completion = last_at_;
  return counters;
}

std::vector<QueueKey> ProcfsCollector::ObservedQueues() const {
  std::vector<QueueKey> keys;
  for (const auto& [key, sample] : last_) keys.push_back(key);
  return keys;
}

Status ProcfsCollector::AttachProcess(pid_t pid, const std::string&) {
  return MakeError(ErrorCode::kUnsupported,
                   "attach process " + std::to_string(pid) + ": userspace-driver probes need the BPF collector");
}

Status ProcfsCollector::DetachProcess(pid_t pid) {
  return MakeError(ErrorCode::kNotFound, "detach process " + std::to_string(pid) + ": not attached");
}

CollectorStats ProcfsCollector::Stats() const {
  CollectorStats stats;
  stats.records = records_;
  return stats;
}

}  // namespace nvmeadapt::collect
