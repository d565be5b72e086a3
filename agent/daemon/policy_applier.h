// The policy in force and its one way to the queues. SetPolicy (over the API, persisted first) and the
// config file's reload (SIGHUP) both go through Apply, so that the engine, the trace, the metrics and the
// BPF control hear of a changed queue policy alike (issue 19: the reload once skipped the threshold gauge).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "agent/daemon/agent_listener.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/policy_book.h"
#include "agent/daemon/ports.h"
#include "agent/engine/engine.h"

namespace nvmeadapt::daemon {

// What the policy selectors see of a queue's controller.
engine::DeviceFacts FactsOf(const DiscoveredQueue& queue);

class PolicyApplier {
 public:
  // What a queue whose policy changed sets off beyond the engine and the listeners.
  struct Effects {
    std::function<void(ManagedQueue&, const engine::Decision&)> decided;  // the engine decided on it
    // No decision: the queue's BPF control goes out again (its window size or pace slack may have moved).
    std::function<void(ManagedQueue&)> push_control;
  };

  // `listeners` hear of every queue policy changed (the trace, the threshold gauge).
  PolicyApplier(engine::Engine& engine, const Levers& levers, const AgentListeners& listeners, Effects effects);

  // The book at start, before any queue is known.
  void Install(PolicyBook book) { book_ = std::move(book); }
  const PolicyBook& book() const { return *book_; }

  // A queue's policy: the book's levels (the global mode reaches every controller without a mode of its
  // own, present or discovered later), limited to what its lever can do.
  engine::Policy For(const DiscoveredQueue& queue) const;

  // Puts `book` in force and hands every queue whose effective policy changed its new policy.
  void Apply(PolicyBook book, ManagedQueues& queues, engine::Nanos now);

 private:
  engine::Engine& engine_;
  const Levers& levers_;
  const AgentListeners& listeners_;
  Effects effects_;
  std::optional<PolicyBook> book_;
};

}  // namespace nvmeadapt::daemon
