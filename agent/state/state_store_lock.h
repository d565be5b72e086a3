// SPDX-License-Identifier: Apache-2.0
// One daemon per state dir. Two daemons on one journal undo each other: a second instance's restore puts
// back the queues the first one still drives and empties the journal the first one relies on (issue #37).
// The lock is an flock(2) on <state_dir>/nvme-adaptd.lock, held by the process until it exits; the kernel
// drops it however the process ends (kill -9, OOM kill), so a crash never leaves a stale lock, and the
// unit's ExecStopPost=--restore-only, which runs after the main process is gone, finds it free.
#pragma once

#include <string>

#include "common/result.h"

namespace nvmeadapt::state {

class StateDirLock {
 public:
  // Creates the state dir (0750) when missing, then takes the lock without waiting. Another holder is
  // kFailedPrecondition, its message naming the lock file and the holder's pid.
  static Result<StateDirLock> Acquire(const std::string& state_dir);

  StateDirLock(StateDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StateDirLock& operator=(StateDirLock&&) = delete;
  StateDirLock(const StateDirLock&) = delete;
  ~StateDirLock();

 private:
  explicit StateDirLock(int fd) : fd_(fd) {}
  int fd_;
};

std::string StateDirLockPath(const std::string& state_dir);

}  // namespace nvmeadapt::state
