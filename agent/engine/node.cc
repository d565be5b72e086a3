// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/node.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace nvmeadapt::engine {
namespace {

// A queue without a measured gain ranks as paying nothing: it may take free budget (its try is how its gain
// gets measured), never a measured queue's room.
double Rank(const NodeQueue& facts) { return facts.gain_per_cpu_second.value_or(0.0); }

// Shares and costs are sums and differences of decimal fractions: 0.1 + 0.2 must fit in a budget of 0.3, and
// a CPU 0.8 busy must leave a headroom of 0.2.
constexpr double kEpsilon = 1e-9;

// Whether a CPU whose other work is `other` (0..1) leaves less than `needed` of it.
bool Short(double other, double needed) { return 1.0 - other + kEpsilon < needed; }

Status CheckRange(double value, double low, double high, std::string_view prefix, std::string_view field) {
  if (std::isfinite(value) && value >= low && value <= high) return OkStatus();
  return MakeError(ErrorCode::kInvalidArgument, std::string(prefix) + std::string(field) + " must be within " +
                                                    std::to_string(low) + ".." + std::to_string(high) +
                                                    ", not " + std::to_string(value));
}

}  // namespace

Status ValidateNodeSettings(const NodeSettings& s, std::string_view prefix) {
  constexpr double kMaxCores = 1 << 16;
  NA_RETURN_IF_ERROR(CheckRange(s.budget_cores, 0, kMaxCores, prefix, "budget_cores"));
  NA_RETURN_IF_ERROR(CheckRange(s.budget_share, 0, 1, prefix, "budget_share"));
  NA_RETURN_IF_ERROR(CheckRange(s.default_poll_cost_cores, 0, kMaxCores, prefix, "default_poll_cost_cores"));
  NA_RETURN_IF_ERROR(CheckRange(s.min_headroom, 0, 1, prefix, "min_headroom"));
  NA_RETURN_IF_ERROR(CheckRange(s.stop_headroom, 0, 1, prefix, "stop_headroom"));
  NA_RETURN_IF_ERROR(CheckRange(s.pressure_some_limit, 0, 100, prefix, "pressure_some_limit"));
  NA_RETURN_IF_ERROR(CheckRange(s.pressure_idle_share, 0, 1, prefix, "pressure_idle_share"));
  NA_RETURN_IF_ERROR(CheckRange(s.pressure_some_rise, 0, 100, prefix, "pressure_some_rise"));
  NA_RETURN_IF_ERROR(CheckRange(s.pressure_full_rise, 0, 100, prefix, "pressure_full_rise"));
  if (s.stop_headroom > s.min_headroom) {
    // Else a try admitted at the least headroom would be ended by the next facts.
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string(prefix) + "stop_headroom must not exceed " + std::string(prefix) + "min_headroom");
  }
  if (s.pressure_some_rise <= 0 || s.pressure_full_rise <= 0) {
    // A rise of 0 would end every run at the next reading: its floor is at most that reading.
    return MakeError(ErrorCode::kInvalidArgument, std::string(prefix) + "pressure_some_rise and " + std::string(prefix) +
                                                      "pressure_full_rise must be positive");
  }
  if (s.stagger_gap < 0) return MakeError(ErrorCode::kInvalidArgument, std::string(prefix) + "stagger_gap is negative");
  if (s.facts_max_age <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, std::string(prefix) + "facts_max_age must be positive");
  }
  return OkStatus();
}

NodeLayer::Entry* NodeLayer::Find(QueueHandle queue) {
  return queue < queues_.size() && queues_[queue].live ? &queues_[queue] : nullptr;
}

const NodeLayer::Entry* NodeLayer::Find(QueueHandle queue) const {
  return queue < queues_.size() && queues_[queue].live ? &queues_[queue] : nullptr;
}

void NodeLayer::SetQueue(QueueHandle queue, const NodeQueue& facts) {
  if (queue >= queues_.size()) queues_.resize(queue + 1);
  Entry& entry = queues_[queue];
  if (entry.live && entry.trying && entry.facts.cpu != facts.cpu && entry.facts.cpu &&
      *entry.facts.cpu < cpus_.size()) {
    cpus_[*entry.facts.cpu].trying.reset();  // the slot moves with the queue
    entry.trying = false;
  }
  entry.live = true;
  entry.facts = facts;
  if (facts.cpu && *facts.cpu >= cpus_.size()) cpus_.resize(*facts.cpu + 1);
}

void NodeLayer::RemoveQueue(QueueHandle queue) {
  if (!Find(queue)) return;
  Release(queue, 0);
  queues_[queue] = Entry{};
}

double NodeLayer::Cost(const Entry& entry) const {
  return entry.facts.poll_cost_cores.value_or(settings_.default_poll_cost_cores);
}

double NodeLayer::PollingCores() const {
  double sum = 0;
  for (const Entry& entry : queues_) {
    if (entry.live && entry.polling) sum += Cost(entry);
  }
  return sum;
}

std::optional<double> NodeLayer::BudgetCores() const {
  std::optional<double> budget;
  if (settings_.budget_cores > 0) budget = settings_.budget_cores;
  if (settings_.budget_share > 0) {
    const double share = settings_.budget_share * static_cast<double>(facts_.cpu_busy.size());
    if (have_facts_ && !facts_.cpu_busy.empty()) budget = budget ? std::min(*budget, share) : share;
  }
  return budget;
}

bool NodeLayer::Polling(QueueHandle queue) const {
  const Entry* entry = Find(queue);
  return entry && entry->polling;
}

bool NodeLayer::Trying(QueueHandle queue) const {
  const Entry* entry = Find(queue);
  return entry && entry->trying;
}

bool NodeLayer::FactsFresh(Nanos now) const {
  return have_facts_ && now - facts_.at <= settings_.facts_max_age;
}

std::optional<double> NodeLayer::OtherBusy(uint32_t cpu) const {
  if (cpu >= facts_.cpu_busy.size() || !facts_.cpu_busy[cpu]) return std::nullopt;
  double own = 0;
  for (const Entry& entry : queues_) {
    if (entry.live && entry.polling && entry.facts.cpu == cpu) own += Cost(entry);
  }
  return std::clamp(*facts_.cpu_busy[cpu] - own, 0.0, 1.0);
}

bool NodeLayer::Pressed(std::optional<double> other) const {
  if (!facts_.pressure_some_avg10 || *facts_.pressure_some_avg10 < settings_.pressure_some_limit) return false;
  return !other || Short(*other, settings_.pressure_idle_share);  // no figure: it may be where the work waits
}

bool NodeLayer::PressureRose(Entry& entry) {
  bool rose = false;
  const auto follow = [&rose](std::optional<double> reading, std::optional<double>& floor, double rise) {
    if (!reading) return;
    floor = floor ? std::min(*floor, *reading) : *reading;
    if (*reading - *floor + kEpsilon >= rise) rose = true;
  };
  follow(facts_.pressure_some_avg10, entry.some_floor, settings_.pressure_some_rise);
  follow(facts_.pressure_full_avg10, entry.full_floor, settings_.pressure_full_rise);
  return rose;
}

std::optional<NodeReason> NodeLayer::CpuRules(const Entry& entry, Nanos now) const {
  if (!FactsFresh(now)) return std::nullopt;
  std::optional<double> other = entry.facts.cpu ? OtherBusy(*entry.facts.cpu) : std::nullopt;
  if (other && entry.facts.own_busy) other = std::max(0.0, *other - *entry.facts.own_busy);
  if (Pressed(other)) return NodeReason::kCpuPressure;
  if (other && Short(*other, settings_.min_headroom)) return NodeReason::kCpuBusy;
  return std::nullopt;
}

std::optional<NodeReason> NodeLayer::Stagger(const Entry& entry, Nanos now) const {
  if (!entry.facts.cpu) return std::nullopt;
  const Cpu& cpu = cpus_[*entry.facts.cpu];
  if (cpu.trying) return NodeReason::kStaggered;
  if (cpu.tried && now - cpu.last_try_end < settings_.stagger_gap) return NodeReason::kStaggered;
  return std::nullopt;
}

std::optional<std::vector<QueueHandle>> NodeLayer::RoomFor(QueueHandle asking, double cost, double gain) const {
  const std::optional<double> budget = BudgetCores();
  if (!budget) return std::vector<QueueHandle>{};
  double spent = PollingCores();
  if (spent + cost <= *budget + kEpsilon) return std::vector<QueueHandle>{};
  std::vector<QueueHandle> worse;
  for (QueueHandle q = 0; q < queues_.size(); ++q) {
    const Entry& entry = queues_[q];
    if (q != asking && Endable(entry) && Rank(entry.facts) < gain) worse.push_back(q);
  }
  std::stable_sort(worse.begin(), worse.end(),
                   [this](QueueHandle a, QueueHandle b) { return Rank(queues_[a].facts) < Rank(queues_[b].facts); });
  std::vector<QueueHandle> victims;
  for (QueueHandle q : worse) {
    victims.push_back(q);
    spent -= Cost(queues_[q]);
    if (spent + cost <= *budget + kEpsilon) return victims;
  }
  return std::nullopt;
}

TryVerdict NodeLayer::Try(const TryRequest& request) {
  TryVerdict verdict;
  Entry* entry = Find(request.queue);
  if (!entry) {
    SetQueue(request.queue, NodeQueue{});  // a queue the caller never described: no CPU, no gain known
    entry = Find(request.queue);
  }
  if (entry->polling) return verdict;  // already polling: nothing more to spend
  if (settings_.enabled && entry->facts.decided) {
    verdict.deferred = CpuRules(*entry, request.at);
    if (!verdict.deferred) {
      const std::optional<std::vector<QueueHandle>> room = RoomFor(request.queue, Cost(*entry), Rank(entry->facts));
      if (!room) {
        verdict.deferred = NodeReason::kCpuBudget;
      } else {
        verdict.deferred = Stagger(*entry, request.at);
        if (!verdict.deferred) {
          for (QueueHandle q : *room) verdict.ended.push_back({q, NodeReason::kCpuBudget});
        }
      }
    }
    if (verdict.deferred) return verdict;
    for (const NodeStop& stop : verdict.ended) Release(stop.queue, request.at);
  }
  entry->polling = true;
  entry->some_floor.reset();
  entry->full_floor.reset();
  if (FactsFresh(request.at)) (void)PressureRose(*entry);  // the run's floors start at today's pressure
  if (entry->facts.cpu && !cpus_[*entry->facts.cpu].trying) {
    entry->trying = true;
    cpus_[*entry->facts.cpu].trying = request.queue;
  }
  return verdict;
}

void NodeLayer::TryEnded(QueueHandle queue, bool kept_polling, Nanos at) {
  Entry* entry = Find(queue);
  if (!entry) return;
  if (entry->trying) {
    Cpu& cpu = cpus_[*entry->facts.cpu];
    cpu.trying.reset();
    cpu.last_try_end = at;
    cpu.tried = true;
    entry->trying = false;
  }
  if (!kept_polling) {
    entry->polling = false;
    entry->forced = false;
  }
}

void NodeLayer::PollingEnded(QueueHandle queue, Nanos at) { Release(queue, at); }

void NodeLayer::PollingStarted(QueueHandle queue) {
  if (!Find(queue)) SetQueue(queue, NodeQueue{});
  queues_[queue].polling = true;
  queues_[queue].forced = true;
}

void NodeLayer::Release(QueueHandle queue, Nanos at) {
  TryEnded(queue, false, at);
}

void NodeLayer::EndRunsOverBudget(std::vector<NodeStop>* stops) {
  const std::optional<double> budget = BudgetCores();
  if (!budget) return;
  std::vector<QueueHandle> running;
  for (QueueHandle q = 0; q < queues_.size(); ++q) {
    if (Endable(queues_[q])) running.push_back(q);
  }
  std::stable_sort(running.begin(), running.end(),
                   [this](QueueHandle a, QueueHandle b) { return Rank(queues_[a].facts) < Rank(queues_[b].facts); });
  double spent = PollingCores();
  for (QueueHandle q : running) {
    if (spent <= *budget + kEpsilon) return;
    spent -= Cost(queues_[q]);
    stops->push_back({q, NodeReason::kCpuBudget});
    Release(q, facts_.at);
  }
}

std::vector<NodeStop> NodeLayer::OnFacts(const NodeFacts& facts) {
  facts_ = facts;
  have_facts_ = true;
  if (facts_.cpu_busy.size() > cpus_.size()) cpus_.resize(facts_.cpu_busy.size());
  std::vector<NodeStop> stops;
  if (!settings_.enabled) return stops;
  for (QueueHandle q = 0; q < queues_.size(); ++q) {
    Entry& entry = queues_[q];
    if (!Endable(entry)) continue;
    std::optional<NodeReason> reason;
    if (PressureRose(entry)) {
      reason = NodeReason::kCpuPressure;
    } else if (entry.facts.cpu) {
      const std::optional<double> other = OtherBusy(*entry.facts.cpu);
      if (other && Short(*other, settings_.stop_headroom)) reason = NodeReason::kCpuBusy;
    }
    if (reason) stops.push_back({q, *reason});
  }
  // Released only now: each CPU's figure holds the polling of every run on it, so each run is judged with
  // all of them subtracted.
  for (const NodeStop& stop : stops) Release(stop.queue, facts.at);
  EndRunsOverBudget(&stops);
  return stops;
}

}  // namespace nvmeadapt::engine
