// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/args.h"

namespace nvmeadapt::ctl {

const std::string* Args::value(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? nullptr : &it->second.back();
}

std::vector<std::string> Args::all(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace nvmeadapt::ctl
