// SPDX-License-Identifier: Apache-2.0
// The node layer's series (docs/metrics.md, "Node layer"): its deferrals and ended runs by reason word, the
// polling CPU it counts against its budget, and the node's CPU pressure as it last read it.
#include <string>
#include <vector>

#include "agent/metrics/family_builder.h"

namespace nvmeadapt::metrics {

void AddNodeFamilies(const NodeSeries& node, std::vector<MetricFamily>& out) {
  FamilyBuilder deferred("nvme_adapt_node_deferred_tries_total",
                         "Polling tries the node layer deferred, by reason (cpu_budget, cpu_busy, cpu_pressure, "
                         "staggered): the queue stayed in interrupt mode.",
                         MetricType::Counter);
  FamilyBuilder ended("nvme_adapt_node_ended_runs_total",
                      "Polling runs the node layer ended, by reason: the queue went back to interrupt mode.",
                      MetricType::Counter);
  FamilyBuilder polling("nvme_adapt_node_polling_cores",
                        "Cores the node's polling queues hold, as the node layer counts them against its budget.",
                        MetricType::Gauge);
  FamilyBuilder budget("nvme_adapt_node_budget_cores", "The node's polling CPU budget in cores (absent: none).",
                       MetricType::Gauge);
  FamilyBuilder pressure("nvme_adapt_node_cpu_pressure_avg10",
                         "PSI cpu avg10 (percent) as the node layer last read it, by kind (some, full).",
                         MetricType::Gauge);
  FamilyBuilder decided("nvme_adapt_node_decided_queues",
                        "Queues whose policy has node_layer: the node layer decides their tries.", MetricType::Gauge);
  for (const auto& row : engine::kNodeReasons) {
    const auto i = static_cast<size_t>(row.value);
    deferred.Add({{"reason", std::string(row.name)}}, static_cast<double>(node.deferred[i]));
    ended.Add({{"reason", std::string(row.name)}}, static_cast<double>(node.ended[i]));
  }
  polling.Add({}, node.polling_cores);
  if (node.budget_cores) budget.Add({}, *node.budget_cores);
  if (node.pressure_some_avg10) pressure.Add({{"kind", "some"}}, *node.pressure_some_avg10);
  if (node.pressure_full_avg10) pressure.Add({{"kind", "full"}}, *node.pressure_full_avg10);
  decided.Add({}, static_cast<double>(node.decided_queues));
  for (FamilyBuilder* family : {&deferred, &ended, &polling, &budget, &pressure, &decided}) family->MoveTo(out);
}

}  // namespace nvmeadapt::metrics
