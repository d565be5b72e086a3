// SPDX-License-Identifier: Apache-2.0
// The control socket over a real Unix socket, against a real driver whose queues have running reapers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/unit/uvnvme_reaper.h"
#include "tests/unit/uvnvme_socket_client.h"
#include "uvnvme/control_server.h"
#include "uvnvme/driver.h"

namespace nvmeadapt::uvnvme {
namespace {

using nlohmann::json;
using testing::SocketClient;
using testing::TestReaper;

class UvnvmeServer : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/uvnvme-server-test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    runtime_dir_ = pattern;
    DriverConfig config;
    config.queues_per_controller = 2;
    config.queue_entries = 64;
    config.model.read_latency_ns = 20'000;
    auto driver = Driver::Create(config);
    ASSERT_TRUE(driver) << driver.error().message;
    driver_ = std::move(*driver);
    ASSERT_TRUE(driver_->Start());
    for (const auto& queue : driver_->queues()) reapers_.push_back(std::make_unique<TestReaper>(*queue, 4));
    auto server = ControlServer::Start(runtime_dir_, *driver_);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_.reset();
    for (auto& reaper : reapers_) {
      reaper->Stop();
      EXPECT_EQ(reaper->submitted(), reaper->completed());
      EXPECT_EQ(reaper->completed_twice(), 0u);
    }
    reapers_.clear();
    driver_.reset();
    std::filesystem::remove_all(runtime_dir_);
  }
  json Ask(SocketClient& client, const std::string& request) { return json::parse(client.Ask(request)); }
  json Queue(uint32_t qid) {
    SocketClient client(server_->path());
    json list = Ask(client, R"({"op":"list"})");
    if (!list.contains("queues")) ADD_FAILURE() << list.dump();
    for (const json& q : list["queues"]) {
      if (q["qid"] == qid) return q;
    }
    return json();
  }

  std::string runtime_dir_;
  std::unique_ptr<Driver> driver_;
  std::vector<std::unique_ptr<TestReaper>> reapers_;
  std::unique_ptr<ControlServer> server_;
};

TEST_F(UvnvmeServer, TheSocketIsPidNamedGroupOnlyAndRemovedOnExit) {
  const std::string expected = runtime_dir_ + "/uvnvme/" + std::to_string(getpid()) + ".sock";
  EXPECT_EQ(server_->path(), expected);
  struct stat st{};
  ASSERT_EQ(lstat(expected.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  ASSERT_EQ(lstat((runtime_dir_ + "/uvnvme").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  server_.reset();
  EXPECT_NE(lstat(expected.c_str(), &st), 0);
}

TEST_F(UvnvmeServer, EveryRequestKindWorksAndResponsesComeInOrder) {
  SocketClient client(server_->path());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(R"({"op":"set_mode","ctrl":0,"qid":2,"mode":"poll"})" "\n"
                          R"({"op":"set_coalescing","ctrl":0,"qid":2,"threshold":4,"time_us":50})" "\n"
                          R"({"op":"list"})" "\n"));
  EXPECT_EQ(json::parse(client.ReadLine()), (json{{"ok", true}, {"mode", "poll"}}));
  EXPECT_EQ(json::parse(client.ReadLine()), (json{{"ok", true}}));
  json list = json::parse(client.ReadLine());
  EXPECT_EQ(list["ok"], true);
  EXPECT_EQ(list["pid"], getpid());
  ASSERT_EQ(list["queues"].size(), 2u);
  EXPECT_EQ(list["queues"][0]["mode"], "interrupt");
  EXPECT_EQ(list["queues"][1]["mode"], "poll");
  EXPECT_EQ(list["queues"][1]["mode_switches"], 1);
  EXPECT_EQ(list["queues"][1]["coalesce_threshold"], 4);
  EXPECT_EQ(list["queues"][1]["coalesce_time_us"], 50);
  EXPECT_EQ(driver_->FindQueue(0, 2)->mode(), ReapMode::kPoll);  // in effect when acknowledged
}

TEST_F(UvnvmeServer, BadRequestsGetAnErrorAndChangeNothing) {
  SocketClient client(server_->path());
  const json before = Queue(1);
  for (const char* request : {"not json", R"({"op":"flip"})", R"({"op":"set_mode","ctrl":3,"qid":1,"mode":"poll"})",
                              R"({"op":"set_mode","ctrl":0,"qid":0,"mode":"poll"})",
                              R"({"op":"set_mode","ctrl":0,"qid":1,"mode":"spin"})",
                              R"({"op":"set_coalescing","ctrl":0,"qid":1,"threshold":-1,"time_us":5})"}) {
    json r = Ask(client, request);
    EXPECT_EQ(r["ok"], false) << request;
    EXPECT_TRUE(r["error"].is_string()) << request;
  }
  json after = Queue(1);
  EXPECT_EQ(after["mode"], before["mode"]);
  EXPECT_EQ(after["mode_switches"], before["mode_switches"]);
  EXPECT_EQ(after["coalesce_threshold"], before["coalesce_threshold"]);
  EXPECT_EQ(Ask(client, R"({"op":"list"})")["ok"], true);  // the connection still serves
}

TEST_F(UvnvmeServer, AnOversizeLineGetsOneErrorAndTheConnectionGoesOn) {
  SocketClient client(server_->path());
  ASSERT_TRUE(client.Send(std::string(10000, 'x') + "\n"));
  json r = json::parse(client.ReadLine());
  EXPECT_EQ(r["ok"], false);
  EXPECT_NE(r["error"].get<std::string>().find("longer than"), std::string::npos);
  EXPECT_EQ(Ask(client, R"({"op":"set_mode","ctrl":0,"qid":1,"mode":"poll"})")["ok"], true);
}

TEST_F(UvnvmeServer, AClientThatDisconnectsMidRequestChangesNothing) {
  {
    SocketClient client(server_->path());
    ASSERT_TRUE(client.Send(R"({"op":"set_mode","ctrl":0,"qid":1,"mode":"po)"));
  }
  {
    SocketClient client(server_->path());
    ASSERT_TRUE(client.Send(std::string(6000, '{')));  // mid oversize line
  }
  SocketClient client(server_->path());
  json q = Queue(1);
  EXPECT_EQ(q["mode"], "interrupt");
  EXPECT_EQ(q["mode_switches"], 0);
}

TEST_F(UvnvmeServer, AClientThatLeavesWithoutReadingHarmsNothing) {
  for (int i = 0; i < 50; ++i) {
    SocketClient client(server_->path());
    ASSERT_TRUE(client.Send(R"({"op":"list"})" "\n" R"({"op":"set_mode","ctrl":0,"qid":1,"mode":"poll"})" "\n"));
  }
  EXPECT_EQ(Queue(1)["mode"], "poll");  // complete requests were applied
}

TEST_F(UvnvmeServer, AHalfClosedClientStillGetsItsAnswers) {
  SocketClient client(server_->path());
  ASSERT_TRUE(client.Send(R"({"op":"list"})" "\n"));
  client.ShutdownWrite();
  json r = json::parse(client.ReadLine());
  EXPECT_EQ(r["ok"], true);
  EXPECT_EQ(client.ReadLine(), "");  // then the server closes
}

// Starts a server in RUNTIME/uvnvme laid out with `mode`; the error if it refused, empty if it served.
std::string StartIn(mode_t mode) {
  char pattern[] = "/tmp/uvnvme-server-test.XXXXXX";
  if (mkdtemp(pattern) == nullptr) return "mkdtemp failed";
  const std::string runtime_dir = pattern;
  mkdir((runtime_dir + "/uvnvme").c_str(), 0700);
  chmod((runtime_dir + "/uvnvme").c_str(), mode);
  auto driver = Driver::Create(DriverConfig{});
  if (!driver) return "no driver: " + driver.error().message;
  std::string refusal;
  {
    auto server = ControlServer::Start(runtime_dir, **driver);
    if (!server) refusal = server.error().message;
  }
  std::filesystem::remove_all(runtime_dir);
  return refusal;
}

TEST(UvnvmeServerDirectory, ADirectoryWritableByOthersIsRefused) {
  EXPECT_NE(StartIn(0777).find("writable by others"), std::string::npos);
  EXPECT_NE(StartIn(01777).find("writable by others"), std::string::npos) << "even sticky";
}

TEST(UvnvmeServerDirectory, AGroupWritableDirectoryNeedsTheStickyBit) {
  EXPECT_NE(StartIn(02770).find("writable by its group without the sticky bit"), std::string::npos);
  EXPECT_EQ(StartIn(03770), "") << "the packaged layout (deploy/systemd/nvme-adapt.tmpfiles)";
  EXPECT_EQ(StartIn(0750), "");
}

TEST(UvnvmeServerDirectory, AMissingRuntimeDirectoryIsAnErrorNamingIt) {
  auto driver = Driver::Create(DriverConfig{});
  ASSERT_TRUE(driver);
  auto server = ControlServer::Start("/nonexistent-uvnvme-runtime", **driver);
  ASSERT_FALSE(server);
  EXPECT_NE(server.error().message.find("/nonexistent-uvnvme-runtime/uvnvme"), std::string::npos);
}

}  // namespace
}  // namespace nvmeadapt::uvnvme
