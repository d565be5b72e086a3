// SPDX-License-Identifier: Apache-2.0
// Building Prometheus metric families from the metrics snapshot (metric_families.cc, payoff_families.cc).
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <utility>
#include <vector>

#include "agent/metrics/metrics_state.h"

namespace nvmeadapt::metrics {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

inline Labels With(Labels labels, std::string name, std::string value) {
  labels.push_back({std::move(name), std::move(value)});
  return labels;
}

inline Labels QueueLabelsOf(const QueueSeries& queue) {
  return {{"source", queue.source}, {"controller", queue.controller}, {"queue", queue.queue}};
}

class FamilyBuilder {
 public:
  FamilyBuilder(std::string name, std::string help, MetricType type) {
    family_.name = std::move(name);
    family_.help = std::move(help);
    family_.type = type;
  }

  void Add(Labels labels, double value) {
    ClientMetric metric;
    metric.label = std::move(labels);
    if (family_.type == MetricType::Counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    family_.metric.push_back(std::move(metric));
  }

  void AddHistogram(Labels labels, ClientMetric::Histogram histogram) {
    ClientMetric metric;
    metric.label = std::move(labels);
    metric.histogram = std::move(histogram);
    family_.metric.push_back(std::move(metric));
  }

  // Families without a series are left out of the exposition.
  void MoveTo(std::vector<MetricFamily>& out) {
    if (!family_.metric.empty()) out.push_back(std::move(family_));
  }

 private:
  MetricFamily family_;
};

}  // namespace nvmeadapt::metrics
