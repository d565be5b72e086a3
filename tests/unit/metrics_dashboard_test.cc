// The Grafana dashboard is importable anywhere: valid JSON, the data source is the `datasource` variable
// everywhere, the node/controller/queue variables exist, and it shows what operators need.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "common/files.h"

namespace nvmeadapt::metrics {
namespace {

const std::filesystem::path kDashboard =
    std::filesystem::path(NVME_ADAPT_SOURCE_DIR) / "dashboards/grafana/nvme-adapt.json";

nlohmann::json LoadDashboard() {
  auto text = ReadWholeFile(kDashboard.string());
  EXPECT_TRUE(text) << text.error().message;
  nlohmann::json dashboard = nlohmann::json::parse(text ? *text : std::string("{}"), nullptr, false);
  EXPECT_FALSE(dashboard.is_discarded()) << kDashboard << " is not valid JSON";
  return dashboard.is_discarded() ? nlohmann::json::object() : dashboard;
}

bool UsesDatasourceVariable(const nlohmann::json& holder) {
  return holder.contains("datasource") && holder["datasource"].value("uid", "") == "${datasource}" &&
         holder["datasource"].value("type", "") == "prometheus";
}

TEST(GrafanaDashboard, HasADatasourceVariableAndNodeControllerQueueVariables) {
  const nlohmann::json dashboard = LoadDashboard();
  ASSERT_TRUE(dashboard.contains("templating"));
  std::map<std::string, nlohmann::json> variables;
  for (const auto& variable : dashboard["templating"]["list"]) variables[variable.value("name", "")] = variable;
  ASSERT_TRUE(variables.count("datasource"));
  EXPECT_EQ(variables["datasource"].value("type", ""), "datasource");
  EXPECT_EQ(variables["datasource"].value("query", ""), "prometheus");
  for (const char* name : {"instance", "controller", "queue"}) {
    ASSERT_TRUE(variables.count(name)) << name;
    EXPECT_EQ(variables[name].value("type", ""), "query") << name;
    EXPECT_TRUE(UsesDatasourceVariable(variables[name])) << name;
    EXPECT_NE(variables[name].value("query", "").find("label_values("), std::string::npos) << name;
  }
  EXPECT_FALSE(dashboard.value("uid", "").empty());
  EXPECT_FALSE(dashboard.contains("__inputs")) << "the data source is chosen by the variable, not at import";
}

TEST(GrafanaDashboard, EveryPanelAndQueryUsesTheDatasourceVariable) {
  const nlohmann::json dashboard = LoadDashboard();
  std::set<int> ids;
  size_t queries = 0;
  for (const auto& panel : dashboard["panels"]) {
    const std::string title = panel.value("title", "");
    EXPECT_TRUE(ids.insert(panel.value("id", -1)).second) << "duplicate panel id: " << title;
    EXPECT_TRUE(panel.contains("gridPos")) << title;
    if (panel.value("type", "") == "row") continue;
    EXPECT_TRUE(UsesDatasourceVariable(panel)) << title;
    ASSERT_TRUE(panel.contains("targets")) << title;
    for (const auto& target : panel["targets"]) {
      EXPECT_TRUE(UsesDatasourceVariable(target)) << title;
      EXPECT_FALSE(target.value("expr", "").empty()) << title;
      ++queries;
    }
  }
  EXPECT_GT(queries, 0u);
}

TEST(GrafanaDashboard, ShowsModeLoadThresholdSwitchesLeverErrorsAndTheAgentsCost) {
  const nlohmann::json dashboard = LoadDashboard();
  std::string expressions;
  for (const auto& panel : dashboard["panels"]) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel["targets"]) expressions += target.value("expr", "") + "\n";
  }
  for (const char* needed :
       {"nvme_adapt_queue_mode", "nvme_adapt_queue_completions_total", "nvme_adapt_queue_window_average_interval_seconds",
        "nvme_adapt_queue_poll_threshold_seconds", "nvme_adapt_queue_switches_total", "nvme_adapt_lever_errors_total",
        "process_cpu_seconds_total", "process_resident_memory_bytes", "nvme_adapt_bpf_run_seconds_total",
        "nvme_adapt_ringbuf_drops_total"}) {
    EXPECT_NE(expressions.find(needed), std::string::npos) << "no panel queries " << needed;
  }
  EXPECT_NE(expressions.find("by (reason)"), std::string::npos) << "switches are shown by reason";
}

}  // namespace
}  // namespace nvmeadapt::metrics
