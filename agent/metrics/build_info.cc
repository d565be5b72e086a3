// SPDX-License-Identifier: Apache-2.0
#include "agent/metrics/build_info.h"

#include "build_info_values.h"  // generated at every build by build_info.cmake

namespace nvmeadapt::metrics {

BuildInfo CurrentBuildInfo() { return BuildInfo{NVME_ADAPT_VERSION, NVME_ADAPT_COMMIT}; }

}  // namespace nvmeadapt::metrics
