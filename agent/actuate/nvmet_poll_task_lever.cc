// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/nvmet_poll_task_lever.h"

#include <algorithm>
#include <cerrno>

#include "agent/actuate/lever_registry.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

using discover::JoinPath;

bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// `object` is <subsystem>/namespaces/<nsid>/pqt_enable of the subsystem whose namespaces directory is `namespaces`.
bool IsPqtEnableUnder(const std::string& namespaces, const std::string& object) {
  if (object.rfind(namespaces + "/", 0) != 0) return false;
  const std::string rest = object.substr(namespaces.size() + 1);
  const size_t slash = rest.find('/');
  return slash != std::string::npos && AllDigits(std::string_view(rest).substr(0, slash)) &&
         rest.substr(slash) == "/pqt_enable";
}

std::string Parent(const std::string& path) { return path.substr(0, path.rfind('/')); }

// Why none of a subsystem's namespaces is served, one "nsid: why" each.
std::string WhyNoneServed(const std::vector<NvmetNamespace>& namespaces) {
  std::string why;
  for (const NvmetNamespace& ns : namespaces) {
    why += why.empty() ? "" : "; ";
    why += ns.dir.substr(ns.dir.rfind('/') + 1) + ": ";
    if (!ns.enabled) {
      why += "not enabled";
    } else if (ns.disk.empty()) {
      why += "no device_path";
    } else {
      why += ns.disk + " has no poll queue (queue/io_poll not 1), or is no block device";
    }
  }
  return why.empty() ? "no namespace" : why;
}

}  // namespace

std::string NvmetSubsystemDir(const std::string& sysfs_root, const std::string& nqn) {
  return JoinPath(JoinPath(sysfs_root, "kernel/config/nvmet/subsystems"), nqn);
}

Result<std::vector<NvmetNamespace>> ReadNvmetNamespaces(const std::string& sysfs_root, const std::string& nqn) {
  if (nqn.empty() || nqn == "." || nqn == ".." || nqn.find('/') != std::string::npos) {
    return MakeError(ErrorCode::kInvalidArgument, "not an nvmet subsystem name: '" + nqn + "'");
  }
  const std::string subsystem = NvmetSubsystemDir(sysfs_root, nqn);
  if (!discover::IsDirectory(subsystem)) return MakeError(ErrorCode::kNotFound, subsystem + ": not found");
  NA_ASSIGN_OR_RETURN(std::vector<std::string> names, discover::ListDir(JoinPath(subsystem, "namespaces")));
  std::vector<std::pair<uint32_t, std::string>> by_nsid;
  for (const std::string& name : names) {
    uint32_t nsid = 0;
    if (AllDigits(name) && discover::ParseU32(name, &nsid)) by_nsid.emplace_back(nsid, name);
  }
  std::sort(by_nsid.begin(), by_nsid.end());
  std::vector<NvmetNamespace> namespaces;
  for (const auto& [nsid, name] : by_nsid) {
    NvmetNamespace ns;
    ns.dir = JoinPath(JoinPath(subsystem, "namespaces"), name);
    ns.pqt_enable = JoinPath(ns.dir, "pqt_enable");
    ns.has_task = discover::PathExists(ns.pqt_enable);
    const auto enable = discover::ReadTrimmed(JoinPath(ns.dir, "enable"));
    ns.enabled = enable && *enable == "1";
    if (const auto device = discover::ReadTrimmed(JoinPath(ns.dir, "device_path")); device && !device->empty()) {
      ns.disk = device->substr(device->rfind('/') + 1);
      const auto io_poll = discover::ReadTrimmed(JoinPath(sysfs_root, "block/" + ns.disk + "/queue/io_poll"));
      ns.disk_polls = !ns.disk.empty() && io_poll && *io_poll == "1";
    }
    namespaces.push_back(std::move(ns));
  }
  return namespaces;
}

NvmetPollTaskLever::NvmetPollTaskLever(NvmetPollTaskOptions options)
    : FileLever(LeverKind::kNvmetPollTask, LeverScope::kController, options.dry_run, options.sysfs_root),
      options_(std::move(options)) {
  if (!options_.votes) options_.votes = std::make_shared<NvmetPollVotes>();
}

Result<std::vector<NvmetNamespace>> NvmetPollTaskLever::Served(const LeverTarget& target) const {
  if (target.subsysnqn.empty()) {
    return Fail(ErrorCode::kUnsupported, target.controller,
                target.controller + ": which subsystem it serves is not known (several exported subsystems' "
                                    "cntlid ranges hold its cntlid: give each its own attr_cntlid_min/_max)");
  }
  const std::string subsystem = NvmetSubsystemDir(options_.sysfs_root, target.subsysnqn);
  auto namespaces = ReadNvmetNamespaces(options_.sysfs_root, target.subsysnqn);
  if (!namespaces) return Fail(subsystem, namespaces.error());
  if (std::none_of(namespaces->begin(), namespaces->end(), [](const NvmetNamespace& ns) { return ns.has_task; })) {
    return Fail(ErrorCode::kUnsupported, subsystem,
                subsystem + "/namespaces/*/pqt_enable: no such attribute (the stock nvmet: it has no polling-queue "
                            "task; kmod/nvmet builds ours)");
  }
  std::vector<NvmetNamespace> served;
  std::copy_if(namespaces->begin(), namespaces->end(), std::back_inserter(served),
               [](const NvmetNamespace& ns) { return ns.Served(); });
  if (served.empty()) {
    return Fail(ErrorCode::kUnsupported, subsystem + "/namespaces",
                subsystem + "/namespaces: no namespace the polling-queue task can serve (" +
                    WhyNoneServed(*namespaces) + ")");
  }
  return served;
}

Status NvmetPollTaskLever::Write(const std::string& path, const std::string& value) const {
  Status written = options_.write(options_.sysfs_root, path, value);
  if (written) return OkStatus();
  const int err = written.error().sys_errno;
  std::string why;
  if (err == EOPNOTSUPP) {
    why = path + ": polled submission refused (EOPNOTSUPP): the backing device has no poll queue (queue/io_poll 0), "
                 "or the namespace is file-backed or buffered (dmesg names it)";
  } else if (err == EINVAL) {
    why = path + ": refused (EINVAL): the namespace is not enabled";
  } else {
    return Fail(path, written.error());
  }
  Error refused = Fail(err == EOPNOTSUPP ? ErrorCode::kUnsupported : ErrorCode::kRefused, path, why);
  refused.sys_errno = err;
  return refused;
}

Result<PlannedLever::StepPlan> NvmetPollTaskLever::MakePlan(const LeverTarget& target, ReapMode mode) {
  NA_ASSIGN_OR_RETURN(const std::vector<NvmetNamespace> served, Served(target));
  std::vector<std::string> paths;
  for (const NvmetNamespace& ns : served) paths.push_back(ns.pqt_enable);
  options_.votes->Vote(target.ToString(), paths, mode == ReapMode::kPoll);
  StepPlan plan;
  for (const std::string& path : paths) {
    NA_ASSIGN_OR_RETURN(const std::string current, ReadValue(path, "no polling-queue task"));
    plan.found.push_back({path, options_.votes->SafeValue(path, current)});
    const std::string wanted = options_.votes->WantedValue(path);
    if (current == wanted) continue;
    plan.steps.push_back(Step{path, wanted, [this, path, current]() -> Status {
                                return options_.votes->WriteWanted(
                                    path, current, [&](const std::string& value) { return Write(path, value); });
                              }});
  }
  return plan;
}

Result<std::vector<PlannedLever::Step>> NvmetPollTaskLever::MakeRestore(const RestorePoint& point) {
  const std::string& nqn = point.target.subsysnqn;
  const std::string namespaces = JoinPath(NvmetSubsystemDir(options_.sysfs_root, nqn), "namespaces");
  std::vector<Step> steps;
  bool any_left = false;
  for (const RestoreStep& step : point.steps) {
    if (nqn.empty() || nqn.find('/') != std::string::npos || !IsPqtEnableUnder(namespaces, step.object) ||
        (step.value != "0" && step.value != "1")) {
      return Fail(ErrorCode::kIo, step.object,
                  "restore point names " + step.object + " = '" + step.value + "', not a pqt_enable of " +
                      point.target.ToString() + "'s subsystem '" + nqn + "'");
    }
    options_.votes->Restored(step.object);  // a restore ends the agent's decisions for the namespace
    const std::string dir = Parent(step.object);
    if (!discover::IsDirectory(dir)) continue;  // the namespace went, and its polled submission with it
    any_left = true;
    NA_ASSIGN_OR_RETURN(const std::string current, ReadValue(step.object, "no polling-queue task"));
    if (current == step.value) continue;
    // Disabling a namespace turned polled submission off, and enabling it again leaves it off: the value
    // found went with the namespace's last enable, and the kernel refuses 1 on a namespace not enabled.
    if (const auto enable = discover::ReadTrimmed(JoinPath(dir, "enable")); step.value == "1" && !(enable && *enable == "1")) {
      continue;
    }
    steps.push_back(Step{step.object, step.value, [this, path = step.object, value = step.value]() -> Status {
                           return Write(path, value);
                         }});
  }
  if (!point.steps.empty() && !any_left) {
    return Fail(ErrorCode::kNotFound, namespaces, namespaces + ": the namespaces it changed are gone");
  }
  return steps;
}

namespace {

std::unique_ptr<PlannedLever> MakeNvmetPollTask(bool dry_run, const config::LeverSettings&,
                                                const LeverEnvironment& environment) {
  return std::make_unique<NvmetPollTaskLever>(
      NvmetPollTaskOptions{environment.sysfs_root, dry_run, environment.nvmet_poll_votes});
}

bool TaskServesASubsystemNamespace(const config::LeverSettings&, const discover::Controller& controller,
                                   const LeverEnvironment& environment) {
  if (controller.source != Source::kNvmet || controller.subsysnqn.empty()) return false;
  const auto namespaces = ReadNvmetNamespaces(environment.sysfs_root, controller.subsysnqn);
  return namespaces && std::any_of(namespaces->begin(), namespaces->end(),
                                   [](const NvmetNamespace& ns) { return ns.Served(); });
}

// A switch drains the namespace's polled bios and leaves the host's connection, its queues and configfs as
// they are (kmod/nvmet/README.md): nothing else changes. The engine decides per target queue, and each
// decision is the queue's vote (nvmet_poll_votes.h): adaptive stays adaptive.
const LeverRegistrar kRegistered({{.kind = LeverKind::kNvmetPollTask, .risk = LeverRisk::kNothingElse,
                                   .adaptive_as = engine::ControllerMode::kAdaptive, .serves = {Source::kNvmet},
                                   .auto_rank = 10, .offered = &TaskServesASubsystemNamespace,
                                   .auto_why = "our nvmet's polling-queue task serves a namespace of its subsystem"},
                                  &MakeNvmetPollTask});

}  // namespace

}  // namespace nvmeadapt::actuate
