// SPDX-License-Identifier: Apache-2.0
// Restore points as the journal keeps them: one line of JSON each, read back as they were written.
#include <gtest/gtest.h>

#include "agent/actuate/restore_point.h"
#include "tests/unit/lever_printers.h"

namespace nvmeadapt::actuate {
namespace {

TEST(RestorePointJson, RoundTrip) {
  RestorePoint point;
  point.lever = LeverKind::kCoalescing;
  point.target.controller = "nvme0";
  point.target.qid = 1;
  point.target.irq = 29;
  point.target.vector = 1;
  point.steps = {{"/dev/nvme0 feature 08h", "0x00000000"}, {"/dev/nvme0 feature 09h vector 1", "0x00000001"}};
  const std::string json = point.ToJson();
  EXPECT_EQ(json.find('\n'), std::string::npos);
  auto back = RestorePoint::FromJson(json);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, point);

  RestorePoint socket;
  socket.lever = LeverKind::kUvnvmeSocket;
  socket.target.controller = "uvnvme:4242:1";
  socket.target.qid = 3;
  socket.target.socket_path = "/run/uvnvme/4242.sock";
  socket.target.ctrl_index = 1;
  socket.steps = {{"uvnvme:4242:1 q3 mode", "interrupt"}};
  auto socket_back = RestorePoint::FromJson(socket.ToJson());
  ASSERT_TRUE(socket_back);
  EXPECT_EQ(*socket_back, socket);
}

TEST(RestorePointJson, BadInputIsRefused) {
  for (const char* bad : {"", "[]", R"({"lever": "magic", "target": {"controller": "nvme0"}, "steps": []})",
                          R"({"lever": "auto", "target": {"controller": "nvme0"}, "steps": []})",
                          R"({"lever": "gsim", "steps": []})",
                          R"({"lever": "gsim", "target": {"controller": "nvme0", "irq": -1}, "steps": []})",
                          R"({"lever": "gsim", "target": {"controller": "nvme0"}, "steps": [{"object": 1}]})"}) {
    auto point = RestorePoint::FromJson(bad);
    EXPECT_FALSE(point) << bad;
    if (!point) {
      EXPECT_EQ(point.error().code, ErrorCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace nvmeadapt::actuate
