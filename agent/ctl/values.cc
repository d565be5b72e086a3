// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/values.h"

#include <cctype>
#include <charconv>

#include "agent/api/validate.h"
#include "agent/config/proto_enums.h"
#include "common/vocabulary.h"

namespace nvmeadapt::ctl {
namespace {

Error Invalid(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

// The word after a common prefix, lower case: REAP_MODE_POLL -> "poll". A value this build does not
// know (a newer agent) has no name: it shows as its number.
std::string WordAfter(const std::string& name, std::string_view prefix, int value = 0) {
  if (!name.starts_with(prefix)) return "(" + std::to_string(value) + ")";
  std::string word = name.substr(prefix.size());
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return word;
}

std::string Lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

// A word of one of the vocabulary's tables (common/vocabulary.h, agent/engine/types.h), in any case, as the
// API's enum.
template <class Table>
auto ParseTableWord(std::string_view text, const Table& table, std::string_view what, std::string_view choices)
    -> Result<decltype(config::ToProto(*table.Parse(text)))> {
  if (auto value = table.Parse(Lower(text))) return config::ToProto(*value);
  return Invalid(std::string(what) + ": expected one of " + std::string(choices) + ", got " + api::Quoted(text));
}

// The table's word for an API value; "-" for UNSPECIFIED, and a value this build does not know (a newer
// agent) shows as its number.
template <class Table, class Proto>
std::string TableWord(const Table& table, Proto value) {
  if (value == 0) return "-";
  if (auto known = config::FromProto(value)) return std::string(table.Name(*known));
  return "(" + std::to_string(value) + ")";
}

template <class Enum, class NameFn, class ParseFn>
Result<Enum> ParseWord(std::string_view text, std::string_view prefix, NameFn name_of, ParseFn parse,
                       std::string_view what, std::string_view choices) {
  std::string upper(prefix);
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Enum value{};
  if (!text.empty() && parse(upper, &value) && WordAfter(name_of(value), prefix) != "unspecified") return value;
  return Invalid(std::string(what) + ": expected one of " + std::string(choices) + ", got " + api::Quoted(text));
}

}  // namespace

Result<uint32_t> ParseUint32(std::string_view text) {
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Invalid("expected a whole number in [0, 4294967295], got " + api::Quoted(text));
  }
  return value;
}

Result<v1::QueueId> ParseQueueName(std::string_view text) {
  const size_t mark = text.rfind(kQueueNameMark);
  if (mark == std::string_view::npos || mark == 0) {
    return Invalid("queue " + api::Quoted(text) + ": expected CONTROLLER:qN, e.g. nvme0:q1 or uvnvme:1234:0:q2");
  }
  auto number = ParseUint32(text.substr(mark + kQueueNameMark.size()));
  if (!number) {
    return Invalid("queue " + api::Quoted(text) + ": expected a queue number after ':q', e.g. nvme0:q1");
  }
  v1::QueueId id;
  id.set_controller(std::string(text.substr(0, mark)));
  id.set_queue(*number);
  return id;
}

std::string QueueName(const v1::QueueId& id) { return nvmeadapt::QueueName(id.controller(), id.queue()); }

Result<v1::ReapMode> ParseOverrideMode(std::string_view text) {
  if (text == "none") return v1::REAP_MODE_UNSPECIFIED;
  return ParseTableWord(text, kReapModes, "mode", "interrupt, poll, none");
}

Result<v1::ControllerMode> ParseControllerMode(std::string_view text) {
  return ParseTableWord(text, engine::kControllerModes, "mode", "off, adaptive, interrupt, poll, shadow");
}

Result<v1::Source> ParseSource(std::string_view text) {
  return ParseTableWord(text, kSources, "source", "kernel, block, uvnvme, spdk");
}

Result<v1::EventKind> ParseEventKind(std::string_view text) {
  return ParseWord<v1::EventKind>(text, "EVENT_KIND_", v1::EventKind_Name<v1::EventKind>, v1::EventKind_Parse,
                                  "kind", "decision, override, policy, lever_error, queue_added, queue_removed");
}

std::string ShortName(v1::ReapMode mode) { return TableWord(kReapModes, mode); }
std::string ShortName(v1::ControllerMode mode) { return TableWord(engine::kControllerModes, mode); }
std::string ShortName(v1::Source source) { return TableWord(kSources, source); }
std::string ShortName(v1::QueueState state) { return TableWord(engine::kQueueStates, state); }
std::string ShortName(v1::EventKind kind) {
  if (kind == v1::EVENT_KIND_UNSPECIFIED) return "-";
  return WordAfter(v1::EventKind_Name(kind), "EVENT_KIND_", kind);
}

}  // namespace nvmeadapt::ctl
