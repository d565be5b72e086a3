// SPDX-License-Identifier: Apache-2.0
// nvme-adaptctl's command line as the commands read it: the command's words and positionals, and the
// --options given (parsed by cli.h).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>


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

}  // namespace nvmeadapt::ctl
