// nvme-adaptctl's command line: positional words and --options (as "--name value" or "--name=value"),
// options allowed anywhere after the program name.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::ctl {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>, std::less<>> values;
  std::set<std::string, std::less<>> flags;

  bool flag(std::string_view name) const { return flags.contains(name); }
  // The last value given for the option, or nullptr.
  const std::string* value(std::string_view name) const;
  std::vector<std::string> all(std::string_view name) const;
};

// Refuses options the program does not know and options missing their value.
Result<Args> ParseArgs(int argc, const char* const* argv);
// Refuses options that the command does not take (global options are always allowed).
Status CheckOptions(const Args& args, std::string_view command, const std::vector<std::string_view>& allowed);

}  // namespace nvmeadapt::ctl
