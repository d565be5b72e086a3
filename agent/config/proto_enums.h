// SPDX-License-Identifier: Apache-2.0
// The vocabulary's enums (common/vocabulary.h, agent/engine/types.h) as the API's protobuf enums and back.
// Each is a cast of the number the enum's one table carries; proto_enums.cc checks every number against the
// proto at compile time, so the tables and the engine stay free of protobuf headers.
#pragma once

#include <optional>

#include "agent/engine/types.h"
#include "common/vocabulary.h"
#include "nvmeadapt/v1/agent.pb.h"
#include "nvmeadapt/v1/config.pb.h"
#include "nvmeadapt/v1/policy.pb.h"

namespace nvmeadapt::config {

inline v1::ReapMode ToProto(ReapMode mode) { return static_cast<v1::ReapMode>(kReapModes.Proto(mode)); }
inline v1::Source ToProto(Source source) { return static_cast<v1::Source>(kSources.Proto(source)); }
inline v1::LeverKind ToProto(LeverKind kind) { return static_cast<v1::LeverKind>(kLeverKinds.Proto(kind)); }
inline v1::ControllerMode ToProto(engine::ControllerMode mode) {
  return static_cast<v1::ControllerMode>(engine::kControllerModes.Proto(mode));
}
inline v1::QueueState ToProto(engine::QueueState state) {
  return static_cast<v1::QueueState>(engine::kQueueStates.Proto(state));
}

// nullopt for UNSPECIFIED, or a number this build does not know.
inline std::optional<ReapMode> FromProto(v1::ReapMode mode) { return kReapModes.FromProto(mode); }
inline std::optional<Source> FromProto(v1::Source source) { return kSources.FromProto(source); }
inline std::optional<LeverKind> FromProto(v1::LeverKind kind) { return kLeverKinds.FromProto(kind); }
inline std::optional<engine::ControllerMode> FromProto(v1::ControllerMode mode) {
  return engine::kControllerModes.FromProto(mode);
}
inline std::optional<engine::QueueState> FromProto(v1::QueueState state) { return engine::kQueueStates.FromProto(state); }

}  // namespace nvmeadapt::config
