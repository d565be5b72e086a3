// SPDX-License-Identifier: Apache-2.0
// What nvme_adapt_build_info reports: the project version and the git commit the binary was built from.
#pragma once

#include <string>

namespace nvmeadapt::metrics {

struct BuildInfo {
  std::string version;  // the CMake project version, "0.1.0"
  std::string commit;   // `git describe --always --dirty` at build time, "unknown" outside a git checkout
};

BuildInfo CurrentBuildInfo();

}  // namespace nvmeadapt::metrics
