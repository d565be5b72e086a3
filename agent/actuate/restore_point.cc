// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/restore_point.h"

#include <nlohmann/json.hpp>

namespace nvmeadapt::actuate {

std::string RestorePoint::ToJson() const {
  nlohmann::json t = {{"controller", target.controller}, {"qid", target.qid}};
  if (target.irq) t["irq"] = *target.irq;
  if (target.vector) t["vector"] = *target.vector;
  if (!target.socket_path.empty()) {
    t["socket"] = target.socket_path;
    t["ctrl_index"] = target.ctrl_index;
  }
  if (!target.subsysnqn.empty()) t["subsysnqn"] = target.subsysnqn;
  nlohmann::json steps_json = nlohmann::json::array();
  for (const auto& step : steps) steps_json.push_back({{"object", step.object}, {"value", step.value}});
  return nlohmann::json{{"lever", LeverKindName(lever)}, {"target", t}, {"steps", steps_json}}.dump();
}

Result<RestorePoint> RestorePoint::FromJson(std::string_view json) {
  const auto bad = [](const std::string& what) {
    return MakeError(ErrorCode::kInvalidArgument, "restore point: " + what);
  };
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  RestorePoint point;
  const auto lever = j.find("lever");
  const auto kind = lever != j.end() && lever->is_string() ? ParseLeverKind(lever->get<std::string>()) : std::nullopt;
  if (!kind || !NamedLever(*kind)) return bad("\"lever\" missing or unknown");
  point.lever = *kind;
  const auto t = j.find("target");
  if (t == j.end() || !t->is_object()) return bad("\"target\" missing");
  const auto text = [&](const nlohmann::json& o, const char* key, std::string* out) {
    const auto it = o.find(key);
    if (it == o.end()) return true;
    if (!it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  const auto number = [&](const nlohmann::json& o, const char* key, auto* out) {
    const auto it = o.find(key);
    if (it == o.end()) return true;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) return false;
    *out = it->get<uint32_t>();
    return true;
  };
  uint32_t irq = 0;
  uint32_t vector = 0;
  if (!text(*t, "controller", &point.target.controller) || point.target.controller.empty() ||
      !number(*t, "qid", &point.target.qid) || !text(*t, "socket", &point.target.socket_path) ||
      !number(*t, "ctrl_index", &point.target.ctrl_index) || !number(*t, "irq", &irq) ||
      !number(*t, "vector", &vector) || !text(*t, "subsysnqn", &point.target.subsysnqn)) {
    return bad("\"target\" has a missing or mistyped field");
  }
  if (t->contains("irq")) point.target.irq = irq;
  if (t->contains("vector")) point.target.vector = vector;
  const auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array()) return bad("\"steps\" missing");
  for (const auto& s : *steps) {
    RestoreStep step;
    if (!s.is_object() || !text(s, "object", &step.object) || !text(s, "value", &step.value) || step.object.empty()) {
      return bad("a step without \"object\" and \"value\" strings");
    }
    point.steps.push_back(std::move(step));
  }
  return point;
}

}  // namespace nvmeadapt::actuate
