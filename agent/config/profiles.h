// SPDX-License-Identifier: Apache-2.0
// Profiles as policy levels: the named sets of policy fields of agent/engine/policy_fields.h (PolicyProfiles)
// that an entry can start from ("profile": "patch"), its own fields over them. The list is `nvme-adaptctl
// policy profiles` and docs/operations.md, "Profiles".
#pragma once

#include <span>
#include <string_view>

#include "agent/engine/policy_fields.h"
#include "common/result.h"
#include "nvmeadapt/v1/policy.pb.h"

namespace nvmeadapt::config {

using Profile = engine::PolicyProfile;

std::span<const Profile> Profiles();
// The profile named so; kInvalidArgument naming `where` and the known names otherwise.
Result<const Profile*> FindProfile(std::string_view name, std::string_view where);
// The profile as a policy level: every field set (the mode only when the profile sets it).
v1::Policy ProfileLevel(const Profile& profile);
// `level` over its profile's fields, the profile name cleared; `level` itself when it names none.
Result<v1::Policy> ExpandProfile(const v1::Policy& level, std::string_view where);

}  // namespace nvmeadapt::config
