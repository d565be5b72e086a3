// SPDX-License-Identifier: Apache-2.0
// SetPause (issue 46): the node's pause, persisted (pause.json, on the policy writer's thread) before it is put in
// force on the loop, all or nothing, answered within rpc_wait. It shares SetPolicy's change mutex so that
// pause.json and policy.json are written in the order the changes apply.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "agent/daemon/api_adapter.h"
#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

std::string PauseText(const v1::Pause& pause, int64_t wall_now) {
  std::string text = "every queue held in " + std::string(PauseModeName(pause)) + " mode";
  if (pause.ends_unix_ns() != 0) {
    text += " for " + std::to_string(std::max<int64_t>(0, pause.ends_unix_ns() - wall_now) / 1'000'000'000) + " s";
  } else {
    text += " until resumed";
  }
  return text;
}

}  // namespace

Result<v1::SetPauseResponse> ApiAdapter::SetPause(const v1::SetPauseRequest& request) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(settings_.rpc_wait);
  PolicyApplier& policy = parts_.policy;
  std::unique_lock changing(policy.change_mutex(), std::defer_lock);
  if (!changing.try_lock_until(deadline)) {
    return MakeError(ErrorCode::kUnavailable, "pause not changed: a policy change was still under way (is the state "
                                              "disk of " + policy.store().PausePath() + " stuck?); try again");
  }
  NA_ASSIGN_OR_RETURN(const std::optional<v1::Pause> before,
                      parts_.loop.OnLoopBy(deadline, [&]() -> Result<std::optional<v1::Pause>> {
                        // One that could not be read at start is no pause to put back: resume removes the file.
                        if (!policy.pause_error().empty()) return std::optional<v1::Pause>();
                        return policy.pause();
                      }));
  std::optional<v1::Pause> after;
  const int64_t wall_now = settings_.wall();
  if (!request.resume()) {
    after.emplace();
    after->set_mode(request.mode() == v1::CONTROLLER_MODE_OFF ? v1::CONTROLLER_MODE_OFF
                                                              : v1::CONTROLLER_MODE_INTERRUPT);
    after->set_set_unix_ns(wall_now);
    after->set_set_by(request.caller());
    if (request.duration_ns() > 0) after->set_ends_unix_ns(wall_now + request.duration_ns());
  }
  const state::StateStore& store = policy.store();
  auto save = [&store](const std::optional<v1::Pause>& pause) {
    return [&store, pause]() -> Status { return pause ? store.SavePause(*pause) : store.ClearPause(); };
  };
  if (Status written = policy.writer().Run(save(after), save(before), deadline); !written) {
    return MakeError(written.error().code, std::string(request.resume() ? "not resumed" : "not paused") +
                                               ": " + written.error().message + "; nothing changed");
  }
  auto waiter = std::make_shared<SwitchesSettled>();
  bool switching = false;
  auto answer = parts_.loop.OnLoopBy(deadline, [&]() -> Result<v1::SetPauseResponse> {
    const engine::Nanos now = settings_.monotonic();
    v1::SetPauseResponse response;
    response.set_queues_moved(policy.SetPause(after, now));
    const std::string what = after ? "pause: " + PauseText(*after, wall_now) : "resume: the policy is in force again";
    NA_INFO(what << " (" << (request.caller().empty() ? "" : "by " + request.caller() + "; ")
                 << response.queues_moved() << " queue(s) moved)");
    parts_.listeners.Tell(&AgentListener::PolicySet, what);
    if (after) *response.mutable_pause() = *after;
    switching = WaitForSwitches(waiter);
    return response;
  });
  if (!answer) {
    // The loop did not take it: what was in force stays, and so must pause.json.
    (void)policy.writer().Must(save(before), "putting back " + store.PausePath() + " after a pause not applied",
                               PolicyWriter::Clock::now());
    return MakeError(answer.error().code, std::string(request.resume() ? "not resumed" : "not paused") + ": " +
                                              answer.error().message + "; nothing changed");
  }
  if (switching) waiter->WaitFor(settings_.rpc_wait);  // the queues as the pause left them, or still switching
  return answer;
}

}  // namespace nvmeadapt::daemon
