// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/queue_roster_attach.h"

#include <pthread.h>

#include "common/clock.h"
#include "common/log.h"

namespace nvmeadapt::daemon {

ProcessAttacher::~ProcessAttacher() {
  if (!thread_.joinable()) return;
  pid_t stuck = 0;
  {
    std::unique_lock lock(shared_->mutex);
    shared_->stop = true;
    shared_->cv.notify_all();
    // An attach about to end is waited for; one stuck in a binary would hold the shutdown.
    if (!shared_->cv.wait_for(lock, kShutdownGrace, [&] { return shared_->running_pid == 0; })) {
      stuck = shared_->running_pid;
    }
  }
  if (stuck == 0) {
    thread_.join();
    return;
  }
  NA_WARN("collector: attaching pid " << stuck << " still waits for its binary; left behind");
  thread_.detach();
}

void ProcessAttacher::Start() {
  if (!thread_.joinable()) thread_ = std::thread(Drain, shared_);
}

void ProcessAttacher::Attach(pid_t pid, const std::string& binary) {
  Queue(pid, [this, pid, binary] {
    Status attached = collector_.AttachProcess(pid, binary);
    if (!attached) {
      NA_WARN("collector: pid " << pid << " is observed without USDT probes: " << attached.error().message);
    }
  });
}

void ProcessAttacher::Detach(pid_t pid) {
  Queue(0, [this, pid] { (void)collector_.DetachProcess(pid); });
}

void ProcessAttacher::Queue(pid_t pid, std::function<void()> job) {
  if (!thread_.joinable()) {
    job();
    return;
  }
  {
    std::lock_guard lock(shared_->mutex);
    shared_->jobs.push_back([shared = shared_.get(), pid, job = std::move(job)] {
      {
        std::lock_guard lock(shared->mutex);
        shared->running_pid = pid;
        shared->running_since = MonotonicNanos();
        shared->running_reported = false;
      }
      job();
      std::lock_guard lock(shared->mutex);
      shared->running_pid = 0;
      shared->cv.notify_all();
    });
  }
  shared_->cv.notify_one();
}

void ProcessAttacher::Drain(std::shared_ptr<Shared> shared) {
  pthread_setname_np(pthread_self(), "na-attach");
  std::unique_lock lock(shared->mutex);
  for (;;) {
    shared->cv.wait(lock, [&] { return shared->stop || !shared->jobs.empty(); });
    if (shared->stop) return;
    std::function<void()> job = std::move(shared->jobs.front());
    shared->jobs.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

std::optional<pid_t> ProcessAttacher::Overdue(int64_t now_ns, int64_t deadline_ns) {
  std::lock_guard lock(shared_->mutex);
  if (shared_->running_pid == 0 || shared_->running_reported || now_ns - shared_->running_since < deadline_ns) {
    return std::nullopt;
  }
  shared_->running_reported = true;
  return shared_->running_pid;
}

}  // namespace nvmeadapt::daemon
