// SPDX-License-Identifier: Apache-2.0
// The reconnect lever and a connection's header and data digests, which the kernel shows nowhere: taken from
// nvme-cli's JSON config (tests/data/nvme-cli/config.json, libnvme's format) or the agent's declaration, kept
// in the journal's restore points, and a switch refused before anything is disconnected when no source says
// them or the sources disagree (issue 37). No root.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/actuate/connection_digests.h"
#include "agent/actuate/reconnect_lever.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/reconnect_fixture.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

std::string Fixture() {
  std::ifstream in(std::string(NVME_ADAPT_TEST_DATA) + "/nvme-cli/config.json");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const PortKey kPort{"nqn.2014-08.org.nvmexpress:uuid:h1", "nqn.2026-12.io.nvme-adapt:fabrics", "127.0.0.1", "4420", "", ""};

class Digests : public Reconnect {
 protected:
  Digests() { declared_.clear(); }  // nvme-cli's config is the source unless a test declares
  void NvmeConfig(const std::string& text) { WriteFile(tmp_ / "etc/nvme/config.json", text); }
};

TEST_F(Digests, NvmeCliConfigNamesThePortsDigests) {
  const std::string path = tmp_ / "config.json";
  WriteFile(path, Fixture());
  auto found = DigestsFromNvmeConfig(path, kPort);
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_TRUE(found->has_value());
  EXPECT_TRUE((*found)->hdr);
  EXPECT_TRUE((*found)->data);
  EXPECT_EQ((*found)->tls, false);
  PortKey other = kPort;
  other.trsvcid = "4421";
  auto plain = DigestsFromNvmeConfig(path, other);
  ASSERT_TRUE(plain && plain->has_value());
  EXPECT_FALSE((*plain)->hdr) << "a port without the keys runs without digests, as libnvme reads it";
  other.trsvcid = "4430";
  auto absent = DigestsFromNvmeConfig(path, other);
  ASSERT_TRUE(absent);
  EXPECT_FALSE(absent->has_value());
  // libnvme's newer layout: {"hosts": [...]}.
  WriteFile(path, R"({"hosts": )" + Fixture() + "}");
  auto wrapped = DigestsFromNvmeConfig(path, kPort);
  ASSERT_TRUE(wrapped && wrapped->has_value());
  EXPECT_TRUE((*wrapped)->data);
  auto missing = DigestsFromNvmeConfig(tmp_ / "none.json", kPort);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->has_value());
}

TEST_F(Digests, ASwitchKeepsTheDigestsInItsConnectsAndRestorePoints) {
  NvmeConfig(Fixture());
  ConnectsLikeTheKernel();
  ReconnectLever lever = Lever();
  auto on = lever.Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  const Argv digests = With(With(kConnect, "--hdr-digest"), "--data-digest");
  EXPECT_EQ(cli_->calls, (std::vector<Argv>{{"nvme", "disconnect", "--device=nvme1"},
                                            With(digests, "--nr-poll-queues=1")}));
  EXPECT_NE(on->restore.steps[0].value.find(R"("--hdr-digest","--data-digest"])"), std::string::npos)
      << on->restore.steps[0].value;
  // The restore connects with the journaled options, whatever nvme-cli's config says by then.
  std::filesystem::remove(tmp_ / "etc/nvme/config.json");
  cli_->calls.clear();
  auto restored = Lever().Restore(on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  ASSERT_EQ(cli_->calls.size(), 2u);
  EXPECT_EQ(cli_->calls[1], digests);
}

TEST_F(Digests, TheInFlightPointConnectsWithTheDigests) {
  NvmeConfig(Fixture());
  auto plan = Lever().Plan(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(plan) << plan.error().ToString();
  ASSERT_TRUE(plan->preview().in_flight);
  std::filesystem::remove_all(tmp_ / "sys/class/nvme/nvme1");  // killed between the disconnect and the connect
  std::filesystem::remove(tmp_ / "etc/nvme/config.json");
  ConnectsLikeTheKernel();
  auto connected = Lever().Restore(*plan->preview().in_flight);
  ASSERT_TRUE(connected) << connected.error().ToString();
  ASSERT_FALSE(cli_->calls.empty());
  EXPECT_EQ(cli_->calls.back(), With(With(kConnect, "--hdr-digest"), "--data-digest"));
}

// Refusals come from the plan, before any command: nothing is disconnected.
TEST_F(Digests, NoSourceOrSourcesThatDisagreeRefuseBeforeDisconnecting) {
  auto unknown = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(unknown.error().message.find("digests are unknown"), std::string::npos) << unknown.error().message;
  EXPECT_NE(unknown.error().message.find(tmp_ / "etc/nvme/config.json"), std::string::npos) << unknown.error().message;

  NvmeConfig(Fixture());
  declared_["nvme1"] = ConnectionDigests{true, false, std::nullopt, "levers.controllers (nvme1)"};
  auto disagree = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(disagree);
  EXPECT_EQ(disagree.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(disagree.error().message.find("data digest off"), std::string::npos) << disagree.error().message;
  EXPECT_NE(disagree.error().message.find("data digest on"), std::string::npos) << disagree.error().message;

  declared_.clear();
  NvmeConfig("{not json");
  auto broken = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("not JSON"), std::string::npos) << broken.error().message;

  // nvme-cli's config says TLS, the kernel shows none: it describes another connection.
  NvmeConfig(R"([{"hostnqn": "nqn.2014-08.org.nvmexpress:uuid:h1", "subsystems": [{"nqn": "nqn.2026-12.io.nvme-adapt:fabrics",
                   "ports": [{"transport": "tcp", "traddr": "127.0.0.1", "trsvcid": "4420", "tls": true}]}]}])");
  auto tls = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_FALSE(tls);
  EXPECT_NE(tls.error().message.find("tls on, the kernel shows tls off"), std::string::npos) << tls.error().message;
  EXPECT_TRUE(cli_->calls.empty()) << "refused before any command";
}

TEST_F(Digests, ADeclarationAloneIsASourceAndAgreeingSourcesAreTaken) {
  declared_["nvme1"] = ConnectionDigests{true, true, std::nullopt, "levers.controllers (nvme1)"};
  ConnectsLikeTheKernel();
  auto declared = Lever().Apply(Nvme1(), ReapMode::kPoll);
  ASSERT_TRUE(declared) << declared.error().ToString();
  EXPECT_EQ(cli_->calls.back(), With(With(With(kConnect, "--hdr-digest"), "--data-digest"), "--nr-poll-queues=1"));
  NvmeConfig(Fixture());
  auto both = Lever().Apply(Nvme1(), ReapMode::kInterrupt);
  ASSERT_TRUE(both) << both.error().ToString();
  EXPECT_EQ(cli_->calls.back(), With(With(kConnect, "--hdr-digest"), "--data-digest"));
}

}  // namespace
}  // namespace nvmeadapt::actuate
