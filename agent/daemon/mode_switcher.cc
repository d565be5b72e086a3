// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/mode_switcher.h"

#include <set>
#include <utility>

#include "agent/daemon/failpoint.h"
#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

std::string Ms(engine::Nanos ns) { return std::to_string(ns / 1'000'000) + " ms"; }

}  // namespace

struct ModeSwitcher::Switch {
  uint64_t id = 0;
  DiscoveredQueue queue;
  std::string name;   // QueueName of the queue
  std::string lever;  // the lever serving it
  ReapMode mode = ReapMode::kInterrupt;
  SwitchSteps steps;
  engine::Nanos submitted = 0;
  // Guarded by the switcher's mutex_:
  enum class Stage { kQueued, kPreparing, kPublishing, kApplying } stage = Stage::kQueued;
  engine::Nanos running_since = 0;
  bool published = false;         // the loop published the pending switch: the lever is called next
  bool publish_answered = false;  // the loop took the publish step (or refused it)
  bool timed_out = false;         // the loop has its end already; the lever may still run
  bool cancelled = false;         // ended before it ran (queued behind a hung lever)
};

ModeSwitcher::ModeSwitcher(Levers& levers, state::Journal& journal, SwitchOptions options, PostToLoop post)
    : levers_(levers), journal_(journal), options_(std::move(options)), post_(std::move(post)) {}

ModeSwitcher::~ModeSwitcher() {
  Quiesce();
  Join();
}

void ModeSwitcher::StartWorkers() { workers_.Start(); }

void ModeSwitcher::Quiesce() {
  std::lock_guard lock(mutex_);
  quiesced_ = true;
  published_cv_.notify_all();
}

void ModeSwitcher::Join() { workers_.Join(); }

bool ModeSwitcher::Hung(const std::string& controller) const {
  for (const auto& [id, sw] : in_flight_) {
    if (sw->timed_out && sw->queue.controller == controller) return true;
  }
  return false;
}

void ModeSwitcher::Submit(const DiscoveredQueue& queue, const std::string& lever, ReapMode mode,
                          SwitchSteps steps) {
  auto sw = std::make_shared<Switch>();
  sw->queue = queue;
  sw->name = QueueName(queue.controller, queue.qid);
  sw->lever = lever;
  sw->mode = mode;
  sw->steps = std::move(steps);
  sw->submitted = options_.monotonic();
  {
    std::unique_lock lock(mutex_);
    if (Hung(queue.controller)) {
      lock.unlock();
      sw->steps.done({MakeError(ErrorCode::kUnavailable,
                                "not changed: a switch of " + queue.controller +
                                    " is still in its lever past the timeout of " + Ms(options_.lever_timeout) +
                                    "; no switch is queued behind it until it returns")});
      return;
    }
    sw->id = next_id_++;
    in_flight_[sw->id] = sw;
  }
  workers_.Run(queue.controller, [this, sw] { Run(sw); });
}

void ModeSwitcher::Run(const std::shared_ptr<Switch>& sw) {
  {
    std::lock_guard lock(mutex_);
    if (sw->cancelled || quiesced_) {
      in_flight_.erase(sw->id);
      return;
    }
    sw->stage = Switch::Stage::kPreparing;
    sw->running_since = options_.monotonic();
  }
  LeverPlan plan;
  bool disruptive = false;
  if (Status prepared = Prepare(*sw, plan, disruptive); !prepared) return Finish(sw, {prepared});
  if (!PublishOnLoop(sw, options_.monotonic())) {
    std::lock_guard lock(mutex_);
    in_flight_.erase(sw->id);  // its queue left, it timed out (its end is told), or the loop stopped
    return;
  }
  SwitchOutcome outcome;
  outcome.published = true;
  outcome.requested = options_.monotonic();
  outcome.status = plan.Execute();
  Failpoint("after_lever");
  // The target is in place again unless the lever says it could not connect it back (kIo): then the
  // in-flight entry stays, and the next restore connects it.
  if (plan.in_flight && plan.changes && (outcome.status.ok() || outcome.status.error().code != ErrorCode::kIo)) {
    if (Status dropped = journal_.Restored(plan.lever, plan.in_flight->target); !dropped) {
      NA_WARN("journal: " << plan.in_flight->target << ": " << dropped.error().message);
    }
  }
  outcome.acknowledged = options_.monotonic();
  if (disruptive) {
    std::lock_guard lock(mutex_);
    last_reset_[sw->queue.controller] = outcome.acknowledged;  // a failed reset counts too
  }
  Finish(sw, std::move(outcome));
}

Status ModeSwitcher::Prepare(Switch& sw, LeverPlan& plan, bool& disruptive) {
  NA_ASSIGN_OR_RETURN(plan, levers_.Plan(sw.queue, sw.mode));
  // One reset of a controller-wide lever moves every queue of the controller: the other queues' switches
  // then change nothing and are not held to the reset spacing.
  disruptive = plan.changes && levers_.Disruptive(sw.queue);
  if (disruptive) {
    const engine::Nanos now = options_.monotonic();
    std::lock_guard lock(mutex_);
    const auto last = last_reset_.find(sw.queue.controller);
    if (last != last_reset_.end() && now - last->second < options_.min_disruptive_interval) {
      const engine::Nanos wait = options_.min_disruptive_interval - (now - last->second);
      return MakeError(ErrorCode::kUnavailable,
                       "not changed: " + sw.queue.controller + " was reset " +
                           std::to_string((now - last->second) / 1'000'000) + " ms ago; the next reset is allowed in " +
                           std::to_string((wait + 999'999) / 1'000'000) + " ms (--min-disruptive-interval " +
                           std::to_string(options_.min_disruptive_interval / 1'000'000'000) + " s)");
    }
  }
  // A dry-run lever changes nothing, so there is nothing a restore could owe: the journal holds real changes
  // only, and a restore is always real (finding 1 of issue 15).
  if (!plan.dry_run) {
    v1::JournalEntry entry;
    entry.set_controller(sw.queue.controller);
    entry.set_queue(sw.queue.qid);
    entry.set_lever(plan.lever);
    entry.set_target(plan.target);
    entry.set_safe_value(plan.safe_value);
    entry.set_applied_value(plan.applied_value);
    entry.set_time_unix_ns(options_.wall());
    entry.set_boot_id(options_.boot_id);
    entry.set_device_identity(plan.device_identity);
    if (Status journaled = journal_.WillChange(entry); !journaled) {
      return MakeError(journaled.error().code, "not changed: cannot journal it: " + journaled.error().message);
    }
    if (plan.in_flight && plan.changes) {
      entry.set_controller(plan.in_flight->controller);
      entry.set_queue(0);
      entry.set_target(plan.in_flight->target);
      entry.set_safe_value(plan.in_flight->safe_value);
      entry.set_applied_value("connected");
      entry.set_device_identity("");
      if (Status journaled = journal_.WillChange(entry); !journaled) {
        return MakeError(journaled.error().code, "not changed: cannot journal it: " + journaled.error().message);
      }
    }
  }
  Failpoint("after_journal");
  return OkStatus();
}

bool ModeSwitcher::PublishOnLoop(const std::shared_ptr<Switch>& sw, engine::Nanos journaled) {
  {
    std::lock_guard lock(mutex_);
    sw->stage = Switch::Stage::kPublishing;
  }
  post_([this, sw, journaled] {
    bool go = false;
    {
      std::lock_guard lock(mutex_);
      go = !sw->timed_out && !quiesced_;
    }
    if (go) go = sw->steps.publish(journaled);
    std::lock_guard lock(mutex_);
    sw->publish_answered = true;
    sw->published = go;
    if (go) sw->stage = Switch::Stage::kApplying;
    published_cv_.notify_all();
  });
  std::unique_lock lock(mutex_);
  // The loop never waits for a worker; this worker waits for the loop (or its end: the step is then dropped).
  published_cv_.wait(lock, [&] { return sw->publish_answered || quiesced_; });
  return sw->published && !quiesced_;
}

void ModeSwitcher::Finish(const std::shared_ptr<Switch>& sw, SwitchOutcome outcome) {
  bool late = false;
  {
    std::lock_guard lock(mutex_);
    late = sw->timed_out;
    in_flight_.erase(sw->id);
  }
  post_([sw, late, outcome = std::move(outcome)] {
    if (late) {
      if (sw->steps.late) sw->steps.late(outcome);
    } else {
      sw->steps.done(outcome);
    }
  });
}

void ModeSwitcher::ExpireHung(engine::Nanos now) {
  std::vector<std::pair<std::shared_ptr<Switch>, SwitchOutcome>> ended;
  {
    std::lock_guard lock(mutex_);
    std::set<std::string> hung;
    for (const auto& [id, sw] : in_flight_) {
      if (sw->stage == Switch::Stage::kQueued || sw->timed_out) continue;
      if (now - sw->running_since < options_.lever_timeout) continue;
      sw->timed_out = true;
      hung.insert(sw->queue.controller);
      const std::string what = sw->stage == Switch::Stage::kApplying ? "the lever" : "its plan or journal write";
      SwitchOutcome outcome{MakeError(ErrorCode::kUnavailable,
                                      "timed out: " + what + " did not return within " +
                                          Ms(options_.lever_timeout) + "; no other switch of " +
                                          sw->queue.controller + " is made until it does"),
                            sw->published};
      ended.emplace_back(sw, std::move(outcome));
    }
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      const std::shared_ptr<Switch>& sw = it->second;
      if (sw->stage != Switch::Stage::kQueued || !hung.count(sw->queue.controller)) {
        ++it;
        continue;
      }
      sw->cancelled = true;
      ended.emplace_back(sw, SwitchOutcome{MakeError(ErrorCode::kUnavailable,
                                                     "not changed: queued behind a switch of " + sw->queue.controller +
                                                         " whose lever did not return within " +
                                                         Ms(options_.lever_timeout))});
      it = in_flight_.erase(it);
    }
  }
  for (auto& [sw, outcome] : ended) sw->steps.done(outcome);
}

std::vector<std::string> ModeSwitcher::Slow(engine::Nanos now, engine::Nanos at_least) const {
  std::vector<std::string> lines;
  std::lock_guard lock(mutex_);
  for (const auto& [id, sw] : in_flight_) {
    if (now - sw->submitted < at_least) continue;
    std::string line = "queue " + sw->name + ": switch to " + std::string(ReapModeName(sw->mode)) +
                       " in flight for " + Ms(now - sw->submitted) + " (lever " + sw->lever;
    switch (sw->stage) {
      case Switch::Stage::kQueued: line += ", queued behind another switch of " + sw->queue.controller; break;
      case Switch::Stage::kPreparing: line += ", planning and journaling"; break;
      case Switch::Stage::kPublishing: line += ", publishing"; break;
      case Switch::Stage::kApplying: line += ", in the lever"; break;
    }
    if (sw->timed_out) line += "; timed out, no switch of " + sw->queue.controller + " until it returns";
    lines.push_back(line + ")");
  }
  return lines;
}

void ModeSwitcher::ForgetOldResets(engine::Nanos now) {
  std::lock_guard lock(mutex_);
  std::erase_if(last_reset_, [&](const auto& item) { return now - item.second >= options_.min_disruptive_interval; });
}

}  // namespace nvmeadapt::daemon
