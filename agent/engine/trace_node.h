// SPDX-License-Identifier: Apache-2.0
// The trace format's node lines (agent/engine/trace.h): what the node layer was told, so that replay runs the
// node gate on the same inputs as the daemon did. Pure string processing.
//
//   node KEY=VALUE...                          the layer's settings (NodeSettings; keys below)
//   nodequeue NAME decided=0|1 [cpu=N] [gain=X] [cost=X] [own=X]   what the layer knows of a queue
//   facts NOW [busy=X,X,-,...] [some=X] [full=X]                   a reading of the node's facts
// Shares and rates are written so that they read back to the same double.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "agent/engine/node.h"
#include "common/result.h"

namespace nvmeadapt::engine {

std::string FormatNodeLine(const NodeSettings& settings);
std::string FormatNodeQueueLine(std::string_view name, const NodeQueue& queue);
std::string FormatFactsLine(const NodeFacts& facts);

// The words after the verb (and after the queue's name, for nodequeue; after NOW, for facts).
Result<NodeSettings> ParseNodeWords(std::span<const std::string_view> words);
Result<NodeQueue> ParseNodeQueueWords(std::span<const std::string_view> words);
Result<NodeFacts> ParseFactsWords(Nanos now, std::span<const std::string_view> words);

}  // namespace nvmeadapt::engine
