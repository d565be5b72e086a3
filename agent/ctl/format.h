// SPDX-License-Identifier: Apache-2.0
// What nvme-adaptctl prints: aligned tables for people, one JSON object per line for scripts.
#pragma once

#include <google/protobuf/message.h>

#include <ostream>
#include <string>
#include <vector>

#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::ctl {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// Canonical proto3 JSON on one line, with zero values printed (scripts need not guess defaults).
std::string ToJsonLine(const google::protobuf::Message& message);

// Where the policy in force comes from, in one line: "set over the API by ... at ..., overriding ...".
std::string PolicyOriginText(const v1::PolicyOrigin& origin);
// "every queue held in interrupt mode until ...; paused by ... at ...".
std::string PauseText(const v1::Pause& pause);
// `policy explain`: each field's value, the entry that set it and where that entry came from.
void PrintPolicyExplain(const v1::ExplainPolicyResponse& explained, std::ostream& out);
void PrintStatus(const v1::GetStatusResponse& status, std::ostream& out);
// `wide` adds the lever, the queue's CPUs and vector, its windows and failures.
void PrintQueues(const v1::ListQueuesResponse& queues, std::ostream& out, bool wide = false);
// Every level that is set, then the effective global policy if given; "-" marks an inherited field.
void PrintPolicySet(const v1::PolicySet& policy, const v1::Policy* effective_global, std::ostream& out);
void PrintQueue(const v1::QueueInfo& queue, std::ostream& out);
// One line: time, sequence, kind, queue, what happened, and how many events the stream missed before.
std::string FormatEvent(const v1::Event& event);

}  // namespace nvmeadapt::ctl
