#include "agent/actuate/lever_registry.h"

#include <cstdio>
#include <cstdlib>
#include <map>

namespace nvmeadapt::actuate {
namespace {

// Built on first use, so a registrar in any translation unit finds it whatever the order of static
// initialization.
std::map<LeverKind, LeverRegistration>& Registry() {
  static std::map<LeverKind, LeverRegistration> registry;
  return registry;
}

}  // namespace

LeverRegistrar::LeverRegistrar(LeverRegistration registration) {
  const LeverKind kind = registration.traits.kind;
  if (kind == LeverKind::kAuto || registration.make == nullptr || !Registry().emplace(kind, registration).second) {
    // Before main: the log may not be set up yet.
    std::fprintf(stderr, "lever %.*s registered twice, or as auto, or without a factory\n",
                 static_cast<int>(LeverKindName(kind).size()), LeverKindName(kind).data());
    std::abort();
  }
}

const LeverRegistration* FindLever(LeverKind kind) {
  const auto it = Registry().find(kind);
  return it == Registry().end() ? nullptr : &it->second;
}

std::vector<LeverKind> RegisteredLevers() {
  std::vector<LeverKind> kinds;
  for (const auto& [kind, registration] : Registry()) kinds.push_back(kind);
  return kinds;
}

std::unique_ptr<PlannedLever> MakeLever(LeverKind kind, bool dry_run, const config::LeverSettings& settings,
                                        const LeverEnvironment& environment) {
  const LeverRegistration* found = FindLever(kind);
  if (found == nullptr) found = FindLever(LeverKind::kDryRun);
  return found->make(dry_run, settings, environment);
}

LeverRisk LeverRiskOf(std::string_view lever) {
  const std::optional<LeverKind> kind = ParseLeverKind(lever);
  const LeverRegistration* found = kind ? FindLever(*kind) : nullptr;
  return found == nullptr ? LeverRisk::kDriverSpecific : found->traits.risk;
}

}  // namespace nvmeadapt::actuate
