// SPDX-License-Identifier: Apache-2.0
// Request-shape validation for the AgentService: what can be judged without the agent's state. Every
// error is kInvalidArgument and starts with the field path ("queue.controller: must not be empty").
// Whether a controller or queue exists, and how a policy combines with the levels above it, is the
// agent's to judge (AgentControl).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::api {

inline constexpr size_t kMaxControllerNameLength = 64;
inline constexpr int64_t kMaxOverrideDurationNs = 365LL * 24 * 3600 * 1'000'000'000;
inline constexpr int kMaxWatchKinds = 16;

// Outside input as it may appear in an error message: in single quotes, control characters, quotes and
// backslashes escaped (\n, \x01, \'), cut after 80 characters. Keeps every error on one line.
std::string Quoted(std::string_view text);

// Letters, digits and . _ : - ("nvme0", "uvnvme:1234:0"), at most kMaxControllerNameLength.
Status ValidateControllerName(std::string_view name, std::string_view field_path, bool required);

Status ValidateListQueuesRequest(const v1::ListQueuesRequest& request);
Status ValidateSetPolicyRequest(const v1::SetPolicyRequest& request);
Status ValidateSetQueueModeRequest(const v1::SetQueueModeRequest& request);
// A pause's mode is interrupt or off (unspecified: interrupt); a resume carries nothing else.
Status ValidateSetPauseRequest(const v1::SetPauseRequest& request);
Status ValidateExplainPolicyRequest(const v1::ExplainPolicyRequest& request);
Status ValidateWatchEventsRequest(const v1::WatchEventsRequest& request);

}  // namespace nvmeadapt::api
