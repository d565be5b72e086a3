// SPDX-License-Identifier: Apache-2.0
// Every queue the agent knows, with what the loop needs beside the engine's state: how the collectors
// and levers name it, the last window and decision, lever health, and retry state.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/collect/collector.h"
#include "agent/daemon/ports.h"
#include "agent/daemon/switch_timeline.h"
#include "agent/engine/engine.h"
#include "agent/engine/types.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

// Told when the switches a call started have ended (SetQueueMode, SetPolicy answer after them).
class SwitchesSettled {
 public:
  void Add() { std::lock_guard lock(mutex_); ++left_; }
  void Done();
  // True when every queue's switches ended within `wait`.
  bool WaitFor(engine::Nanos wait);

 private:
  std::mutex mutex_;
  std::condition_variable settled_cv_;
  int left_ = 0;
};

struct ManagedQueue {
  DiscoveredQueue desc;
  uint64_t serial = 0;  // tells a queue from a later one of the same name (a switch's end finds its own)
  std::string name;  // QueueName(controller, qid)
  engine::QueueHandle handle = 0;
  std::string lever;  // "" when no lever serves it
  ReapMode mode = ReapMode::kInterrupt;  // the real mode, as the levers left it
  uint32_t generation = 1;         // bumped at each switch published; windows of older generations are stale
  engine::Nanos mode_since = 0;    // when the current mode took effect (the current window's earliest start)
  std::optional<SwitchTimeline> open_switch;  // the last applied switch, until the engine's first verdict
  engine::Nanos next_timer = 0;
  std::optional<collect::WindowEvent> last_window;
  int64_t last_window_unix_ns = 0;
  std::optional<v1::Decision> last_decision;
  uint64_t decision_seq = 0;   // bumped at each decision: a switch's end updates last_decision if still its own
  int switches_in_flight = 0;  // on the mode switcher's worker: no timer, no retry meanwhile
  std::vector<std::shared_ptr<SwitchesSettled>> settle_waiters;  // told when switches_in_flight is back at 0
  uint64_t windows = 0;
  uint64_t stale_windows = 0;
  uint64_t switches = 0;
  collect::QueueCounters counters;  // last read from the collector
  // Whose mark a degraded queue bears: a failed switch's (SwitchRecovery; an applied switch clears the mark,
  // whoever set it) or the collector refusing the queue's BPF control (SwitchProtocol, which clears only its
  // own once a control goes through again).
  enum class DegradedBy : uint8_t { kNone, kLever, kControl };
  DegradedBy degraded_by = DegradedBy::kNone;
  std::string degraded_reason;
  bool control_refused = false;  // the collector refuses the queue's BPF control: said once per episode
  std::optional<ReapMode> retry_mode;  // a forced mode the lever refused, retried with backoff
  engine::Reason retry_reason = engine::Reason::kModeChanged;
  engine::Nanos retry_at = 0;
  engine::Nanos retry_delay = 0;
  std::optional<engine::Override> held_override;  // an operator override the node's pause set aside until resume

  bool degraded() const { return degraded_by != DegradedBy::kNone; }
};

// The agent's managed queues, found by operator name, collector key or engine handle.
class ManagedQueues {
 public:
  ManagedQueue& Insert(ManagedQueue queue);
  void Erase(const std::string& name);

  ManagedQueue* ByName(const std::string& name);
  ManagedQueue* ByKey(const QueueKey& key);
  ManagedQueue* ByHandle(engine::QueueHandle handle);
  bool HasController(const std::string& controller) const;

  size_t size() const { return by_name_.size(); }
  // Every queue, by controller then queue id. Rebuilt only when a queue comes or goes: the loop walks it
  // at every turn. Valid until the next Insert or Erase.
  const std::vector<ManagedQueue*>& All();

 private:
  std::vector<ManagedQueue*> ordered_;
  bool ordered_stale_ = true;
  std::unordered_map<std::string, std::unique_ptr<ManagedQueue>> by_name_;
  std::unordered_map<QueueKey, ManagedQueue*, QueueKeyHash> by_key_;
  std::unordered_map<engine::QueueHandle, ManagedQueue*> by_handle_;
};

}  // namespace nvmeadapt::daemon
