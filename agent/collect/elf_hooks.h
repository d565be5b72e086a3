// Reads a binary's ELF notes (.note.stapsdt: USDT probes) and symbol tables with libelf for what the
// userspace-driver hooks need. No BPF, no process: only the file.
#pragma once

#include <cstdint>
#include <string>

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

// The file is opened non-blocking and without following a link (but for /proc/PID/exe, the kernel's own);
// it must be a regular file of at most kMaxBinaryBytes (else kPermissionDenied, saying which). Errors: the
// file cannot be opened (SysError with the path), or it is not ELF (kInvalidArgument). It may still block
// where the file system does (a FUSE file that never answers): callers run it off the agent's loop.
Result<BinaryHooks> ReadBinaryHooks(const std::string& path);

}  // namespace nvmeadapt::collect
