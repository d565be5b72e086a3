// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/policy_source.h"

#include "common/log.h"

namespace nvmeadapt::daemon {

void PolicySource::FromFile() {
  const bool authoritative = origin_.file_authoritative();
  origin_.Clear();
  origin_.set_source(v1::POLICY_SOURCE_CONFIG_FILE);
  origin_.set_file_authoritative(authoritative);
}

Result<PolicyBook> PolicySource::Initial(const v1::PolicySet& file) {
  FromFile();
  if (origin_.file_authoritative()) {
    if (auto stale = store_.LoadPolicy(); stale && stale->has_value()) {
      NA_WARN("policy: the config file is authoritative (policy_file_authoritative): the policy persisted in "
              << store_.PolicyPath() << " is ignored");
    }
    return PolicyBook::Create(file);
  }
  auto persisted = store_.LoadPolicy();
  if (!persisted && persisted.error().code == ErrorCode::kFailedPrecondition) {
    // A downgrade: the file is the newer version's, kept for it; this one runs the file's policy meanwhile.
    kept_newer_ = persisted.error().message + ": kept as it is; the config file's policy is in force, and a "
                  "policy set over the API is refused until `nvme-adaptctl policy reset` drops that file";
    NA_ERROR("policy: " << kept_newer_);
  } else if (!persisted) {
    NA_WARN("persisted policy ignored, using the config's: " << persisted.error().message);
  } else if (persisted->has_value()) {
    auto from_state = PolicyBook::Create(**persisted);
    if (from_state) {
      origin_.set_source(v1::POLICY_SOURCE_API);
      if (auto note = store_.LoadPolicyNote(); note) {
        origin_.set_set_unix_ns(note->set_unix_ns());
        origin_.set_set_by(note->set_by());
      }
      NA_INFO("policy: using the policy set over the API and persisted in "
              << store_.PolicyPath() << " (it overrides the config file until nvme-adaptctl policy reset)");
      return from_state;
    }
    NA_WARN("persisted policy ignored, using the config's: " << from_state.error().message);
  }
  return PolicyBook::Create(file);
}

Status PolicySource::Persist(const PolicyBook& book, const v1::PolicyNote& note) const {
  if (file_authoritative_) return OkStatus();
  // The note first: a policy.json whose note is older only names the wrong caller; the reverse order
  // could leave a new policy without its note.
  NA_RETURN_IF_ERROR(store_.SavePolicyNote(note));
  return store_.SavePolicy(book.policies());
}

Status PolicySource::Forget() const { return store_.ClearPolicy(); }

Status PolicySource::PutBack(const PolicyBook& in_force, const v1::PolicyOrigin& origin) const {
  if (file_authoritative_) return OkStatus();  // neither the change nor the policy before it was persisted
  if (origin.source() != v1::POLICY_SOURCE_API) return Forget();
  v1::PolicyNote note;
  note.set_set_unix_ns(origin.set_unix_ns());
  note.set_set_by(origin.set_by());
  return Persist(in_force, note);
}

void PolicySource::InForce(const std::optional<v1::PolicyNote>& note) {
  if (!note) {
    kept_newer_.clear();  // `policy reset` removed the newer version's file
    FromFile();
    return;
  }
  origin_.set_source(v1::POLICY_SOURCE_API);
  origin_.set_set_unix_ns(note->set_unix_ns());
  origin_.set_set_by(note->set_by());
}

Result<std::optional<PolicyBook>> PolicySource::Reload(const v1::PolicySet& file, std::string* why_not) {
  if (from_api() && !origin_.file_authoritative()) {
    *why_not = "the policy set over the API" + (origin_.set_by().empty() ? "" : " by " + origin_.set_by()) +
               " and persisted in " + store_.PolicyPath() +
               " stays in force over the file's (nvme-adaptctl policy reset goes back to the file)";
    return std::optional<PolicyBook>();
  }
  NA_ASSIGN_OR_RETURN(auto book, PolicyBook::Create(file));
  FromFile();
  return std::optional<PolicyBook>(std::move(book));
}

v1::PolicyOrigin PolicySource::Origin(const PolicyBook& in_force) const {
  v1::PolicyOrigin origin = origin_;
  origin.set_hash(in_force.Hash());
  return origin;
}

std::string PolicySourceLabel(v1::PolicySource source) {
  return source == v1::POLICY_SOURCE_API ? "api" : "config_file";
}

}  // namespace nvmeadapt::daemon
