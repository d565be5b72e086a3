// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/policy_explain.h"

#include "agent/config/policy_convert.h"
#include "agent/config/policy_layers.h"

namespace nvmeadapt::daemon {
namespace {

// An entry in force is the file's when the file has the same entry with the same fields: an API-set book starts
// as a copy of the file's, so only the entries a SetPolicy made or changed are the API's.
v1::PolicySource EntrySource(const std::string& layer, const v1::PolicySet& in_force, const v1::PolicySet& file,
                             bool from_api) {
  if (layer.empty()) return v1::POLICY_SOURCE_DEFAULT;
  if (!from_api) return v1::POLICY_SOURCE_CONFIG_FILE;
  const v1::Policy* ours = config::FindEntry(in_force, layer);
  const v1::Policy* files = config::FindEntry(file, layer);
  const bool same = ours != nullptr && files != nullptr && ours->SerializeAsString() == files->SerializeAsString();
  return same ? v1::POLICY_SOURCE_CONFIG_FILE : v1::POLICY_SOURCE_API;
}

}  // namespace

v1::ExplainPolicyResponse ExplainQueuePolicy(const ManagedQueue& q, const PolicyApplier& policy) {
  const v1::PolicySet& in_force = policy.book().policies();
  const engine::DeviceFacts facts = FactsOf(q.desc, policy.node());
  v1::ExplainPolicyResponse response;
  response.mutable_queue()->set_controller(q.desc.controller);
  response.mutable_queue()->set_queue(q.desc.qid);
  response.set_controller_id(q.desc.ControllerId());
  for (const config::PolicyLayer& layer : config::LayersFor(in_force, facts, q.desc.qid)) {
    response.add_matched(layer.entry);
  }
  const engine::Policy running = policy.For(q.desc);  // what the queue runs: the lever may limit the mode
  *response.mutable_effective() = config::ToProto(running);
  auto origins = config::ExplainPolicy(in_force, facts, q.desc.qid);
  if (!origins) return response;  // the book holds validated entries only
  for (const config::FieldOrigin& origin : *origins) {
    v1::PolicyFieldOrigin* field = response.add_fields();
    field->set_field(std::string(origin.field->name));
    const int64_t value = origin.field->get(running);
    config::SetProtoPolicyValue(field->mutable_value(), *origin.field, value);
    field->set_source(EntrySource(origin.layer, in_force, policy.file(), policy.source().from_api()));
    field->set_entry(value == origin.value ? origin.entry : "lever " + q.lever);
  }
  return response;
}

}  // namespace nvmeadapt::daemon
