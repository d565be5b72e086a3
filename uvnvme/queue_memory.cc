// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/queue_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <string>

namespace nvmeadapt::uvnvme {

Result<std::unique_ptr<QueueMemory>> QueueMemory::Create(uint32_t ctrl, uint32_t qid, uint32_t entries) {
  if (entries < kMinQueueEntries || entries > kMaxQueueEntries) {
    return MakeError(ErrorCode::kInvalidArgument, "queue entries " + std::to_string(entries) + " outside [" +
                                                      std::to_string(kMinQueueEntries) + ", " +
                                                      std::to_string(kMaxQueueEntries) + "]");
  }
  const std::string name = "uvnvme-c" + std::to_string(ctrl) + "q" + std::to_string(qid);
  const QueueLayout layout = QueueLayout::For(entries);
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return SysError("memfd_create", name, errno);
  if (ftruncate(fd, static_cast<off_t>(layout.bytes)) != 0) {
    int err = errno;
    close(fd);
    return SysError("ftruncate", name, err);
  }
  void* base = mmap(nullptr, layout.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    close(fd);
    return SysError("mmap", name, err);
  }
  // The file is zero-filled: every completion entry starts with phase 0, which the host reads as empty.
  new (base) QueueRegisters();
  return std::unique_ptr<QueueMemory>(new QueueMemory(fd, base, layout));
}

QueueMemory::~QueueMemory() {
  registers().~QueueRegisters();
  munmap(base_, layout_.bytes);
  close(fd_);
}

}  // namespace nvmeadapt::uvnvme
