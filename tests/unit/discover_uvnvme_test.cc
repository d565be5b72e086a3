// SPDX-License-Identifier: Apache-2.0
// uvnvme discovery over real Unix sockets against FakeUvnvmeServer (docs/uvnvme-control.md).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <unistd.h>

#include <filesystem>

#include "agent/discover/control_client.h"
#include "agent/discover/diff.h"
#include "agent/discover/discovery.h"
#include "tests/unit/fake_uvnvme.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::discover {
namespace {

using nvmeadapt::testing::FakeUvnvmeServer;
using nvmeadapt::testing::TempDir;

// The fake driver runs in this process, so the kernel reports this pid for its socket (SO_PEERCRED) and
// discovery believes that pid only.
const uint32_t kPid = static_cast<uint32_t>(getpid());
const std::string kPidText = std::to_string(kPid);

class UvnvmeDiscovery : public ::testing::Test {
 protected:
  UvnvmeDiscovery() {
    std::filesystem::create_directories(tmp_ / "run/uvnvme");
    options_ = DiscoveryOptions::UnderRoot(tmp_.path());
    options_.kernel = false;
    options_.socket_timeout_ms = 300;
  }
  std::string Socket(const std::string& name) { return tmp_ / ("run/uvnvme/" + name); }

  TempDir tmp_;
  DiscoveryOptions options_;
};

const Skipped* SkippedFor(const Snapshot& snapshot, const std::string& path) {
  for (const auto& s : snapshot.skipped) {
    if (s.object == path) return &s;
  }
  return nullptr;
}

TEST_F(UvnvmeDiscovery, ControllersAndQueuesOfAProcess) {
  FakeUvnvmeServer server(Socket(kPidText + ".sock"), kPid,
                          {{0, 1, "interrupt"}, {0, 2, "poll"}, {1, 1, "interrupt"}});
  const Snapshot snapshot = Discover(options_);
  ASSERT_TRUE(snapshot.skipped.empty()) << snapshot.skipped[0].error.message;
  ASSERT_EQ(snapshot.controllers.size(), 2u);
  const Controller& c0 = snapshot.controllers[0];
  EXPECT_EQ(c0.name, "uvnvme:" + kPidText + ":0");
  EXPECT_EQ(c0.source, Source::kUvnvme);
  EXPECT_EQ(c0.pid, static_cast<pid_t>(kPid));
  EXPECT_EQ(c0.instance, 0u);
  EXPECT_EQ(c0.socket_path, Socket(kPidText + ".sock"));
  ASSERT_EQ(c0.queues.size(), 2u);
  EXPECT_EQ(c0.queues[0].qid, 1u);
  EXPECT_EQ(c0.queues[0].mode, ReapMode::kInterrupt);
  EXPECT_TRUE(c0.queues[0].eligible);
  EXPECT_EQ(c0.queues[0].key, (QueueKey{Source::kUvnvme, 0, 1, kPid}));
  ASSERT_TRUE(c0.queues[0].vector);
  EXPECT_EQ(c0.queues[0].vector->kind, VectorKind::kEventfd);
  EXPECT_EQ(c0.queues[1].mode, ReapMode::kPoll);
  EXPECT_EQ(snapshot.controllers[1].name, "uvnvme:" + kPidText + ":1");
  EXPECT_EQ(server.Requests(), std::vector<std::string>{R"({"op":"list"})"});
}

TEST_F(UvnvmeDiscovery, StaleSocketIsSkippedCleanly) {
  FakeUvnvmeServer alive(Socket(kPidText + ".sock"), kPid, {{0, 1, "interrupt"}});
  nvmeadapt::testing::MakeStaleSocket(Socket("99.sock"));
  const Snapshot snapshot = Discover(options_);
  ASSERT_EQ(snapshot.controllers.size(), 1u);
  EXPECT_EQ(snapshot.controllers[0].name, "uvnvme:" + kPidText + ":0");
  const Skipped* stale = SkippedFor(snapshot, Socket("99.sock"));
  ASSERT_NE(stale, nullptr);
  EXPECT_EQ(stale->error.code, ErrorCode::kUnavailable);
  EXPECT_NE(stale->error.message.find("stale socket"), std::string::npos) << stale->error.message;
  EXPECT_TRUE(std::filesystem::exists(Socket("99.sock"))) << "discovery never removes a file it does not own";
}

TEST_F(UvnvmeDiscovery, GarbageAnswerIsSkipped) {
  FakeUvnvmeServer garbage(Socket("driver7.sock"), kPid, {{0, 1, "interrupt"}});
  garbage.SetBehavior(FakeUvnvmeServer::Behavior::kGarbage);
  const Snapshot snapshot = Discover(options_);
  EXPECT_TRUE(snapshot.controllers.empty());
  const Skipped* skipped = SkippedFor(snapshot, Socket("driver7.sock"));
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->error.code, ErrorCode::kIo);
  EXPECT_NE(skipped->error.message.find("not a JSON object"), std::string::npos) << skipped->error.message;
}

TEST_F(UvnvmeDiscovery, SilentProcessTimesOut) {
  FakeUvnvmeServer silent(Socket("driver8.sock"), kPid, {{0, 1, "interrupt"}});
  silent.SetBehavior(FakeUvnvmeServer::Behavior::kSilent);
  const Snapshot snapshot = Discover(options_);
  const Skipped* skipped = SkippedFor(snapshot, Socket("driver8.sock"));
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->error.code, ErrorCode::kUnavailable);
  EXPECT_NE(skipped->error.message.find("no reply within 300 ms"), std::string::npos) << skipped->error.message;
}

TEST_F(UvnvmeDiscovery, WrongShapeIsSkipped) {
  // A server answering with valid JSON of the wrong shape: here, an error to "list".
  FakeUvnvmeServer server(Socket("driver9.sock"), kPid, {});
  server.SetBehavior(FakeUvnvmeServer::Behavior::kCloseAtOnce);
  const Snapshot snapshot = Discover(options_);
  const Skipped* skipped = SkippedFor(snapshot, Socket("driver9.sock"));
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->error.code, ErrorCode::kUnavailable);
  EXPECT_NE(skipped->error.message.find("closed"), std::string::npos) << skipped->error.message;
}

TEST_F(UvnvmeDiscovery, OtherFilesAndNoDirectoryAreIgnored) {
  nvmeadapt::testing::WriteFile(Socket("notes.txt"), "not a socket\n");
  EXPECT_TRUE(Discover(options_).controllers.empty());
  EXPECT_TRUE(Discover(options_).skipped.empty());
  options_.runtime_dir = tmp_ / "nowhere";
  EXPECT_TRUE(Discover(options_).skipped.empty());
}

TEST_F(UvnvmeDiscovery, ProcessExitShowsAsRemoval) {
  auto server = std::make_unique<FakeUvnvmeServer>(Socket(kPidText + ".sock"), kPid,
                                                   std::vector<FakeUvnvmeServer::QueueState>{{0, 1, "poll"}});
  const Snapshot before = Discover(options_);
  server.reset();  // the process exits and its socket goes with it
  const Snapshot after = Discover(options_);
  const SnapshotDiff diff = DiffSnapshots(before, after);
  EXPECT_EQ(diff.controllers_removed, std::vector<std::string>{"uvnvme:" + kPidText + ":0"});
  ASSERT_EQ(diff.queues_removed.size(), 1u);
  EXPECT_EQ(diff.queues_removed[0].queue.mode, ReapMode::kPoll);
}

// Issue #37: a driver listing one queue many times, behind several sockets, is one controller of one queue.
TEST_F(UvnvmeDiscovery, AQueueListedTwiceIsOneAndAProcessBehindSeveralSocketsIsOne) {
  std::vector<FakeUvnvmeServer::QueueState> listing(50, {0, 1, "interrupt"});
  listing.push_back({0, 2, "interrupt"});
  FakeUvnvmeServer first(Socket(kPidText + ".sock"), kPid, listing);
  FakeUvnvmeServer second(Socket("z-same-process.sock"), kPid, listing);
  const Snapshot snapshot = Discover(options_);
  ASSERT_EQ(snapshot.controllers.size(), 1u);
  ASSERT_EQ(snapshot.controllers[0].queues.size(), 2u);
  EXPECT_EQ(snapshot.controllers[0].socket_path, Socket(kPidText + ".sock"));
  const Skipped* duplicates = SkippedFor(snapshot, Socket(kPidText + ".sock"));
  ASSERT_NE(duplicates, nullptr);
  EXPECT_NE(duplicates->error.message.find("49 queue entries listed again ignored"), std::string::npos)
      << duplicates->error.message;
  const Skipped* again = SkippedFor(snapshot, Socket("z-same-process.sock"));
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again->error.message.find("answered on " + Socket(kPidText + ".sock") + " already"), std::string::npos)
      << again->error.message;
}

TEST_F(UvnvmeDiscovery, ADriversControllersAndQueuesAreCapped) {
  std::vector<FakeUvnvmeServer::QueueState> listing;
  for (uint32_t ctrl = 0; ctrl < 20; ++ctrl) listing.push_back({ctrl, 1, "interrupt"});
  for (uint32_t qid = 2; qid < 400; ++qid) listing.push_back({0, qid, "interrupt"});
  FakeUvnvmeServer server(Socket(kPidText + ".sock"), kPid, listing);
  const Snapshot snapshot = Discover(options_);
  ASSERT_EQ(snapshot.controllers.size(), 16u);
  EXPECT_EQ(snapshot.controllers[0].queues.size(), 256u);
  const Skipped* note = SkippedFor(snapshot, Socket(kPidText + ".sock"));
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->error.message.find("over the limits of 16 controllers and 256 queues"), std::string::npos)
      << note->error.message;
}

// Silent sockets are asked at once, not one after the other: eight of them cost one timeout, not eight.
TEST_F(UvnvmeDiscovery, SilentSocketsAreAskedInParallel) {
  std::vector<std::unique_ptr<FakeUvnvmeServer>> silent;
  for (int i = 0; i < 8; ++i) {
    silent.push_back(std::make_unique<FakeUvnvmeServer>(Socket("silent" + std::to_string(i) + ".sock"), kPid,
                                                        std::vector<FakeUvnvmeServer::QueueState>{}));
    silent.back()->SetBehavior(FakeUvnvmeServer::Behavior::kSilent);
  }
  const auto start = std::chrono::steady_clock::now();
  const Snapshot snapshot = Discover(options_);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(snapshot.skipped.size(), 8u);
  EXPECT_LT(took, std::chrono::milliseconds(3 * options_.socket_timeout_ms)) << "asked one after the other";
}

TEST(ControlClient, RefusalCarriesTheDriversMessage) {
  TempDir tmp;
  FakeUvnvmeServer server(tmp / "driver.sock", kPid, {{0, 1, "interrupt"}});
  auto client = ControlClient::Connect(tmp / "driver.sock", 1000);
  ASSERT_TRUE(client) << client.error().message;
  auto reply = client->Call({{"op", "set_mode"}, {"ctrl", 0}, {"qid", 9}, {"mode", "poll"}});
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().code, ErrorCode::kRefused);
  EXPECT_NE(reply.error().message.find("unknown queue ctrl 0 qid 9"), std::string::npos) << reply.error().message;
  // The connection stays usable for the next request.
  auto list = client->Call({{"op", "list"}});
  ASSERT_TRUE(list) << list.error().message;
  EXPECT_EQ((*list)["queues"].size(), 1u);
}

TEST(ControlClient, MissingSocketIsNotFound) {
  TempDir tmp;
  auto client = ControlClient::Connect(tmp / "404.sock", 100);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, ErrorCode::kNotFound);
  EXPECT_NE(client.error().message.find(tmp / "404.sock"), std::string::npos);
}

}  // namespace
}  // namespace nvmeadapt::discover
