// SPDX-License-Identifier: Apache-2.0
// One queue pair's shared memory: a memfd mapped MAP_SHARED, holding the registers and both rings of
// layout.h. Host and controller in one process map it once; another process could map the same fd.
#pragma once

#include <memory>

#include "common/result.h"
#include "uvnvme/layout.h"

namespace nvmeadapt::uvnvme {

class QueueMemory {
 public:
  static Result<std::unique_ptr<QueueMemory>> Create(uint32_t ctrl, uint32_t qid, uint32_t entries);
  ~QueueMemory();
  QueueMemory(const QueueMemory&) = delete;
  QueueMemory& operator=(const QueueMemory&) = delete;

  uint32_t entries() const { return layout_.entries; }
  int fd() const { return fd_; }
  QueueRegisters& registers() const { return *static_cast<QueueRegisters*>(base_); }
  SubmissionEntry* submissions() const {
    return reinterpret_cast<SubmissionEntry*>(static_cast<char*>(base_) + layout_.sq_offset);
  }
  CompletionEntry* completions() const {
    return reinterpret_cast<CompletionEntry*>(static_cast<char*>(base_) + layout_.cq_offset);
  }

 private:
  QueueMemory(int fd, void* base, QueueLayout layout) : fd_(fd), base_(base), layout_(layout) {}

  int fd_;
  void* base_;
  QueueLayout layout_;
};

}  // namespace nvmeadapt::uvnvme
