// SPDX-License-Identifier: Apache-2.0
// The control protocol of docs/uvnvme-control.md, request by request, against a fake target that records
// what it was asked to change.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "uvnvme/control_protocol.h"

namespace nvmeadapt::uvnvme {
namespace {

using nlohmann::json;

class FakeTarget : public ControlTarget {
 public:
  std::vector<QueueInfo> ListQueues() const override { return queues; }
  Status SetMode(uint32_t ctrl, uint32_t qid, ReapMode mode) override {
    QueueInfo* q = Find(ctrl, qid);
    if (!q) return MakeError(ErrorCode::kNotFound, "unknown qid " + std::to_string(qid));
    q->mode = mode;
    ++changes;
    return OkStatus();
  }
  Status SetCoalescing(uint32_t ctrl, uint32_t qid, Coalescing coalescing) override {
    QueueInfo* q = Find(ctrl, qid);
    if (!q) return MakeError(ErrorCode::kNotFound, "unknown qid " + std::to_string(qid));
    q->coalescing = coalescing;
    ++changes;
    return OkStatus();
  }
  QueueInfo* Find(uint32_t ctrl, uint32_t qid) {
    for (QueueInfo& q : queues) {
      if (q.ctrl == ctrl && q.qid == qid) return &q;
    }
    return nullptr;
  }

  std::vector<QueueInfo> queues{{0, 1, ReapMode::kInterrupt, 10, 9, 4, 0, {}}, {0, 2, ReapMode::kPoll, 5, 5, 0, 1, {8, 100}}};
  int changes = 0;
};

json Ask(FakeTarget& target, std::string_view line) {
  std::string response = HandleControlRequest(line, target, 4242);
  EXPECT_EQ(response.find('\n'), std::string::npos) << response;
  return json::parse(response);
}

TEST(UvnvmeProtocol, ListReportsEveryQueueWithEveryField) {
  FakeTarget target;
  json r = Ask(target, R"({"op": "list"})");
  EXPECT_EQ(r["ok"], true);
  EXPECT_EQ(r["pid"], 4242);
  ASSERT_EQ(r["queues"].size(), 2u);
  const json& q = r["queues"][1];
  EXPECT_EQ(q["ctrl"], 0);
  EXPECT_EQ(q["qid"], 2);
  EXPECT_EQ(q["mode"], "poll");
  EXPECT_EQ(q["submitted"], 5);
  EXPECT_EQ(q["completed"], 5);
  EXPECT_EQ(q["wakeups"], 0);
  EXPECT_EQ(q["mode_switches"], 1);
  EXPECT_EQ(q["coalesce_threshold"], 8);
  EXPECT_EQ(q["coalesce_time_us"], 100);
}

TEST(UvnvmeProtocol, SetModeAppliesAndEchoesTheMode) {
  FakeTarget target;
  json r = Ask(target, R"({"op": "set_mode", "ctrl": 0, "qid": 1, "mode": "poll"})");
  EXPECT_EQ(r, (json{{"ok", true}, {"mode", "poll"}}));
  EXPECT_EQ(target.queues[0].mode, ReapMode::kPoll);
}

TEST(UvnvmeProtocol, SetCoalescingApplies) {
  FakeTarget target;
  json r = Ask(target, R"({"op": "set_coalescing", "ctrl": 0, "qid": 1, "threshold": 8, "time_us": 100})");
  EXPECT_EQ(r, (json{{"ok", true}}));
  EXPECT_EQ(target.queues[0].coalescing, (Coalescing{8, 100}));
}

struct BadRequest {
  const char* line;
  const char* error_mentions;
};

class UvnvmeProtocolErrors : public ::testing::TestWithParam<BadRequest> {};

TEST_P(UvnvmeProtocolErrors, AnErrorNamesTheProblemAndChangesNothing) {
  FakeTarget target;
  json r = Ask(target, GetParam().line);
  EXPECT_EQ(r["ok"], false);
  ASSERT_TRUE(r["error"].is_string());
  EXPECT_NE(r["error"].get<std::string>().find(GetParam().error_mentions), std::string::npos) << r["error"];
  EXPECT_EQ(target.changes, 0);
  EXPECT_EQ(r.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Requests, UvnvmeProtocolErrors,
    ::testing::Values(
        BadRequest{"{\"op\": \"list\"", "invalid JSON"}, BadRequest{"", "invalid JSON"},
        BadRequest{"[1, 2]", "JSON object"}, BadRequest{"{}", "missing field 'op'"},
        BadRequest{R"({"op": 3})", "'op' must be a string"}, BadRequest{R"({"op": "reset"})", "unknown op 'reset'"},
        BadRequest{R"({"op": "set_mode", "qid": 1, "mode": "poll"})", "missing field 'ctrl'"},
        BadRequest{R"({"op": "set_mode", "ctrl": 0, "mode": "poll"})", "missing field 'qid'"},
        BadRequest{R"({"op": "set_mode", "ctrl": 0, "qid": 1})", "missing field 'mode'"},
        BadRequest{R"({"op": "set_mode", "ctrl": 0, "qid": -1, "mode": "poll"})", "'qid' must be a non-negative"},
        BadRequest{R"({"op": "set_mode", "ctrl": 0, "qid": 1.5, "mode": "poll"})", "'qid' must be a non-negative"},
        BadRequest{R"({"op": "set_mode", "ctrl": "0", "qid": 1, "mode": "poll"})", "'ctrl' must be a non-negative"},
        BadRequest{R"({"op": "set_mode", "ctrl": 0, "qid": 4294967296, "mode": "poll"})", "'qid' must be at most"},
        BadRequest{R"({"op": "set_mode", "ctrl": 0, "qid": 1, "mode": "hybrid"})", "unknown mode 'hybrid'"},
        BadRequest{R"({"op": "set_mode", "ctrl": 0, "qid": 1, "mode": 1})", "'mode' must be a string"},
        BadRequest{R"({"op": "set_mode", "ctrl": 0, "qid": 7, "mode": "poll"})", "unknown qid 7"},
        BadRequest{R"({"op": "set_coalescing", "ctrl": 0, "qid": 1, "time_us": 100})", "missing field 'threshold'"},
        BadRequest{R"({"op": "set_coalescing", "ctrl": 0, "qid": 1, "threshold": 8})", "missing field 'time_us'"},
        BadRequest{R"({"op": "set_coalescing", "ctrl": 0, "qid": 1, "threshold": 300, "time_us": 1})", "'threshold' must be at most 256"},
        BadRequest{R"({"op": "set_coalescing", "ctrl": 0, "qid": 1, "threshold": 8, "time_us": 30000})", "'time_us' must be at most 25500"},
        BadRequest{R"({"op": "set_coalescing", "ctrl": 0, "qid": 9, "threshold": 8, "time_us": 100})", "unknown qid 9"}));

TEST(UvnvmeProtocol, ALineOverTheLimitIsRefused) {
  FakeTarget target;
  std::string line = R"({"op": "list", "pad": ")" + std::string(kMaxRequestBytes, 'x') + "\"}";
  json r = Ask(target, line);
  EXPECT_EQ(r["ok"], false);
  EXPECT_NE(r["error"].get<std::string>().find("longer than 4096"), std::string::npos);
}

TEST(UvnvmeProtocol, UnknownExtraFieldsAreIgnored) {
  FakeTarget target;
  json r = Ask(target, R"({"op": "list", "client": "nvme-adaptd"})");
  EXPECT_EQ(r["ok"], true);
}

}  // namespace
}  // namespace nvmeadapt::uvnvme
