// SPDX-License-Identifier: Apache-2.0
// Parsing and printing the CLI's values: queue names ("nvme0:q1", "uvnvme:1234:0:q2") and the enum words of the
// API ("poll", "adaptive", "kernel", ...); durations are the one grammar of common/duration.h. Errors are
// kInvalidArgument and say what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/duration.h"  // the one duration grammar: ParseDuration, FormatDuration
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::ctl {

// "CONTROLLER:qN": the controller is everything before the last ":q".
Result<v1::QueueId> ParseQueueName(std::string_view text);
std::string QueueName(const v1::QueueId& id);

Result<uint32_t> ParseUint32(std::string_view text);

// interrupt | poll | none (none: clear the override)
Result<v1::ReapMode> ParseOverrideMode(std::string_view text);
// off | adaptive | interrupt | poll | shadow
Result<v1::ControllerMode> ParseControllerMode(std::string_view text);
// kernel | block | uvnvme | spdk
Result<v1::Source> ParseSource(std::string_view text);
// decision | override | policy | lever_error | queue_added | queue_removed
Result<v1::EventKind> ParseEventKind(std::string_view text);

// The short lower-case words above, for tables ("poll", "adaptive", "kernel", "polling", ...).
std::string ShortName(v1::ReapMode mode);
std::string ShortName(v1::ControllerMode mode);
std::string ShortName(v1::Source source);
std::string ShortName(v1::QueueState state);
std::string ShortName(v1::EventKind kind);

}  // namespace nvmeadapt::ctl
