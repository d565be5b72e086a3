// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/policy_applier.h"

#include <algorithm>

namespace nvmeadapt::daemon {

PolicyApplier::PolicyApplier(Parts parts, const state::StateStore& store, v1::PolicySet file, bool file_authoritative,
                             engine::NodeIdentity node)
    : parts_(parts), source_(store, file_authoritative), file_(std::move(file)), node_(std::move(node)) {}

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

Status PolicyApplier::Install() {
  NA_ASSIGN_OR_RETURN(auto book, source_.Initial(file_));
  book_ = std::move(book);
  NoteOrigin();
  return OkStatus();
}

engine::Policy PolicyApplier::For(const DiscoveredQueue& queue) const {
  engine::Policy policy = book_->Effective(FactsOf(queue, node_), queue.qid);
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

void PolicyApplier::NoteOrigin() {
  if (parts_.metrics == nullptr) return;
  const v1::PolicyOrigin origin = source_.Origin(*book_);
  // A policy persisted before notes has no time: 0, so that the drift alert fires rather than never.
  std::optional<double> drift_since;
  if (origin.source() == v1::POLICY_SOURCE_API) drift_since = static_cast<double>(origin.set_unix_ns()) / 1e9;
  parts_.metrics->SetPolicyInfo(PolicySourceLabel(origin.source()), origin.hash(), drift_since);
}

}  // namespace nvmeadapt::daemon
