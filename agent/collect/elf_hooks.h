// SPDX-License-Identifier: Apache-2.0
// Reads a binary's ELF notes (.note.stapsdt: USDT probes) and symbol tables with libelf for what the
// userspace-driver hooks need. No BPF, no process: only the file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "common/result.h"

namespace nvmeadapt::collect {

// What a binary (an executable or a shared library) offers to userspace-driver hooks.
struct BinaryHooks {
  bool uvnvme_usdt = false;  // .note.stapsdt has provider "uvnvme"
  bool uvnvme_tally = false; // ... and its `tally` probe (docs/probes.md; drivers before it fire `complete` only)
  bool spdk_symbol = false;  // defines spdk_nvme_qpair_process_completions
};

// The largest binary read: an SPDK application with its debug sections is far below it.
inline constexpr uint64_t kMaxBinaryBytes = 1ull << 30;

// A binary opened once and checked, so that what is read of it and what probes attach to are that file,
// whatever its path names later: a path under /proc/PID/root is in directories the driver's user owns, who
// may rename a FIFO over the file between a check and a second open (issue 45).
//
// The file is opened non-blocking and without following a link (but for /proc/PID/exe, the kernel's own);
// it must be a regular file of at most kMaxBinaryBytes (else kPermissionDenied, saying which). Errors: the
// file cannot be opened (SysError with the path). It may still block where the file system does (a FUSE
// file that never answers): callers run it off the agent's loop.
class CheckedBinary {
 public:
  static Result<CheckedBinary> Open(const std::string& path);
  CheckedBinary(CheckedBinary&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}
  CheckedBinary& operator=(CheckedBinary&& other) noexcept;
  CheckedBinary(const CheckedBinary&) = delete;
  CheckedBinary& operator=(const CheckedBinary&) = delete;
  ~CheckedBinary();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }  // as given: for messages
  // "/proc/self/fd/N": every open of it (libbpf's ELF reads) and the kernel's lookup of a uprobe's path
  // reach this very file, never what the path names now. Valid while this object lives.
  std::string PinnedPath() const;

 private:
  CheckedBinary(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

// Errors: those of CheckedBinary::Open, or the file is not ELF (kInvalidArgument).
Result<BinaryHooks> ReadBinaryHooks(const CheckedBinary& binary);
Result<BinaryHooks> ReadBinaryHooks(const std::string& path);

}  // namespace nvmeadapt::collect
