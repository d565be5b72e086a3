// SPDX-License-Identifier: Apache-2.0
// The words every part of nvme-adapt names queues and modes with: the reaping mode, where a queue's completions
// come from (Source), the key the collectors and the BPF side know a queue by, how a queue is named in text,
// and the levers of DESIGN.md section 5. One table per enum (common/enum_table.h) gives its names, its parsing
// and its API number; the engine, the collectors, discovery, the levers, the config layer and uvnvme all use
// these. No I/O here, and no protobuf header.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/enum_table.h"

namespace nvmeadapt {

// How a queue's completions are reaped. The values are the BPF side's NA_MODE_* and the uvnvme USDT `mode`
// argument.
enum class ReapMode : uint8_t { kInterrupt = 0, kPoll = 1 };
inline constexpr EnumTable<ReapMode, 3> kReapModes({{ReapMode::kInterrupt, "interrupt", 1},
                                                    {ReapMode::kPoll, "poll", 2},
                                                    {ReapMode::kInterrupt, "int"}},
                                                   "interrupt");
constexpr std::string_view ReapModeName(ReapMode mode) { return kReapModes.Name(mode); }
constexpr std::optional<ReapMode> ParseReapMode(std::string_view name) { return kReapModes.Parse(name); }

// Where a queue's completions are seen. The values are the BPF side's NA_SOURCE_* and the API's Source.
// kNvmet: an NVMe target's queue (nvmet), ctrl = the target controller's cntlid.
enum class Source : uint8_t { kKernelNvme = 1, kBlock = 2, kUvnvme = 3, kSpdk = 4, kNvmet = 5 };
inline constexpr EnumTable<Source, 5> kSources({{Source::kKernelNvme, "kernel", 1},
                                                {Source::kBlock, "block", 2},
                                                {Source::kUvnvme, "uvnvme", 3},
                                                {Source::kSpdk, "spdk", 4},
                                                {Source::kNvmet, "nvmet", 5}},
                                               "unknown");
constexpr std::string_view SourceName(Source source) { return kSources.Name(source); }
constexpr std::optional<Source> ParseSource(std::string_view name) { return kSources.Parse(name); }

// A queue in text is "<owner>:q<qid>": the API, the CLI, the policy book and the collectors' keys all write it so.
inline constexpr std::string_view kQueueNameMark = ":q";
std::string QueueName(std::string_view owner, uint32_t qid);  // ("nvme0", 1) -> "nvme0:q1"
// An NVMe target controller (nvmet) by its cntlid, "nvmet:c1": the owner of its queues' keys, and the
// controller discovery lists them under.
std::string NvmetControllerName(uint32_t cntlid);
// How lever targets and restore points name a queue, "nvme0 q1": journals on disk hold it since the first
// release, and a restore compares it, so it stays.
std::string QueueObjectName(std::string_view controller, uint32_t qid);

// The key the collectors and the BPF side know a queue by.
struct QueueKey {
  Source source = Source::kKernelNvme;
  uint32_t ctrl = 0;  // kernel: nvme instance; block: dev_t; uvnvme: controller index; spdk: high 32 bits
  uint32_t qid = 0;   // NVMe queue id (block: hctx + 1, 0 = the whole device); spdk: low 32 bits of the qpair
                      // pointer
  uint32_t pid = 0;   // userspace driver process; 0 for kernel queues
  auto operator<=>(const QueueKey&) const = default;
  std::string ToString() const;  // "kernel:nvme0:q1", "block:7:0:q1", "uvnvme:1234:c0:q2", "spdk:1234:0x...",
                                 // "nvmet:c1:q2"
};

struct QueueKeyHash {
  size_t operator()(const QueueKey& k) const noexcept;
};

// The levers of DESIGN.md section 5; the values are the API's LeverKind. A lever is its row here and its own
// .cc, which states everything else about it (agent/actuate/lever_registry.h).
enum class LeverKind : uint8_t {
  kAuto,               // not a lever: "the default of the controller's source" (agent/actuate/resolver.h)
  kAdaptivePollSysfs,  // the adaptive-poll sysfs attribute of the kernel patch
  kGsim,               // GSIM: /proc/irq/N/soft_moderation or allow_sw_moderation
  kCoalescing,         // NVMe Set Features 08h (Interrupt Coalescing) and 09h (Interrupt Vector Configuration)
  kPollQueuesReset,    // nvme poll_queues module parameter + reset_controller
  kUvnvmeSocket,       // the userspace driver's control socket
  kDryRun,             // records what would be done
  kTcpReconnect,       // an NVMe/TCP host: disconnect and connect again with nr_poll_queues (reconnect_lever.h)
  kAdaptivePollQueue,  // our nvme-pci module's per-queue mode file (kmod/README.md)
  kNvmetPollTask,      // an NVMe target's queues: our nvmet's polling-queue task, per namespace (kmod/nvmet)
};
inline constexpr EnumTable<LeverKind, 10> kLeverKinds({{LeverKind::kAuto, "auto", 0},
                                                       {LeverKind::kAdaptivePollSysfs, "adaptive_poll_sysfs", 1},
                                                       {LeverKind::kGsim, "gsim", 2},
                                                       {LeverKind::kCoalescing, "coalescing", 3},
                                                       {LeverKind::kPollQueuesReset, "poll_queues_reset", 4},
                                                       {LeverKind::kUvnvmeSocket, "uvnvme_socket", 5},
                                                       {LeverKind::kDryRun, "dry_run", 6},
                                                       {LeverKind::kTcpReconnect, "tcp_reconnect", 7},
                                                       {LeverKind::kAdaptivePollQueue, "adaptive_poll_queue", 8},
                                                       {LeverKind::kNvmetPollTask, "nvmet_poll_task", 9}},
                                                      "auto");
constexpr std::string_view LeverKindName(LeverKind kind) { return kLeverKinds.Name(kind); }
constexpr std::optional<LeverKind> ParseLeverKind(std::string_view name) { return kLeverKinds.Parse(name); }
// The lever a setting names; nullopt for kAuto, which names none (the default of the controller's source).
constexpr std::optional<LeverKind> NamedLever(LeverKind kind) {
  return kind == LeverKind::kAuto ? std::nullopt : std::optional<LeverKind>(kind);
}

}  // namespace nvmeadapt
