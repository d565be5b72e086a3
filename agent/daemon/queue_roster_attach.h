// SPDX-License-Identifier: Apache-2.0
// Attaching a userspace driver's probes reads the binary the driver runs: a file the driver chose, on a file
// system that may never answer (FUSE), which no deadline of a syscall bounds. So attaches, and the detaches
// that share libbpf's USDT bookkeeping with them, run one after the other on a thread of their own; the
// loop never waits for one. An attach under way longer than the deadline is reported once: its process
// is observed without USDT until it ends (issue #37).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/collect/collector.h"

namespace nvmeadapt::daemon {

class ProcessAttacher {
 public:
  explicit ProcessAttacher(collect::Collector& collector) : collector_(collector) {}
  // Joins the thread once idle, waiting kShutdownGrace for an attach under way; one stuck in a binary
  // longer is left behind (the process is ending).
  ~ProcessAttacher();
  ProcessAttacher(const ProcessAttacher&) = delete;
  ProcessAttacher& operator=(const ProcessAttacher&) = delete;

  // From now on jobs run on the thread; before, inline (no loop runs yet, and tests see them at once).
  void Start();
  static constexpr std::chrono::milliseconds kShutdownGrace{1000};
  void Attach(pid_t pid, const std::string& binary);
  void Detach(pid_t pid);
  // The pid of an attach running for longer than `deadline_ns`, once per attach; else nothing.
  std::optional<pid_t> Overdue(int64_t now_ns, int64_t deadline_ns);

 private:
  struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    bool stop = false;
    pid_t running_pid = 0;  // an attach under way
    int64_t running_since = 0;
    bool running_reported = false;
  };
  void Queue(pid_t pid, std::function<void()> job);
  static void Drain(std::shared_ptr<Shared> shared);

  collect::Collector& collector_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::thread thread_;
};

}  // namespace nvmeadapt::daemon
