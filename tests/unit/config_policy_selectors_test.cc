// SPDX-License-Identifier: Apache-2.0
// Policy by device selector (issue 32): the criteria table against the proto, matching, the one precedence
// rule, and every bad selector refused at load with the entry and field named.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "agent/config/config_file.h"
#include "agent/config/policy_convert.h"
#include "agent/config/policy_layers.h"
#include "agent/engine/policy_selectors.h"

namespace nvmeadapt::config {
namespace {

engine::DeviceFacts Pm1743(std::string name = "nvme0") {
  return {.controller = std::move(name), .id = "nvme-00000000000000aa", .model = "SAMSUNG MZWLO3T8HCLS-00A07",
          .serial = "S6CRNA0T100001", .firmware = "GDC5A02Q", .subsysnqn = "nqn.1994-11.com.samsung:pm1743",
          .transport = "pcie", .layer = "local", .pci_address = "0000:3b:00.0"};
}

engine::Selector Parsed(const std::string& json_match) {
  auto config = ParseConfigJson(R"({"selectors": [{"name": "s", "match": )" + json_match + "}]}");
  EXPECT_TRUE(config) << config.error().message;
  auto selector = SelectorOf(config->selectors(0).match(), "match");
  EXPECT_TRUE(selector) << selector.error().message;
  return selector ? *selector : engine::Selector{};
}

std::string LoadError(const std::string& json) {
  auto config = ParseConfigJson(json);
  return config ? "" : config.error().message;
}

TEST(PolicySelectors, selector_fields_cover_the_proto) {
  std::set<std::string> rows;
  for (const engine::SelectorField& field : engine::SelectorFields()) {
    rows.insert(std::string(field.name));
    EXPECT_NE(v1::Selector::descriptor()->FindFieldByName(std::string(field.name)), nullptr) << field.name;
  }
  const auto* descriptor = v1::Selector::descriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const std::string name = descriptor->field(i)->name();
    EXPECT_TRUE(rows.count(name) == 1 || name == engine::kSelectorQueuesField) << "no selector row for " << name;
  }
}

TEST(PolicySelectors, selector_matches_model_glob_serial_transport_and_queue_ranges) {
  EXPECT_TRUE(engine::Matches(Parsed(R"({"model": "SAMSUNG MZWLO*"})"), Pm1743(), 1));
  EXPECT_FALSE(engine::Matches(Parsed(R"({"model": "INTEL*"})"), Pm1743(), 1));
  EXPECT_TRUE(engine::Matches(Parsed(R"({"serial": "S6CRNA0T100001", "transport": "pcie"})"), Pm1743(), 1));
  EXPECT_FALSE(engine::Matches(Parsed(R"({"serial": "S6CRNA0T100001", "transport": "tcp"})"), Pm1743(), 1));
  EXPECT_TRUE(engine::Matches(Parsed(R"({"controller": "nvme[0-3]"})"), Pm1743(), 1));
  EXPECT_FALSE(engine::Matches(Parsed(R"({"controller": "nvme[!0]"})"), Pm1743(), 1));
  EXPECT_TRUE(engine::Matches(Parsed(R"({"pciAddress": "0000:3b:00.0", "firmware": "GDC5*"})"), Pm1743(), 1));
  EXPECT_TRUE(engine::Matches(Parsed(R"({"subsysnqn": "nqn.1994-11.com.samsung:pm1743"})"), Pm1743(), 1));
  EXPECT_TRUE(engine::Matches(Parsed(R"({"id": "nvme-00000000000000aa"})"), Pm1743("nvme3"), 1));
  const engine::Selector ranges = Parsed(R"({"model": "SAMSUNG*", "queues": "1,3,5-8"})");
  for (uint32_t qid : {1u, 3u, 5u, 8u}) EXPECT_TRUE(engine::Matches(ranges, Pm1743(), qid)) << qid;
  for (uint32_t qid : {2u, 4u, 9u}) EXPECT_FALSE(engine::Matches(ranges, Pm1743(), qid)) << qid;
  // A fact the agent does not know (a userspace driver has no PCI address) is no match.
  engine::DeviceFacts driver = Pm1743("uvnvme:7:0");
  driver.pci_address.clear();
  EXPECT_FALSE(engine::Matches(Parsed(R"({"pciAddress": "*"})"), driver, 1));
}

TEST(PolicySelectors, selector_more_specific_wins_field_by_field) {
  auto config = ParseConfigJson(R"({
    "policy": {"mode": "CONTROLLER_MODE_OFF", "paceSlackNs": 1000},
    "selectors": [
      {"name": "samsung", "match": {"model": "SAMSUNG*"},
       "policy": {"mode": "CONTROLLER_MODE_ADAPTIVE", "paceSlackNs": 2000, "maxFailures": 5}},
      {"name": "pm1743-pcie", "match": {"model": "SAMSUNG MZWLO*", "transport": "pcie"},
       "policy": {"paceSlackNs": 3000}},
      {"name": "first-queues", "match": {"queues": "1-2"}, "policy": {"maxFailures": 7}}],
    "controllers": [{"controller": "nvme-00000000000000aa", "policy": {"backoffWindows": 9}}]})");
  ASSERT_TRUE(config) << config.error().message;
  const v1::PolicySet set = PoliciesOf(*config);
  auto q1 = EffectivePolicy(set, Pm1743(), 1);
  ASSERT_TRUE(q1) << q1.error().message;
  EXPECT_EQ(q1->mode, engine::ControllerMode::kAdaptive);  // samsung: the two-criteria entry sets no mode
  EXPECT_EQ(q1->pace_slack, 3000);                          // pm1743-pcie over samsung
  EXPECT_EQ(q1->max_failures, 7u);                          // a queue selector over every controller entry
  EXPECT_EQ(q1->backoff_windows, 9u);                       // the controller entry by stable ID
  auto q3 = EffectivePolicy(set, Pm1743(), 3);
  EXPECT_EQ(q3->max_failures, 5u);
  std::vector<std::string> entries;
  for (const PolicyLayer& layer : LayersFor(set, Pm1743(), 1)) entries.push_back(layer.entry);
  EXPECT_EQ(entries, (std::vector<std::string>{"global", "selector samsung", "selector pm1743-pcie",
                                               "controller nvme-00000000000000aa", "selector first-queues"}));
  auto other = EffectivePolicy(set, NamedDevice("nvme1"), 3);
  EXPECT_EQ(other->mode, engine::ControllerMode::kOff);
}

TEST(PolicySelectors, selector_of_equal_specificity_that_may_overlap_is_refused_naming_both) {
  const std::string error = LoadError(R"({"selectors": [
      {"name": "by-model", "match": {"model": "SAMSUNG*"}, "policy": {"maxFailures": 5}},
      {"name": "by-transport", "match": {"transport": "pcie"}, "policy": {"maxFailures": 6}}]})");
  EXPECT_NE(error.find("selectors[1]"), std::string::npos) << error;
  EXPECT_NE(error.find("'by-model'"), std::string::npos) << error;
  EXPECT_NE(error.find("'by-transport'"), std::string::npos) << error;
  // Disjoint ones of one specificity are fine: different literal values or prefixes, queue ranges apart.
  EXPECT_EQ(LoadError(R"({"selectors": [
      {"name": "a", "match": {"model": "SAMSUNG*"}}, {"name": "b", "match": {"model": "INTEL*"}},
      {"name": "c", "match": {"transport": "tcp", "serial": "X"}}, {"name": "d", "match": {"transport": "pcie", "serial": "X"}},
      {"name": "e", "match": {"queues": "1-2"}}, {"name": "f", "match": {"queues": "3-4"}}]})"),
            "");
  EXPECT_NE(LoadError(R"({"selectors": [{"name": "e", "match": {"queues": "1-3"}},
      {"name": "f", "match": {"queues": "3-4"}}]})").find("'e'"), std::string::npos);
}

TEST(PolicySelectors, selector_bad_entries_are_refused_with_the_field_named) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"selectors": [{"name": "x", "match": {"queues": "0-3"}}]})", "selectors[0].match.queues: '0-3': queue 0"},
      {R"({"selectors": [{"name": "x", "match": {"queues": "4-2"}}]})", "selectors[0].match.queues: '4-2'"},
      {R"({"selectors": [{"name": "x", "match": {"queues": "1,,2"}}]})", "selectors[0].match.queues: ''"},
      {R"({"selectors": [{"name": "x", "match": {"model": "A[bc"}}]})", "selectors[0].match.model: the class"},
      {R"({"selectors": [{"name": "x", "match": {}}]})", "selectors[0].match: sets no criterion"},
      {R"({"selectors": [{"match": {"model": "A"}}]})", "selectors[0].name: must name"},
      {R"({"selectors": [{"name": "x", "match": {"model": "A"}}, {"name": "x", "match": {"model": "B"}}]})",
       "selectors[1].name: 'x' is also selectors[0]"},
      {R"({"selectors": [{"name": "x", "match": {"vendor": "A"}}]})", "vendor"},
      {R"({"selectors": [{"name": "x", "match": {"model": "A"}, "policy": {"profile": "fast"}}]})",
       "unknown profile 'fast'"},
      {R"({"selectors": [{"name": "x", "match": {"model": "A"}, "policy": {"paceSlackNs": -1}}]})",
       "selectors[0].policy.pace_slack_ns"},
  };
  for (const auto& [json, wanted] : cases) {
    const std::string error = LoadError(json);
    EXPECT_NE(error.find(wanted), std::string::npos) << json << "\n  gave: " << error;
  }
}

TEST(PolicySelectors, selector_criterion_from_the_command_line) {
  v1::Selector match;
  ASSERT_TRUE(SetSelectorCriterion(match, "model=SAMSUNG*"));
  ASSERT_TRUE(SetSelectorCriterion(match, "queues=1-4"));
  EXPECT_EQ(SelectorText(match), "model=SAMSUNG*, queues=1-4");
  auto unknown = SetSelectorCriterion(match, "vendor=x");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("pci_address"), std::string::npos) << unknown.error().message;
  EXPECT_FALSE(SetSelectorCriterion(match, "model"));
  EXPECT_EQ(engine::QueueRangesText(*engine::ParseQueueRanges("1,3,5-8")), "1,3,5-8");
}

TEST(PolicySelectors, policy_explain_names_the_entry_and_profile_of_each_field) {
  auto config = ParseConfigJson(R"({
    "policy": {"mode": "CONTROLLER_MODE_SHADOW"},
    "selectors": [{"name": "samsung", "match": {"model": "SAMSUNG*"},
                   "policy": {"profile": "patch", "paceSlackNs": 40000}}]})");
  ASSERT_TRUE(config) << config.error().message;
  auto origins = ExplainPolicy(PoliciesOf(*config), Pm1743(), 1);
  ASSERT_TRUE(origins) << origins.error().message;
  std::map<std::string, FieldOrigin> by_name;
  for (const FieldOrigin& origin : *origins) by_name[std::string(origin.field->name)] = origin;
  ASSERT_EQ(by_name.size(), engine::PolicyFields().size());
  EXPECT_EQ(by_name["mode"].entry, "global");
  EXPECT_EQ(by_name["pace_slack_ns"].entry, "selector samsung");
  EXPECT_EQ(by_name["pace_slack_ns"].value, 40000);
  EXPECT_EQ(by_name["window_completions"].entry, "selector samsung (profile patch)");
  EXPECT_EQ(by_name["window_completions"].value, 8192);
  auto other = ExplainPolicy(PoliciesOf(*config), NamedDevice("nvme1"), 1);
  for (const FieldOrigin& origin : *other) {
    EXPECT_EQ(origin.entry, origin.field->name == "mode" ? "global" : "default") << origin.field->name;
  }
}

}  // namespace
}  // namespace nvmeadapt::config
