// SPDX-License-Identifier: Apache-2.0
// Without BPF permission the collector says why in one line and the procfs fallback reports per-queue
// deltas: a real run of na-collect as nobody (setpriv) while fio drives a loop device.
#include <gtest/gtest.h>

#include <unistd.h>

#include <sstream>

#include "tests/bpf/test_support.h"

namespace nvmeadapt::collect {
namespace {

using nvmeadapt::testing::LoopDevice;

TEST(BpfFallback, UnprivilegedRunNamesTheCauseOnceAndReportsProcfsDeltas) {
  const std::string missing = nvmeadapt::testing::MissingForBpfTests();
  ASSERT_EQ(missing, "") << "BPF test cannot run: " << missing;
  ASSERT_TRUE(nvmeadapt::testing::RunCommand({"sh", "-c", "command -v setpriv"}).ok())
      << "setpriv (util-linux) is not installed";
  auto loop = LoopDevice::Create(32ull << 20);
  ASSERT_TRUE(loop.ok()) << loop.error().message;

  auto child = nvmeadapt::testing::Spawn({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                          NA_COLLECT_TOOL, "--until-eof", "--interval-ms", "500"});
  ASSERT_TRUE(child.ok()) << child.error().message;
  // The first reading is the baseline; give it a moment before the I/O starts.
  usleep(700'000);
  Status fio = nvmeadapt::testing::RunFio(loop->path(), "randread", 16ull << 20);
  usleep(1'200'000);  // one more sample after the I/O
  close(child->in);
  child->in = -1;
  std::string out, err;
  auto exit_code = nvmeadapt::testing::Wait(*child, 30, &out, &err);
  ASSERT_TRUE(fio.ok()) << fio.error().message;
  ASSERT_TRUE(exit_code.ok());
  ASSERT_EQ(*exit_code, 0) << "stdout:\n" << out << "stderr:\n" << err;

  EXPECT_NE(out.find("collector procfs observe_only=1"), std::string::npos) << out;
  // One line, and it names the cause.
  std::istringstream lines(err);
  int cause_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("BPF unavailable") != std::string::npos) {
      ++cause_lines;
      EXPECT_NE(line.find("not permitted"), std::string::npos) << line;
      EXPECT_NE(line.find("procfs"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(cause_lines, 1) << err;
  const std::string loop_key = "event block:" + std::to_string(loop->dev() >> 20) + ":" +
                               std::to_string(loop->dev() & 0xfffff) + ":q1 completions=";
  const size_t at = out.find(loop_key);
  ASSERT_NE(at, std::string::npos) << "no procfs delta for " << loop->path() << ":\n" << out;
  uint64_t completions = 0;
  for (size_t pos = at; (pos = out.find(loop_key, pos)) != std::string::npos; pos += loop_key.size())
    completions += std::stoull(out.substr(pos + loop_key.size()));
  EXPECT_GE(completions, (16ull << 20) / 4096) << "the deltas cover fio's reads";
}

}  // namespace
}  // namespace nvmeadapt::collect
