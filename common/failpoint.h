// A crash at a named point, for the fault campaign and the VM tests (NVME_ADAPT_FAILPOINT=NAME in builds
// with tests, NVME_ADAPT_FAILPOINTS defined): a kill -9 exactly there, which no outside timing can hit
// reliably. Nothing in other builds.
#pragma once

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace nvmeadapt {

inline void Failpoint([[maybe_unused]] const char* name) {
#ifdef NVME_ADAPT_FAILPOINTS
  static const char* wanted = std::getenv("NVME_ADAPT_FAILPOINT");
  if (wanted != nullptr && std::strcmp(wanted, name) == 0) raise(SIGKILL);
#endif
}

}  // namespace nvmeadapt
