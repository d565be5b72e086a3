#include "agent/ctl/args.h"

#include "agent/api/validate.h"
#include "agent/ctl/policy_flags.h"

#include <algorithm>
#include <iterator>
#include <optional>

namespace nvmeadapt::ctl {
namespace {

constexpr std::string_view kGlobalValueOptions[] = {"addr", "ca", "cert", "key", "token-file", "server-name",
                                                    "timeout"};
constexpr std::string_view kGlobalFlags[] = {"insecure-loopback-tcp", "json", "help", "version"};
// And the policy fields' options (policy_flags.h).
constexpr std::string_view kCommandValueOptions[] = {"source", "controller", "queue", "mode", "file", "for", "kind",
                                                     "count"};
constexpr std::string_view kCommandFlags[] = {"replace"};

template <size_t N>
bool In(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

bool IsGlobal(std::string_view name) { return In(kGlobalValueOptions, name) || In(kGlobalFlags, name); }

Error Usage(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

}  // namespace

const std::string* Args::value(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? nullptr : &it->second.back();
}

std::vector<std::string> Args::all(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

Result<Args> ParseArgs(int argc, const char* const* argv) {
  Args args;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view token = argv[i];
    if (options_done || !token.starts_with("--")) {
      args.positional.emplace_back(token);
      continue;
    }
    if (token == "--") {
      options_done = true;
      continue;
    }
    std::string_view name = token.substr(2);
    std::optional<std::string_view> inline_value;
    if (const size_t eq = name.find('='); eq != std::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (In(kGlobalFlags, name) || In(kCommandFlags, name)) {
      if (inline_value) return Usage("--" + std::string(name) + " takes no value");
      args.flags.emplace(name);
    } else if (In(kGlobalValueOptions, name) || In(kCommandValueOptions, name) || IsPolicyFlag(name)) {
      if (!inline_value) {
        if (i + 1 >= argc) return Usage("--" + std::string(name) + " needs a value");
        inline_value = argv[++i];
      }
      args.values[std::string(name)].emplace_back(*inline_value);
    } else {
      return Usage("unknown option " + api::Quoted(token.substr(0, token.find('='))));
    }
  }
  return args;
}

Status CheckOptions(const Args& args, std::string_view command, const std::vector<std::string_view>& allowed) {
  auto check = [&](const std::string& name) -> Status {
    if (IsGlobal(name) || std::find(allowed.begin(), allowed.end(), name) != allowed.end()) return OkStatus();
    return Usage(std::string(command) + ": does not take --" + name);
  };
  for (const auto& [name, unused] : args.values) {
    if (Status ok = check(name); !ok) return ok;
  }
  for (const auto& name : args.flags) {
    if (Status ok = check(name); !ok) return ok;
  }
  return OkStatus();
}

}  // namespace nvmeadapt::ctl
