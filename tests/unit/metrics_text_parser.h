// SPDX-License-Identifier: Apache-2.0
// Reads the Prometheus text exposition format back, for tests: samples with their labels, and families with
// their type and the label names their samples carry.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace nvmeadapt::metrics::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct FamilyShape {
  std::string type;               // from "# TYPE": counter, gauge, histogram, summary, untyped
  std::set<std::string> labels;   // label names of its samples, without le (histogram) and quantile (summary)
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, FamilyShape> families;  // by family name

  // Samples named `name` whose labels include every pair of `match`.
  std::vector<Sample> Find(std::string_view name, const std::map<std::string, std::string>& match = {}) const;
  // The value of the one sample that matches; nullopt if none or several do.
  std::optional<double> Value(std::string_view name, const std::map<std::string, std::string>& match = {}) const;
};

// Parses `text`; a line it cannot read makes it return nullopt with the line in `error`.
std::optional<Exposition> ParseExposition(std::string_view text, std::string* error);

}  // namespace nvmeadapt::metrics::testing
