// Parsing and printing the CLI's values: durations ("30s", "5m", "10us", "1m30s"), queue names
// ("nvme0:q1", "uvnvme:1234:0:q2") and the enum words of the API ("poll", "adaptive", "kernel", ...).
// Errors are kInvalidArgument and say what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::ctl {

// A sum of <number><unit> terms (units ns, us, ms, s, m, h, d; a number may have a fraction). "0" alone
// is allowed. Negative or overflowing durations are refused.
Result<int64_t> ParseDuration(std::string_view text);
// The shortest exact form: 30000000000 -> "30s", 1500000 -> "1.5ms", 90000000000 -> "1m30s".
std::string FormatDuration(int64_t nanos);

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
