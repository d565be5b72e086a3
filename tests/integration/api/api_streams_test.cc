// SPDX-License-Identifier: Apache-2.0
// WatchEvents: filters, the bound on concurrent streams, a client that does not read (it must never hold
// up the publisher, and it is told how many events it missed), and a shutdown that ends streams at once.
#include <future>
#include <thread>

#include "tests/integration/api/api_test_support.h"

namespace nvmeadapt::testing {
namespace {

using std::chrono::seconds;

class Streams : public ::testing::Test {
 protected:
  void Start(uint32_t max_streams, uint32_t queue_events) {
    auto config = UnixOnlyConfig(dir_ / "agent.sock");
    config.set_max_watch_streams(max_streams);
    config.set_watch_queue_events(queue_events);
    server_ = MustStart(config, agent_);
    ASSERT_TRUE(server_);
    connection_ = MustConnect(UnixClient(dir_ / "agent.sock"));
    ASSERT_TRUE(connection_);
    stub_ = connection_->stub.get();
  }

  struct Stream {
    std::unique_ptr<grpc::ClientContext> context = std::make_unique<grpc::ClientContext>();
    std::unique_ptr<grpc::ClientReader<v1::Event>> reader;
  };

  // Opens a stream and waits until the server has subscribed it (initial metadata is sent after that).
  Stream Open(const v1::WatchEventsRequest& request = {}) {
    Stream stream;
    stream.reader = stub_->WatchEvents(stream.context.get(), request);
    stream.reader->WaitForInitialMetadata();
    return stream;
  }

  bool WaitForOpenStreams(size_t count) {
    for (int i = 0; i < 500; ++i) {
      if (server_->open_streams() == count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  TempDir dir_;
  FakeAgent agent_;
  std::unique_ptr<api::ApiServer> server_;
  std::unique_ptr<Connection> connection_;
  v1::AgentService::Stub* stub_ = nullptr;
};

TEST_F(Streams, FiltersByKindAndController) {
  Start(8, 64);
  v1::WatchEventsRequest request;
  request.add_kinds(v1::EVENT_KIND_OVERRIDE);
  request.set_controller("nvme0");
  Stream stream = Open(request);
  v1::SetPolicyResponse policy_reply;
  ASSERT_TRUE(stub_->SetPolicy(Deadline().get(), AdaptiveGlobal(), &policy_reply).ok());
  v1::SetQueueModeRequest override_request;
  override_request.mutable_queue()->set_controller("uvnvme:1234:0");
  override_request.mutable_queue()->set_queue(1);
  override_request.set_mode(v1::REAP_MODE_POLL);
  v1::SetQueueModeResponse override_reply;
  ASSERT_TRUE(stub_->SetQueueMode(Deadline().get(), override_request, &override_reply).ok());
  override_request.mutable_queue()->set_controller("nvme0");
  override_request.mutable_queue()->set_queue(2);
  override_request.set_duration_ns(30'000'000'000);
  ASSERT_TRUE(stub_->SetQueueMode(Deadline().get(), override_request, &override_reply).ok());
  EXPECT_GT(override_reply.queue().override().expires_unix_ns(), 0);

  v1::Event event;
  ASSERT_TRUE(stream.reader->Read(&event));
  EXPECT_EQ(event.sequence(), 3u);
  EXPECT_EQ(event.kind(), v1::EVENT_KIND_OVERRIDE);
  EXPECT_EQ(event.queue().controller(), "nvme0");
  EXPECT_EQ(event.queue().queue(), 2u);
  EXPECT_EQ(event.message(), "override of nvme0:q2: REAP_MODE_POLL");
  EXPECT_EQ(event.missed(), 0u);
}

TEST_F(Streams, PastTheBoundAStreamIsRefusedAndAClosedOneFreesItsSlot) {
  Start(2, 64);
  Stream first = Open();
  Stream second = Open();
  ASSERT_TRUE(WaitForOpenStreams(2));
  Stream third = Open();
  v1::Event event;
  EXPECT_FALSE(third.reader->Read(&event));
  const grpc::Status refused = third.reader->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.error_message(), "too many WatchEvents streams (api.max_watch_streams = 2)");

  first.context->TryCancel();
  first.reader->Finish().IgnoreError();
  ASSERT_TRUE(WaitForOpenStreams(1)) << "a cancelled stream kept its slot";
  Stream fourth = Open();
  ASSERT_TRUE(WaitForOpenStreams(2));
  agent_.PublishDecision(0);
  ASSERT_TRUE(fourth.reader->Read(&event));
  EXPECT_EQ(event.kind(), v1::EVENT_KIND_DECISION);
}

TEST_F(Streams, AClientThatDoesNotReadNeverHoldsUpThePublisherAndLearnsWhatItMissed) {
  Start(8, 16);
  Stream stalled = Open();
  ASSERT_TRUE(WaitForOpenStreams(1));
  // Far more than the stream's queue and gRPC's flow-control window hold.
  constexpr uint64_t kEvents = 20'000;
  auto publishing = std::async(std::launch::async, [&] {
    for (uint64_t i = 0; i < kEvents; ++i) agent_.PublishDecision(i);
  });
  const bool finished = publishing.wait_for(seconds(30)) == std::future_status::ready;
  EXPECT_TRUE(finished) << "the publisher waited for a client that does not read";

  uint64_t received = 0;
  uint64_t missed = 0;
  v1::Event event;
  while (stalled.reader->Read(&event)) {
    ++received;
    missed += event.missed();
    if (event.sequence() == kEvents) break;
  }
  EXPECT_EQ(event.sequence(), kEvents) << "the newest event must arrive";
  EXPECT_GT(missed, 0u);
  EXPECT_EQ(received + missed, kEvents) << "every event is either delivered or counted as missed";
  stalled.context->TryCancel();
}

TEST_F(Streams, ShutdownEndsEveryStreamPromptly) {
  Start(8, 16);
  Stream idle = Open();
  Stream reading = Open();
  Stream stalled = Open();
  ASSERT_TRUE(WaitForOpenStreams(3));
  for (uint64_t i = 0; i < 5'000; ++i) agent_.PublishDecision(i);  // fills the stalled stream's window
  auto drain = std::async(std::launch::async, [&] {
    v1::Event event;
    while (reading.reader->Read(&event)) {
    }
    return reading.reader->Finish();
  });
  const auto start = std::chrono::steady_clock::now();
  server_->Shutdown();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, seconds(5)) << "shutdown waited for streams";
  v1::Event event;
  while (idle.reader->Read(&event)) {
  }
  EXPECT_EQ(idle.reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  ASSERT_EQ(drain.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_NE(drain.get().error_code(), grpc::StatusCode::OK);
  stalled.context->TryCancel();
  EXPECT_EQ(server_->open_streams(), 0u);
}

}  // namespace
}  // namespace nvmeadapt::testing
