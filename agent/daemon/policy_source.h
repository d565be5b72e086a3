// Where the policy in force comes from, and the one rule of precedence between the config file and the
// API (issue 32): a policy set over the API is persisted and overrides the file until `policy reset`,
// unless the config makes the file authoritative, when it lasts until the next reload or restart. Either
// way GetPolicy, GetStatus and the nvme_adapt_policy_info metric say which one is in force.
#pragma once

#include <optional>
#include <string>

#include "agent/daemon/policy_book.h"
#include "agent/daemon/state_store.h"
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

class PolicySource {
 public:
  PolicySource(const StateStore& store, bool file_authoritative) : store_(store) {
    origin_.set_file_authoritative(file_authoritative);
  }

  // The book to start with: the persisted API policy (unless the file is authoritative), else the file's.
  Result<PolicyBook> Initial(const v1::PolicySet& file);
  // `book`, set over the API by `caller`: persisted unless the file is authoritative.
  Status SetOverApi(const PolicyBook& book, const std::string& caller, int64_t now_unix_ns);
  // `policy reset`: the API's policy forgotten; returns the file's book.
  Result<PolicyBook> Reset(const v1::PolicySet& file);
  // A reload of the file: its book, or nullopt with `why_not` when a persisted API policy stays in force.
  Result<std::optional<PolicyBook>> Reload(const v1::PolicySet& file, std::string* why_not);

  // The origin of `in_force`, with its hash.
  v1::PolicyOrigin Origin(const PolicyBook& in_force) const;
  bool from_api() const { return origin_.source() == v1::POLICY_SOURCE_API; }

 private:
  void FromFile();

  const StateStore& store_;
  v1::PolicyOrigin origin_;
};

// "config_file" or "api": the metric's source label.
std::string PolicySourceLabel(v1::PolicySource source);

}  // namespace nvmeadapt::daemon
