// SPDX-License-Identifier: Apache-2.0
// The control socket lever against FakeUvnvmeServer over a real Unix socket (docs/uvnvme-control.md).
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/actuate/socket_lever.h"
#include "tests/unit/fake_uvnvme.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

using nvmeadapt::testing::FakeUvnvmeServer;
using nvmeadapt::testing::TempDir;

class SocketLevers : public ::testing::Test {
 protected:
  SocketLevers() : server_(tmp_ / "driver.sock", 4242, {{0, 1, "interrupt"}, {0, 2, "poll"}}) {}
  LeverTarget Queue(uint32_t qid) const {
    LeverTarget target;
    target.controller = "uvnvme:4242:0";
    target.qid = qid;
    target.socket_path = server_.path();
    target.ctrl_index = 0;
    return target;
  }
  TempDir tmp_;
  FakeUvnvmeServer server_;
};

TEST_F(SocketLevers, SetModeIsAcknowledgedAndRestored) {
  SocketLever lever({1000, false});
  EXPECT_EQ(lever.Scope(), LeverScope::kQueue);
  auto on = lever.Apply(Queue(1), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(on->writes, (Writes{{"uvnvme:4242:0 q1 mode", "poll", true}}));
  EXPECT_EQ(on->restore.steps, (Steps{{"uvnvme:4242:0 q1 mode", "interrupt"}}));
  EXPECT_EQ(server_.Queue(0, 1).mode, "poll");
  EXPECT_EQ(server_.Requests(), (std::vector<std::string>{R"({"op":"list"})",
                                                          R"({"ctrl":0,"mode":"poll","op":"set_mode","qid":1})"}));

  auto same = lever.Apply(Queue(2), ReapMode::kPoll);  // already polling: nothing sent but "list"
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->writes.empty());
  EXPECT_EQ(server_.Queue(0, 2).mode_switches, 0u);

  auto restored = lever.Restore(on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(server_.Queue(0, 1).mode, "interrupt");
}

TEST_F(SocketLevers, DriverErrorIsRefusedWithItsMessage) {
  server_.RefuseNextSetMode("queue 1 is draining");
  SocketLever lever({1000, false});
  auto result = lever.Apply(Queue(1), ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kRefused);
  EXPECT_EQ(LeverOf(result.error()), LeverKind::kUvnvmeSocket);
  EXPECT_EQ(result.error().object, server_.path());
  EXPECT_NE(result.error().message.find("queue 1 is draining"), std::string::npos) << result.error().message;
  EXPECT_EQ(server_.Queue(0, 1).mode, "interrupt");
}

TEST_F(SocketLevers, UnknownQueueIsNotFound) {
  SocketLever lever({1000, false});
  auto result = lever.Apply(Queue(9), ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kNotFound);
  EXPECT_NE(result.error().message.find("uvnvme:4242:0 q9 is not among the queues"), std::string::npos);
}

TEST_F(SocketLevers, ServerGone) {
  server_.Stop();
  SocketLever lever({1000, false});
  auto gone = lever.Apply(Queue(1), ReapMode::kPoll);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound) << gone.error().ToString();
  EXPECT_EQ(gone.error().object, server_.path());

  nvmeadapt::testing::MakeStaleSocket(server_.path());  // crashed: the socket file stayed
  auto stale = lever.Apply(Queue(1), ReapMode::kPoll);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(stale.error().sys_errno, ECONNREFUSED);
}

TEST_F(SocketLevers, SilentDriverTimesOut) {
  server_.SetBehavior(FakeUvnvmeServer::Behavior::kSilent);
  SocketLever lever({200, false});
  auto result = lever.Apply(Queue(1), ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(result.error().sys_errno, ETIMEDOUT);
  EXPECT_NE(result.error().message.find("no reply within 200 ms"), std::string::npos) << result.error().message;
}

TEST_F(SocketLevers, GarbageIsAnIoError) {
  server_.SetBehavior(FakeUvnvmeServer::Behavior::kGarbage);
  SocketLever lever({1000, false});
  auto result = lever.Apply(Queue(1), ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kIo);
}

TEST_F(SocketLevers, DryRunOnlyLists) {
  SocketLever lever({1000, true});
  auto on = lever.Apply(Queue(1), ReapMode::kPoll);
  ASSERT_TRUE(on);
  EXPECT_EQ(on->writes, (Writes{{"uvnvme:4242:0 q1 mode", "poll", false}}));
  EXPECT_EQ(server_.Queue(0, 1).mode, "interrupt");
  EXPECT_EQ(server_.Requests(), std::vector<std::string>{R"({"op":"list"})"});
}

TEST_F(SocketLevers, RestorePointMustNameThisQueuesMode) {
  SocketLever lever({1000, false});
  auto bad = lever.Restore({LeverKind::kUvnvmeSocket, Queue(1), {{"uvnvme:4242:0 q1 mode", "sometimes"}}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kIo);
  EXPECT_EQ(server_.Requests().size(), 0u);
}

}  // namespace
}  // namespace nvmeadapt::actuate
