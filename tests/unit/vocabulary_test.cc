// SPDX-License-Identifier: Apache-2.0
// The vocabulary's tables: every name parses back to its value, the API numbers match the proto's value names
// (what the CLI's words once came from), the queue-name formats and the collectors' queue keys.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <unordered_set>

#include "agent/config/proto_enums.h"
#include "agent/engine/types.h"
#include "common/vocabulary.h"

namespace nvmeadapt {
namespace {

// The API's value name without its prefix, lower case: SOURCE_KERNEL -> "kernel".
std::string ProtoWord(const std::string& name, const std::string& prefix) {
  EXPECT_TRUE(name.starts_with(prefix)) << name;
  std::string word = name.substr(prefix.size());
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return word;
}

template <class Table>
void ExpectNamesParseBack(const Table& table) {
  for (const auto& row : table) {
    ASSERT_TRUE(table.Parse(row.name)) << row.name;
    EXPECT_EQ(*table.Parse(row.name), row.value) << row.name;
  }
}

TEST(Vocabulary, EveryNameParsesBackToItsValue) {
  ExpectNamesParseBack(kReapModes);
  ExpectNamesParseBack(kSources);
  ExpectNamesParseBack(kLeverKinds);
  ExpectNamesParseBack(engine::kControllerModes);
  ExpectNamesParseBack(engine::kQueueStates);
  ExpectNamesParseBack(engine::kReasons);
  EXPECT_FALSE(ParseReapMode("Poll"));
  EXPECT_FALSE(ParseSource(""));
}

TEST(Vocabulary, AFurtherWordParsesButDoesNotName) {
  EXPECT_EQ(ParseReapMode("int"), ReapMode::kInterrupt);
  EXPECT_EQ(ReapModeName(ReapMode::kInterrupt), "interrupt");
  EXPECT_EQ(kReapModes.Choices(), "interrupt, poll");
  EXPECT_EQ(kSources.Choices(), "kernel, block, uvnvme, spdk, nvmet");
}

TEST(Vocabulary, AValueOutsideTheTableHasTheFallbackName) {
  EXPECT_EQ(ReapModeName(static_cast<ReapMode>(7)), "interrupt");
  EXPECT_EQ(SourceName(static_cast<Source>(0)), "unknown");
  EXPECT_EQ(LeverKindName(static_cast<LeverKind>(99)), "auto");
  EXPECT_EQ(engine::ReasonName(static_cast<engine::Reason>(200)), "unknown");
}

TEST(Vocabulary, NamesAreTheApiValueNames) {
  for (const auto& row : kReapModes) {
    if (ReapModeName(row.value) != row.name) continue;
    EXPECT_EQ(ProtoWord(v1::ReapMode_Name(config::ToProto(row.value)), "REAP_MODE_"), row.name);
  }
  for (const auto& row : kSources) EXPECT_EQ(ProtoWord(v1::Source_Name(config::ToProto(row.value)), "SOURCE_"), row.name);
  for (const auto& row : kLeverKinds) {
    EXPECT_EQ(ProtoWord(v1::LeverKind_Name(config::ToProto(row.value)), "LEVER_KIND_"), row.name);
  }
  for (const auto& row : engine::kControllerModes) {
    EXPECT_EQ(ProtoWord(v1::ControllerMode_Name(config::ToProto(row.value)), "CONTROLLER_MODE_"), row.name);
  }
  for (const auto& row : engine::kQueueStates) {
    EXPECT_EQ(ProtoWord(v1::QueueState_Name(config::ToProto(row.value)), "QUEUE_STATE_"), row.name);
  }
}

TEST(Vocabulary, ApiNumbersConvertBothWays) {
  EXPECT_EQ(config::ToProto(ReapMode::kPoll), v1::REAP_MODE_POLL);
  EXPECT_EQ(config::FromProto(v1::REAP_MODE_INTERRUPT), ReapMode::kInterrupt);
  EXPECT_FALSE(config::FromProto(v1::REAP_MODE_UNSPECIFIED)) << "UNSPECIFIED is no mode";
  EXPECT_FALSE(config::FromProto(static_cast<v1::ReapMode>(9))) << "a newer API's number is unknown here";
  EXPECT_EQ(config::FromProto(v1::LEVER_KIND_AUTO), LeverKind::kAuto) << "the lever enum's 0 is a value";
  EXPECT_EQ(config::FromProto(v1::SOURCE_NVMET), Source::kNvmet);
  EXPECT_EQ(config::ToProto(engine::ControllerMode::kShadow), v1::CONTROLLER_MODE_SHADOW);
  EXPECT_FALSE(config::FromProto(v1::CONTROLLER_MODE_UNSPECIFIED));
  EXPECT_EQ(config::FromProto(v1::QUEUE_STATE_BACKOFF), engine::QueueState::kBackoff);
}

TEST(Vocabulary, QueueNames) {
  EXPECT_EQ(QueueName("nvme0", 1), "nvme0:q1");
  EXPECT_EQ(QueueName("uvnvme:1234:0", 2), "uvnvme:1234:0:q2");
  EXPECT_EQ(QueueObjectName("nvme0", 3), "nvme0 q3");
  EXPECT_EQ((QueueKey{Source::kNvmet, 1, 2, 0}).ToString(), "nvmet:c1:q2");
  EXPECT_EQ((QueueKey{static_cast<Source>(9), 1, 2, 3}).ToString(), "source9:3:1:2");
}

TEST(QueueKey, ToStringNamesEachSource) {
  EXPECT_EQ((QueueKey{Source::kKernelNvme, 0, 1, 0}).ToString(), "kernel:nvme0:q1");
  EXPECT_EQ((QueueKey{Source::kBlock, (7u << 20) | 3u, 1, 0}).ToString(), "block:7:3:q1");
  EXPECT_EQ((QueueKey{Source::kUvnvme, 0, 2, 1234}).ToString(), "uvnvme:1234:c0:q2");
  EXPECT_EQ((QueueKey{Source::kSpdk, 0x7fff, 0x12345678, 99}).ToString(), "spdk:99:0x00007fff12345678");
  EXPECT_EQ(SourceName(Source::kUvnvme), "uvnvme");
}

TEST(QueueKey, HashSeparatesFields) {
  std::unordered_set<QueueKey, QueueKeyHash> keys;
  for (uint32_t v = 0; v < 4; ++v) {
    keys.insert({Source::kUvnvme, v, 0, 0});
    keys.insert({Source::kUvnvme, 0, v, 0});
    keys.insert({Source::kUvnvme, 0, 0, v});
    keys.insert({Source::kBlock, v, 0, 0});
  }
  EXPECT_EQ(keys.size(), 14u);  // 10 uvnvme keys ((0,0,0) once) and 4 block keys
  EXPECT_NE(QueueKeyHash{}({Source::kUvnvme, 1, 2, 3}), QueueKeyHash{}({Source::kUvnvme, 3, 2, 1}));
}

}  // namespace
}  // namespace nvmeadapt
