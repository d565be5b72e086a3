// SPDX-License-Identifier: Apache-2.0
// The nvme-adaptctl commands. Each returns the process exit code: 0 done, 1 the agent (or the connection)
// said no, 2 the command line was wrong. Errors are one line on stderr.
#pragma once

#include <grpcpp/support/status.h>

#include <ostream>

#include "agent/ctl/args.h"
#include "agent/ctl/client.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::ctl {

inline constexpr int kExitServerError = 1;
inline constexpr int kExitUsage = 2;

int UsageError(std::string_view message);
int ServerError(const grpc::Status& status);

// The request `policy set` sends: the fields given as flags over those of --file.
Result<v1::SetPolicyRequest> BuildSetPolicyRequest(const Args& args);
Result<v1::SetQueueModeRequest> BuildSetQueueModeRequest(const Args& args);
Result<v1::WatchEventsRequest> BuildWatchEventsRequest(const Args& args);
// `pause [--for D] [--mode interrupt|off]` or `resume`.
Result<v1::SetPauseRequest> BuildSetPauseRequest(const Args& args);

int RunStatus(const Args& args, const AgentClient& client, std::ostream& out);
int RunQueues(const Args& args, const AgentClient& client, std::ostream& out);
int RunPolicy(const Args& args, const AgentClient& client, std::ostream& out);
int RunOverride(const Args& args, const AgentClient& client, std::ostream& out);
int RunWatch(const Args& args, const AgentClient& client, std::ostream& out);
int RunPause(const Args& args, const AgentClient& client, std::ostream& out);

}  // namespace nvmeadapt::ctl
