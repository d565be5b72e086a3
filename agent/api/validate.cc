// SPDX-License-Identifier: Apache-2.0
#include "agent/api/validate.h"

#include <string>

#include "agent/config/policy_convert.h"
#include "agent/config/policy_layers.h"

namespace nvmeadapt::api {
namespace {

Error Invalid(std::string_view field_path, std::string_view problem) {
  return MakeError(ErrorCode::kInvalidArgument, std::string(field_path) + ": " + std::string(problem));
}

bool IsControllerNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == ':' || c == '-';
}

// An override's or a pause's duration: 0 (no end) up to 365 days.
Status ValidateDurationNs(int64_t duration_ns) {
  if (duration_ns < 0) return Invalid("duration_ns", "must be >= 0");
  if (duration_ns > kMaxOverrideDurationNs) {
    return Invalid("duration_ns", "must be <= " + std::to_string(kMaxOverrideDurationNs) + " (365 days)");
  }
  return OkStatus();
}

Status ValidateSource(v1::Source source, std::string_view field_path) {
  if (!v1::Source_IsValid(source)) {
    return Invalid(field_path, "unknown source " + std::to_string(static_cast<int>(source)));
  }
  return OkStatus();
}

}  // namespace

// A selector entry's name is shown in logs and tables: the controller name's characters, 64 at most.
static Status ValidateSelectorFields(const v1::SetPolicyRequest& request) {
  if (request.selector().empty()) return Invalid("selector", "must name the entry that match and remove apply to");
  NA_RETURN_IF_ERROR(ValidateControllerName(request.selector(), "selector", true));
  if (!request.controller().empty()) return Invalid("controller", "must not be set with selector");
  if (request.remove() && (request.has_match() || request.policy().ByteSizeLong() != 0 || request.replace())) {
    return Invalid("remove", "takes no match, policy or replace (it drops the selector entry)");
  }
  if (request.has_match()) {
    NA_ASSIGN_OR_RETURN(auto selector, config::SelectorOf(request.match(), "match"));
    if (selector.criteria.empty() && !selector.QueueScoped()) {
      return Invalid("match", "sets no criterion (" + engine::SelectorFieldNames() + ")");
    }
  }
  return OkStatus();
}

std::string Quoted(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "'";
}

Status ValidateControllerName(std::string_view name, std::string_view field_path, bool required) {
  if (name.empty()) {
    if (required) return Invalid(field_path, "must not be empty");
    return OkStatus();
  }
  if (name.size() > kMaxControllerNameLength) {
    return Invalid(field_path, "longer than " + std::to_string(kMaxControllerNameLength) + " characters");
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsControllerNameChar(name[i])) {
      return Invalid(field_path, "character " + std::to_string(i) +
                                     " is not allowed (letters, digits and . _ : - only)");
    }
  }
  return OkStatus();
}

Status ValidateListQueuesRequest(const v1::ListQueuesRequest& request) {
  NA_RETURN_IF_ERROR(ValidateSource(request.source(), "source"));
  return ValidateControllerName(request.controller(), "controller", false);
}

Status ValidateSetPolicyRequest(const v1::SetPolicyRequest& request) {
  NA_RETURN_IF_ERROR(ValidateControllerName(request.controller(), "controller", false));
  if (request.queue() != 0 && request.controller().empty()) {
    return Invalid("controller", "must be set when queue is set");
  }
  const v1::Policy& policy = request.policy();
  if (request.reset()) {
    if (!request.controller().empty() || request.replace() || policy.ByteSizeLong() != 0 ||
        !request.selector().empty() || request.has_match() || request.remove()) {
      return Invalid("reset", "takes no controller, queue, selector, policy or replace (it drops the whole "
                              "API-set policy)");
    }
    return OkStatus();
  }
  if (!request.selector().empty() || request.has_match() || request.remove()) {
    NA_RETURN_IF_ERROR(ValidateSelectorFields(request));
    if (request.remove()) return OkStatus();
  }
  if (!request.replace() && policy.ByteSizeLong() == 0) {
    return Invalid("policy", "sets no field (set at least one, or use replace to clear the level)");
  }
  // Each field set must be valid on its own; laid over the built-in defaults (all valid), an error can
  // only come from a field of the request, and it carries that field's path.
  NA_RETURN_IF_ERROR(config::Overlay(engine::Policy{}, policy, "policy"));
  return OkStatus();
}

Status ValidateSetQueueModeRequest(const v1::SetQueueModeRequest& request) {
  if (!request.has_queue()) return Invalid("queue", "must be set");
  if (Status status = ValidateControllerName(request.queue().controller(), "queue.controller", true); !status) {
    return status;
  }
  if (request.queue().queue() == 0) return Invalid("queue.queue", "must be an I/O queue id (>= 1)");
  if (!v1::ReapMode_IsValid(request.mode())) {
    return Invalid("mode", "unknown reap mode " + std::to_string(static_cast<int>(request.mode())));
  }
  NA_RETURN_IF_ERROR(ValidateDurationNs(request.duration_ns()));
  if (request.mode() == v1::REAP_MODE_UNSPECIFIED && request.duration_ns() != 0) {
    return Invalid("duration_ns", "must be 0 when clearing an override (mode REAP_MODE_UNSPECIFIED)");
  }
  return OkStatus();
}

Status ValidateSetPauseRequest(const v1::SetPauseRequest& request) {
  if (request.resume()) {
    if (request.mode() != v1::CONTROLLER_MODE_UNSPECIFIED || request.duration_ns() != 0) {
      return Invalid("resume", "takes no mode or duration_ns (it ends the pause)");
    }
    return OkStatus();
  }
  if (request.mode() != v1::CONTROLLER_MODE_UNSPECIFIED && request.mode() != v1::CONTROLLER_MODE_INTERRUPT &&
      request.mode() != v1::CONTROLLER_MODE_OFF) {
    return Invalid("mode", "a pause holds queues in CONTROLLER_MODE_INTERRUPT or CONTROLLER_MODE_OFF, not " +
                               std::to_string(static_cast<int>(request.mode())));
  }
  NA_RETURN_IF_ERROR(ValidateDurationNs(request.duration_ns()));
  return OkStatus();
}

Status ValidateExplainPolicyRequest(const v1::ExplainPolicyRequest& request) {
  if (!request.has_queue()) return Invalid("queue", "must be set");
  if (Status status = ValidateControllerName(request.queue().controller(), "queue.controller", true); !status) {
    return status;
  }
  if (request.queue().queue() == 0) return Invalid("queue.queue", "must be an I/O queue id (>= 1)");
  return OkStatus();
}

Status ValidateWatchEventsRequest(const v1::WatchEventsRequest& request) {
  if (request.kinds_size() > kMaxWatchKinds) {
    return Invalid("kinds", "more than " + std::to_string(kMaxWatchKinds) + " entries");
  }
  for (int i = 0; i < request.kinds_size(); ++i) {
    const std::string path = "kinds[" + std::to_string(i) + "]";
    const int kind = request.kinds(i);
    if (!v1::EventKind_IsValid(kind)) return Invalid(path, "unknown event kind " + std::to_string(kind));
    if (kind == v1::EVENT_KIND_UNSPECIFIED) return Invalid(path, "must not be EVENT_KIND_UNSPECIFIED");
  }
  NA_RETURN_IF_ERROR(ValidateSource(request.source(), "source"));
  return ValidateControllerName(request.controller(), "controller", false);
}

}  // namespace nvmeadapt::api
