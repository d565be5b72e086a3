// SPDX-License-Identifier: Apache-2.0
// The Grafana dashboard is importable anywhere: valid JSON, the data source is the `datasource` variable
// everywhere, the node/controller/queue variables exist, and it shows what operators need. Every metric a panel
// queries is documented in docs/metrics.md, panels key on the `node` label (not `instance`), `process_*`
// queries select the job, legends name controllers by their name now (kernel_name), and a row shows the
// fleet's payoff by drive model and firmware.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "common/files.h"
#include "tests/unit/metrics_docs.h"

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
  EXPECT_FALSE(variables.count("instance")) << "the node variable keys on the node label";
  EXPECT_NE(variables["node"].value("query", "").find("label_values(nvme_adapt_build_info, node)"), std::string::npos);
  for (const char* name : {"node", "controller", "queue"}) {
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

struct PanelQuery {
  std::string title;
  std::string expr;
  std::string legend;
};

std::vector<PanelQuery> PanelQueries(const nlohmann::json& dashboard) {
  std::vector<PanelQuery> queries;
  for (const auto& panel : dashboard["panels"]) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel["targets"]) {
      queries.push_back({panel.value("title", ""), target.value("expr", ""), target.value("legendFormat", "")});
    }
  }
  return queries;
}

std::string ReadDocs(const char* relative) {
  auto text = ReadWholeFile((std::filesystem::path(NVME_ADAPT_SOURCE_DIR) / relative).string());
  EXPECT_TRUE(text) << text.error().message;
  return text ? *text : std::string();
}

TEST(GrafanaDashboard, EveryMetricAPanelQueriesIsInTheMetricsDocs) {
  const std::string docs = ReadDocs("docs/metrics.md");
  const auto documented = testing::DocumentedFamilies(docs);
  ASSERT_FALSE(documented.empty());
  size_t checked = 0;
  for (const PanelQuery& query : PanelQueries(LoadDashboard())) {
    for (const std::string& token : testing::NameTokens(query.expr)) {
      if (token.starts_with("nvme_adapt:")) {  // a recording rule: documented by name in its table
        EXPECT_NE(docs.find("`" + token + "`"), std::string::npos) << query.title << ": " << token;
        ++checked;
      } else if (token.starts_with("nvme_adapt_") || token.starts_with("process_")) {
        std::string family = token;
        if (family.ends_with("_bucket")) family.resize(family.size() - 7);
        EXPECT_TRUE(documented.count(family)) << query.title << ": " << token << " is not in docs/metrics.md";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20u);
}

TEST(GrafanaDashboard, PanelsKeyOnNodeProcessQueriesSelectTheJobAndLegendsNameControllers) {
  size_t process = 0;
  for (const PanelQuery& q : PanelQueries(LoadDashboard())) {
    EXPECT_EQ(q.expr.find("instance"), std::string::npos) << q.title << ": keys on instance: " << q.expr;
    EXPECT_EQ(q.legend.find("{{instance}}"), std::string::npos) << q.title << ": " << q.legend;
    const bool fleet = q.expr.find("nvme_adapt:model_firmware") != std::string::npos;
    EXPECT_TRUE(fleet || q.expr.find("node=~\"$node\"") != std::string::npos) << q.title << ": no node filter: " << q.expr;
    for (size_t at = q.expr.find("process_"); at != std::string::npos; at = q.expr.find("process_", at + 1)) {
      const size_t open = q.expr.find('{', at);
      const std::string selector = q.expr.substr(open, q.expr.find('}', open) - open);
      EXPECT_NE(selector.find("job="), std::string::npos) << q.title << ": a process_ query without job: " << q.expr;
      ++process;
    }
    if (q.legend.find("{{controller}}") != std::string::npos || q.legend.find("{{kernel_name}}") != std::string::npos) {
      EXPECT_EQ(q.legend.find("{{controller}}"), std::string::npos) << q.title << ": a legend with the stable ID only";
      EXPECT_NE(q.expr.find("group_left (kernel_name)"), std::string::npos) << q.title << ": kernel_name not joined";
      EXPECT_NE(q.expr.find("nvme_adapt_queue_info"), std::string::npos) << q.title;
    }
  }
  EXPECT_GE(process, 3u) << "the agent's own CPU, memory and files";
}

TEST(GrafanaDashboard, AFleetRowShowsThePayoffByDriveModelAndFirmware) {
  const nlohmann::json dashboard = LoadDashboard();
  bool row = false;
  for (const auto& panel : dashboard["panels"]) {
    row = row || (panel.value("type", "") == "row" && panel.value("title", "").find("model and firmware") != std::string::npos);
  }
  EXPECT_TRUE(row) << "no row for drive models and firmwares";
  std::set<std::string> rules;
  for (const PanelQuery& q : PanelQueries(dashboard)) {
    if (q.expr.starts_with("nvme_adapt:model_firmware_")) {
      rules.insert(q.expr);
      EXPECT_NE(q.legend.find("{{model}}"), std::string::npos) << q.title;
      EXPECT_NE(q.legend.find("{{firmware}}"), std::string::npos) << q.title;
    }
  }
  for (const char* rule : {"nvme_adapt:model_firmware_nodes:count", "nvme_adapt:model_firmware_completions_gained:rate5m",
                           "nvme_adapt:model_firmware_shadow_would_poll:ratio10m", "nvme_adapt:model_firmware_nodes_gaining:count"}) {
    EXPECT_TRUE(rules.count(rule)) << "no panel shows " << rule;
  }
}

}  // namespace
}  // namespace nvmeadapt::metrics
