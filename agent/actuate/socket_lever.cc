// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/socket_lever.h"

#include <memory>

#include "agent/actuate/lever_registry.h"
#include "agent/discover/control_client.h"

namespace nvmeadapt::actuate {
using discover::ControlClient;

SocketLever::SocketLever(SocketLeverOptions options)
    : PlannedLever(LeverKind::kUvnvmeSocket, LeverScope::kQueue, options.dry_run), options_(options) {}

std::string SocketLever::ModeObject(const LeverTarget& target) { return target.ToString() + " mode"; }

Status SocketLever::SetMode(ControlClient& client, const LeverTarget& target, const std::string& mode) const {
  auto reply = client.Call({{"op", "set_mode"}, {"ctrl", target.ctrl_index}, {"qid", target.qid}, {"mode", mode}});
  if (!reply) return Fail(client.path(), reply.error());
  const auto acked = reply->find("mode");
  if (acked == reply->end() || !acked->is_string() || acked->get<std::string>() != mode) {
    return Fail(ErrorCode::kIo, client.path(),
                client.path() + ": set_mode " + mode + " for " + target.ToString() + " acknowledged another mode");
  }
  return {};
}

Result<PlannedLever::StepPlan> SocketLever::MakePlan(const LeverTarget& target, ReapMode mode) {
  if (target.socket_path.empty()) {
    return Fail(ErrorCode::kUnsupported, target.ToString(), target.ToString() + " has no control socket");
  }
  auto connected = ControlClient::Connect(target.socket_path, options_.timeout_ms);
  if (!connected) return Fail(target.socket_path, connected.error());
  auto client = std::make_shared<ControlClient>(std::move(*connected));
  auto list = client->Call({{"op", "list"}});
  if (!list) return Fail(target.socket_path, list.error());
  std::string current;
  const auto queues = list->find("queues");
  if (queues != list->end() && queues->is_array()) {
    for (const auto& q : *queues) {
      const auto is = [&q](const char* key, uint32_t wanted) {
        const auto it = q.find(key);
        return it != q.end() && it->is_number_unsigned() && it->get<uint64_t>() == wanted;
      };
      const auto mode_field = q.is_object() ? q.find("mode") : q.end();
      if (q.is_object() && is("ctrl", target.ctrl_index) && is("qid", target.qid) && mode_field != q.end() &&
          mode_field->is_string()) {
        current = mode_field->get<std::string>();
      }
    }
  }
  if (current.empty()) {
    return Fail(ErrorCode::kNotFound, target.socket_path,
                target.socket_path + ": " + target.ToString() + " is not among the queues it lists");
  }
  const std::string wanted(ReapModeName(mode));
  StepPlan plan;
  plan.found.push_back({ModeObject(target), current});
  if (current != wanted) {
    plan.steps.push_back(Step{ModeObject(target), wanted,
                              [this, client, target, wanted] { return SetMode(*client, target, wanted); }});
  }
  return plan;
}

Result<std::vector<PlannedLever::Step>> SocketLever::MakeRestore(const RestorePoint& point) {
  std::vector<Step> steps;
  for (const RestoreStep& step : point.steps) {
    if (step.object != ModeObject(point.target) || !ParseReapMode(step.value)) {
      return Fail(ErrorCode::kIo, step.object,
                  "restore point step '" + step.object + "' = '" + step.value + "' is not a mode of " +
                      point.target.ToString());
    }
    steps.push_back(Step{step.object, step.value, [this, target = point.target, mode = step.value]() -> Status {
                           auto client = ControlClient::Connect(target.socket_path, options_.timeout_ms);
                           if (!client) return Fail(target.socket_path, client.error());
                           return SetMode(*client, target, mode);
                         }});
  }
  return steps;
}

// Registered with the levers (lever_registry.h).
namespace {

std::unique_ptr<PlannedLever> MakeSocket(bool dry_run, const config::LeverSettings& settings,
                                         const LeverEnvironment&) {
  return std::make_unique<SocketLever>(SocketLeverOptions{static_cast<int>(settings.socket_timeout_ms), dry_run});
}

const LeverRegistrar kRegistered({{.kind = LeverKind::kUvnvmeSocket, .risk = LeverRisk::kNothingElse,
                                   .serves = {Source::kUvnvme}, .auto_rank = 10, .auto_why = "control socket"},
                                  &MakeSocket});

}  // namespace

}  // namespace nvmeadapt::actuate
