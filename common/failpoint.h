// SPDX-License-Identifier: Apache-2.0
// A crash at a named point, for the fault campaign and the VM tests (NVME_ADAPT_FAILPOINT=NAME in builds
// with tests, NVME_ADAPT_FAILPOINTS defined): a kill -9 exactly there, which no outside timing can hit
// reliably. Nothing in other builds.
#pragma once

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace nvmeadapt {

inline void Failpoint([[maybe_unused]] const char* name) {
#ifdef NVME_ADAPT_FAILPOINTS
  static const char* wanted = std::getenv("NVME_ADAPT_FAILPOINT");
  if (wanted != nullptr && std::strcmp(wanted, name) == 0) raise(SIGKILL);
#endif
}

// A write that fails part way, for the crash-consistency campaign (the same builds):
// NVME_ADAPT_WRITE_FAULT=POINT:KIND:NTH:AT makes the NTH write at POINT in this process (counted from 1) put
// AT bytes of it on disk (AT < 0: all but -AT), then
//   short   return that count, as a write(2) cut short does; the rest goes through on the next call;
//   enospc  fail the next call with ENOSPC (at once when AT is 0), as a full file system does;
//   eio     the same with EIO;
//   stuck   fail with EIO, and taking the bytes back (ftruncate) fails with EIO too.
struct WriteFault {
  enum class Kind { kShort, kNoSpace, kIo, kStuck };
  Kind kind = Kind::kShort;
  int64_t at = 0;
};

inline std::optional<WriteFault> WriteFaultFor([[maybe_unused]] std::string_view point,
                                               [[maybe_unused]] uint64_t nth) {
#ifdef NVME_ADAPT_FAILPOINTS
  const char* wanted = std::getenv("NVME_ADAPT_WRITE_FAULT");
  if (wanted == nullptr) return std::nullopt;
  const std::string_view spec(wanted);
  const std::string prefix = std::string(point) + ":";
  if (spec.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string rest(spec.substr(prefix.size()));
  char kind[16] = {};
  unsigned long long which = 0;
  long long at = 0;
  if (std::sscanf(rest.c_str(), "%15[a-z]:%llu:%lld", kind, &which, &at) != 3 || which != nth) return std::nullopt;
  WriteFault fault{WriteFault::Kind::kShort, at};
  const std::string_view name(kind);
  if (name == "enospc") {
    fault.kind = WriteFault::Kind::kNoSpace;
  } else if (name == "eio") {
    fault.kind = WriteFault::Kind::kIo;
  } else if (name == "stuck") {
    fault.kind = WriteFault::Kind::kStuck;
  } else if (name != "short") {
    return std::nullopt;
  }
  return fault;
#else
  return std::nullopt;
#endif
}

}  // namespace nvmeadapt
