// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/commands.h"

#include <google/protobuf/util/json_util.h>

#include <iostream>
#include <iterator>

#include "agent/api/status_map.h"
#include "agent/api/validate.h"
#include "agent/config/policy_layers.h"
#include "agent/config/profiles.h"
#include "agent/ctl/format.h"
#include "agent/ctl/output.h"
#include "agent/ctl/policy_flags.h"
#include "agent/ctl/values.h"
#include "common/files.h"
#include "nvmeadapt/v1/agent.grpc.pb.h"

namespace nvmeadapt::ctl {
namespace {

Error Usage(std::string message) { return MakeError(ErrorCode::kInvalidArgument, std::move(message)); }

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// --queue N (with --controller) or --queue CONTROLLER:qN.
Status ApplyQueueOption(const Args& args, std::string* controller, uint32_t* queue) {
  if (const std::string* c = args.value("controller")) *controller = *c;
  const std::string* q = args.value("queue");
  if (!q) return OkStatus();
  if (auto number = ParseUint32(*q)) {
    if (controller->empty()) return Usage("--queue " + *q + ": needs --controller (or give --queue CONTROLLER:qN)");
    *queue = *number;
    return OkStatus();
  }
  auto id = ParseQueueName(*q);
  if (!id) return Usage("--queue: " + id.error().message);
  if (!controller->empty() && *controller != id->controller()) {
    return Usage("--queue " + api::Quoted(*q) + " names another controller than --controller " + api::Quoted(*controller));
  }
  *controller = id->controller();
  *queue = id->queue();
  return OkStatus();
}

Result<v1::Policy> ReadPolicyFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    auto read = ReadWholeFile(path, 1 << 20);
    if (!read) return Usage("--file: " + read.error().message);
    text = std::move(read).value();
  }
  v1::Policy policy;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &policy, options);
  if (!status.ok()) {
    return Usage("--file " + api::Quoted(path) + ": not a Policy in JSON: " + OneLine(std::string(status.message())));
  }
  return policy;
}

}  // namespace

int UsageError(std::string_view message) {
  std::cerr << "nvme-adaptctl: " << message << "\n(see nvme-adaptctl --help, or COMMAND --help)\n";
  return kExitUsage;
}

int ServerError(const grpc::Status& status) {
  std::cerr << "nvme-adaptctl: " << api::StatusCodeName(status.error_code()) << ": "
            << OneLine(status.error_message()) << "\n";
  return kExitServerError;
}

Result<v1::SetPolicyRequest> BuildSetPolicyRequest(const Args& args) {
  v1::SetPolicyRequest request;
  v1::Policy* policy = request.mutable_policy();
  if (const std::string* file = args.value("file")) {
    NA_ASSIGN_OR_RETURN(auto loaded, ReadPolicyFile(*file));
    *policy = loaded;
  }
  NA_RETURN_IF_ERROR(ApplyPolicyFlags(args, policy));
  if (const std::string* mode = args.value("mode")) {
    auto parsed = ParseControllerMode(*mode);
    if (!parsed) return Usage("--mode: " + parsed.error().message);
    policy->set_mode(*parsed);
  }
  std::string controller;
  uint32_t queue = 0;
  NA_RETURN_IF_ERROR(ApplyQueueOption(args, &controller, &queue));
  request.set_controller(controller);
  request.set_queue(queue);
  request.set_replace(args.flag("replace"));
  if (const std::string* selector = args.value("selector")) {
    if (!controller.empty()) return Usage("--selector: not with --controller or --queue (it names an entry of its own)");
    request.set_selector(*selector);
  }
  for (const std::string& criterion : args.all("match")) {
    if (Status set = config::SetSelectorCriterion(*request.mutable_match(), criterion); !set) {
      return Usage("--match: " + set.error().message);
    }
  }
  request.set_remove(args.flag("remove"));
  if ((request.has_match() || request.remove()) && request.selector().empty()) {
    return Usage("--match and --remove need --selector NAME");
  }
  if (request.remove() || (request.has_match() && policy->ByteSizeLong() == 0)) return request;
  if (!request.replace() && policy->ByteSizeLong() == 0) {
    return Usage("policy set: give at least one field (e.g. --mode adaptive), --file, or --replace");
  }
  return request;
}

Result<v1::SetQueueModeRequest> BuildSetQueueModeRequest(const Args& args) {
  if (args.positional.size() != 3) return Usage("override: expected QUEUE MODE (e.g. override nvme0:q1 poll --for 5m)");
  v1::SetQueueModeRequest request;
  NA_ASSIGN_OR_RETURN(auto id, ParseQueueName(args.positional[1]));
  *request.mutable_queue() = id;
  NA_ASSIGN_OR_RETURN(auto mode, ParseOverrideMode(args.positional[2]));
  request.set_mode(mode);
  if (const std::string* duration = args.value("for")) {
    if (mode == v1::REAP_MODE_UNSPECIFIED) return Usage("--for: not with mode none (it clears the override)");
    auto nanos = ParseDuration(*duration);
    if (!nanos) return Usage("--for: " + nanos.error().message);
    if (*nanos == 0) return Usage("--for: must be longer than 0 (leave it out for no expiry)");
    request.set_duration_ns(*nanos);
  }
  return request;
}

Result<v1::SetPauseRequest> BuildSetPauseRequest(const Args& args) {
  v1::SetPauseRequest request;
  if (args.positional.size() != 1) return Usage(args.positional[0] + ": takes no arguments");
  if (args.positional[0] == "resume") {
    request.set_resume(true);
    return request;
  }
  request.set_mode(v1::CONTROLLER_MODE_INTERRUPT);
  if (const std::string* mode = args.value("mode")) {
    if (*mode == "off") {
      request.set_mode(v1::CONTROLLER_MODE_OFF);
    } else if (*mode != "interrupt") {
      return Usage("--mode: a pause holds queues in interrupt or off, not " + api::Quoted(*mode));
    }
  }
  if (const std::string* duration = args.value("for")) {
    auto nanos = ParseDuration(*duration);
    if (!nanos) return Usage("--for: " + nanos.error().message);
    if (*nanos == 0) return Usage("--for: must be longer than 0 (leave it out to pause until resume)");
    request.set_duration_ns(*nanos);
  }
  return request;
}

Result<v1::WatchEventsRequest> BuildWatchEventsRequest(const Args& args) {
  v1::WatchEventsRequest request;
  for (const auto& kind : args.all("kind")) {
    auto parsed = ParseEventKind(kind);
    if (!parsed) return Usage("--kind: " + parsed.error().message);
    request.add_kinds(*parsed);
  }
  if (const std::string* source = args.value("source")) {
    auto parsed = ParseSource(*source);
    if (!parsed) return Usage("--source: " + parsed.error().message);
    request.set_source(*parsed);
  }
  std::string controller;
  uint32_t queue = 0;
  NA_RETURN_IF_ERROR(ApplyQueueOption(args, &controller, &queue));
  request.set_controller(controller);
  request.set_queue(queue);
  return request;
}

int RunStatus(const Args& args, const AgentClient& client, std::ostream& out) {
  if (args.positional.size() != 1) return UsageError("status: takes no arguments");
  auto stub = v1::AgentService::NewStub(client.channel());
  v1::GetStatusResponse response;
  const grpc::Status status = stub->GetStatus(client.NewContext().get(), {}, &response);
  if (!status.ok()) return ServerError(status);
  if (!PrintedAsData(args, response, out)) PrintStatus(response, out);
  // The daemon answers from outside its loop when the loop does not take the call: then it names no
  // collector, and a liveness probe must see a held-up agent as failing.
  if (response.collector().empty()) {
    std::cerr << "nvme-adaptctl: the agent answered without its loop: it is held up\n";
    return kExitServerError;
  }
  return 0;
}

int RunQueues(const Args& args, const AgentClient& client, std::ostream& out) {
  if (args.positional.size() != 1) return UsageError("queues: takes no arguments (filters are --source, --controller)");
  v1::ListQueuesRequest request;
  if (const std::string* source = args.value("source")) {
    auto parsed = ParseSource(*source);
    if (!parsed) return UsageError("--source: " + parsed.error().message);
    request.set_source(*parsed);
  }
  if (const std::string* controller = args.value("controller")) request.set_controller(*controller);
  auto stub = v1::AgentService::NewStub(client.channel());
  v1::ListQueuesResponse response;
  const grpc::Status status = stub->ListQueues(client.NewContext().get(), request, &response);
  if (!status.ok()) return ServerError(status);
  if (!PrintedAsData(args, response, out)) PrintQueues(response, out, OutputOf(args) == Output::kWide);
  return 0;
}

int RunPolicy(const Args& args, const AgentClient& client, std::ostream& out) {
  auto stub = v1::AgentService::NewStub(client.channel());
  if (args.positional.size() == 3 && args.positional[1] == "explain") {
    v1::ExplainPolicyRequest request;
    auto id = ParseQueueName(args.positional[2]);
    if (!id) return UsageError(id.error().message);
    *request.mutable_queue() = *id;
    v1::ExplainPolicyResponse response;
    const grpc::Status status = stub->ExplainPolicy(client.NewContext().get(), request, &response);
    if (!status.ok()) return ServerError(status);
    if (!PrintedAsData(args, response, out)) PrintPolicyExplain(response, out);
    return 0;
  }
  if (args.positional.size() != 2) {
    return UsageError("policy: expected 'policy get', 'policy set', 'policy reset' or 'policy explain QUEUE'");
  }
  if (args.positional[1] == "get") {
    v1::GetPolicyResponse response;
    const grpc::Status status = stub->GetPolicy(client.NewContext().get(), {}, &response);
    if (!status.ok()) return ServerError(status);
    if (PrintedAsData(args, response, out)) return 0;
    if (response.has_origin()) out << "policy in force: " << PolicyOriginText(response.origin()) << "\n";
    PrintPolicySet(response.policy(), &response.effective_global(), out);
    return 0;
  }
  if (args.positional[1] == "reset") {
    v1::SetPolicyRequest request;
    request.set_reset(true);
    v1::SetPolicyResponse response;
    const grpc::Status status = stub->SetPolicy(client.NewContext().get(), request, &response);
    if (!status.ok()) return ServerError(status);
    if (!PrintedAsData(args, response, out)) PrintPolicySet(response.policy(), nullptr, out);
    return 0;
  }
  if (args.positional[1] != "set") return UsageError("policy: expected 'get' or 'set', got " + api::Quoted(args.positional[1]));
  auto request = BuildSetPolicyRequest(args);
  if (!request) return UsageError(request.error().message);
  v1::SetPolicyResponse response;
  const grpc::Status status = stub->SetPolicy(client.NewContext().get(), *request, &response);
  if (!status.ok()) return ServerError(status);
  if (!PrintedAsData(args, response, out)) PrintPolicySet(response.policy(), nullptr, out);
  return 0;
}

int RunOverride(const Args& args, const AgentClient& client, std::ostream& out) {
  auto request = BuildSetQueueModeRequest(args);
  if (!request) return UsageError(request.error().message);
  auto stub = v1::AgentService::NewStub(client.channel());
  v1::SetQueueModeResponse response;
  const grpc::Status status = stub->SetQueueMode(client.NewContext().get(), *request, &response);
  if (!status.ok()) return ServerError(status);
  if (!PrintedAsData(args, response, out)) PrintQueue(response.queue(), out);
  return 0;
}

int RunPause(const Args& args, const AgentClient& client, std::ostream& out) {
  auto request = BuildSetPauseRequest(args);
  if (!request) return UsageError(request.error().message);
  auto stub = v1::AgentService::NewStub(client.channel());
  v1::SetPauseResponse response;
  const grpc::Status status = stub->SetPause(client.NewContext().get(), *request, &response);
  if (!status.ok()) return ServerError(status);
  if (PrintedAsData(args, response, out)) return 0;
  out << (response.has_pause() ? "paused: " + PauseText(response.pause()) : "resumed: the policy is in force again")
      << " (" << response.queues_moved() << " queue(s) moved)\n";
  return 0;
}

int RunWatch(const Args& args, const AgentClient& client, std::ostream& out) {
  if (args.positional.size() != 1) return UsageError("watch: takes no arguments (filters are options)");
  auto request = BuildWatchEventsRequest(args);
  if (!request) return UsageError(request.error().message);
  uint64_t count = 0;
  if (const std::string* text = args.value("count")) {
    auto parsed = ParseUint32(*text);
    if (!parsed || *parsed == 0) return UsageError("--count: expected a number >= 1, got " + api::Quoted(*text));
    count = *parsed;
  }
  auto stub = v1::AgentService::NewStub(client.channel());
  auto context = client.NewContext(/*streaming=*/true);
  auto reader = stub->WatchEvents(context.get(), *request);
  v1::Event event;
  uint64_t seen = 0;
  while (reader->Read(&event)) {
    if (!PrintedAsData(args, event, out)) out << FormatEvent(event) << std::endl;
    if (count > 0 && ++seen >= count) {
      context->TryCancel();
      reader->Finish().IgnoreError();
      return 0;
    }
  }
  const grpc::Status status = reader->Finish();
  return status.ok() ? 0 : ServerError(status);
}

}  // namespace nvmeadapt::ctl
