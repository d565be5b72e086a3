// SPDX-License-Identifier: Apache-2.0
// The trace format's replaying side: feeds trace lines (agent/engine/trace.h) to an Engine of its own, behind
// a node gate of its own (node_gate.h, as the daemon's), and collects their decisions as formatted lines. Pure
// string processing.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/engine/engine.h"
#include "agent/engine/node_gate.h"
#include "common/result.h"

namespace nvmeadapt::engine {

class TraceReplayer {
 public:
  // Applies one line. Errors name the line's problem; the replayer's state is unchanged by a bad line.
  Status Apply(std::string_view line);
  const std::vector<std::string>& decisions() const { return decisions_; }
  const Engine& engine() const { return engine_; }
  std::optional<QueueHandle> Handle(std::string_view name) const;

 private:
  // A line as its record kind's decoder gets it: the words, and the queue and time Apply resolved first
  // for the kinds that name an existing queue (and a time).
  struct Record {
    std::span<const std::string_view> words;
    QueueHandle queue = 0;
    Nanos now = 0;
  };
  // What Apply resolves before a kind's decoder runs, in this order: an unknown verb is reported only
  // after its queue and time were found, as if it needed both.
  enum class Needs { kNothing, kQueue, kQueueAndTime };
  struct RecordKind {
    std::string_view verb;
    Needs needs;
    Status (TraceReplayer::*decode)(const Record&);
  };
  static const RecordKind* FindKind(std::string_view verb);

  Status DecodeQueue(const Record& record);
  Status DecodeRemove(const Record& record);
  Status DecodeSwitch(const Record& record);
  Status DecodeWindow(const Record& record);
  Status DecodeTimer(const Record& record);
  Status DecodePolicy(const Record& record);
  Status DecodeOverride(const Record& record);
  Status DecodeLever(const Record& record);
  Status DecodeNode(const Record& record);
  Status DecodeNodeQueue(const Record& record);
  Status DecodeFacts(const Record& record);

  Result<QueueHandle> Lookup(std::string_view name) const;
  void Emit(std::string_view name, const std::optional<Decision>& decision);
  // Each decision under its queue's name (a run the node layer ended may be another queue's).
  void Emit(const std::vector<GatedDecision>& decisions);
  // A decision of the engine other than a window's: the node layer follows it, then it is emitted.
  void Followed(std::string_view name, const std::optional<Decision>& decision);

  Engine engine_;
  NodeGate gate_;
  std::unordered_map<std::string, QueueHandle> handles_;
  std::unordered_map<QueueHandle, std::string> names_;
  std::vector<std::string> decisions_;
};

// Replays a whole trace text. The error names the line number.
Result<std::vector<std::string>> ReplayTrace(std::string_view text);

}  // namespace nvmeadapt::engine
