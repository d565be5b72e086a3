// The Policy fields that `policy set` takes as options and `policy get` shows as columns: one row a field,
// from which the option parser, the command's option check, the help text, the request and the table are
// all made. A new policy field is one row here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "agent/ctl/args.h"
#include "common/result.h"
#include "nvmeadapt/v1/policy.pb.h"

namespace nvmeadapt::ctl {

struct PolicyFlag {
  std::string_view option;  // "window-completions"
  std::string_view value;   // as the help names it: N, DURATION, on|off, PERCENT (a count shown with "%")
  std::string_view column;  // `policy get`'s heading: "WINDOW"
  bool (v1::Policy::*has)() const = nullptr;
  // The pair of the field's kind: a count, a duration in nanoseconds, or on|off.
  uint32_t (v1::Policy::*count)() const = nullptr;
  void (v1::Policy::*set_count)(uint32_t) = nullptr;
  int64_t (v1::Policy::*duration)() const = nullptr;
  void (v1::Policy::*set_duration)(int64_t) = nullptr;
  bool (v1::Policy::*on_off)() const = nullptr;
  void (v1::Policy::*set_on_off)(bool) = nullptr;
};

std::span<const PolicyFlag> PolicyFlags();
bool IsPolicyFlag(std::string_view option);

// Sets on `policy` each field whose option `args` gives; a bad value is kInvalidArgument naming the option.
Status ApplyPolicyFlags(const Args& args, v1::Policy* policy);
// The field as `policy get` shows it: "-" when unset.
std::string PolicyFlagText(const PolicyFlag& flag, const v1::Policy& policy);
// `first`, then "--OPTION VALUE" of each field, three spaces apart, in lines of at most 100 columns that
// begin with `indent`; ends with a newline.
std::string PolicyFlagsHelp(std::string_view first, std::string_view indent);

}  // namespace nvmeadapt::ctl
