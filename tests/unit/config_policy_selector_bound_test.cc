// SPDX-License-Identifier: Apache-2.0
// Issue 45, item 7: the selectors a config or SetPolicy may hold are bounded (256 entries, 256 characters a
// value, `queues` included), and a large config within the bounds is checked and applied fast.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "agent/config/config_file.h"
#include "agent/config/policy_convert.h"
#include "agent/config/policy_layers.h"
#include "agent/engine/policy_selectors.h"

namespace nvmeadapt::config {
namespace {

constexpr char kModel[] = "SAMSUNG MZWLO3T8HCLS-00A07";

std::string LoadError(const std::string& json) {
  auto config = ParseConfigJson(json);
  return config ? "" : config.error().message;
}

// Selector i covers every other queue id of its own block of 10,000, as many as 256 characters hold: all
// of one scope and specificity, so every pair is checked for overlap, range list against range list.
std::string LargeConfig(int selectors) {
  std::string json = R"({"selectors": [)";
  for (int i = 0; i < selectors; ++i) {
    std::string queues;
    for (int qid = i * 10000 + 1;; qid += 2) {
      const std::string next = (queues.empty() ? "" : ",") + std::to_string(qid);
      if (queues.size() + next.size() > engine::kMaxSelectorValueLength) break;
      queues += next;
    }
    json += std::string(i ? "," : "") + R"({"name": "s)" + std::to_string(i) + R"(", "match": {"model": ")" + kModel +
            R"(", "queues": ")" + queues + R"("}, "policy": {"paceSlackNs": )" + std::to_string(20000 + i) + "}}";
  }
  return json + "]}";
}

TEST(PolicySelectors, selector_bound_queues_longer_than_256_characters_is_refused_naming_the_field) {
  std::string queues = "1";
  while (queues.size() <= engine::kMaxSelectorValueLength) queues += ",1";
  const std::string error =
      LoadError(R"({"selectors": [{"name": "x", "match": {"model": "A", "queues": ")" + queues + R"("}}]})");
  EXPECT_NE(error.find("selectors[0].match.queues: longer than 256 characters"), std::string::npos) << error;
  const std::string name(engine::kMaxSelectorValueLength + 1, 'n');
  EXPECT_NE(LoadError(R"({"selectors": [{"name": ")" + name + R"(", "match": {"model": "A"}}]})")
                .find("selectors[0].name: longer than 256 characters"),
            std::string::npos);
}

TEST(PolicySelectors, selector_bound_more_than_256_entries_are_refused) {
  EXPECT_EQ(LoadError(LargeConfig(engine::kMaxSelectors)), "");
  const std::string error = LoadError(LargeConfig(engine::kMaxSelectors + 1));
  EXPECT_NE(error.find("selectors: 257 entries, more than the 256 allowed"), std::string::npos) << error;
}

TEST(PolicySelectors, selector_bound_a_large_valid_config_is_checked_and_applied_fast) {
  const auto start = std::chrono::steady_clock::now();
  auto config = ParseConfigJson(LargeConfig(engine::kMaxSelectors));
  ASSERT_TRUE(config) << config.error().message;
  const v1::PolicySet set = PoliciesOf(*config);
  ASSERT_TRUE(ValidatePolicies(set));
  const auto checked = std::chrono::steady_clock::now();
  engine::DeviceFacts facts{.controller = "nvme0", .id = "nvme-00000000000000aa", .model = kModel};
  for (uint32_t qid = 1; qid <= 256; ++qid) {
    auto policy = EffectivePolicy(set, facts, 10000 * (qid % 4) + qid);
    ASSERT_TRUE(policy) << policy.error().message;
  }
  EXPECT_EQ(EffectivePolicy(set, facts, 30001)->pace_slack, 20003);
  const auto applied = std::chrono::steady_clock::now();
  const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  std::printf("256 selectors of 256-character queue lists: checked in %lld ms, 256 queues' policies in %lld ms\n",
              static_cast<long long>(ms(checked - start)), static_cast<long long>(ms(applied - checked)));
  EXPECT_LT(ms(checked - start), 2000);
  EXPECT_LT(ms(applied - checked), 2000);
}

}  // namespace
}  // namespace nvmeadapt::config
