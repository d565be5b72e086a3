// SPDX-License-Identifier: Apache-2.0
// `nvme-adaptctl report`: per controller, what the agent can do on this node (the lever and what a switch
// disturbs, the eligible queues), what its record since it started says (windows fast enough to try, tries,
// kept windows, share polled, speedup, CPU), and one verdict line. Works in shadow mode, where the record is
// what the engine would have done.
#pragma once

#include <ostream>
#include <string_view>

#include "agent/actuate/lever_registry.h"
#include "agent/ctl/args.h"
#include "agent/ctl/client.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::ctl {

// The risk class of a lever is the lever's to state (agent/actuate/lever_registry.h).
using actuate::kLeverRisks;
using actuate::LeverRisk;
using actuate::LeverRiskOf;

// The report from what the agent answered.
v1::Report BuildReport(const v1::GetStatusResponse& status, const v1::ListQueuesResponse& queues);
// The verdict of one controller's report (its other fields filled in), given whether the collector only observes.
std::string Verdict(const v1::ControllerReport& controller, bool observe_only);
void PrintReport(const v1::Report& report, std::ostream& out);

int RunReport(const Args& args, const AgentClient& client, std::ostream& out);

}  // namespace nvmeadapt::ctl
