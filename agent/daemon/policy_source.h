// SPDX-License-Identifier: Apache-2.0
// Where the policy in force comes from, and the one rule of precedence between the config file and the
// API (issue 32): a policy set over the API is persisted and overrides the file until `policy reset`,
// unless the config makes the file authoritative, when it lasts until the next reload or restart. Either
// way GetPolicy, GetStatus and the nvme_adapt_policy_info metric say which one is in force.
#pragma once

#include <optional>
#include <string>

#include "agent/daemon/policy_book.h"
#include "agent/state/state_store.h"
#include "common/result.h"
#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::daemon {

class PolicySource {
 public:
  PolicySource(const state::StateStore& store, bool file_authoritative)
      : store_(store), file_authoritative_(file_authoritative) {
    origin_.set_file_authoritative(file_authoritative);
  }

  // The book to start with: the persisted API policy (unless the file is authoritative), else the file's.
  Result<PolicyBook> Initial(const v1::PolicySet& file);
  // A policy change over the API comes in two halves, so that its durable writes (fsync) stay off the loop
  // thread (issue 37): Persist (or Forget, for `policy reset`) on the caller's thread, touching only the
  // state dir, then InForce on the loop once the change is applied.
  // `book`, set over the API as `note` says: persisted unless the file is authoritative.
  Status Persist(const PolicyBook& book, const v1::PolicyNote& note) const;
  // `policy reset`: the API's policy forgotten on disk.
  Status Forget() const;
  // The origin after the change: the API's (`note`), or the file's after a reset (nullopt).
  void InForce(const std::optional<v1::PolicyNote>& note);
  // A reload of the file: its book, or nullopt with `why_not` when a persisted API policy stays in force.
  Result<std::optional<PolicyBook>> Reload(const v1::PolicySet& file, std::string* why_not);

  // The origin of `in_force`, with its hash.
  v1::PolicyOrigin Origin(const PolicyBook& in_force) const;
  bool from_api() const { return origin_.source() == v1::POLICY_SOURCE_API; }
  // A persisted policy of a newer state schema, kept and not in force (a downgrade): what GetStatus says of it.
  const std::string& kept_newer() const { return kept_newer_; }
  // A SetPolicy taken back (issue 45, item 10): the origin it found, and what puts back on disk the policy
  // that was in force with `origin` (its book `in_force`): policy.json and its note as they were, or none.
  const v1::PolicyOrigin& origin() const { return origin_; }
  void Restore(const v1::PolicyOrigin& origin) { origin_ = origin; }
  Status PutBack(const PolicyBook& in_force, const v1::PolicyOrigin& origin) const;
  std::string path() const { return store_.PolicyPath(); }

 private:
  void FromFile();

  const state::StateStore& store_;
  const bool file_authoritative_;  // read off the loop by Persist: origin_ is the loop's
  v1::PolicyOrigin origin_;
  std::string kept_newer_;
};

// "config_file" or "api": the metric's source label.
std::string PolicySourceLabel(v1::PolicySource source);

}  // namespace nvmeadapt::daemon
