// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/lever_registry.h"

#include <algorithm>
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

std::string SourceSet::Names() const {
  std::string out;
  for (const auto& row : kSources) {
    if (!Has(row.value)) continue;
    if (!out.empty()) out += " and ";
    out += row.name;
  }
  return out;
}

LeverRegistrar::LeverRegistrar(LeverRegistration registration) {
  const LeverKind kind = registration.traits.kind;
  const bool second_stand_in =
      registration.traits.stands_in &&
      std::any_of(Registry().begin(), Registry().end(), [](const auto& other) { return other.second.traits.stands_in; });
  if (!NamedLever(kind) || registration.make == nullptr || second_stand_in ||
      !Registry().emplace(kind, registration).second) {
    // Before main: the log may not be set up yet.
    std::fprintf(stderr, "lever %.*s registered twice, or as auto, or without a factory, or as a second stand-in\n",
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
  return (found != nullptr ? *found : StandInLever()).make(dry_run, settings, environment);
}

std::vector<const LeverRegistration*> AutoOrder(Source source, bool tcp_host) {
  std::vector<const LeverRegistration*> order;
  for (const auto& [kind, registration] : Registry()) {
    const LeverTraits& traits = registration.traits;
    if (traits.auto_rank > 0 && traits.serves.Has(source) && (!tcp_host || traits.serves_tcp_hosts)) {
      order.push_back(&registration);
    }
  }
  std::stable_sort(order.begin(), order.end(), [](const LeverRegistration* a, const LeverRegistration* b) {
    return a->traits.auto_rank < b->traits.auto_rank;
  });
  return order;
}

const LeverRegistration& StandInLever() {
  for (const auto& [kind, registration] : Registry()) {
    if (registration.traits.stands_in) return registration;
  }
  std::fprintf(stderr, "no lever registered as the stand-in (LeverTraits::stands_in)\n");
  std::abort();
}

std::string LeverNames(bool LeverTraits::*flag) {
  std::string names;
  for (const auto& [kind, registration] : Registry()) {
    if (!(registration.traits.*flag)) continue;
    if (!names.empty()) names += ", ";
    names += LeverKindName(kind);
  }
  return names;
}

LeverRisk LeverRiskOf(std::string_view lever) {
  const std::optional<LeverKind> kind = ParseLeverKind(lever);
  const LeverRegistration* found = kind ? FindLever(*kind) : nullptr;
  return found == nullptr ? LeverRisk::kDriverSpecific : found->traits.risk;
}

bool RestoreValueIsSecret(std::string_view lever) {
  const std::optional<LeverKind> kind = ParseLeverKind(lever);
  const LeverRegistration* found = kind ? FindLever(*kind) : nullptr;
  return found != nullptr && found->traits.secret_restore_value;
}

}  // namespace nvmeadapt::actuate
