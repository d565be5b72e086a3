// The engine's values as the API's protobuf enums.
#pragma once

#include "agent/engine/types.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

v1::ReapMode ToProto(engine::ReapMode mode);
v1::QueueState ToProto(engine::QueueState state);

}  // namespace nvmeadapt::daemon
