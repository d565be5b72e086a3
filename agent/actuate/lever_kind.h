// The levers of DESIGN.md section 5 by name. Header-only: the config module names levers too.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace nvmeadapt::actuate {

enum class LeverKind : uint8_t {
  kAuto,               // not a lever: "the default of the controller's source" (resolver.h)
  kAdaptivePollSysfs,  // the adaptive-poll sysfs attribute of the kernel patch
  kGsim,               // GSIM: /proc/irq/N/soft_moderation or allow_sw_moderation
  kCoalescing,         // NVMe Set Features 08h (Interrupt Coalescing) and 09h (Interrupt Vector Configuration)
  kPollQueuesReset,    // nvme poll_queues module parameter + reset_controller
  kUvnvmeSocket,       // the userspace driver's control socket
  kDryRun,             // records what would be done
  kTcpReconnect,       // an NVMe/TCP host: disconnect and connect again with nr_poll_queues (reconnect_lever.h)
};

// What one call of a lever changes.
enum class LeverScope : uint8_t {
  kController,  // the whole controller: call once per controller with the controller's mode
  kVector,      // one interrupt vector (one queue when the vector is dedicated)
  kQueue,       // one queue
  kAny,         // dry run: whatever it is given
};

constexpr std::string_view LeverKindName(LeverKind kind) {
  switch (kind) {
    case LeverKind::kAuto: return "auto";
    case LeverKind::kAdaptivePollSysfs: return "adaptive_poll_sysfs";
    case LeverKind::kGsim: return "gsim";
    case LeverKind::kCoalescing: return "coalescing";
    case LeverKind::kPollQueuesReset: return "poll_queues_reset";
    case LeverKind::kUvnvmeSocket: return "uvnvme_socket";
    case LeverKind::kDryRun: return "dry_run";
    case LeverKind::kTcpReconnect: return "tcp_reconnect";
  }
  return "auto";
}

constexpr std::optional<LeverKind> ParseLeverKind(std::string_view name) {
  for (LeverKind kind : {LeverKind::kAuto, LeverKind::kAdaptivePollSysfs, LeverKind::kGsim, LeverKind::kCoalescing,
                         LeverKind::kPollQueuesReset, LeverKind::kUvnvmeSocket, LeverKind::kDryRun, LeverKind::kTcpReconnect}) {
    if (LeverKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

constexpr std::string_view LeverScopeName(LeverScope scope) {
  switch (scope) {
    case LeverScope::kController: return "controller";
    case LeverScope::kVector: return "vector";
    case LeverScope::kQueue: return "queue";
    case LeverScope::kAny: return "any";
  }
  return "any";
}

}  // namespace nvmeadapt::actuate
