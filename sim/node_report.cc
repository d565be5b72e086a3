// SPDX-License-Identifier: Apache-2.0
// The node layer (issue 34) at the seed's six points: its gain over static interrupt beside the per-queue
// agent's and the in-driver engine's, with what it deferred, counted as the cover letter counts (more than
// 5 % either way). The sweep counts it beside the other policies (sweep.cc).
#include <cstdio>

#include "sim/report.h"

namespace nvmeadapt::sim {

void ReportNode(Json& json, const ReportOptions& options, const std::vector<Comparison>& seed) {
  constexpr double kSignificant = 0.05;
  std::fprintf(options.log, "node: the agent with the node layer (default settings, facts every 10 ms of model "
                            "time) against static interrupt, beside the per-queue agent and the in-driver engine\n");
  json.Key("node").Open('{');
  json.Key("significant").Value(kSignificant);
  json.Key("points").Open('[');
  const std::vector<SeedPoint> points = SeedPoints();
  uint32_t better = 0, worse = 0;
  for (size_t i = 0; i < points.size() && i < seed.size(); ++i) {
    const Comparison& c = seed[i];
    const double node = c.Gain(c.node_iops), agent = c.Gain(c.agent_iops), in_driver = c.Gain(c.in_driver_iops);
    better += node > kSignificant;
    worse += node < -kSignificant;
    std::fprintf(options.log,
                 "  %-12s node %+7.2f%% agent %+7.2f%% in-driver %+7.2f%% (node: %lu tries, %lu deferred, %lu "
                 "ended)\n",
                 points[i].name.c_str(), 100 * node, 100 * agent, 100 * in_driver,
                 static_cast<unsigned long>(c.node.counts.to_poll),
                 static_cast<unsigned long>(c.node.counts.node_deferred),
                 static_cast<unsigned long>(c.node.counts.node_ended));
    json.Open('{');
    json.Key("name").Value(points[i].name);
    json.Key("interrupt_iops").Value(c.interrupt_iops);
    json.Key("node_iops").Value(c.node_iops);
    json.Key("node_gain").Value(node);
    json.Key("agent_gain").Value(agent);
    json.Key("in_driver_gain").Value(in_driver);
    json.Key("node_tries").Value(static_cast<double>(c.node.counts.to_poll));
    json.Key("node_deferred").Value(static_cast<double>(c.node.counts.node_deferred));
    json.Key("node_ended").Value(static_cast<double>(c.node.counts.node_ended));
    json.Close('}');
  }
  json.Close(']');
  std::fprintf(options.log, "  %u better, %u worse than static interrupt by more than 5 %%\n", better, worse);
  json.Key("better").Value(static_cast<double>(better));
  json.Key("worse").Value(static_cast<double>(worse));
  json.Close('}');
}

}  // namespace nvmeadapt::sim
