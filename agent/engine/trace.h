// A line-oriented text format for engine inputs and decisions, so that windows recorded by the daemon (or
// written by hand) can be replayed through the engine alone and the decisions compared. Pure string
// processing: reading and writing files is the caller's business.
//
//   queue NAME [eligible=0|1] [reap=MODE] [safe=MODE] [POLICY...]
//   window NAME MODE COMPLETIONS START END [miss=K:ELAPSED[:N]]   (N: the reap's size, default 1)
//   timer NAME NOW START COMPLETIONS
//   policy NAME NOW POLICY...
//   override NAME NOW MODE|none [expires=NS]
//   lever NAME NOW MODE
//   remove NAME
//   switch NAME GEN FROM->TO key=value...   (the agent's switch timeline; no engine input, skipped)
// POLICY is key=value with keys window, threshold, slack, failures, backoff, max_poll, timer, batch, mode.
// Times are nanoseconds. '#' starts a comment.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/common/result.h"
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

// Feeds trace lines to its own Engine and collects the decisions as formatted lines.
class TraceReplayer {
 public:
  // Applies one line. Errors name the line's problem; the replayer's state is unchanged by a bad line.
  Status Apply(std::string_view line);
  const std::vector<std::string>& decisions() const { return decisions_; }
  const Engine& engine() const { return engine_; }
  std::optional<QueueHandle> Handle(std::string_view name) const;

 private:
  Result<QueueHandle> Lookup(std::string_view name) const;
  void Emit(std::string_view name, const std::optional<Decision>& decision);

  Engine engine_;
  std::unordered_map<std::string, QueueHandle> handles_;
  std::vector<std::string> decisions_;
};

// Replays a whole trace text. The error names the line number.
Result<std::vector<std::string>> ReplayTrace(std::string_view text);

}  // namespace nvmeadapt::engine
