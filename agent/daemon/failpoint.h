// A crash at a named point of the switch protocol, for the fault campaign (NVME_ADAPT_FAILPOINT=NAME in
// builds with tests); nothing in other builds.
#pragma once

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace nvmeadapt::daemon {

inline void Failpoint([[maybe_unused]] const char* name) {
#ifdef NVME_ADAPT_FAILPOINTS
  static const char* wanted = std::getenv("NVME_ADAPT_FAILPOINT");
  if (wanted != nullptr && std::strcmp(wanted, name) == 0) raise(SIGKILL);
#endif
}

}  // namespace nvmeadapt::daemon
