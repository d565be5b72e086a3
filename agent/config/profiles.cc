// SPDX-License-Identifier: Apache-2.0
#include "agent/config/profiles.h"

#include <string>

#include "agent/config/policy_convert.h"

namespace nvmeadapt::config {

std::span<const Profile> Profiles() { return engine::PolicyProfiles(); }

Result<const Profile*> FindProfile(std::string_view name, std::string_view where) {
  if (const Profile* profile = engine::FindPolicyProfile(name)) return profile;
  return MakeError(ErrorCode::kInvalidArgument, std::string(where) + ": unknown profile '" + std::string(name) +
                                                    "' (" + engine::PolicyProfileNames() + ")");
}

v1::Policy ProfileLevel(const Profile& profile) {
  v1::Policy level = ToProto(profile.policy);
  if (!profile.sets_mode) level.clear_mode();
  return level;
}

Result<v1::Policy> ExpandProfile(const v1::Policy& level, std::string_view where) {
  if (!level.has_profile()) return level;
  NA_ASSIGN_OR_RETURN(auto profile, FindProfile(level.profile(), where));
  v1::Policy expanded = ProfileLevel(*profile);
  v1::Policy own = level;
  own.clear_profile();
  expanded.MergeFrom(own);
  return expanded;
}

}  // namespace nvmeadapt::config
