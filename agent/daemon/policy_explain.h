// SPDX-License-Identifier: Apache-2.0
// ExplainPolicy: a queue's effective policy field by field, each with the entry that set it (the layers of
// config/policy_layers.h) and where that entry came from: the config file, or a SetPolicy over the API.
#pragma once

#include "agent/daemon/managed_queues.h"
#include "agent/daemon/policy_applier.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

v1::ExplainPolicyResponse ExplainQueuePolicy(const ManagedQueue& queue, const PolicyApplier& policy);

}  // namespace nvmeadapt::daemon
