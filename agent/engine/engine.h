// SPDX-License-Identifier: Apache-2.0
// The per-queue decision engine of DESIGN.md section 3. Pure: time comes in with each call, decisions go
// out as values. One Engine holds many queues, each independent of the others.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "agent/engine/policy.h"
#include "agent/engine/rules.h"
#include "agent/engine/types.h"

namespace nvmeadapt::engine {

struct QueueSetup {
  bool eligible = false;                   // dedicated MSI-X vector, not threaded, not admin/poll queue
  Policy policy;                           // effective policy (its mode is the controller/queue mode)
  ReapMode current = ReapMode::kInterrupt; // the reaping mode the queue is in when added
  ReapMode safe = ReapMode::kInterrupt;    // where mode off (and shadow) leave the queue
};

struct AddedQueue {
  QueueHandle handle = 0;
  std::optional<Decision> decision;  // set when the policy wants the queue in another mode at once
};

struct Override {
  ReapMode mode = ReapMode::kInterrupt;
  Nanos expires_at = 0;  // 0: until cleared
};

// One queue's engine state as callers see it (for status, metrics and tests). The engine keeps its queues
// in this shape too (Engine::Queue), so that View() is one copy rather than a copy per field.
struct QueueView {
  bool eligible = false;
  Policy policy;
  QueueState state = QueueState::kObserving;
  ReapMode mode = ReapMode::kInterrupt;  // the mode the engine wants the queue in
  std::optional<Override> override_mode;
  Nanos baseline_span = 0;          // span of the measuring window polling is held to
  uint32_t baseline_completions = 0;
  uint32_t failures = 0;            // consecutive failed tries
  uint32_t poll_windows = 0;        // successful polling windows in the current run
  uint32_t backoff_left = 0;        // backoff windows still to sit out
  uint32_t settle_left = 0;         // interrupt-mode windows after polling still to pass before measuring
  Nanos pace_credit = 0;            // added to pace_slack for the polling window in flight
  Nanos last_poll_span = 0;         // the run's last kept polling window (policy.run_pair_verdict), when
  uint32_t last_poll_completions = 0;  // poll_windows > 0: every place that starts or ends a run zeroes that
  uint32_t backoff_level = 0;       // backoffs in a row without a kept polling window
  uint32_t poll_run_level = 0;      // re-measures in a row that kept polling: the run is PollRunLength long
  bool remeasuring = false;         // in interrupt mode to re-measure after a run that kept polling
  uint64_t windows = 0;             // accepted windows
  uint64_t ignored_windows = 0;     // partial, stale (other mode) or for a queue not managed now
  uint64_t rejected_pace_misses = 0;  // BPF pace misses the engine's rule did not confirm
  uint64_t shadow_would_poll = 0;   // shadow mode: windows that would have started a try
};

// Asked before the engine commits a try (a fast measuring window would go to poll): the node layer admits or
// defers it (NodeGate, node_gate.h). nullopt admits.
class TryAdmission {
 public:
  virtual std::optional<NodeReason> Admit(QueueHandle queue, Nanos at) = 0;

 protected:
  ~TryAdmission() = default;
};

class Engine {
 public:
  AddedQueue AddQueue(const QueueSetup& setup, Nanos now);
  void RemoveQueue(QueueHandle queue);
  bool Contains(QueueHandle queue) const;
  size_t Size() const { return live_count_; }

  // A window from the collectors. Returns the decision it leads to, or nothing when the window is ignored.
  // A try the window would start is put to `admission` first; a deferred one leaves the queue measuring on
  // the window's baseline (Decision::deferred). Without `admission` every try starts.
  std::optional<Decision> OnWindow(const WindowRecord& record, TryAdmission* admission = nullptr);

  // The agent timer, every policy.timer_granularity: fails a polling try whose completions stopped (none
  // for a whole timer period) and whose next completion is already behind pace; ends expired overrides.
  std::optional<Decision> OnTimer(QueueHandle queue, Nanos now, const WindowProgress& progress);
  // True when OnTimer can decide something for this queue (polling, or an override with an expiry).
  bool NeedsTimer(QueueHandle queue) const;
  // The earliest time OnTimer can decide something, given the window's progress as read at `now`: an
  // override's expiry, or the instant the window in flight is behind its pace with no completion after
  // `progress` (a later completion only moves that later). Never before now + timer_granularity. A polling
  // window ahead of its pace needs no look until its lead is used up: the agent, which shares the CPU a
  // reaper polls on, wakes once per lead instead of once per timer period.
  Nanos NextTimer(QueueHandle queue, Nanos now, const WindowProgress& progress) const;

  // A new effective policy (numbers and mode). Takes effect for the window in flight.
  std::optional<Decision> SetPolicy(QueueHandle queue, const Policy& policy, Nanos now);
  // Sets (mode) or clears (nullopt) an operator override. Ineligible queues are never switched.
  std::optional<Decision> SetOverride(QueueHandle queue, std::optional<Override> override_mode, Nanos now);
  // The lever's outcome: the queue is really in `actual`. When that is not what the engine decided, the
  // engine follows reality (interrupt: measure again; poll: hold it to the baseline) and reports it.
  std::optional<Decision> OnLeverResult(QueueHandle queue, ReapMode actual, Nanos now);
  // The node layer ended the queue's polling run (node.h, OnFacts or a try's room): back to interrupt mode and
  // measuring, no failure counted, reason node_ended. nullopt when the queue is not polling by the rules (a
  // forced or found mode is never the node layer's to end).
  std::optional<Decision> EndPolling(QueueHandle queue, Nanos now);

  QueueView View(QueueHandle queue) const;

  // Pace rule of DESIGN.md section 3: at completion index i of a polling window, elapsed must stay
  // <= i * baseline_span / baseline_completions + slack. Exact integer arithmetic.
  static bool BehindPace(uint32_t index, Nanos elapsed, Nanos baseline_span, uint32_t baseline_completions,
                         Nanos slack);
  // The largest elapsed still on pace at completion index i (rounded down).
  static Nanos PaceLimit(uint32_t index, Nanos baseline_span, uint32_t baseline_completions, Nanos slack);
  // The index a reap of n completions that brought the window to k is held to: k + n - 1 with the batch
  // allowance, else k (and k for n = 1 either way).
  static uint32_t PaceIndex(uint32_t k, uint32_t n, bool batch_allowance);

  // A full window that took at least this many times its baseline's time for as many completions is taken
  // as idle time (the load stopped, or fell to an eighth): it ends a backoff and starts the doubling of
  // backoffs and of polling runs again (policy.h, max_backoff_windows). 8: beyond the 2.5 x that a
  // neighbour's try on the same CPU slowed a queue's windows in the evaluation's contended runs.
  static constexpr Nanos kIdleFactor = 8;

 private:
  // A queue's state is its view plus what callers need not see: the shared fields are declared once, and
  // View() returns the QueueView part as it is (a copy, no field list to keep in step with this one).
  struct Queue : QueueView {
    bool live = false;
    ReapMode safe = ReapMode::kInterrupt;
    Nanos resume_credit = 0;  // the credit of the run a re-measure interrupted
  };

  Queue* Find(QueueHandle queue);
  const Queue* Find(QueueHandle queue) const;
  Decision Make(const Queue& q, QueueHandle handle, Nanos at, ReapMode from, Reason reason) const;
  // Puts the queue where its policy mode (or override) says, from scratch; returns the decision.
  Decision Reset(Queue& q, QueueHandle handle, Nanos at, Reason reason);
  // back_off_now: start the backoff with this failure (policy.h, stall_backoff).
  Decision Fail(Queue& q, QueueHandle handle, Nanos at, Reason reason, bool back_off_now = false);
  // Ends a polling run that kept polling to measure interrupt mode again.
  static void Remeasure(Queue& q);
  // The queue leaves polling for interrupt mode: the next settle_windows windows are not a baseline.
  static void LeavePolling(Queue& q);
  Decision OnMeasured(Queue& q, QueueHandle handle, const WindowRecord& record, TryAdmission* admission);
  Decision OnPolled(Queue& q, QueueHandle handle, const WindowRecord& record);
  Decision OnBackoffWindow(Queue& q, QueueHandle handle, const WindowRecord& record);
  // The try in flight ends because its queue has nothing in flight: interrupt mode, measure, no failure.
  Decision Drain(Queue& q, QueueHandle handle, Nanos at);
  // The window took at least kIdleFactor times its baseline's time for as many completions: idle time.
  static bool Idled(const Queue& q, const WindowRecord& record);
  // Idle time ends a backoff (returned) and starts the backoff and run levels again.
  std::optional<Decision> AfterIdle(Queue& q, QueueHandle handle, const WindowRecord& record);
  // The slack the polling window in flight is held to: the policy's plus the run's credit.
  static Nanos Slack(const Queue& q) { return PaceSlack(q.policy, q.baseline_span, q.pace_credit); }

  std::vector<Queue> queues_;
  std::vector<QueueHandle> free_;
  size_t live_count_ = 0;
};

}  // namespace nvmeadapt::engine
