// SPDX-License-Identifier: Apache-2.0
// The trace format's writing side: one line per engine input or decision (the grammar is in
// agent/engine/trace.h). Pure string processing.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/engine/engine.h"

namespace nvmeadapt::engine {

std::string FormatPolicy(const Policy& policy);
std::string FormatQueueLine(std::string_view name, const QueueSetup& setup);
std::string FormatWindowLine(std::string_view name, const WindowRecord& record);
std::string FormatTimerLine(std::string_view name, Nanos now, const WindowProgress& progress);
std::string FormatPolicyLine(std::string_view name, Nanos now, const Policy& policy);
std::string FormatOverrideLine(std::string_view name, Nanos now, const std::optional<Override>& override_mode);
std::string FormatLeverLine(std::string_view name, Nanos now, ReapMode actual);
std::string FormatDecision(std::string_view name, const Decision& decision);

}  // namespace nvmeadapt::engine
