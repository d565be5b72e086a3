// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/loop_waker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

namespace nvmeadapt::collect {

Result<LoopWaker> LoopWaker::Open() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return SysError("create", "the agent loop's eventfd", errno);
  return LoopWaker(fd);
}

LoopWaker::LoopWaker(LoopWaker&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

LoopWaker& LoopWaker::operator=(LoopWaker&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

LoopWaker::~LoopWaker() {
  if (fd_ >= 0) close(fd_);
}

void LoopWaker::Signal() {
  const uint64_t one = 1;
  // EAGAIN: the counter is at its maximum, so a wake is pending anyway. Nothing else can fail on an eventfd
  // this object owns.
  while (write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void LoopWaker::Drain() {
  uint64_t count = 0;
  while (read(fd_, &count, sizeof count) < 0 && errno == EINTR) {
  }
}

}  // namespace nvmeadapt::collect
