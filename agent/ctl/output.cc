// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/output.h"

#include <nlohmann/json.hpp>

#include <sstream>

#include "agent/ctl/format.h"

namespace nvmeadapt::ctl {
namespace {

bool IsScalar(const nlohmann::ordered_json& value) {
  return value.is_primitive() || value.empty();  // an empty object or list prints as {} or []
}

// JSON scalars are YAML flow scalars; strings keep JSON's double quotes, which YAML reads alike.
std::string Scalar(const nlohmann::ordered_json& value) { return value.dump(); }

void Emit(const nlohmann::ordered_json& value, int indent, std::ostream& out);

// An object's members, the first on the current line (after "- " in a list) when `inline_first`.
void EmitObject(const nlohmann::ordered_json& object, int indent, bool inline_first, std::ostream& out) {
  bool first = true;
  for (const auto& [key, member] : object.items()) {
    if (!(first && inline_first)) out << std::string(indent, ' ');
    first = false;
    out << nlohmann::ordered_json(key).dump() << ":";
    if (IsScalar(member)) {
      out << " " << Scalar(member) << "\n";
    } else {
      out << "\n";
      Emit(member, indent + 2, out);
    }
  }
}

void Emit(const nlohmann::ordered_json& value, int indent, std::ostream& out) {
  if (value.is_object()) {
    EmitObject(value, indent, false, out);
    return;
  }
  for (const auto& item : value) {  // a list
    out << std::string(indent, ' ') << "- ";
    if (IsScalar(item)) {
      out << Scalar(item) << "\n";
    } else if (item.is_object()) {
      EmitObject(item, indent + 2, true, out);
    } else {
      out << "\n";
      Emit(item, indent + 2, out);
    }
  }
}

}  // namespace

Output OutputOf(const Args& args) {
  const std::string* format = args.value("output");
  if (format == nullptr) return args.flag("json") ? Output::kJson : Output::kTable;
  if (*format == "wide") return Output::kWide;
  if (*format == "json") return Output::kJson;
  if (*format == "yaml") return Output::kYaml;
  return Output::kTable;
}

std::string ToYaml(const google::protobuf::Message& message) {
  const nlohmann::ordered_json value = nlohmann::ordered_json::parse(ToJsonLine(message));
  std::ostringstream out;
  out << "---\n";
  if (value.empty()) {
    out << "{}\n";
  } else {
    Emit(value, 0, out);
  }
  return out.str();
}

bool PrintedAsData(const Args& args, const google::protobuf::Message& message, std::ostream& out) {
  switch (OutputOf(args)) {
    case Output::kJson:
      out << ToJsonLine(message) << std::endl;
      return true;
    case Output::kYaml:
      out << ToYaml(message) << std::flush;
      return true;
    case Output::kTable:
    case Output::kWide:
      return false;
  }
  return false;
}

}  // namespace nvmeadapt::ctl
