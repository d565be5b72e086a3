// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/agent.h"

#include <algorithm>

#include "common/clock.h"
#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

int64_t WallNanos() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A found or dropped queue is said once each time: these lines are not rate-limited (queue_log.h).
LogFields FieldsOf(const ManagedQueue& q, std::string_view reason = {}) {
  return {.controller = q.desc.controller, .queue = q.name, .reason = reason};
}

AgentDeps WithClocks(AgentDeps deps) {
  if (!deps.monotonic) deps.monotonic = MonotonicNanos;
  if (!deps.wall) deps.wall = WallNanos;
  return deps;
}

}  // namespace

Agent::Agent(AgentOptions options, AgentDeps deps)
    : options_(std::move(options)),
      deps_(WithClocks(std::move(deps))),
      store_(options_.state_dir),
      journal_(store_),
      event_listener_(bus_, deps_.monotonic, deps_.wall),
      loop_([collector = deps_.collector] { collector->Wake(); }, options_.rpc_wait),
      queue_log_(deps_.monotonic),
      pipeline_(options_.node, options_.node_facts_root, listeners_),
      switches_({queues_, pipeline_, *deps_.collector, listeners_, queue_log_}, *deps_.levers, journal_,
                SwitchOptions{options_.min_disruptive_interval, options_.lever_timeout, options_.restore_rules.boot_id,
                              deps_.monotonic, deps_.wall},
                [this](std::function<void()> step) { loop_.ToLoop(std::move(step)); }),
      policy_({queues_, pipeline_, switches_, *deps_.levers, listeners_, deps_.metrics}, store_,
              options_.config_policies, options_.policy_file_authoritative, options_.node_identity),
      api_({loop_, queues_, pipeline_, switches_, policy_, journal_, *deps_.collector, bus_, payoff_, listeners_,
            health_},
           {options_.version, options_.rpc_wait, deps_.monotonic, deps_.wall}),
      roster_(queues_, *deps_.collector,
              QueueRoster::Hands{[this](const DiscoveredQueue& found, engine::Nanos now) { AddQueue(found, now); },
                                 [this](ManagedQueue& q, const char* why) { RemoveQueue(q, why); },
                                 [this](ManagedQueue& q, const std::string& was) {
                                   NA_INFO_FIELDS(FieldsOf(q), "queue " << q.name << " layer " << was << " -> "
                                                                        << q.desc.layer);
                                   listeners_.Tell(&AgentListener::QueueRelayered, q);
                                 }}) {
  listeners_.Add(payoff_);
  if (deps_.metrics) listeners_.Add(metrics_listener_.emplace(*deps_.metrics, payoff_));
  listeners_.Add(event_listener_);
}

Agent::~Agent() {
  switches_.switcher().Quiesce();
  switches_.switcher().Join();
  scanner_.Join();
  bus_.CancelAll();
}

Status Agent::Start() {
  const engine::Nanos now = deps_.monotonic();
  health_.started_at = now;
  NA_RETURN_IF_ERROR(store_.Open());
  if (Status loaded = journal_.Load(); !loaded) {
    // A newer version's journal lists changes only that version may know how to put back: kept for it.
    const bool newer = loaded.error().code == ErrorCode::kFailedPrecondition;
    return MakeError(loaded.error().code, std::string(newer ? "journal of a newer version kept, refusing to start "
                                                              "(start that version, which restores it): "
                                                            : "journal unreadable, refusing to start (inspect or "
                                                              "remove it): ") +
                                              loaded.error().message);
  }
  health_.journal_warning = !journal_.load_warning().empty() ? journal_.load_warning() : options_.journal_warning;
  if (!health_.journal_warning.empty()) NA_ERROR("journal: " << health_.journal_warning);
  if (options_.restore_at_start && !journal_.empty()) {
    NA_INFO("journal: putting " << journal_.size()
                                << " changed setting(s) back to their safe values before anything else");
    state::RestoreReport report;
    Status restored = journal_.RestoreAll([&](const v1::JournalEntry& entry) { return deps_.levers->Restore(entry); },
                                          options_.restore_rules, &report);
    for (const std::string& line : report.lines) NA_INFO("journal: " << line);
    if (!restored) NA_WARN("journal: could not restore everything: " << restored.error().message);
  } else if (!options_.restore_at_start) {
    journal_.MarkUnrestored();  // the daemon's restore ran first (main.cc): what it left is what is here
  }
  if (deps_.metrics) deps_.metrics->SetJournalUnrestored(journal_.unrestored());
  NA_RETURN_IF_ERROR(policy_.Install(deps_.wall()));
  if (!options_.record_windows_path.empty()) {
    NA_RETURN_IF_ERROR(trace_.Open(options_.record_windows_path));
    listeners_.Add(trace_);  // only then: a line per window is formatted for nobody otherwise
  }
  pipeline_.AnnounceNode();  // the trace's node line, before any queue's
  Rediscover(now);
  return OkStatus();
}

void Agent::Run() {
  loop_.Begin([this] {
    switches_.switcher().StartWorkers();
    scanner_.Start();
    roster_.StartAttaching();
  });
  while (!stop_.load()) RunOnce();
  // No lever is called from now on; Shutdown() waits for those still running.
  loop_.End([this] { switches_.switcher().Quiesce(); });
}

void Agent::Stop() {
  stop_.store(true);
  deps_.collector->Wake();
}

void Agent::RunOnce() {
  loop_.RunQueued();
  engine::Nanos now = deps_.monotonic();
  switches_.switcher().ExpireHung(now);
  if (policy_.pause() && policy_.PauseEnded(deps_.wall())) EndPause(now);  // the wall clock only while paused
  RunTimers(now);
  switches_.RetryLevers(now);
  if (now >= next_discovery_) Rediscover(now);
  if (now >= next_counters_) RefreshCounters();
  RunNode(now);
  PollWindows(NextWaitMs(deps_.monotonic()));
}

int Agent::NextWaitMs(engine::Nanos now) {
  if (loop_.AnyQueued()) return 0;
  engine::Nanos due = now + options_.idle_wait;
  due = std::min(due, next_discovery_);
  due = std::min(due, pipeline_.NextNodeFacts());
  if (const auto& pause = policy_.pause(); pause && pause->ends_unix_ns() != 0) {
    due = std::min(due, now + std::max<engine::Nanos>(0, pause->ends_unix_ns() - deps_.wall()));
  }
  for (ManagedQueue* q : queues_.All()) {
    if (q->switches_in_flight > 0) continue;  // neither its timer nor its retry runs before the switch ends
    if (pipeline_.engine().NeedsTimer(q->handle)) due = std::min(due, q->next_timer);
    if (q->retry_mode) due = std::min(due, q->retry_at);
  }
  if (due <= now) return 0;
  return static_cast<int>((due - now + 999'999) / 1'000'000);
}

void Agent::EndPause(engine::Nanos now) {
  const std::string message = "pause: its time ended; the policy is in force again";
  NA_INFO(message);
  const uint32_t moved = policy_.SetPause(std::nullopt, now);
  listeners_.Tell(&AgentListener::PolicySet, message + " (" + std::to_string(moved) + " queue(s) moved)");
  // Off the loop, not waited for: a pause.json left behind by a failed unlink has ended and is dropped at start.
  const state::StateStore& store = store_;
  (void)policy_.writer().Must([&store] { return store.ClearPause(); }, "the removal of an ended pause",
                              std::chrono::steady_clock::now());
}

void Agent::PollWindows(int timeout_ms) {
  auto polled = deps_.collector->Poll(timeout_ms, [&](const collect::WindowEvent& event) { OnWindowEvent(event); });
  if (!polled) {
    if (health_.collector_error != polled.error().message) NA_WARN("collector: " << polled.error().message);
    health_.collector_error = polled.error().message;
  }
}

void Agent::OnWindowEvent(const collect::WindowEvent& event) {
  ManagedQueue* q = queues_.ByKey(event.key);
  if (q == nullptr) return;  // not (yet) discovered: the next discovery picks it up
  if (event.generation != q->generation) {
    ++q->stale_windows;  // ran under a mode the agent has since changed
    return;
  }
  if (q->open_switch && q->open_switch->first_completion == 0) q->open_switch->first_completion = event.first;
  ++q->windows;
  q->last_window = event;
  q->last_window_unix_ns = deps_.wall() - (deps_.monotonic() - event.end);
  // The next window's pace starts afresh: the timer looks within a period, not at the old window's lead.
  q->next_timer = std::min(q->next_timer, deps_.monotonic() + pipeline_.View(q->handle).policy.timer_granularity);
  engine::WindowRecord record{q->handle, event.mode, event.completions, event.start, event.end, event.pace_miss};
  listeners_.Tell(&AgentListener::Window, *q, record);
  switches_.Carry(pipeline_.OnWindow(record));
}

void Agent::RunTimers(engine::Nanos now) {
  for (ManagedQueue* q : queues_.All()) {
    // A switch in flight has no clock yet: the timer looks once it took effect.
    if (!pipeline_.engine().NeedsTimer(q->handle) || now < q->next_timer || q->switches_in_flight > 0) continue;
    q->next_timer = now + pipeline_.View(q->handle).policy.timer_granularity;
    engine::WindowProgress progress{q->mode_since, 0};
    auto counters = deps_.collector->ReadCounters(q->desc.key);
    if (!counters) progress.known = false;  // nothing known of the window: not a stall (engine OnTimer)
    if (counters) {
      q->counters = *counters;
      // Until a completion restarts the window under the current generation, the window in flight
      // belongs to the old mode: the new one has no completion yet and started when the switch took effect.
      if (counters->generation == q->generation) {
        progress = counters->progress;
        progress.last = counters->last_completion;
        // A try under the first-completion clock has no start before its first completion: until then the
        // timer judges it from the switch.
        if (progress.start == 0) progress.start = q->mode_since;
        if (q->open_switch && q->open_switch->first_completion == 0)
          q->open_switch->first_completion = counters->window_first;
      }
    }
    if (auto decision = pipeline_.OnTimer(q->handle, now, progress)) {
      NA_DEBUG("timer " << q->name << ": mode_since " << q->mode_since << " progress " << progress.start << "/"
                        << progress.completions << " counters " << q->counters.progress.start << "/"
                        << q->counters.progress.completions << " gen " << q->counters.generation << " vs "
                        << q->generation << " total " << q->counters.completions);
      listeners_.Tell(&AgentListener::Timer, *q, now, progress);
      switches_.Carry(*q, *decision);
    } else if (counters) {
      q->next_timer = pipeline_.engine().NextTimer(q->handle, now, progress);
    }
  }
}

void Agent::RunNode(engine::Nanos now) {
  if (now < pipeline_.NextNodeFacts()) return;
  switches_.Carry(pipeline_.RunNode(queues_.All(), payoff_, now));
  if (deps_.metrics) deps_.metrics->SetNode(pipeline_.node().Series());
}

Status Agent::ReloadNode(const config::NodeLayerConfig& node) {
  return loop_.OnLoop([&]() -> Status {
    options_.node = node;
    pipeline_.ConfigureNode(node);
    return OkStatus();
  });
}

Result<ReloadOutcome> Agent::ReloadConfigPolicies(const v1::PolicySet& policies,
                                                  const std::optional<engine::NodeIdentity>& node) {
  return loop_.OnLoop([&]() -> Result<ReloadOutcome> { return policy_.Reload(policies, deps_.monotonic(), node); });
}

void Agent::Rediscover(engine::Nanos now) {
  next_discovery_ = now + options_.discovery_interval;
  if (scan_running_) return;  // a driver slow to answer holds the last scan: the next one waits for it
  scan_running_ = true;
  // The scan reads sysfs and asks every driver's socket: on the scan worker (inline before the loop runs).
  scanner_.Run("discovery", [this] {
    auto scan = std::make_shared<Result<std::vector<DiscoveredQueue>>>(deps_.discovery->Scan());
    // The journal's entries of processes that are gone, dropped while running (the check reads /proc).
    for (const std::string& line : journal_.DropGone(options_.restore_rules)) NA_INFO("journal: " << line);
    loop_.ToLoop([this, scan] {
      scan_running_ = false;
      Reconcile(*scan, deps_.monotonic());
    });
  });
}

void Agent::Reconcile(const Result<std::vector<DiscoveredQueue>>& scan, engine::Nanos now) {
  if (!scan) {
    NA_WARN("discovery: " << scan.error().message);
    return;
  }
  roster_.Reconcile(*scan, now);
  // A reset makes its controller vanish for a moment: its time is kept until it no longer matters.
  switches_.switcher().ForgetOldResets(now);
}

void Agent::AddQueue(const DiscoveredQueue& found, engine::Nanos now) {
  // A queue taken again replaces the one of its name: that one's engine slot, collector key and metrics go
  // first, or each retake would leak them (issue #37).
  if (ManagedQueue* known = queues_.ByName(QueueName(found.controller, found.qid))) RemoveQueue(*known, "replaced");
  // Half the cap each for the machine's own kernel queues and for the sources a peer can multiply, as the
  // BPF queue table is split: a flood of the latter never takes a kernel queue's place.
  const bool kernel_half = collect::InKernelHalf(found.key.source);
  const std::vector<ManagedQueue*>& all = queues_.All();
  const auto same_half = static_cast<size_t>(std::count_if(all.begin(), all.end(), [&](const ManagedQueue* q) {
    return collect::InKernelHalf(q->desc.key.source) == kernel_half;
  }));
  if (same_half >= options_.max_queues / 2) {
    if (health_.queues_over_cap++ == 0) {
      NA_WARN("more than " << options_.max_queues / 2 << (kernel_half ? " kernel" : " userspace and target")
                           << " queues: the rest are not tracked (" << found.controller << " q" << found.qid << ")");
    }
    return;
  }
  ManagedQueue q;
  q.desc = found;
  q.serial = next_queue_serial_++;
  q.name = QueueName(found.controller, found.qid);
  q.lever = found.eligible ? deps_.levers->LeverNameFor(found).value_or("") : "";
  if (q.desc.eligible && deps_.collector->ObserveOnly()) {
    q.desc.eligible = false;
    q.desc.ineligible_reason = "observe-only collector (" + deps_.collector->Name() + ")";
  } else if (q.desc.eligible && q.lever.empty()) {
    q.desc.eligible = false;
    q.desc.ineligible_reason = "no lever can switch this queue";
  }
  q.mode = found.mode;
  q.mode_since = now;
  q.generation = 1;  // 0 is the collector's "not managed": windows from before the agent took the queue
  const engine::QueueSetup setup{q.desc.eligible, policy_.For(found), found.mode, found.mode};
  const engine::AddedQueue added = pipeline_.AddQueue(setup, now);
  q.handle = added.handle;
  ManagedQueue& inserted = queues_.Insert(std::move(q));
  NA_INFO_FIELDS(FieldsOf(inserted, inserted.desc.ineligible_reason),
                 "queue " << inserted.name << " found: "
                          << (inserted.desc.eligible ? "eligible, lever " + inserted.lever
                                                     : "not eligible (" + inserted.desc.ineligible_reason + ")")
                          << ", " << ReapModeName(inserted.mode) << ", mode "
                          << engine::ControllerModeName(setup.policy.mode));
  listeners_.Tell(&AgentListener::QueueAdded, inserted, setup);
  pipeline_.Describe(inserted, inserted.desc.eligible && setup.policy.node_layer);
  switches_.PushControl(inserted);
  if (added.decision) switches_.Carry(inserted, pipeline_.Follow(*added.decision));
}

void Agent::RemoveQueue(ManagedQueue& queue, const char* why) {
  NA_INFO_FIELDS(FieldsOf(queue, why), "queue " << queue.name << " " << why << ": dropped");
  queue_log_.Forget(queue);
  listeners_.Tell(&AgentListener::QueueRemoved, queue, why);
  switches_.Forget(queue);
  pipeline_.RemoveQueue(queue.handle);
  (void)deps_.collector->ForgetQueue(queue.desc.key);
  queues_.Erase(queue.name);
}

void Agent::RefreshCounters() {
  next_counters_ = deps_.monotonic() + options_.counters_interval;
  // An unrestored entry goes once its target is back to its safe value or its process is gone.
  if (deps_.metrics) deps_.metrics->SetJournalUnrestored(journal_.unrestored());
  queue_log_.Flush();
  for (ManagedQueue* q : queues_.All()) {
    if (auto counters = deps_.collector->ReadCounters(q->desc.key); counters) q->counters = *counters;
    listeners_.Tell(&AgentListener::Counters, *q);
  }
  listeners_.Tell(&AgentListener::CollectorStats, *deps_.collector);
}

Status Agent::Shutdown() {
  // A lever still running could write after the restore: every one returns first.
  switches_.switcher().Quiesce();
  switches_.switcher().Join();
  scanner_.Join();
  bus_.CancelAll();
  if (journal_.empty()) return OkStatus();
  NA_INFO("shutdown: putting " << journal_.size() << " changed setting(s) back");
  state::RestoreReport report;
  Status restored = journal_.RestoreAll([&](const v1::JournalEntry& entry) { return deps_.levers->Restore(entry); },
                                        options_.restore_rules, &report);
  for (const std::string& line : report.lines) NA_INFO("shutdown: " << line);
  if (deps_.metrics) deps_.metrics->SetJournalUnrestored(journal_.unrestored());  // for a last scrape
  return restored;
}

}  // namespace nvmeadapt::daemon
