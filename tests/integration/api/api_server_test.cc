// SPDX-License-Identifier: Apache-2.0
// The AgentService over a real Unix socket: every invalid input with its status code and field path,
// the agent's errors mapped to codes, request size bound, health and reflection, the request observer,
// and policy changes that are persisted before the reply.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>

#include <functional>
#include <mutex>

#include "common/files.h"
#include "tests/integration/api/api_test_support.h"

namespace nvmeadapt::testing {
namespace {

class RecordingObserver final : public api::RequestObserver {
 public:
  void OnRequest(const api::RequestRecord& record) override {
    std::lock_guard lock(mutex_);
    seen_.push_back(std::string(record.method) + " " + std::string(record.code_name) + " " +
                    std::string(record.transport));
  }
  std::vector<std::string> seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> seen_;
};

class ApiServer : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = std::make_unique<FakeAgent>(dir_ / "policy.json");
    server_ = MustStart(UnixOnlyConfig(dir_ / "agent.sock"), *agent_, &observer_);
    ASSERT_TRUE(server_);
    connection_ = MustConnect(UnixClient(dir_ / "agent.sock"));
    ASSERT_TRUE(connection_);
    stub_ = connection_->stub.get();
    channel_ = connection_->client.channel();
  }

  TempDir dir_;
  RecordingObserver observer_;
  std::unique_ptr<FakeAgent> agent_;
  std::unique_ptr<api::ApiServer> server_;
  std::unique_ptr<Connection> connection_;
  std::shared_ptr<grpc::Channel> channel_;
  v1::AgentService::Stub* stub_ = nullptr;
};

struct BadCall {
  const char* name;
  std::function<grpc::Status(v1::AgentService::Stub&)> call;
  grpc::StatusCode code;
  const char* message;  // the whole message: field path first
};

grpc::Status SetPolicy(v1::AgentService::Stub& stub, const v1::SetPolicyRequest& request) {
  v1::SetPolicyResponse reply;
  return stub.SetPolicy(Deadline().get(), request, &reply);
}

grpc::Status SetPolicyWith(const std::function<void(v1::SetPolicyRequest&)>& fill, v1::AgentService::Stub& stub) {
  v1::SetPolicyRequest request;
  fill(request);
  return SetPolicy(stub, request);
}

grpc::Status SetQueueModeWith(const std::function<void(v1::SetQueueModeRequest&)>& fill,
                              v1::AgentService::Stub& stub) {
  v1::SetQueueModeRequest request;
  request.mutable_queue()->set_controller("nvme0");
  request.mutable_queue()->set_queue(1);
  request.set_mode(v1::REAP_MODE_POLL);
  fill(request);
  v1::SetQueueModeResponse reply;
  return stub.SetQueueMode(Deadline().get(), request, &reply);
}

grpc::Status SetPauseWith(const std::function<void(v1::SetPauseRequest&)>& fill, v1::AgentService::Stub& stub) {
  v1::SetPauseRequest request;
  fill(request);
  v1::SetPauseResponse reply;
  return stub.SetPause(Deadline().get(), request, &reply);
}

grpc::Status ListQueuesWith(const std::function<void(v1::ListQueuesRequest&)>& fill, v1::AgentService::Stub& stub) {
  v1::ListQueuesRequest request;
  fill(request);
  v1::ListQueuesResponse reply;
  return stub.ListQueues(Deadline().get(), request, &reply);
}

grpc::Status WatchWith(const std::function<void(v1::WatchEventsRequest&)>& fill, v1::AgentService::Stub& stub) {
  v1::WatchEventsRequest request;
  fill(request);
  auto context = Deadline();
  auto reader = stub.WatchEvents(context.get(), request);
  v1::Event event;
  while (reader->Read(&event)) {
  }
  return reader->Finish();
}

using Code = grpc::StatusCode;
using SP = v1::SetPolicyRequest;
using SQ = v1::SetQueueModeRequest;
using LQ = v1::ListQueuesRequest;
using PA = v1::SetPauseRequest;
using WE = v1::WatchEventsRequest;
template <class F>
auto Bind(grpc::Status (*call)(const std::function<F>&, v1::AgentService::Stub&), std::function<F> fill) {
  return [call, fill](v1::AgentService::Stub& stub) { return call(fill, stub); };
}

const std::vector<BadCall>& BadCalls() {
  static const std::vector<BadCall> calls = {
      {"list unknown source", Bind<void(LQ&)>(ListQueuesWith, [](LQ& r) { r.set_source(static_cast<v1::Source>(9)); }),
       Code::INVALID_ARGUMENT, "source: unknown source 9"},
      {"list bad controller", Bind<void(LQ&)>(ListQueuesWith, [](LQ& r) { r.set_controller("nvme0/x"); }),
       Code::INVALID_ARGUMENT, "controller: character 5 is not allowed (letters, digits and . _ : - only)"},
      {"list unknown controller", Bind<void(LQ&)>(ListQueuesWith, [](LQ& r) { r.set_controller("nvme9"); }),
       Code::NOT_FOUND, "controller nvme9: no such controller"},
      {"policy queue without controller", Bind<void(SP&)>(SetPolicyWith, [](SP& r) {
         r.set_queue(1);
         r.mutable_policy()->set_max_failures(2);
       }),
       Code::INVALID_ARGUMENT, "controller: must be set when queue is set"},
      {"policy with no field", Bind<void(SP&)>(SetPolicyWith, [](SP&) {}), Code::INVALID_ARGUMENT,
       "policy: sets no field (set at least one, or use replace to clear the level)"},
      {"policy window 0", Bind<void(SP&)>(SetPolicyWith, [](SP& r) { r.mutable_policy()->set_window_completions(0); }),
       Code::INVALID_ARGUMENT, "policy.window_completions: must be in [1, 1048575] (got 0)"},
      {"policy threshold 0", Bind<void(SP&)>(SetPolicyWith, [](SP& r) { r.mutable_policy()->set_poll_threshold_ns(0); }),
       Code::INVALID_ARGUMENT, "policy.poll_threshold_ns: must be in [1, 1000000000] (got 0)"},
      {"policy negative slack", Bind<void(SP&)>(SetPolicyWith, [](SP& r) { r.mutable_policy()->set_pace_slack_ns(-1); }),
       Code::INVALID_ARGUMENT, "policy.pace_slack_ns: must be in [0, 10000000000] (got -1)"},
      {"policy max failures 0", Bind<void(SP&)>(SetPolicyWith, [](SP& r) { r.mutable_policy()->set_max_failures(0); }),
       Code::INVALID_ARGUMENT, "policy.max_failures: must be in [1, 16777216] (got 0)"},
      {"policy timer too fine",
       Bind<void(SP&)>(SetPolicyWith, [](SP& r) { r.mutable_policy()->set_timer_granularity_ns(5); }),
       Code::INVALID_ARGUMENT, "policy.timer_granularity_ns: must be in [10000, 1000000000] (got 5)"},
      {"policy unknown mode",
       Bind<void(SP&)>(SetPolicyWith, [](SP& r) { r.mutable_policy()->set_mode(static_cast<v1::ControllerMode>(42)); }),
       Code::INVALID_ARGUMENT, "policy.mode: unknown controller mode 42"},
      {"policy long controller", Bind<void(SP&)>(SetPolicyWith, [](SP& r) {
         r.set_controller(std::string(65, 'n'));
         r.mutable_policy()->set_max_failures(2);
       }),
       Code::INVALID_ARGUMENT, "controller: longer than 64 characters"},
      {"policy unknown controller", Bind<void(SP&)>(SetPolicyWith, [](SP& r) {
         r.set_controller("nvme7");
         r.mutable_policy()->set_max_failures(2);
       }),
       Code::NOT_FOUND, "controller nvme7: no such controller"},
      {"policy unknown queue", Bind<void(SP&)>(SetPolicyWith, [](SP& r) {
         r.set_controller("nvme0");
         r.set_queue(9);
         r.mutable_policy()->set_max_failures(2);
       }),
       Code::NOT_FOUND, "queue nvme0:q9: no such queue"},
      {"override without queue", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) { r.clear_queue(); }),
       Code::INVALID_ARGUMENT, "queue: must be set"},
      {"override empty controller", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) { r.mutable_queue()->clear_controller(); }),
       Code::INVALID_ARGUMENT, "queue.controller: must not be empty"},
      {"override admin queue", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) { r.mutable_queue()->set_queue(0); }),
       Code::INVALID_ARGUMENT, "queue.queue: must be an I/O queue id (>= 1)"},
      {"override unknown mode", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) { r.set_mode(static_cast<v1::ReapMode>(7)); }),
       Code::INVALID_ARGUMENT, "mode: unknown reap mode 7"},
      {"override negative duration", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) { r.set_duration_ns(-1); }),
       Code::INVALID_ARGUMENT, "duration_ns: must be >= 0"},
      {"override too long", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) { r.set_duration_ns(INT64_MAX); }),
       Code::INVALID_ARGUMENT, "duration_ns: must be <= 31536000000000000 (365 days)"},
      {"clear with duration", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) {
         r.set_mode(v1::REAP_MODE_UNSPECIFIED);
         r.set_duration_ns(1000);
       }),
       Code::INVALID_ARGUMENT, "duration_ns: must be 0 when clearing an override (mode REAP_MODE_UNSPECIFIED)"},
      {"override unknown queue", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) {
         r.mutable_queue()->set_controller("uvnvme:1:0");
         r.mutable_queue()->set_queue(9);
       }),
       Code::NOT_FOUND, "queue uvnvme:1:0:q9: no such queue"},
      {"override ineligible queue", Bind<void(SQ&)>(SetQueueModeWith, [](SQ& r) { r.mutable_queue()->set_queue(3); }),
       Code::FAILED_PRECONDITION, "queue nvme0:q3: not eligible: threaded interrupt handler"},
      {"pause in poll mode", Bind<void(PA&)>(SetPauseWith, [](PA& r) { r.set_mode(v1::CONTROLLER_MODE_POLL); }),
       Code::INVALID_ARGUMENT, "mode: a pause holds queues in CONTROLLER_MODE_INTERRUPT or CONTROLLER_MODE_OFF, not 4"},
      {"pause negative duration", Bind<void(PA&)>(SetPauseWith, [](PA& r) { r.set_duration_ns(-5); }),
       Code::INVALID_ARGUMENT, "duration_ns: must be >= 0"},
      {"pause too long", Bind<void(PA&)>(SetPauseWith, [](PA& r) { r.set_duration_ns(INT64_MAX); }),
       Code::INVALID_ARGUMENT, "duration_ns: must be <= 31536000000000000 (365 days)"},
      {"resume with a mode", Bind<void(PA&)>(SetPauseWith, [](PA& r) {
         r.set_resume(true);
         r.set_mode(v1::CONTROLLER_MODE_OFF);
       }),
       Code::INVALID_ARGUMENT, "resume: takes no mode or duration_ns (it ends the pause)"},
      {"watch unknown kind", Bind<void(WE&)>(WatchWith, [](WE& r) { r.add_kinds(static_cast<v1::EventKind>(99)); }),
       Code::INVALID_ARGUMENT, "kinds[0]: unknown event kind 99"},
      {"watch unspecified kind", Bind<void(WE&)>(WatchWith, [](WE& r) {
         r.add_kinds(v1::EVENT_KIND_POLICY);
         r.add_kinds(v1::EVENT_KIND_UNSPECIFIED);
       }),
       Code::INVALID_ARGUMENT, "kinds[1]: must not be EVENT_KIND_UNSPECIFIED"},
      {"watch too many kinds", Bind<void(WE&)>(WatchWith, [](WE& r) {
         for (int i = 0; i < 17; ++i) r.add_kinds(v1::EVENT_KIND_DECISION);
       }),
       Code::INVALID_ARGUMENT, "kinds: more than 16 entries"},
      {"watch unknown source", Bind<void(WE&)>(WatchWith, [](WE& r) { r.set_source(static_cast<v1::Source>(-3)); }),
       Code::INVALID_ARGUMENT, "source: unknown source -3"},
      {"watch bad controller", Bind<void(WE&)>(WatchWith, [](WE& r) { r.set_controller("a b"); }),
       Code::INVALID_ARGUMENT, "controller: character 1 is not allowed (letters, digits and . _ : - only)"},
  };
  return calls;
}

TEST_F(ApiServer, EveryInvalidInputGetsItsCodeAndTheFieldPath) {
  for (const BadCall& bad : BadCalls()) {
    const grpc::Status status = bad.call(*stub_);
    EXPECT_EQ(status.error_code(), bad.code) << bad.name << ": " << status.error_message();
    EXPECT_EQ(status.error_message(), bad.message) << bad.name;
  }
  EXPECT_EQ(agent_->policy().ByteSizeLong(), 0u) << "a refused request changed the policy";
}

TEST_F(ApiServer, ARequestLargerThanTheBoundIsRefusedBeforeItIsParsed) {
  v1::SetPolicyRequest request;
  request.set_controller(std::string(100 << 10, 'x'));
  request.mutable_policy()->set_max_failures(2);
  EXPECT_EQ(SetPolicy(*stub_, request).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The connection is still usable afterwards.
  v1::GetStatusResponse status;
  EXPECT_TRUE(stub_->GetStatus(Deadline().get(), {}, &status).ok());
}

TEST_F(ApiServer, APolicyChangeIsPersistedBeforeTheReplyAndReadBack) {
  v1::SetPolicyRequest request;
  request.set_controller("nvme0");
  request.mutable_policy()->set_mode(v1::CONTROLLER_MODE_SHADOW);
  request.mutable_policy()->set_pace_slack_ns(5000);
  ASSERT_TRUE(SetPolicy(*stub_, request).ok());
  auto saved = ReadWholeFile(dir_ / "policy.json");
  ASSERT_TRUE(saved) << saved.error().message;
  v1::PolicySet persisted;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*saved, &persisted).ok());
  ASSERT_EQ(persisted.controllers_size(), 1);
  EXPECT_EQ(persisted.controllers(0).policy().pace_slack_ns(), 5000);

  // replace: the level becomes exactly the request's policy.
  request.clear_policy();
  request.mutable_policy()->set_max_failures(5);
  request.set_replace(true);
  ASSERT_TRUE(SetPolicy(*stub_, request).ok());
  v1::GetPolicyResponse policy;
  ASSERT_TRUE(stub_->GetPolicy(Deadline().get(), {}, &policy).ok());
  ASSERT_EQ(policy.policy().controllers_size(), 1);
  EXPECT_FALSE(policy.policy().controllers(0).policy().has_pace_slack_ns());
  EXPECT_EQ(policy.policy().controllers(0).policy().max_failures(), 5u);
  EXPECT_EQ(policy.effective_global().window_completions(), 8192u);
}

// Issue 45, item 10: SetPolicy works to its client's deadline, less a tenth (at most 250 ms) for the answer's
// way back, and to 30 s at most when the client sets none.
TEST_F(ApiServer, SetPolicyWorksToTheClientsDeadline) {
  using std::chrono::milliseconds;
  v1::SetPolicyRequest request;
  request.mutable_policy()->set_pace_slack_ns(5000);
  v1::SetPolicyResponse reply;
  grpc::ClientContext within_2_s;
  const auto asked = std::chrono::steady_clock::now();
  within_2_s.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  ASSERT_TRUE(stub_->SetPolicy(&within_2_s, request, &reply).ok());
  const auto left = agent_->last_set_policy_deadline() - asked;
  EXPECT_GT(left, milliseconds(1600)) << "2 s less 200 ms, less the way there";
  EXPECT_LE(left, milliseconds(1850)) << "2 s less 200 ms (gRPC rounds the timeout it sends up)";
  grpc::ClientContext none;
  ASSERT_TRUE(stub_->SetPolicy(&none, request, &reply).ok());
  EXPECT_LE(agent_->last_set_policy_deadline() - std::chrono::steady_clock::now(), std::chrono::seconds(30));
  EXPECT_GT(agent_->last_set_policy_deadline() - std::chrono::steady_clock::now(), std::chrono::seconds(29));
}

TEST_F(ApiServer, HealthAnswersServingAndReflectionListsTheService) {
  grpc::GenericStub generic(channel_);
  // grpc.health.v1.HealthCheckRequest{service: "nvmeadapt.v1.AgentService"} encoded by hand: field 1, string.
  const std::string service = "nvmeadapt.v1.AgentService";
  const std::string request = std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
  grpc::ByteBuffer reply;
  grpc::Status status;
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  grpc::ClientContext context;
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  generic.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request_buffer, &reply,
                    [&](grpc::Status s) {
                      std::lock_guard lock(mutex);
                      status = s;
                      finished = true;
                      done.notify_one();
                    });
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(10), [&] { return finished; }));
  }
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(reply.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2)) << "HealthCheckResponse{status: SERVING}";

  // grpc.reflection.v1alpha ServerReflectionRequest{list_services: ""}: field 7, empty string.
  grpc::ClientContext reflection_context;
  reflection_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::CompletionQueue cq;
  auto call = generic.PrepareCall(&reflection_context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  grpc::Slice list_services(std::string("\x3a\x00", 2));
  grpc::ByteBuffer list_request(&list_services, 1);
  call->WriteLast(list_request, grpc::WriteOptions(), reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  grpc::ByteBuffer list_reply;
  call->Read(&list_reply, reinterpret_cast<void*>(3));
  ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
  slices.clear();
  ASSERT_TRUE(list_reply.Dump(&slices).ok());
  bytes.clear();
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_NE(bytes.find("nvmeadapt.v1.AgentService"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
  reflection_context.TryCancel();
  grpc::Status finish_status;
  call->Finish(&finish_status, reinterpret_cast<void*>(4));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

TEST_F(ApiServer, TheObserverSeesEveryRequestWithItsCode) {
  v1::GetStatusResponse status;
  ASSERT_TRUE(stub_->GetStatus(Deadline().get(), {}, &status).ok());
  v1::SetQueueModeRequest request;
  request.mutable_queue()->set_controller("nvme0");
  request.mutable_queue()->set_queue(8);
  v1::SetQueueModeResponse reply;
  EXPECT_EQ(stub_->SetQueueMode(Deadline().get(), request, &reply).error_code(), grpc::StatusCode::NOT_FOUND);
  request.mutable_queue()->set_controller("");
  EXPECT_EQ(stub_->SetQueueMode(Deadline().get(), request, &reply).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(observer_.seen(), (std::vector<std::string>{"GetStatus OK unix", "SetQueueMode NOT_FOUND unix",
                                                         "SetQueueMode INVALID_ARGUMENT unix"}));
}

}  // namespace
}  // namespace nvmeadapt::testing
