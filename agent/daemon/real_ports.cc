// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/real_ports.h"

#include <unistd.h>

#include <climits>

#include "agent/actuate/lever_registry.h"
#include "agent/config/proto_enums.h"
#include "agent/discover/diff.h"
#include "agent/state/device_identity.h"
#include "agent/state/startup_restore.h"
#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

// The process's binary as seen through its own root: the agent in a container (hostPID) does not share
// the driver's mount namespace, where the link's target path means something else or nothing. libbpf
// matches /proc/PID/root/PATH against the PATH that /proc/PID/maps shows. A deleted executable (a driver
// upgraded under a running process) is no longer at its path, and whatever is at "PATH (deleted)" is
// anyone's file (a FIFO there froze the agent, issue #37): then the kernel's own link, which leads to the
// image the process runs.
std::string ExecutableOf(const std::string& procfs_root, pid_t pid) {
  const std::string process = procfs_root + "/" + std::to_string(pid);
  const std::string link = process + "/exe";
  char target[PATH_MAX];
  const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0 || target[0] != '/') return "";
  const std::string path(target, static_cast<size_t>(n));
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.compare(path.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    return link;
  }
  return process + "/root" + path;
}

// Lever errors as the daemon reports them: one message that names the lever and the code.
template <class T>
Result<T> Reported(Result<T> result) {
  if (result) return result;
  return std::move(result).take_error().Flattened();
}

}  // namespace

std::shared_ptr<const discover::Snapshot> RealDiscovery::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

discover::Snapshot RealDiscovery::DiscoverAll() {
  discover::Snapshot snapshot = discover::Discover(options_);
  if (!options_.kernel || !observed_targets_) return snapshot;
  const auto active = target_activity_.Active(observed_targets_(), monotonic_(), options_.target_idle);
  // After the kernel's and uvnvme's controllers: the snapshot stays in Discover's (source, ...) order.
  for (discover::Controller& c : discover::DiscoverTargets(options_, active)) {
    snapshot.controllers.push_back(std::move(c));
  }
  return snapshot;
}

Result<std::vector<DiscoveredQueue>> RealDiscovery::Scan() {
  // A controller in reset (the poll_queues lever's own, or the kernel's after a timeout) keeps its last view:
  // its queues without vectors for a moment are not queues that changed (their counters would restart).
  // Scans run one at a time (the loop waits for one before it starts the next), so the previous view read
  // here is the one this scan follows.
  auto scanned = std::make_shared<const discover::Snapshot>(
      discover::SettleSnapshot(*snapshot(), DiscoverAll()));
  {
    std::lock_guard lock(mutex_);
    snapshot_ = scanned;
  }
  const discover::Snapshot& snapshot = *scanned;
  // Only this scan's skips are remembered: a source is logged again when its reason changes, and what is
  // kept is bounded by one scan (discovery bounds the sockets asked and the text kept of each).
  std::map<std::string, std::string> skips;
  for (const discover::Skipped& skipped : snapshot.skipped) {
    const auto before = reported_skips_.find(skipped.object);
    if (before == reported_skips_.end() || before->second != skipped.error.message) {
      NA_WARN_FIELDS((LogFields{.reason = skipped.error.message}),
                     "discovery: skipped " << skipped.object << ": " << skipped.error.message);
    }
    skips[skipped.object] = skipped.error.message;
  }
  reported_skips_ = std::move(skips);
  std::vector<DiscoveredQueue> queues;
  for (const discover::Controller& c : snapshot.controllers) {
    const std::string binary = c.pid != 0 ? ExecutableOf(options_.procfs_root, c.pid) : "";
    for (const discover::Queue& q : c.queues) {
      DiscoveredQueue found;
      found.controller = c.name;
      found.qid = q.qid;
      found.source = config::ToProto(c.source);
      found.key = q.key;
      found.eligible = q.eligible;
      found.ineligible_reason = q.reason_text;
      found.mode = q.mode;
      found.cpus = q.cpus;
      found.irq = q.vector && q.vector->kind != discover::VectorKind::kEventfd ? static_cast<int>(q.vector->irq) : -1;
      found.transport = c.transport.empty() ? "pcie" : c.transport;
      found.layer = c.layer;
      if (c.source == Source::kKernelNvme) {
        found.controller_id = state::StableControllerId(c.transport, c.address, c.subsysnqn, c.serial, c.cntlid);
        found.legacy_controller_id =
            state::LegacyStableControllerId(c.transport, c.address, c.subsysnqn, c.serial);
      }
      found.model = c.model;
      found.serial = c.serial;
      found.firmware = c.firmware;
      found.subsysnqn = c.subsysnqn;
      if (found.transport == "pcie") found.pci_address = c.address;
      found.pid = c.pid;
      found.binary = binary;
      found.lever_target = actuate::TargetFor(c, q);
      queues.push_back(std::move(found));
    }
  }
  return queues;
}

std::optional<RealLevers::ControllerLever> RealLevers::For(const std::string& name) const {
  const auto snapshot = discovery_.snapshot();
  const discover::Controller* controller = snapshot->Find(name);
  if (controller == nullptr) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto it = levers_.find(name);
  if (it != levers_.end() && it->second.identity == controller->Identity()) return it->second;
  const actuate::LeverFacts facts = actuate::ProbeLeverFacts(settings_, *controller, environment_);
  ControllerLever resolved;
  resolved.identity = controller->Identity();
  resolved.journal_identity = controller->source == Source::kKernelNvme
                                  ? state::KernelControllerIdentity(controller->transport, controller->address,
                                                             controller->subsysnqn, controller->serial)
                                  : state::ProcessIdentity(environment_.procfs_root, controller->pid);
  resolved.choice = actuate::ResolveLever(settings_, *controller, facts);
  resolved.lever = actuate::MakeLever(resolved.choice.kind, resolved.choice.dry_run, settings_, environment_);
  NA_INFO("lever for " << name << ": " << LeverKindName(resolved.choice.kind)
                       << (resolved.choice.dry_run ? " (dry run)" : "") << " (" << resolved.choice.why << ")");
  return levers_[name] = std::move(resolved);
}

std::optional<std::string> RealLevers::LeverNameFor(const DiscoveredQueue& queue) const {
  const auto lever = For(queue.controller);
  if (!lever || !lever->lever) return std::nullopt;
  return std::string(LeverKindName(lever->choice.kind));
}

engine::ControllerMode RealLevers::ModeFor(const DiscoveredQueue& queue, engine::ControllerMode mode) const {
  const auto lever = For(queue.controller);
  // Adaptive there would pretend to poll and judge interrupt windows as polling ones.
  if (lever && lever->choice.shadow_only && mode != engine::ControllerMode::kOff) return engine::ControllerMode::kShadow;
  const actuate::LeverRegistration* registered = lever ? actuate::FindLever(lever->choice.kind) : nullptr;
  if (registered == nullptr || mode != engine::ControllerMode::kAdaptive) return mode;
  return registered->traits.adaptive_as;  // what adaptive means is the lever's to say
}

bool RealLevers::Disruptive(const DiscoveredQueue& queue) const {
  const auto lever = For(queue.controller);
  if (!lever || !lever->lever || lever->lever->DryRun()) return false;
  const actuate::LeverRegistration* registered = actuate::FindLever(lever->choice.kind);
  return registered != nullptr && registered->traits.disruptive;
}

Result<LeverPlan> RealLevers::Plan(const DiscoveredQueue& queue, ReapMode mode) {
  const auto lever = For(queue.controller);
  if (!lever || !lever->lever) {
    return MakeError(ErrorCode::kNotFound, QueueName(queue.controller, queue.qid) + ": no longer present");
  }
  const actuate::LeverTarget& target = queue.lever_target;
  if (target.controller != queue.controller || target.qid != queue.qid) {
    return MakeError(ErrorCode::kInternal,
                     QueueName(queue.controller, queue.qid) + ": discovered without its lever target");
  }
  NA_ASSIGN_OR_RETURN(actuate::SwitchPlan planned, Reported(lever->lever->Plan(target, mode)));
  LeverPlan plan;
  plan.lever = std::string(LeverKindName(lever->choice.kind));
  // One journal entry per thing changed: the controller for a controller-wide lever, else the queue.
  plan.target = lever->lever->Scope() == actuate::LeverScope::kController ? queue.controller : target.ToString();
  plan.safe_value = planned.restore().ToJson();
  plan.applied_value = std::string(ReapModeName(mode));
  plan.dry_run = lever->lever->DryRun();
  plan.device_identity = lever->journal_identity;
  plan.changes = planned.changes();
  if (const auto& in_flight = planned.preview().in_flight; in_flight && !plan.dry_run) {
    const std::string& connection = in_flight->steps.front().object;
    plan.in_flight = LeverPlan::InFlight{connection.substr(0, connection.rfind(' ')), in_flight->steps.back().object,
                                         in_flight->ToJson()};
  }
  // The plan acts through its lever: kept with it, whatever the table of levers holds by then.
  plan.execute = [lever = lever->lever, change = std::make_shared<actuate::SwitchPlan>(std::move(planned)),
                  name = plan.lever]() -> Status {
    NA_ASSIGN_OR_RETURN(const actuate::Applied applied, Reported(change->Execute()));
    for (const auto& write : applied.writes) {
      NA_DEBUG("lever " << name << ": " << write.object << " <- " << write.value
                        << (write.performed ? "" : " (dry run)"));
    }
    return OkStatus();
  };
  return plan;
}

Status RealLevers::Restore(const v1::JournalEntry& entry) {
  NA_ASSIGN_OR_RETURN(const actuate::RestorePoint point, state::RestorePointOf(entry));
  // The controller's own lever when it is of that kind and real (it forgets its first values), else a fresh
  // real one: an entry is a real change, whatever this run's dry-run setting.
  if (const auto current = For(entry.controller()); current && current->lever &&
                                                          current->lever->Kind() == point.lever &&
                                                          !current->lever->DryRun()) {
    NA_RETURN_IF_ERROR(Reported(current->lever->Restore(point)));
    return OkStatus();
  }
  return state::RestoreWithFreshLever(entry, settings_, environment_);
}

}  // namespace nvmeadapt::daemon
