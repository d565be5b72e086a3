// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/resolver.h"

#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

bool TcpHost(const discover::Controller& controller) {
  return controller.source == Source::kKernelNvme && controller.transport == "tcp";
}

// The source's own choice and its field: levers.kernel_lever, levers.uvnvme_lever.
struct SourceChoice {
  std::optional<LeverKind> lever;
  std::string_view field;
};
SourceChoice SourceDefault(const config::LeverSettings& settings, Source source) {
  switch (source) {
    case Source::kKernelNvme:
      return {settings.kernel_lever, "levers.kernel_lever"};
    case Source::kUvnvme:
      return {settings.uvnvme_lever, "levers.uvnvme_lever"};
    default:
      return {};
  }
}

// Why nothing serves the controller.
std::string NoLever(const discover::Controller& controller, const LeverFacts& facts) {
  if (TcpHost(controller)) {
    const std::string levers = LeverNames(&LeverTraits::serves_tcp_hosts);
    return "tcp host: shadow decisions only (the reconnect lever " + levers +
           " switches it when levers.controllers names it: it disconnects)";
  }
  if (controller.source == Source::kNvmet) {
    const std::string shadow = "nvmet target queue: shadow decisions only (";
    if (!facts.nvmet_polling_task) {
      return shadow + "no lever on this kernel: its nvmet has no polling-queue task, /sys/module/nvmet/pqt; "
                      "kmod/nvmet builds ours)";
    }
    if (controller.subsysnqn.empty()) {
      return shadow + "the polling-queue task is loaded, but which subsystem " + controller.name +
             " serves is not known: several exported subsystems' cntlid ranges hold its cntlid; give each its "
             "own attr_cntlid_min/_max)";
    }
    return shadow + "the polling-queue task is loaded, but it serves no namespace of " + controller.subsysnqn +
           ": none is enabled on a block device with a poll queue, queue/io_poll 1)";
  }
  // Block devices and SPDK are observed only: no lever switches them.
  return "no lever for " + controller.name + "'s source: shadow decisions only";
}

const LeverTraits& TraitsOf(LeverKind kind) {
  const LeverRegistration* found = FindLever(kind);
  return (found != nullptr ? *found : StandInLever()).traits;
}

}  // namespace

LeverFacts ProbeLeverFacts(const config::LeverSettings& settings, const discover::Controller& controller,
                           const LeverEnvironment& environment) {
  LeverFacts facts;
  if (controller.source == Source::kNvmet) {
    facts.nvmet_polling_task =
        discover::IsDirectory(discover::JoinPath(environment.sysfs_root, "module/nvmet/pqt"));
  }
  for (const LeverRegistration* lever : AutoOrder(controller.source, TcpHost(controller))) {
    const LeverOffered offered = lever->traits.offered;
    if (offered != nullptr && offered(settings, controller, environment)) facts.offered.insert(lever->traits.kind);
  }
  return facts;
}

LeverChoice ResolveLever(const config::LeverSettings& settings, const discover::Controller& controller,
                         const LeverFacts& facts) {
  const auto chosen = [&settings](LeverKind kind, std::string why, bool shadow_only = false) {
    const bool records_only = TraitsOf(kind).stands_in;
    LeverChoice choice{kind, settings.dry_run || records_only, std::move(why), shadow_only};
    if (settings.dry_run && !records_only) choice.why += " (levers.dry_run)";
    return choice;
  };
  for (size_t i = 0; i < settings.controllers.size(); ++i) {
    const auto& entry = settings.controllers[i];
    if (entry.controller == controller.name && entry.lever) {
      return chosen(*entry.lever, "levers.controllers[" + std::to_string(i) + "]");
    }
  }
  const bool tcp_host = TcpHost(controller);
  const SourceChoice source = SourceDefault(settings, controller.source);
  // levers.kernel_lever serves the PCIe controllers: a tcp host takes it only when it is a lever of hosts.
  if (source.lever && (!tcp_host || TraitsOf(*source.lever).serves_tcp_hosts)) {
    return chosen(*source.lever, std::string(source.field));
  }
  for (const LeverRegistration* lever : AutoOrder(controller.source, tcp_host)) {
    if (lever->traits.offered != nullptr && !facts.Offers(lever->traits.kind)) continue;
    return chosen(lever->traits.kind,
                  std::string(SourceName(controller.source)) + " default: " + std::string(lever->traits.auto_why));
  }
  return chosen(StandInLever().traits.kind, NoLever(controller, facts), /*shadow_only=*/true);
}

Status CheckLeverChoices(const config::LeverSettings& settings) {
  const auto refuse = [](const std::string& field, const std::string& why) {
    return MakeError(ErrorCode::kInvalidArgument, "levers." + field + ": " + why);
  };
  for (const auto& [lever, source, field] : {std::tuple{settings.kernel_lever, Source::kKernelNvme, "kernel_lever"},
                                             std::tuple{settings.uvnvme_lever, Source::kUvnvme, "uvnvme_lever"}}) {
    if (!lever || TraitsOf(*lever).serves.Has(source)) continue;
    return refuse(field, std::string(LeverKindName(*lever)) + " serves " + TraitsOf(*lever).serves.Names() +
                             " controllers only");
  }
  for (size_t i = 0; i < settings.controllers.size(); ++i) {
    const config::ControllerLeverSetting& entry = settings.controllers[i];
    const std::string field = "controllers[" + std::to_string(i) + "]";
    if (entry.lever && !TraitsOf(*entry.lever).serves.Has(entry.source)) {
      return refuse(field + ".lever", std::string(LeverKindName(*entry.lever)) + " cannot serve " + entry.controller);
    }
    if (entry.hdr_digest && !(entry.lever && TraitsOf(*entry.lever).takes_digests)) {
      return refuse(field + ".hdr_digest",
                    "digests are declared for the " + LeverNames(&LeverTraits::takes_digests) + " lever only");
    }
  }
  return OkStatus();
}

}  // namespace nvmeadapt::actuate
