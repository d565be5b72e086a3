// SPDX-License-Identifier: Apache-2.0
// What one call of a lever changes. The levers themselves are named in common/vocabulary.h (LeverKind): the
// config layer names them too.
#pragma once

#include <cstdint>

namespace nvmeadapt::actuate {

enum class LeverScope : uint8_t {
  kController,  // the whole controller: call once per controller with the controller's mode
  kVector,      // one interrupt vector (one queue when the vector is dedicated)
  kQueue,       // one queue
  kAny,         // dry run: whatever it is given
};

}  // namespace nvmeadapt::actuate
