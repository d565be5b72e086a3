// SPDX-License-Identifier: Apache-2.0
// Vocabulary of the decision engine: what goes in (window records, timer ticks, policy and mode changes)
// and what comes out (decisions with their reason). No I/O and no kernel or RPC headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/enum_table.h"
#include "common/vocabulary.h"

namespace nvmeadapt::engine {

using Nanos = int64_t;       // CLOCK_MONOTONIC nanoseconds, the clock of the kernel-side timestamps
using QueueHandle = uint32_t;  // dense index handed out by Engine::AddQueue

enum class ControllerMode : uint8_t { kOff = 0, kAdaptive, kInterrupt, kPoll, kShadow };
inline constexpr EnumTable<ControllerMode, 5> kControllerModes({{ControllerMode::kOff, "off", 1},
                                                                {ControllerMode::kAdaptive, "adaptive", 2},
                                                                {ControllerMode::kInterrupt, "interrupt", 3},
                                                                {ControllerMode::kPoll, "poll", 4},
                                                                {ControllerMode::kShadow, "shadow", 5}},
                                                               "unknown");

// Where a queue is in the rules of DESIGN.md section 3.
enum class QueueState : uint8_t {
  kObserving,  // mode off, or not eligible: counted and reported, never switched
  kMeasuring,  // interrupt mode, collecting a baseline window
  kPolling,    // trying or keeping polling; each window must beat the baseline
  kBackoff,    // after max_failures failures in a row: interrupt mode, windows counted down
  kForced,     // controller mode interrupt/poll, or an operator override
  kShadow,     // engine runs on interrupt-mode windows and reports what it would do
};
inline constexpr EnumTable<QueueState, 6> kQueueStates({{QueueState::kObserving, "observing", 1},
                                                        {QueueState::kMeasuring, "measuring", 2},
                                                        {QueueState::kPolling, "polling", 3},
                                                        {QueueState::kBackoff, "backoff", 4},
                                                        {QueueState::kForced, "forced", 5},
                                                        {QueueState::kShadow, "shadow", 6}},
                                                       "unknown");

enum class Reason : uint8_t {
  kWindowFast,          // measured window averaged <= poll_threshold: try polling
  kWindowSlow,          // measured window too slow: stay in interrupt mode
  kPollWindowFaster,    // polling window strictly faster than the baseline: keep polling
  kBehindPace,          // polling fell behind pace at completion k
  kNotFaster,           // polling window not strictly faster than the baseline at its end
  kStalled,             // completions stopped while polling; the agent timer found the queue behind pace
  kMaxPollWindows,      // polling kept max_poll_windows windows: re-measure in interrupt mode
  kBackingOff,          // a window spent in backoff
  kBackoffOver,         // backoff done: measure again
  kSettling,            // an interrupt-mode window right after polling: not taken as the baseline
  kLoadChanged,         // a backoff window's rate moved backoff_load_change_percent from the baseline: measure again
  kOverride,            // operator override set or cleared
  kOverrideExpired,     // operator override reached its expiry: the policy rules again
  kModeChanged,         // controller mode changed (off/adaptive/interrupt/poll/shadow)
  kPolicyChanged,       // policy numbers changed
  kLeverFailed,         // the lever did not apply the decided mode; the engine follows the real mode
  kDrained,             // a polling try's queue has nothing in flight (the load stopped): back to measuring, no failure
  kNodeEnded,           // the node layer ended the polling run (agent/engine/node.h: its reason says why): measure, no failure
};
// Reasons are words of the trace, the decision log and the API's Decision.reason text; the API has no enum.
inline constexpr EnumTable<Reason, 18> kReasons({{Reason::kWindowFast, "window_fast"},
                                                 {Reason::kWindowSlow, "window_slow"},
                                                 {Reason::kPollWindowFaster, "poll_window_faster"},
                                                 {Reason::kBehindPace, "behind_pace"},
                                                 {Reason::kNotFaster, "not_faster"},
                                                 {Reason::kStalled, "stalled"},
                                                 {Reason::kMaxPollWindows, "max_poll_windows"},
                                                 {Reason::kBackingOff, "backing_off"},
                                                 {Reason::kBackoffOver, "backoff_over"},
                                                 {Reason::kSettling, "settling"},
                                                 {Reason::kLoadChanged, "load_changed"},
                                                 {Reason::kOverride, "override"},
                                                 {Reason::kOverrideExpired, "override_expired"},
                                                 {Reason::kModeChanged, "mode_changed"},
                                                 {Reason::kPolicyChanged, "policy_changed"},
                                                 {Reason::kLeverFailed, "lever_failed"},
                                                 {Reason::kDrained, "drained"},
                                                 {Reason::kNodeEnded, "node_ended"}},
                                                "unknown");

// Why a try was deferred or a polling run ended: a word of the decision stream and a metric label.
enum class NodeReason : uint8_t {
  kCpuBudget,    // the node's polling CPU budget is spent on queues that gain more per CPU second
  kCpuBusy,      // the queue's reaping CPU has no headroom: other work keeps it busy
  kCpuPressure,  // PSI cpu says runnable work waits and the reaping CPU is not idle, or pressure rose in a run
  kStaggered,    // another queue on the same CPU is trying now (or just ended its try)
};
inline constexpr size_t kNodeReasonCount = 4;  // the values are 0..3: an index into per-reason counts
inline constexpr EnumTable<NodeReason, kNodeReasonCount> kNodeReasons({{NodeReason::kCpuBudget, "cpu_budget"},
                                                        {NodeReason::kCpuBusy, "cpu_busy"},
                                                        {NodeReason::kCpuPressure, "cpu_pressure"},
                                                        {NodeReason::kStaggered, "staggered"}},
                                                       "unknown");
constexpr std::string_view NodeReasonName(NodeReason reason) { return kNodeReasons.Name(reason); }

constexpr std::string_view ControllerModeName(ControllerMode mode) { return kControllerModes.Name(mode); }
constexpr std::string_view QueueStateName(QueueState state) { return kQueueStates.Name(state); }
constexpr std::string_view ReasonName(Reason reason) { return kReasons.Name(reason); }
constexpr std::optional<ControllerMode> ParseControllerMode(std::string_view name) {
  return kControllerModes.Parse(name);
}

// The BPF side's early signal: at completion k (1-based) of a polling window, elapsed since the window
// start exceeded the pace. The engine re-checks it with its own rule before acting.
struct PaceMiss {
  uint32_t completion_index = 0;
  Nanos elapsed = 0;
  uint32_t batch = 1;  // n: the reap that brought the window to k reaped n completions at once
};

// One measurement window of one queue, as the collectors report it.
struct WindowRecord {
  QueueHandle queue = 0;
  ReapMode mode = ReapMode::kInterrupt;  // the reaping mode in effect during the whole window
  uint32_t completions = 0;
  Nanos start = 0;  // end of the previous window (or when the current mode took effect)
  Nanos end = 0;    // time of the last completion of this window
  std::optional<PaceMiss> pace_miss;
};

// How far the current, unfinished window of a queue has come; read by the agent timer.
struct WindowProgress {
  Nanos start = 0;
  uint32_t completions = 0;
  Nanos last = 0;  // the window's latest completion; at or before start (e.g. 0): none yet
  // Commands submitted to the queue and not completed yet. nullopt: the collector cannot tell, and the
  // engine assumes work in flight (a quiet try is then stalled, as the patch's timer has it). No collector
  // tells it yet: the kernel hooks see completions only (a submission hook would: block_rq_issue, or the
  // nvme_setup_cmd tracepoint), and uvnvme's probes carry no submission count.
  std::optional<uint32_t> in_flight;
  // false: the counters could not be read; the fields above then say nothing and the timer judges nothing.
  bool known = true;
};

struct Decision {
  QueueHandle queue = 0;
  Nanos at = 0;
  ReapMode from = ReapMode::kInterrupt;
  ReapMode to = ReapMode::kInterrupt;
  Reason reason = Reason::kWindowSlow;
  QueueState state = QueueState::kObserving;  // the queue's state after the decision
  bool shadow = false;        // what the engine would do; nothing is to be applied
  bool backoff_started = false;
  uint32_t failures = 0;      // consecutive failed tries after this decision
  uint32_t pace_index = 0;    // k, for kBehindPace / kStalled
  uint32_t pace_batch = 0;    // n, the reap that brought the window to k (kBehindPace)
  Nanos measured = 0;         // window span, or elapsed at k
  Nanos limit = 0;            // what it was compared against (0 where no comparison was made)
  // A try (to poll) the node layer deferred before the engine committed it: nothing is to be applied, the
  // queue stays measuring with no failure counted (node_gate.h).
  std::optional<NodeReason> deferred;

  // True when the queue's reaping mode must change.
  bool Switches() const { return from != to && !shadow && !deferred; }
};

}  // namespace nvmeadapt::engine
