// SPDX-License-Identifier: Apache-2.0
// The node layer above the per-queue engine (issue #34): the engine decides each queue alone, blind to the
// rest of the machine; the node layer sees every queue, the CPU each reaps on and what the node's CPUs are
// busy with, and admits or defers each queue's try and ends polling runs that the node can no longer afford.
// Pure like the engine: the node's facts come in as values (the daemon reads them from procfs, replay and the
// simulator make them up), so every caller runs the same rules. Off by default: then every try is admitted
// and no run is ended, which is the per-queue behaviour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "agent/engine/types.h"
#include "common/enum_table.h"
#include "common/result.h"

namespace nvmeadapt::engine {

// The operator's settings. Shares are of one CPU (0..1), pressure in PSI percent (0..100).
struct NodeSettings {
  bool enabled = false;  // off: the per-queue behaviour, every try admitted
  // The polling CPU budget of the node: at most this many cores polling at once. Both 0: no budget. Both
  // set: the smaller one.
  double budget_cores = 0;
  double budget_share = 0;  // of the node's CPUs (the facts' CPU count)
  // A polling queue's cost when the caller does not know it: a spinning reaper holds its CPU.
  double default_poll_cost_cores = 1.0;
  // A try needs this much of its reaping CPU idle of other work (busy share minus the node's own polling).
  double min_headroom = 0.2;
  // A polling run ends when its CPU's headroom falls below this.
  double stop_headroom = 0.05;
  // PSI is one figure for the node: it says runnable work waits, not for which CPU. A CPU that idles while
  // work waits is not where it waits (the scheduler's idle balancing would have pulled it there), so PSI cpu
  // some avg10 at or above the limit defers a try only where the reaping CPU's other work (as for
  // min_headroom: not the queue's own reaper, not the node's polling) left less than pressure_idle_share of
  // it over the last interval, or has no figure. 1: PSI defers every try.
  double pressure_some_limit = 10.0;
  double pressure_idle_share = 0.5;
  // A polling run ends when PSI cpu some avg10 (full avg10) rises this many points above its lowest reading
  // since the run was admitted: pressure the run met when it began is the node's own, what it rose to since is
  // the run's or new work's.
  double pressure_some_rise = 20.0;
  double pressure_full_rise = 5.0;
  // After a try on a CPU ends, the next queue on that CPU waits this long (its baseline settles first).
  Nanos stagger_gap = 0;
  // Facts older than this say nothing: the headroom and pressure rules are skipped (budget and staggering
  // still hold), so a reader that stalls never blocks polling forever.
  Nanos facts_max_age = 5'000'000'000;

  bool operator==(const NodeSettings&) const = default;
};

// Checks every field; the error names the first bad one, prefixed by `field_prefix`.
Status ValidateNodeSettings(const NodeSettings& settings, std::string_view field_prefix = "node.");

// What the node looks like now, as the facts' reader measured it over its last interval.
struct NodeFacts {
  Nanos at = 0;  // when they were read
  // Per CPU (index = CPU number): the busy share (0..1) over the interval, all work included; nullopt for a
  // CPU without a figure (offline, or not in /proc/stat).
  std::vector<std::optional<double>> cpu_busy;
  std::optional<double> pressure_some_avg10;  // nullopt: no PSI on this kernel
  std::optional<double> pressure_full_avg10;
};

// What the node knows of one queue; the caller updates it as its payoff accounting learns more.
struct NodeQueue {
  std::optional<uint32_t> cpu;  // where its completions are reaped; nullopt: unknown (CPU rules skipped)
  std::optional<double> gain_per_cpu_second;  // measured payoff of its polling; nullopt: not measured yet
  std::optional<double> poll_cost_cores;      // CPU its polling takes; nullopt: default_poll_cost_cores
  // Share of its reaping CPU the queue's own reaper used over the last facts interval, where it is measured:
  // not other work for its own try (polling replaces that reaping), so it is taken off the CPU's busy share
  // when the queue asks to try. nullopt: not measured (a kernel queue's interrupts), nothing taken off.
  std::optional<double> own_busy;
  // The node layer decides this queue's tries and runs (its policy's node_layer). false: every try admitted
  // and no run ended, as when the layer is off, but its polling still counts in the budget and on its CPU,
  // so that queues left to the per-queue rules are seen by those the layer decides.
  bool decided = true;
};

struct TryRequest {
  QueueHandle queue = 0;
  Nanos at = 0;
};

struct NodeStop {
  QueueHandle queue = 0;
  NodeReason reason = NodeReason::kCpuBudget;
};

// Admit (deferred empty), possibly ending worse-paying runs to make room in the budget; or Defer{reason}.
struct TryVerdict {
  std::optional<NodeReason> deferred;
  std::vector<NodeStop> ended;  // runs the caller must end now (reason cpu_budget) for this try's room
  bool Admitted() const { return !deferred; }
};

class NodeLayer {
 public:
  void SetSettings(const NodeSettings& settings) { settings_ = settings; }
  const NodeSettings& Settings() const { return settings_; }
  bool Enabled() const { return settings_.enabled; }

  // Adds or updates a queue (gain and cost as they become known).
  void SetQueue(QueueHandle queue, const NodeQueue& facts);
  void RemoveQueue(QueueHandle queue);

  // The engine wants to try polling on a queue. Admitted: the queue is trying and polling until TryEnded /
  // PollingEnded. Off: always admitted (still accounted, so that turning it on later starts from the truth).
  TryVerdict Try(const TryRequest& request);
  // The try's first verdict came: kept polling (the run goes on, counted in the budget) or not.
  void TryEnded(QueueHandle queue, bool kept_polling, Nanos at);
  // The queue left polling (run ended, re-measure, mode change, failure).
  void PollingEnded(QueueHandle queue, Nanos at);
  // The queue polls without a try the node layer admitted (a forced mode, an override, a lever that left it
  // polling): counted in the budget and its CPU's own polling, never deferred or ended by the node layer.
  void PollingStarted(QueueHandle queue);

  // New facts; returns the polling runs to end now, each with its reason (none when off). An ended run is
  // released at once: the caller switches those queues back to interrupt mode.
  std::vector<NodeStop> OnFacts(const NodeFacts& facts);

  // For status and tests.
  double PollingCores() const;  // the budget spent now
  std::optional<double> BudgetCores() const;  // nullopt: no budget
  bool Polling(QueueHandle queue) const;
  bool Trying(QueueHandle queue) const;

 private:
  struct Entry {
    bool live = false;
    NodeQueue facts;
    bool polling = false;  // admitted and not ended: counted in the budget
    bool trying = false;   // admitted, first verdict not yet in: holds its CPU's try slot
    bool forced = false;   // polling the node layer did not admit: counted, never ended by it
    // The lowest PSI readings since the run was admitted (nullopt: none fresh yet): a rise is measured from them.
    std::optional<double> some_floor;
    std::optional<double> full_floor;
  };
  struct Cpu {
    std::optional<QueueHandle> trying;
    Nanos last_try_end = 0;
    bool tried = false;  // last_try_end means something
  };

  Entry* Find(QueueHandle queue);
  const Entry* Find(QueueHandle queue) const;
  double Cost(const Entry& entry) const;
  bool FactsFresh(Nanos now) const;
  // The CPU's busy share without the node's own polling on it; nullopt: no figure.
  std::optional<double> OtherBusy(uint32_t cpu) const;
  // Whether PSI's waiting work may wait for a queue's CPU, whose work other than the queue's own reaping and
  // the node's polling is `other` (nullopt: unknown): pressure at the limit and that work leaving too little.
  bool Pressed(std::optional<double> other) const;
  // Lowers the run's floors to the facts' readings; whether either reading rose past its floor by the rise.
  bool PressureRose(Entry& entry);
  std::optional<NodeReason> CpuRules(const Entry& entry, Nanos now) const;
  std::optional<NodeReason> Stagger(const Entry& entry, Nanos now) const;
  // A run the node layer may end: one it admitted.
  bool Endable(const Entry& entry) const {
    return entry.live && entry.polling && !entry.forced && entry.facts.decided;
  }
  // Runs that pay less than `gain` whose end leaves room for `cost`; nullopt when no such set exists.
  std::optional<std::vector<QueueHandle>> RoomFor(QueueHandle asking, double cost, double gain) const;
  void Release(QueueHandle queue, Nanos at);
  void EndRunsOverBudget(std::vector<NodeStop>* stops);

  NodeSettings settings_;
  NodeFacts facts_;
  bool have_facts_ = false;
  std::vector<Entry> queues_;
  std::vector<Cpu> cpus_;
};

}  // namespace nvmeadapt::engine
