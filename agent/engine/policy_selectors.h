// SPDX-License-Identifier: Apache-2.0
// The one table of what a policy entry can select controllers by (model, serial, subsystem NQN, ...), the queue
// ranges it can narrow them to, and the precedence between entries. Pure string rules: the facts come in as
// values (the daemon reads them from discovery), so the config check, the daemon and explain agree.
// A new criterion is a member of DeviceFacts, a proto field of Selector (proto/nvmeadapt/v1/config.proto) and
// one row of SelectorFields(); SelectorFieldsCoverTheProto fails on a proto field without a row.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::engine {

// What is known of a queue's controller, as selectors see it. Empty: unknown (a criterion on it never matches).
struct DeviceFacts {
  std::string controller;   // the kernel's or driver's name now: "nvme0", "uvnvme:1234:0"
  std::string id;           // the stable ID (docs/operations.md, "Stable identity"); the name where there is none
  std::string model;
  std::string serial;
  std::string firmware;
  std::string subsysnqn;
  std::string transport;    // "pcie", "tcp", "rdma", "fc", "loop", "uvnvme", ...
  std::string layer;        // "local", "host", "target", "backing"
  std::string pci_address;  // "0000:3b:00.0" for a PCIe controller
  // The ID versions before issue 45 gave the controller (shared by every controller of its subsystem): an
  // entry or an `id` criterion written with it matches as it did. Empty where there is none.
  std::string legacy_id;
  // The node's (NodeIdentity): the same for every controller, so that one config serves several pools.
  std::string hostname;
  std::string kernel_release;
  std::string node_labels;  // "key=value" lines, sorted by key
};

// What the node says of itself, as node selectors see it: its name and kernel (uname), and the labels of a
// file the DaemonSet mounts from the downward API (agent/config/node_identity.h).
struct NodeIdentity {
  std::string hostname;
  std::string kernel_release;
  std::string labels;  // "key=value" lines, sorted by key (LabelsText)
  bool operator==(const NodeIdentity&) const = default;
};

// kGlob: `*` any run of characters, `?` one, `[...]` a class (fnmatch without flags); kExact: equal strings;
// kLabels: "key=glob,key=glob" over the fact's "key=value" lines: every key there, each value matching.
enum class SelectorMatch : uint8_t { kExact, kGlob, kLabels };

struct SelectorField {
  std::string_view name;  // the proto field of Selector, also its config/JSON name and the CLI's --match key
  SelectorMatch match;
  std::string DeviceFacts::*fact;
  std::string_view about;  // for help and docs
};

std::span<const SelectorField> SelectorFields();
const SelectorField* FindSelectorField(std::string_view name);
// "controller, id, model, ...": the names, for errors and help.
std::string SelectorFieldNames();

// The name of a Selector's queue criterion: "3", "1-4", "1,3,5-8".
inline constexpr std::string_view kSelectorQueuesField = "queues";
// The bounds of proto/nvmeadapt/v1/config.proto's Selector and PolicySet.selectors: each criterion and the
// queues text at most 256 characters, at most 256 selector entries.
inline constexpr size_t kMaxSelectorValueLength = 256;
inline constexpr int kMaxSelectors = 256;

struct QueueRange {
  uint32_t first = 0, last = 0;  // inclusive, first <= last, first >= 1 (the admin queue is never managed)
  bool operator==(const QueueRange&) const = default;
};

// One entry's criteria: every one set must match.
struct Selector {
  struct Criterion {
    const SelectorField* field;
    std::string pattern;
  };
  std::vector<Criterion> criteria;  // at most one per field
  std::vector<QueueRange> queues;   // empty: every queue of a matching controller

  bool QueueScoped() const { return !queues.empty(); }
  // How specific the entry is within its scope (controller or queue): the number of controller criteria.
  size_t Specificity() const { return criteria.size(); }
};

// "3", "1-4", "1,3,5-8"; an error says what is wrong with which part.
Result<std::vector<QueueRange>> ParseQueueRanges(std::string_view text);
// The ranges written back as ParseQueueRanges reads them.
std::string QueueRangesText(const std::vector<QueueRange>& ranges);
bool GlobMatches(std::string_view pattern, std::string_view text);
// A criterion's pattern is usable: not longer than kMaxSelectorValueLength, printable, a glob's classes closed.
Status CheckSelectorPattern(const SelectorField& field, std::string_view pattern);

bool Matches(const Selector& selector, const DeviceFacts& facts, uint32_t qid);
// False only when no device can match both: a field both set to different literal values (a glob's literal
// prefix counts), or queue ranges that do not meet. Two entries of one scope and specificity that may overlap
// would leave precedence to their order in the file: they are refused instead.
bool MayOverlap(const Selector& a, const Selector& b);

}  // namespace nvmeadapt::engine
