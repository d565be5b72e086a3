// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/control_protocol.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <optional>

namespace nvmeadapt::uvnvme {
namespace {

using nlohmann::json;

// A field that must be an integer in [0, max]; the error names the field.
Result<uint32_t> UnsignedField(const json& request, const char* name, uint64_t max) {
  auto it = request.find(name);
  if (it == request.end()) return MakeError(ErrorCode::kInvalidArgument, std::string("missing field '") + name + "'");
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string("field '") + name + "' must be a non-negative integer");
  }
  uint64_t value = it->get<uint64_t>();
  if (value > max) {
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string("field '") + name + "' must be at most " + std::to_string(max));
  }
  return static_cast<uint32_t>(value);
}

Result<std::string> StringField(const json& request, const char* name) {
  auto it = request.find(name);
  if (it == request.end()) return MakeError(ErrorCode::kInvalidArgument, std::string("missing field '") + name + "'");
  if (!it->is_string()) return MakeError(ErrorCode::kInvalidArgument, std::string("field '") + name + "' must be a string");
  return it->get<std::string>();
}

// Strings in a response come from parsed (valid UTF-8) requests, but replace anything else rather than throw.
std::string Dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string Ok(json body) {
  body["ok"] = true;
  return Dump(body);
}

json QueueJson(const QueueInfo& q) {
  return json{{"ctrl", q.ctrl},
              {"qid", q.qid},
              {"mode", std::string(ReapModeName(q.mode))},
              {"submitted", q.submitted},
              {"completed", q.completed},
              {"wakeups", q.wakeups},
              {"mode_switches", q.mode_switches},
              {"coalesce_threshold", q.coalescing.threshold},
              {"coalesce_time_us", q.coalescing.time_us}};
}

constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

std::string Dispatch(const json& request, ControlTarget& target, pid_t pid) {
  auto op = StringField(request, "op");
  if (!op) return ControlErrorResponse(op.error().message);
  if (*op == "list") {
    json queues = json::array();
    for (const QueueInfo& q : target.ListQueues()) queues.push_back(QueueJson(q));
    return Ok({{"pid", pid}, {"queues", std::move(queues)}});
  }
  if (*op != "set_mode" && *op != "set_coalescing") {
    return ControlErrorResponse("unknown op '" + *op + "' (list, set_mode, set_coalescing)");
  }
  auto ctrl = UnsignedField(request, "ctrl", kMaxU32);
  if (!ctrl) return ControlErrorResponse(ctrl.error().message);
  auto qid = UnsignedField(request, "qid", kMaxU32);
  if (!qid) return ControlErrorResponse(qid.error().message);
  if (*op == "set_mode") {
    auto name = StringField(request, "mode");
    if (!name) return ControlErrorResponse(name.error().message);
    std::optional<ReapMode> mode = ParseReapMode(*name);
    if (!mode) return ControlErrorResponse("unknown mode '" + *name + "' (interrupt, poll)");
    if (Status set = target.SetMode(*ctrl, *qid, *mode); !set) return ControlErrorResponse(set.error().message);
    return Ok({{"mode", *name}});
  }
  auto threshold = UnsignedField(request, "threshold", kMaxCoalesceThreshold);
  if (!threshold) return ControlErrorResponse(threshold.error().message);
  auto time_us = UnsignedField(request, "time_us", kMaxCoalesceTimeUs);
  if (!time_us) return ControlErrorResponse(time_us.error().message);
  if (Status set = target.SetCoalescing(*ctrl, *qid, Coalescing{*threshold, *time_us}); !set) {
    return ControlErrorResponse(set.error().message);
  }
  return Ok(json::object());
}

}  // namespace

std::string ControlErrorResponse(std::string_view message) {
  return Dump(json{{"ok", false}, {"error", std::string(message)}});
}

std::string HandleControlRequest(std::string_view line, ControlTarget& target, pid_t pid) {
  if (line.size() > kMaxRequestBytes) {
    return ControlErrorResponse("request longer than " + std::to_string(kMaxRequestBytes) + " bytes");
  }
  json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) return ControlErrorResponse("invalid JSON");
  if (!request.is_object()) return ControlErrorResponse("request must be a JSON object");
  return Dispatch(request, target, pid);
}

}  // namespace nvmeadapt::uvnvme
