// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/trace_replay.h"

#include "agent/engine/trace_format.h"
#include "agent/engine/trace_node.h"
#include "agent/engine/trace_words.h"

namespace nvmeadapt::engine {
namespace {

Status Expect(std::span<const std::string_view> words, size_t count, std::string_view usage) {
  if (words.size() < count) return BadTraceLine(std::string(words[0]) + ": expected '" + std::string(usage) + "'");
  return OkStatus();
}

// miss=K:ELAPSED[:N]
Result<PaceMiss> ParsePaceMiss(std::string_view miss) {
  const size_t colon = miss.find(':');
  if (!miss.starts_with("miss=") || colon == std::string_view::npos) {
    return BadTraceLine("window: expected miss=K:ELAPSED[:N], got '" + std::string(miss) + "'");
  }
  const size_t colon2 = miss.find(':', colon + 1);
  auto k = TraceNumber<uint32_t>(miss.substr(5, colon - 5), "miss k");
  auto elapsed = TraceNumber<Nanos>(
      miss.substr(colon + 1, colon2 == std::string_view::npos ? std::string_view::npos : colon2 - colon - 1),
      "miss elapsed");
  auto batch = colon2 == std::string_view::npos ? Result<uint32_t>(1u)
                                                : TraceNumber<uint32_t>(miss.substr(colon2 + 1), "miss n");
  if (!k) return k.error();
  if (!elapsed) return elapsed.error();
  if (!batch) return batch.error();
  if (*batch == 0) return BadTraceLine("window: miss n must be >= 1");
  return PaceMiss{*k, *elapsed, *batch};
}

// [inflight=N] [unread=1] after a timer line's LAST.
Status ApplyTimerWords(std::span<const std::string_view> words, WindowProgress& progress) {
  for (std::string_view word : words) {
    if (word.starts_with("inflight=")) {
      NA_ASSIGN_OR_RETURN(auto n, TraceNumber<uint32_t>(word.substr(9), "inflight"));
      progress.in_flight = n;
    } else if (word == "unread=1") {
      progress.known = false;
    } else {
      return BadTraceLine("timer: expected inflight=N or unread=1, got '" + std::string(word) + "'");
    }
  }
  return OkStatus();
}

}  // namespace

std::optional<QueueHandle> TraceReplayer::Handle(std::string_view name) const {
  auto it = handles_.find(std::string(name));
  if (it == handles_.end()) return std::nullopt;
  return it->second;
}

Result<QueueHandle> TraceReplayer::Lookup(std::string_view name) const {
  if (auto handle = Handle(name)) return *handle;
  return BadTraceLine("unknown queue '" + std::string(name) + "'");
}

void TraceReplayer::Emit(std::string_view name, const std::optional<Decision>& decision) {
  if (decision) decisions_.push_back(FormatDecision(name, *decision));
}

void TraceReplayer::Emit(const std::vector<GatedDecision>& decisions) {
  for (const GatedDecision& gated : decisions) {
    const auto name = names_.find(gated.decision.queue);
    if (name != names_.end()) Emit(name->second, gated.decision);
  }
}

void TraceReplayer::Followed(std::string_view name, const std::optional<Decision>& decision) {
  if (decision) gate_.Follow(*decision);
  Emit(name, decision);
}

const TraceReplayer::RecordKind* TraceReplayer::FindKind(std::string_view verb) {
  static constexpr RecordKind kKinds[] = {
      {"queue", Needs::kNothing, &TraceReplayer::DecodeQueue},
      {"remove", Needs::kNothing, &TraceReplayer::DecodeRemove},
      {"switch", Needs::kNothing, &TraceReplayer::DecodeSwitch},
      {"window", Needs::kQueue, &TraceReplayer::DecodeWindow},
      {"timer", Needs::kQueue, &TraceReplayer::DecodeTimer},
      {"policy", Needs::kQueueAndTime, &TraceReplayer::DecodePolicy},
      {"override", Needs::kQueueAndTime, &TraceReplayer::DecodeOverride},
      {"lever", Needs::kQueueAndTime, &TraceReplayer::DecodeLever},
      {"node", Needs::kNothing, &TraceReplayer::DecodeNode},
      {"nodequeue", Needs::kQueue, &TraceReplayer::DecodeNodeQueue},
      {"facts", Needs::kNothing, &TraceReplayer::DecodeFacts},
  };
  for (const RecordKind& kind : kKinds) {
    if (kind.verb == verb) return &kind;
  }
  return nullptr;
}

Status TraceReplayer::Apply(std::string_view line) {
  if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  const std::vector<std::string_view> words = TraceWords(line);
  if (words.empty()) return OkStatus();
  const std::string_view verb = words[0];
  const RecordKind* kind = FindKind(verb);
  const Needs needs = kind != nullptr ? kind->needs : Needs::kQueueAndTime;
  Record record{std::span<const std::string_view>(words)};
  if (needs != Needs::kNothing) {
    if (words.size() < 2) return BadTraceLine(std::string(verb) + ": no queue");
    NA_ASSIGN_OR_RETURN(auto queue, Lookup(words[1]));
    record.queue = queue;
  }
  if (needs == Needs::kQueueAndTime) {
    if (words.size() < 3) return BadTraceLine(std::string(verb) + ": no time");
    NA_ASSIGN_OR_RETURN(auto now, TraceNumber<Nanos>(words[2], "now"));
    record.now = now;
  }
  if (kind == nullptr) return BadTraceLine("unknown verb '" + std::string(verb) + "'");
  return (this->*kind->decode)(record);
}

Status TraceReplayer::DecodeQueue(const Record& record) {
  const auto w = record.words;
  NA_RETURN_IF_ERROR(Expect(w, 2, "queue NAME [eligible=0|1] [reap=MODE] [safe=MODE] [POLICY...]"));
  if (handles_.count(std::string(w[1]))) return BadTraceLine("queue '" + std::string(w[1]) + "' exists");
  QueueSetup setup;
  setup.policy = ReplayDefaultPolicy();
  NA_ASSIGN_OR_RETURN(auto rest, ApplyPolicyWords(w.subspan(2), setup.policy));
  for (auto [key, value] : rest) {
    if (key == "eligible") {
      setup.eligible = value == "1";
    } else if (key == "reap" || key == "safe") {
      NA_ASSIGN_OR_RETURN(auto mode, TraceReapMode(value));
      (key == "reap" ? setup.current : setup.safe) = mode;
    } else {
      return BadTraceLine("queue: unknown key '" + std::string(key) + "'");
    }
  }
  NA_RETURN_IF_ERROR(ValidatePolicy(setup.policy, ""));
  AddedQueue added = engine_.AddQueue(setup, 0);
  handles_.emplace(std::string(w[1]), added.handle);
  names_[added.handle] = std::string(w[1]);
  Followed(w[1], added.decision);
  return OkStatus();
}

Status TraceReplayer::DecodeRemove(const Record& record) {
  NA_RETURN_IF_ERROR(Expect(record.words, 2, "remove NAME"));
  NA_ASSIGN_OR_RETURN(auto handle, Lookup(record.words[1]));
  engine_.RemoveQueue(handle);
  gate_.layer().RemoveQueue(handle);
  handles_.erase(std::string(record.words[1]));
  names_.erase(handle);
  return OkStatus();
}

// The agent's switch timeline: a record for people, no engine input.
Status TraceReplayer::DecodeSwitch(const Record&) { return OkStatus(); }

Status TraceReplayer::DecodeWindow(const Record& record) {
  const auto w = record.words;
  NA_RETURN_IF_ERROR(Expect(w, 6, "window NAME MODE COMPLETIONS START END [miss=K:ELAPSED]"));
  WindowRecord r;
  r.queue = record.queue;
  auto mode = TraceReapMode(w[2]);
  auto completions = TraceNumber<uint32_t>(w[3], "completions");
  auto start = TraceNumber<Nanos>(w[4], "start");
  auto end = TraceNumber<Nanos>(w[5], "end");
  if (!mode) return mode.error();
  if (!completions) return completions.error();
  if (!start) return start.error();
  if (!end) return end.error();
  r.mode = *mode;
  r.completions = *completions;
  r.start = *start;
  r.end = *end;
  if (w.size() > 6) {
    NA_ASSIGN_OR_RETURN(auto miss, ParsePaceMiss(w[6]));
    r.pace_miss = miss;
  }
  Emit(gate_.OnWindow(engine_, r));
  return OkStatus();
}

Status TraceReplayer::DecodeTimer(const Record& record) {
  const auto w = record.words;
  NA_RETURN_IF_ERROR(Expect(w, 5, "timer NAME NOW START COMPLETIONS [LAST]"));
  WindowProgress progress;
  auto now = TraceNumber<Nanos>(w[2], "now");
  auto start = TraceNumber<Nanos>(w[3], "start");
  auto completions = TraceNumber<uint32_t>(w[4], "completions");
  auto last = w.size() > 5 ? TraceNumber<Nanos>(w[5], "last") : Result<Nanos>(Nanos{0});
  if (!now) return now.error();
  if (!start) return start.error();
  if (!completions) return completions.error();
  if (!last) return last.error();
  progress.start = *start;
  progress.completions = *completions;
  progress.last = *last;
  NA_RETURN_IF_ERROR(ApplyTimerWords(w.size() > 6 ? w.subspan(6) : std::span<const std::string_view>(), progress));
  Followed(w[1], engine_.OnTimer(record.queue, *now, progress));
  return OkStatus();
}

Status TraceReplayer::DecodePolicy(const Record& record) {
  Policy policy = engine_.View(record.queue).policy;
  NA_ASSIGN_OR_RETURN(auto rest, ApplyPolicyWords(record.words.subspan(3), policy));
  if (!rest.empty()) return BadTraceLine("policy: unknown key '" + std::string(rest.front().first) + "'");
  NA_RETURN_IF_ERROR(ValidatePolicy(policy, ""));
  Followed(record.words[1], engine_.SetPolicy(record.queue, policy, record.now));
  return OkStatus();
}

Status TraceReplayer::DecodeOverride(const Record& record) {
  const auto w = record.words;
  NA_RETURN_IF_ERROR(Expect(w, 4, "override NAME NOW MODE|none [expires=NS]"));
  std::optional<Override> o;
  if (w[3] != "none") {
    NA_ASSIGN_OR_RETURN(auto mode, TraceReapMode(w[3]));
    o = Override{mode, 0};
    if (w.size() > 4) {
      if (!w[4].starts_with("expires=")) return BadTraceLine("override: expected expires=NS");
      NA_ASSIGN_OR_RETURN(auto expires, TraceNumber<Nanos>(w[4].substr(8), "expires"));
      o->expires_at = expires;
    }
  }
  Followed(w[1], engine_.SetOverride(record.queue, o, record.now));
  return OkStatus();
}

Status TraceReplayer::DecodeLever(const Record& record) {
  NA_RETURN_IF_ERROR(Expect(record.words, 4, "lever NAME NOW MODE"));
  NA_ASSIGN_OR_RETURN(auto mode, TraceReapMode(record.words[3]));
  const std::optional<Decision> followed = engine_.OnLeverResult(record.queue, mode, record.now);
  if (followed) gate_.FollowLever(record.queue, mode, record.now);  // as the daemon: only what the engine followed
  Emit(record.words[1], followed);
  return OkStatus();
}

Status TraceReplayer::DecodeNode(const Record& record) {
  NA_ASSIGN_OR_RETURN(auto settings, ParseNodeWords(record.words.subspan(1)));
  gate_.layer().SetSettings(settings);
  return OkStatus();
}

Status TraceReplayer::DecodeNodeQueue(const Record& record) {
  NA_ASSIGN_OR_RETURN(auto queue, ParseNodeQueueWords(record.words.subspan(2)));
  gate_.layer().SetQueue(record.queue, queue);
  return OkStatus();
}

Status TraceReplayer::DecodeFacts(const Record& record) {
  NA_RETURN_IF_ERROR(Expect(record.words, 2, "facts NOW [busy=X,...] [some=X] [full=X]"));
  NA_ASSIGN_OR_RETURN(auto now, TraceNumber<Nanos>(record.words[1], "now"));
  NA_ASSIGN_OR_RETURN(auto facts, ParseFactsWords(now, record.words.subspan(2)));
  Emit(gate_.OnFacts(engine_, facts));
  return OkStatus();
}

Result<std::vector<std::string>> ReplayTrace(std::string_view text) {
  TraceReplayer replayer;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (Status status = replayer.Apply(line); !status) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "line " + std::to_string(line_number) + ": " + status.error().message);
    }
  }
  return replayer.decisions();
}

}  // namespace nvmeadapt::engine

