// SPDX-License-Identifier: Apache-2.0
// Readable GoogleTest output for lever values, and the lists of them the lever tests compare.
#pragma once

#include <ostream>
#include <vector>

#include "agent/actuate/lever.h"

namespace nvmeadapt::actuate {

inline void PrintTo(const WriteRecord& w, std::ostream* os) {
  *os << "{" << w.object << " <- '" << w.value << "'" << (w.performed ? "" : " (dry run)") << "}";
}
inline void PrintTo(const RestoreStep& s, std::ostream* os) { *os << "{" << s.object << " = '" << s.value << "'}"; }
inline void PrintTo(const LeverTarget& t, std::ostream* os) { *os << t.ToString(); }
inline void PrintTo(const RestorePoint& p, std::ostream* os) { *os << p.ToJson(); }

using Writes = std::vector<WriteRecord>;
using Steps = std::vector<RestoreStep>;

}  // namespace nvmeadapt::actuate
