// SPDX-License-Identifier: Apache-2.0
#include "agent/config/node_identity.h"

#include <sys/utsname.h>

#include <cerrno>
#include <algorithm>
#include <map>
#include <optional>

#include "common/files.h"

namespace nvmeadapt::config {
namespace {

// A character a label's key or value may not hold: the selectors' pairs are split at ',' and '=' and the
// facts at '\n' (Kubernetes' labels hold none of them, nor a space).
bool Unfit(char c, bool key) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f || c == ',' || (key && (c == '=' || c == ' ' || c == '"'));
}

// The value between the quotes of `quoted` ("\"fast\""), with Go's escapes \" and \\ undone; nullopt for any
// other escape (a label value holds no character that needs one) or when the quotes are not there.
std::optional<std::string> Unquote(std::string_view quoted) {
  if (quoted.size() < 2 || quoted.front() != '"' || quoted.back() != '"') return std::nullopt;
  std::string value;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '"') return std::nullopt;
    if (c == '\\') {
      if (i + 2 >= quoted.size() || (quoted[i + 1] != '"' && quoted[i + 1] != '\\')) return std::nullopt;
      c = quoted[++i];
    }
    value += c;
  }
  return value;
}

}  // namespace

Result<std::string> ParseLabelsFile(std::string_view text, const std::string& path) {
  std::map<std::string, std::string> labels;  // sorted: the facts do not depend on the file's order
  size_t number = 0;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (line.empty()) continue;
    auto bad = [&](const std::string& why) {
      return MakeError(ErrorCode::kInvalidArgument, path + ":" + std::to_string(number) + ": " + why);
    };
    const size_t eq = line.find('=');
    if (eq == 0 || eq == std::string_view::npos) return bad("not a label: expected key=\"value\"");
    const std::string key(line.substr(0, eq));
    for (char c : key) {
      if (Unfit(c, true)) return bad("the key '" + key + "' holds a character no label key has");
    }
    const std::optional<std::string> value = Unquote(line.substr(eq + 1));
    if (!value) return bad("the value of " + key + " is not one quoted string (\"fast\")");
    for (char c : *value) {
      if (Unfit(c, false)) return bad("the value of " + key + " holds a character no label value has");
    }
    if (!labels.emplace(key, *value).second) return bad(key + " is given twice");
  }
  std::string lines;
  for (const auto& [key, value] : labels) lines += (lines.empty() ? "" : "\n") + key + "=" + value;
  return lines;
}

Result<engine::NodeIdentity> ReadNodeIdentity(const std::string& labels_file) {
  engine::NodeIdentity node;
  struct utsname name {};
  if (uname(&name) != 0) return SysError("uname", "the node's hostname and kernel", errno);
  node.hostname = name.nodename;
  node.kernel_release = name.release;
  if (labels_file.empty()) return node;
  NA_ASSIGN_OR_RETURN(auto text, ReadWholeFile(labels_file, 1 << 20));
  NA_ASSIGN_OR_RETURN(node.labels, ParseLabelsFile(text, labels_file));
  return node;
}

}  // namespace nvmeadapt::config
