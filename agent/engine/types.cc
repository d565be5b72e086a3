#include "agent/engine/types.h"

namespace nvmeadapt::engine {

std::string_view ReapModeName(ReapMode mode) {
  return mode == ReapMode::kPoll ? "poll" : "interrupt";
}

std::string_view ControllerModeName(ControllerMode mode) {
  switch (mode) {
    case ControllerMode::kOff: return "off";
    case ControllerMode::kAdaptive: return "adaptive";
    case ControllerMode::kInterrupt: return "interrupt";
    case ControllerMode::kPoll: return "poll";
    case ControllerMode::kShadow: return "shadow";
  }
  return "unknown";
}

std::string_view QueueStateName(QueueState state) {
  switch (state) {
    case QueueState::kObserving: return "observing";
    case QueueState::kMeasuring: return "measuring";
    case QueueState::kPolling: return "polling";
    case QueueState::kBackoff: return "backoff";
    case QueueState::kForced: return "forced";
    case QueueState::kShadow: return "shadow";
  }
  return "unknown";
}

std::string_view ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kWindowFast: return "window_fast";
    case Reason::kWindowSlow: return "window_slow";
    case Reason::kPollWindowFaster: return "poll_window_faster";
    case Reason::kBehindPace: return "behind_pace";
    case Reason::kNotFaster: return "not_faster";
    case Reason::kStalled: return "stalled";
    case Reason::kMaxPollWindows: return "max_poll_windows";
    case Reason::kBackingOff: return "backing_off";
    case Reason::kBackoffOver: return "backoff_over";
    case Reason::kSettling: return "settling";
    case Reason::kLoadChanged: return "load_changed";
    case Reason::kOverride: return "override";
    case Reason::kOverrideExpired: return "override_expired";
    case Reason::kModeChanged: return "mode_changed";
    case Reason::kPolicyChanged: return "policy_changed";
    case Reason::kLeverFailed: return "lever_failed";
  }
  return "unknown";
}

std::optional<ReapMode> ParseReapMode(std::string_view name) {
  if (name == "interrupt" || name == "int") return ReapMode::kInterrupt;
  if (name == "poll") return ReapMode::kPoll;
  return std::nullopt;
}

std::optional<ControllerMode> ParseControllerMode(std::string_view name) {
  for (ControllerMode m : {ControllerMode::kOff, ControllerMode::kAdaptive, ControllerMode::kInterrupt,
                           ControllerMode::kPoll, ControllerMode::kShadow}) {
    if (name == ControllerModeName(m)) return m;
  }
  return std::nullopt;
}

}  // namespace nvmeadapt::engine
