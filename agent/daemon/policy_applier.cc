// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/policy_applier.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "common/log.h"

namespace nvmeadapt::daemon {

PolicyApplier::PolicyApplier(Parts parts, const state::StateStore& store, v1::PolicySet file, bool file_authoritative,
                             engine::NodeIdentity node)
    : parts_(parts), store_(store), source_(store, file_authoritative), file_(std::move(file)), node_(std::move(node)) {}

engine::DeviceFacts FactsOf(const DiscoveredQueue& queue, const engine::NodeIdentity& node) {
  return {.controller = queue.controller,
          .id = queue.ControllerId(),
          .model = queue.model,
          .serial = queue.serial,
          .firmware = queue.firmware,
          .subsysnqn = queue.subsysnqn,
          .transport = queue.transport,
          .layer = queue.layer,
          .pci_address = queue.pci_address,
          .legacy_id = queue.legacy_controller_id,
          .hostname = node.hostname,
          .kernel_release = node.kernel_release,
          .node_labels = node.labels};
}

Status PolicyApplier::Install(int64_t wall_now) {
  NA_ASSIGN_OR_RETURN(auto book, source_.Initial(file_));
  book_ = std::move(book);
  NoteOrigin();
  if (auto loaded = store_.LoadPause(); !loaded) {
    // Fail safe: a pause the agent cannot read may be one an operator set to stop polling on this node.
    pause_error_ = loaded.error().message + " (paused in interrupt mode until `nvme-adaptctl resume`)";
    NA_ERROR("pause: " << pause_error_);
    pause_.emplace();
    pause_->set_mode(v1::CONTROLLER_MODE_INTERRUPT);
    pause_->set_set_by("pause.json unreadable");
  } else if (*loaded) {
    pause_ = **loaded;
    if (PauseEnded(wall_now)) {
      NA_INFO("pause: it ended while the agent was not running; the policy is in force");
      pause_.reset();
      if (Status cleared = store_.ClearPause(); !cleared) NA_WARN("pause: " << cleared.error().message);
    } else {
      NA_INFO("pause: the node stays paused, every queue in " << PauseModeName(*pause_)
                                                              << " mode (set by " << pause_->set_by() << ")");
    }
  }
  NotePause();
  return OkStatus();
}

engine::Policy PolicyApplier::For(const DiscoveredQueue& queue) const {
  engine::Policy policy = book_->Effective(FactsOf(queue, node_), queue.qid);
  if (pause_) policy.mode = PausedMode(*pause_);
  policy.mode = parts_.levers.ModeFor(queue, policy.mode);
  return policy;
}

std::vector<PolicyApplier::Started> PolicyApplier::Apply(PolicyBook book, engine::Nanos now,
                                                         SwitchProtocol::SwitchThen ended) {
  std::vector<Started> started;
  ++changes_;
  book_ = std::move(book);
  for (ManagedQueue* q : parts_.queues.All()) {
    const engine::Policy policy = For(q->desc);
    if (parts_.pipeline.View(q->handle).policy == policy) continue;
    parts_.listeners.Tell(&AgentListener::PolicyChanged, *q, now, policy);
    q->next_timer = std::min(q->next_timer, now + policy.timer_granularity);  // a new pace rule: look again soon
    if (auto decision = parts_.pipeline.SetPolicy(q->handle, policy, now)) {
      if (decision->Switches()) started.push_back({q->name, q->serial});
      parts_.switches.Carry(*q, *decision, std::nullopt, ended);
    } else {
      parts_.switches.PushControl(*q);  // no decision: its window size or pace slack may have moved
    }
  }
  NoteOrigin();
  return started;
}

Result<ReloadOutcome> PolicyApplier::Reload(const v1::PolicySet& file, engine::Nanos now,
                                            const std::optional<engine::NodeIdentity>& node) {
  file_ = file;
  std::string why_not;
  NA_ASSIGN_OR_RETURN(auto book, source_.Reload(file, &why_not));
  const bool node_moved = node && *node != node_;
  if (node_moved) node_ = *node;
  if (!book.has_value()) {
    if (node_moved) Apply(PolicyBook(*book_), now);  // the API's policy stays, seen from the node as it is now
    return ReloadOutcome{false, why_not};
  }
  Apply(std::move(*book), now);
  return ReloadOutcome{true, ""};
}

uint32_t PolicyApplier::SetPause(std::optional<v1::Pause> pause, engine::Nanos now) {
  const bool pausing = pause && !pause_, resuming = !pause && pause_;
  std::unordered_map<uint64_t, ReapMode> before;
  for (ManagedQueue* q : parts_.queues.All()) before[q->serial] = parts_.pipeline.View(q->handle).mode;
  pause_ = std::move(pause);
  pause_error_.clear();
  Apply(PolicyBook(*book_), now);  // the policy's mode gives way to the pause's (an override holds it back)
  for (ManagedQueue* q : parts_.queues.All()) {
    std::optional<engine::Override> next;
    std::string what;
    if (std::optional<engine::Override> set = parts_.pipeline.View(q->handle).override_mode; pausing && set) {
      q->held_override = set;
      what = "override " + q->name + " held by the pause";
    } else if (resuming && q->held_override) {
      next = *std::exchange(q->held_override, std::nullopt);
      if (next->expires_at != 0 && next->expires_at <= now) continue;  // it ended during the pause
      what = "override " + q->name + " " + std::string(ReapModeName(next->mode)) + " again after the pause";
    } else {
      continue;
    }
    parts_.listeners.Tell(&AgentListener::OverrideSet, *q, now, next, what);
    if (auto decision = parts_.pipeline.SetOverride(q->handle, next, now)) parts_.switches.Carry(*q, *decision);
  }
  uint32_t moved = 0;
  for (ManagedQueue* q : parts_.queues.All()) {
    const auto it = before.find(q->serial);
    if (it != before.end() && it->second != parts_.pipeline.View(q->handle).mode) ++moved;
  }
  NotePause();
  return moved;
}

engine::ControllerMode PausedMode(const v1::Pause& pause) {
  return pause.mode() == v1::CONTROLLER_MODE_OFF ? engine::ControllerMode::kOff : engine::ControllerMode::kInterrupt;
}

std::string_view PauseModeName(const v1::Pause& pause) { return engine::kControllerModes.Name(PausedMode(pause)); }

void PolicyApplier::NotePause() {
  if (parts_.metrics == nullptr) return;
  if (!pause_) return parts_.metrics->SetPause(std::nullopt);
  parts_.metrics->SetPause(std::pair<std::string, double>(PauseModeName(*pause_),
                                                          static_cast<double>(pause_->ends_unix_ns()) / 1e9));
}

void PolicyApplier::NoteOrigin() {
  if (parts_.metrics == nullptr) return;
  const v1::PolicyOrigin origin = source_.Origin(*book_);
  // A policy persisted before notes has no time: 0, so that the drift alert fires rather than never.
  std::optional<double> drift_since;
  if (origin.source() == v1::POLICY_SOURCE_API) drift_since = static_cast<double>(origin.set_unix_ns()) / 1e9;
  parts_.metrics->SetPolicyInfo(PolicySourceLabel(origin.source()), origin.hash(), drift_since);
}

}  // namespace nvmeadapt::daemon
