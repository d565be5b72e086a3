// Reads a binary's ELF notes (.note.stapsdt: USDT probes) and symbol tables with libelf for what the
// userspace-driver hooks need. No BPF, no process: only the file.
#pragma once

#include <string>

#include "common/result.h"

namespace nvmeadapt::collect {

// What a binary (an executable or a shared library) offers to userspace-driver hooks.
struct BinaryHooks {
  bool uvnvme_usdt = false;  // .note.stapsdt has provider "uvnvme"
  bool uvnvme_tally = false; // ... and its `tally` probe (docs/probes.md; drivers before it fire `complete` only)
  bool spdk_symbol = false;  // defines spdk_nvme_qpair_process_completions
};

// Errors: the file cannot be opened (SysError with the path), or it is not ELF (kInvalidArgument).
Result<BinaryHooks> ReadBinaryHooks(const std::string& path);

}  // namespace nvmeadapt::collect
