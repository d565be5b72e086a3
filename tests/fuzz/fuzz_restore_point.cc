// SPDX-License-Identifier: Apache-2.0
// Fuzzes the restore-point JSON a journal entry carries (RestorePoint::FromJson, agent/actuate/lever.h):
// what a restart replays to put devices back. Invariants: nothing crashes or leaks; errors are one line;
// a point that parses prints (ToJson) to one line that parses back and prints the same: the journal's
// form is a fixed point, so a restore point survives any number of restarts unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/actuate/lever.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nvmeadapt;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto point = actuate::RestorePoint::FromJson(json);
  if (!point) {
    if (point.error().message.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  const std::string printed = point->ToJson();
  if (printed.find('\n') != std::string::npos) std::abort();
  auto again = actuate::RestorePoint::FromJson(printed);
  if (!again || again->ToJson() != printed) std::abort();
  return 0;
}
