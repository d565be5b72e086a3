// SPDX-License-Identifier: Apache-2.0
// The policy in force: where it comes from (policy_source.h: the config file, or a SetPolicy persisted over
// the API), its book, and its one way to the queues. SetPolicy and the config file's reload (SIGHUP) both go
// through Apply, and so does the node's pause, so that the engine, the trace, the metrics and the BPF control hear of a changed queue
// policy alike (issue 19: the reload once skipped the threshold gauge). On the loop thread but for the
// source's Persist, Forget and PutBack, which run on the policy writer's thread (policy_writer.h) while a
// SetPolicy holds change_mutex().
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/agent_listener.h"
#include "agent/daemon/decision_pipeline.h"
#include "agent/daemon/managed_queues.h"
#include "agent/daemon/policy_book.h"
#include "agent/daemon/policy_source.h"
#include "agent/daemon/policy_writer.h"
#include "agent/daemon/ports.h"
#include "agent/daemon/switch_protocol.h"
#include "agent/metrics/agent_metrics.h"

namespace nvmeadapt::daemon {

// What the policy selectors see of a queue's controller, on `node`.
engine::DeviceFacts FactsOf(const DiscoveredQueue& queue, const engine::NodeIdentity& node);

// The mode a pause holds every queue in (interrupt or off), and its word.
engine::ControllerMode PausedMode(const v1::Pause& pause);
std::string_view PauseModeName(const v1::Pause& pause);

// How a reload of the config file's policy levels ended.
struct ReloadOutcome {
  bool policy_applied = false;
  std::string why_not;  // when not applied: what stays in force instead and how to change that
};

class PolicyApplier {
 public:
  struct Parts {
    ManagedQueues& queues;
    DecisionPipeline& pipeline;
    SwitchProtocol& switches;
    const Levers& levers;
    const AgentListeners& listeners;  // hear of every queue policy changed (the trace, the threshold gauge)
    metrics::AgentMetrics* metrics;   // optional: the policy's origin and hash
  };
  // `file`: the config file's levels; `file_authoritative`: a policy set over the API is not persisted and
  // lasts until the next reload (policy_source.h).
  // `node`: what node selectors match (config/node_identity.h).
  PolicyApplier(Parts parts, const state::StateStore& store, v1::PolicySet file, bool file_authoritative,
                engine::NodeIdentity node);

  // The book at start, before any queue is known, and the pause persisted (one that ended at `wall_now` or
  // before is dropped; an unreadable pause.json pauses in interrupt mode until resumed, said in pause_error()).
  Status Install(int64_t wall_now);
  const PolicyBook& book() const { return *book_; }
  const v1::PolicySet& file() const { return file_; }
  const engine::NodeIdentity& node() const { return node_; }
  PolicySource& source() { return source_; }
  const PolicySource& source() const { return source_; }

  // A queue's policy: the book's levels (the global mode reaches every controller without a mode of its
  // own, present or discovered later), the pause's mode while one is in force, limited to what its lever can do.
  engine::Policy For(const DiscoveredQueue& queue) const;

  // A queue whose switch a change of the book started.
  struct Started {
    std::string name;
    uint64_t serial = 0;  // ManagedQueue::serial: the queue, not a later one of its name
  };
  // Puts `book` in force and hands every queue whose effective policy changed its new policy; the switches
  // that starts, each of which tells `ended` how it ended.
  std::vector<Started> Apply(PolicyBook book, engine::Nanos now, SwitchProtocol::SwitchThen ended = {});
  // The config file's levels again (SIGHUP): in force unless an API policy is. A new `node` (its labels file
  // changed) moves the queues the node selectors of the policy in force reach, whichever it is.
  Result<ReloadOutcome> Reload(const v1::PolicySet& file, engine::Nanos now,
                               const std::optional<engine::NodeIdentity>& node = std::nullopt);

  // The node's pause (issue 46): while one is in force every queue's mode is the pause's, whatever the book, a
  // reload, a SetPolicy or an operator override says; the book is untouched and each override is held for the
  // resume (given back unless it expired meanwhile). nullopt resumes. Returns the queues whose mode it moved.
  uint32_t SetPause(std::optional<v1::Pause> pause, engine::Nanos now);
  const std::optional<v1::Pause>& pause() const { return pause_; }
  const std::string& pause_error() const { return pause_error_; }
  // True when a timed pause's end (wall clock) is at or before `wall_now`.
  bool PauseEnded(int64_t wall_now) const {
    return pause_ && pause_->ends_unix_ns() != 0 && pause_->ends_unix_ns() <= wall_now;
  }
  const state::StateStore& store() const { return store_; }

  // A SetPolicy holds this from its reading of the book to its verdict (its durable writes run between them,
  // off the loop): policy.json is written in the order the changes apply, and a change taken back puts back
  // the policy its own reading found. Timed: a caller waits for it until its deadline, no longer.
  std::timed_mutex& change_mutex() { return change_mutex_; }
  PolicyWriter& writer() { return writer_; }
  // Every applied change of the book (a reload's too): a SetPolicy whose reading is older reads again.
  uint64_t changes() const { return changes_; }

 private:
  void NoteOrigin();
  void NotePause();

  Parts parts_;
  const state::StateStore& store_;
  PolicySource source_;
  v1::PolicySet file_;
  engine::NodeIdentity node_;
  std::optional<PolicyBook> book_;
  std::optional<v1::Pause> pause_;
  std::string pause_error_;  // pause.json could not be read at start
  std::timed_mutex change_mutex_;
  uint64_t changes_ = 0;  // on the loop
  PolicyWriter writer_;   // last: its thread ends before source_ goes
};

}  // namespace nvmeadapt::daemon
