// SPDX-License-Identifier: Apache-2.0
// Restore points: how to put a target back as a lever found it, and their one-line JSON form for the journal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/actuate/lever_target.h"
#include "common/result.h"
#include "common/vocabulary.h"

namespace nvmeadapt::actuate {

// One value to write back: a file and its content, a feature and its Command Dword 11, a queue and its mode.
struct RestoreStep {
  std::string object;
  std::string value;
  bool operator==(const RestoreStep&) const = default;
};

// How to put a target back as the lever found it before this agent first changed it. Self-contained, so that
// it can be journaled (ToJson) and replayed after a restart by a new lever of the same kind. A restore point of
// a controller-scope lever restores the whole controller.
struct RestorePoint {
  LeverKind lever{};  // the kind of the lever that made it (FromJson refuses a point without one)
  LeverTarget target;
  std::vector<RestoreStep> steps;  // PlannedLever::Restore performs them in this order

  bool operator==(const RestorePoint&) const = default;
  std::string ToJson() const;  // one line
  static Result<RestorePoint> FromJson(std::string_view json);
};

}  // namespace nvmeadapt::actuate
