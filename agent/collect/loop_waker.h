// SPDX-License-Identifier: Apache-2.0
// An eventfd the BPF collector's wait also watches, so that another thread (a lever worker handing back a step,
// an RPC posted to the loop, the discovery scan) ends the agent's wait at once instead of the loop polling
// for them. Signal is safe from any thread and never blocks; several signals before a wait end one wait.
#pragma once

#include "common/result.h"

namespace nvmeadapt::collect {

class LoopWaker {
 public:
  static Result<LoopWaker> Open();
  LoopWaker(LoopWaker&& other) noexcept;
  LoopWaker& operator=(LoopWaker&& other) noexcept;
  LoopWaker(const LoopWaker&) = delete;
  LoopWaker& operator=(const LoopWaker&) = delete;
  ~LoopWaker();

  void Signal();
  // Consumes the signals so far; the next wait blocks again.
  void Drain();
  int fd() const { return fd_; }

 private:
  explicit LoopWaker(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace nvmeadapt::collect
