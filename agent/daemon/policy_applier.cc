#include "agent/daemon/policy_applier.h"

#include <algorithm>

namespace nvmeadapt::daemon {

PolicyApplier::PolicyApplier(engine::Engine& engine, const Levers& levers, const AgentListeners& listeners,
                             Effects effects)
    : engine_(engine), levers_(levers), listeners_(listeners), effects_(std::move(effects)) {}

engine::DeviceFacts FactsOf(const DiscoveredQueue& queue) {
  return {.controller = queue.controller,
          .id = queue.ControllerId(),
          .model = queue.model,
          .serial = queue.serial,
          .firmware = queue.firmware,
          .subsysnqn = queue.subsysnqn,
          .transport = queue.transport,
          .layer = queue.layer,
          .pci_address = queue.pci_address,
          .legacy_id = queue.legacy_controller_id};
}

engine::Policy PolicyApplier::For(const DiscoveredQueue& queue) const {
  engine::Policy policy = book_->Effective(FactsOf(queue), queue.qid);
  policy.mode = levers_.ModeFor(queue, policy.mode);
  return policy;
}

void PolicyApplier::Apply(PolicyBook book, ManagedQueues& queues, engine::Nanos now) {
  book_ = std::move(book);
  for (ManagedQueue* q : queues.All()) {
    const engine::Policy policy = For(q->desc);
    if (engine_.View(q->handle).policy == policy) continue;
    listeners_.Tell(&AgentListener::PolicyChanged, *q, now, policy);
    q->next_timer = std::min(q->next_timer, now + policy.timer_granularity);  // a new pace rule: look again soon
    if (auto decision = engine_.SetPolicy(q->handle, policy, now)) {
      effects_.decided(*q, *decision);
    } else {
      effects_.push_control(*q);
    }
  }
}

}  // namespace nvmeadapt::daemon
