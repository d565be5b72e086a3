// SPDX-License-Identifier: Apache-2.0
// Levers are found through one registry, as Envoy finds its extensions' factories (issue 33, item 4): each
// lever's .cc states once, beside its code, what it is (risk, what a controller's adaptive mode means for it,
// whether a switch is disruptive, which controllers it serves, its place in AUTO's order and how the machine
// shows it offers it) and how it is built from the settings. The resolver, the daemon, the journal and the
// report ask the registry instead of switching over LeverKind, so a new lever is its own .cc, its CMake line
// and its row in common/vocabulary.h (with its API value in config.proto, for the config to name it).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/actuate/fabrics_connector.h"
#include "agent/actuate/lever.h"
#include "agent/actuate/nvme_admin.h"
#include "agent/actuate/nvmet_poll_votes.h"
#include "agent/actuate/poll_queues_module.h"
#include "agent/config/levers_config.h"
#include "agent/discover/types.h"
#include "agent/engine/types.h"
#include "common/enum_table.h"
#include "common/vocabulary.h"

namespace nvmeadapt::actuate {

// What one switch of a lever disturbs besides the queue's reaping mode (the report's risk class).
enum class LeverRisk : uint8_t { kNoLever, kNothingElse, kResetsController, kReconnectsHost, kDriverSpecific };
inline constexpr EnumTable<LeverRisk, 5> kLeverRisks({{LeverRisk::kNoLever, "no_lever"},
                                                      {LeverRisk::kNothingElse, "changes_nothing_else"},
                                                      {LeverRisk::kResetsController, "resets_controller"},
                                                      {LeverRisk::kReconnectsHost, "reconnects_host"},
                                                      {LeverRisk::kDriverSpecific, "driver_specific"}},
                                                     "no_lever");

// Where the levers act, and what they share.
struct LeverEnvironment {
  std::string sysfs_root = "/sys";
  std::string procfs_root = "/proc";
  std::string dev_root = "/dev";
  std::shared_ptr<AdminDeviceOpener> admin;  // SystemAdminDeviceOpener() when empty
  std::shared_ptr<FabricsConnector> fabrics;  // the reconnect lever's; LibnvmeFabricsConnector() when empty
  // The nvme module's poll_queues, one for the levers of every controller built with this environment (and
  // its copies): one restore point for the module.
  std::shared_ptr<PollQueuesModule> poll_queues_module = std::make_shared<PollQueuesModule>();
  // The nvmet namespaces' pqt_enable, one for the levers of every target controller: a namespace serves all
  // the controllers of its subsystem (nvmet_poll_votes.h).
  std::shared_ptr<NvmetPollVotes> nvmet_poll_votes = std::make_shared<NvmetPollVotes>();
};

// The sources whose controllers a lever switches.
class SourceSet {
 public:
  constexpr SourceSet(std::initializer_list<Source> sources = {}) {
    for (Source source : sources) bits_ |= Bit(source);
  }
  constexpr bool Has(Source source) const { return (bits_ & Bit(source)) != 0; }
  // "kernel", "kernel and uvnvme": for messages.
  std::string Names() const;

 private:
  static constexpr uint32_t Bit(Source source) { return 1u << static_cast<uint32_t>(source); }
  uint32_t bits_ = 0;
};

// Whether this machine offers a lever for `controller` (its attribute, its kernel feature): AUTO passes over a
// lever it does not offer.
using LeverOffered = bool (*)(const config::LeverSettings& settings, const discover::Controller& controller,
                              const LeverEnvironment& environment);

// What a lever is, stated once by the lever.
struct LeverTraits {
  LeverKind kind{};
  LeverRisk risk = LeverRisk::kDriverSpecific;
  // A controller's adaptive mode for this lever. A controller-wide lever cannot follow per-queue decisions:
  // the patch's attribute turns the kernel's own adaptive polling on (kPoll); a reset or a reconnect is never
  // the engine's call (kOff). Per-queue and per-vector levers adapt (kAdaptive).
  engine::ControllerMode adaptive_as = engine::ControllerMode::kAdaptive;
  // A switch resets or reconnects the controller: spaced by --min-disruptive-interval.
  bool disruptive = false;
  // The controllers it switches: their sources; among the kernel's, NVMe/TCP hosts only where it says so (a
  // host's queues are its connection's, which no lever of the PCIe controllers reaches).
  SourceSet serves;
  bool serves_tcp_hosts = false;
  // Its place in AUTO's order among the levers of a source, lower first; 0: AUTO never picks it (it disrupts
  // the controller, or it is no lever). Gaps leave room for a lever between two.
  int auto_rank = 0;
  LeverOffered offered = nullptr;  // nullptr: offered wherever its source is
  std::string_view auto_why;       // why AUTO picked it, after "<source> default: "
  // The stand-in where no lever serves a controller: it records what would be done and writes nothing.
  bool stands_in = false;
  // The connection digests levers.controllers[] declares (hdr_digest, data_digest) are its settings.
  bool takes_digests = false;
  // Its restore value holds secrets (a connection's arguments): a report never shows it.
  bool secret_restore_value = false;
};

using LeverFactory = std::unique_ptr<PlannedLever> (*)(bool dry_run, const config::LeverSettings& settings,
                                                        const LeverEnvironment& environment);

struct LeverRegistration {
  LeverTraits traits;
  LeverFactory make = nullptr;
};

// A lever registers itself at static initialization, in its own .cc:
//   const LeverRegistrar kRegistered({{.kind = LeverKind::kX, .risk = LeverRisk::kNothingElse,
//                                      .serves = {Source::kKernelNvme}}, &MakeX});
// (the library is linked whole, agent/actuate/CMakeLists.txt, so no registration is dropped). Registering a
// kind twice aborts at start: a lever is stated once.
class LeverRegistrar {
 public:
  explicit LeverRegistrar(LeverRegistration registration);
};

// nullptr: no lever of that kind is registered (kAuto is none).
const LeverRegistration* FindLever(LeverKind kind);
// The kinds registered, in LeverKind order.
std::vector<LeverKind> RegisteredLevers();

// A lever of `kind` configured from the settings, in dry run when `dry_run`; the stand-in for a kind that
// has none (kAuto).
std::unique_ptr<PlannedLever> MakeLever(LeverKind kind, bool dry_run, const config::LeverSettings& settings,
                                        const LeverEnvironment& environment);

// The levers AUTO may pick for a controller of `source` (a tcp host's: `tcp_host`), in its order.
std::vector<const LeverRegistration*> AutoOrder(Source source, bool tcp_host);
// The stand-in where no lever serves (LeverTraits::stands_in).
const LeverRegistration& StandInLever();
// The names of the levers whose traits have `flag` set, "a, b": for messages.
std::string LeverNames(bool LeverTraits::*flag);

// By the lever's name (LeverKindName): "poll_queues_reset" resets the controller, and so on; a name no
// registered lever has is kDriverSpecific.
LeverRisk LeverRiskOf(std::string_view lever);
// By the lever's name: whether its restore values hold secrets (LeverTraits::secret_restore_value).
bool RestoreValueIsSecret(std::string_view lever);

}  // namespace nvmeadapt::actuate
