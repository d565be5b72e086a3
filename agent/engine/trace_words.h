// SPDX-License-Identifier: Apache-2.0
// The trace format's reading side below the record kinds: a line's words and the values inside them,
// each refusal naming what it read. Used by the replayer's per-record decoders (trace_replay.cc).
#pragma once

#include <charconv>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "agent/engine/policy.h"
#include "agent/engine/types.h"

namespace nvmeadapt::engine {

// The words of a line, split at runs of blanks and tabs.
std::vector<std::string_view> TraceWords(std::string_view line);

Error BadTraceLine(std::string message);

// A whole unsigned or Nanos word; the error names `what`.
template <class T>
Result<T> TraceNumber(std::string_view text, std::string_view what) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return BadTraceLine(std::string(what) + ": not a number: '" + std::string(text) + "'");
  }
  return value;
}

Result<ReapMode> TraceReapMode(std::string_view text);

using TraceKeyValues = std::vector<std::pair<std::string_view, std::string_view>>;

// Applies key=value policy words to `policy` (the keys are the trace_key column of PolicyFields()); other
// keys are returned to the caller untouched, in their order.
Result<TraceKeyValues> ApplyPolicyWords(std::span<const std::string_view> words, Policy& policy);

// The policy of a `queue` line before its keys apply: a trace without a key newer than the format's first
// ran that field's patch value (PolicyField::absent_in_trace_is_patch), so it is replayed the way it ran.
Policy ReplayDefaultPolicy();

}  // namespace nvmeadapt::engine
