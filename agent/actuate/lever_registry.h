// Levers are found through one registry, as Envoy finds its extensions' factories (issue 33, item 4): each
// lever's .cc states once, beside its code, what it is (risk, what a controller's adaptive mode means for it,
// whether a switch is disruptive) and how it is built from the settings. The resolver, the daemon and the
// report ask the registry instead of switching over LeverKind, so a new lever is its own .cc, its LeverKind
// row (common/vocabulary.h) and its API value (config.proto).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/actuate/fabrics_connector.h"
#include "agent/actuate/lever.h"
#include "agent/actuate/nvme_admin.h"
#include "agent/actuate/poll_queues_module.h"
#include "agent/config/levers_config.h"
#include "agent/engine/types.h"
#include "common/enum_table.h"

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
};

// What a lever is, stated once by the lever.
struct LeverTraits {
  LeverKind kind = LeverKind::kDryRun;
  LeverRisk risk = LeverRisk::kDriverSpecific;
  // A controller's adaptive mode for this lever. A controller-wide lever cannot follow per-queue decisions:
  // the patch's attribute turns the kernel's own adaptive polling on (kPoll); a reset or a reconnect is never
  // the engine's call (kOff). Per-queue and per-vector levers adapt (kAdaptive).
  engine::ControllerMode adaptive_as = engine::ControllerMode::kAdaptive;
  // A switch resets or reconnects the controller: spaced by --min-disruptive-interval.
  bool disruptive = false;
};

using LeverFactory = std::unique_ptr<PlannedLever> (*)(bool dry_run, const config::LeverSettings& settings,
                                                        const LeverEnvironment& environment);

struct LeverRegistration {
  LeverTraits traits;
  LeverFactory make = nullptr;
};

// A lever registers itself at static initialization, in its own .cc:
//   const LeverRegistrar kRegistered({{LeverKind::kX, LeverRisk::kNothingElse}, &MakeX});
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

// A lever of `kind` configured from the settings, in dry run when `dry_run`; the dry-run lever for a kind
// that has none (kAuto).
std::unique_ptr<PlannedLever> MakeLever(LeverKind kind, bool dry_run, const config::LeverSettings& settings,
                                        const LeverEnvironment& environment);

// By the lever's name (LeverKindName): "poll_queues_reset" resets the controller, and so on; a name no
// registered lever has is kDriverSpecific.
LeverRisk LeverRiskOf(std::string_view lever);

}  // namespace nvmeadapt::actuate
