// SPDX-License-Identifier: Apache-2.0
// The Policy fields that `policy set` takes as options and `policy get` shows as columns: the policy table's
// rows that have an option (agent/engine/policy_fields.h), then --profile. The option parser, the command's
// option check, the help text, the request and the table are all made from them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "agent/ctl/args.h"
#include "agent/engine/policy_fields.h"
#include "common/result.h"
#include "nvmeadapt/v1/policy.pb.h"

namespace nvmeadapt::ctl {

struct PolicyFlag {
  std::string_view option;  // "window-completions"
  std::string_view value;   // as the help names it: N, DURATION, on|off, PERCENT (a count shown with "%")
  std::string_view column;  // `policy get`'s heading: "WINDOW"
  const engine::PolicyField* field = nullptr;  // nullptr: --profile (the proto's `profile`)
};

std::span<const PolicyFlag> PolicyFlags();

// Sets on `policy` each field whose option `args` gives; a bad value is kInvalidArgument naming the option.
Status ApplyPolicyFlags(const Args& args, v1::Policy* policy);
// The field as `policy get` shows it: "-" when unset.
std::string PolicyFlagText(const PolicyFlag& flag, const v1::Policy& policy);

}  // namespace nvmeadapt::ctl
