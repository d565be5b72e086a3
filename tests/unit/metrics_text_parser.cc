// SPDX-License-Identifier: Apache-2.0
#include "tests/unit/metrics_text_parser.h"

#include <cstdlib>
#include <sstream>

namespace nvmeadapt::metrics::testing {
namespace {

// The family a sample belongs to: histogram and summary samples carry a suffix.
std::string FamilyOf(const std::string& sample_name, const std::map<std::string, FamilyShape>& families) {
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (sample_name.size() > suffix.size() && sample_name.ends_with(suffix)) {
      std::string base = sample_name.substr(0, sample_name.size() - suffix.size());
      auto it = families.find(base);
      if (it != families.end() && (it->second.type == "histogram" || it->second.type == "summary")) return base;
    }
  }
  return sample_name;
}

// name{a="x",b="y"} value  ->  Sample; label values may hold \" \\ and \n escapes.
std::optional<Sample> ParseSample(std::string_view line) {
  Sample sample;
  size_t pos = line.find_first_of("{ ");
  if (pos == std::string_view::npos) return std::nullopt;
  sample.name = std::string(line.substr(0, pos));
  if (line[pos] == '{') {
    ++pos;
    while (pos < line.size() && line[pos] != '}') {
      const size_t eq = line.find('=', pos);
      if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') return std::nullopt;
      std::string name(line.substr(pos, eq - pos));
      std::string value;
      size_t i = eq + 2;
      for (; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) {
          ++i;
          value += line[i] == 'n' ? '\n' : line[i];
        } else {
          value += line[i];
        }
      }
      if (i >= line.size()) return std::nullopt;
      sample.labels[name] = value;
      pos = i + 1;
      if (pos < line.size() && line[pos] == ',') ++pos;
    }
    if (pos >= line.size()) return std::nullopt;
    ++pos;  // '}'
  }
  const std::string value(line.substr(pos));
  char* end = nullptr;
  sample.value = std::strtod(value.c_str(), &end);
  if (end == value.c_str()) {
    if (value.find("Nan") == std::string::npos && value.find("NaN") == std::string::npos) return std::nullopt;
  }
  return sample;
}

}  // namespace

std::vector<Sample> Exposition::Find(std::string_view name, const std::map<std::string, std::string>& match) const {
  std::vector<Sample> found;
  for (const Sample& sample : samples) {
    if (sample.name != name) continue;
    bool all = true;
    for (const auto& [key, value] : match) {
      auto it = sample.labels.find(key);
      all = all && it != sample.labels.end() && it->second == value;
    }
    if (all) found.push_back(sample);
  }
  return found;
}

std::optional<double> Exposition::Value(std::string_view name, const std::map<std::string, std::string>& match) const {
  const std::vector<Sample> found = Find(name, match);
  if (found.size() != 1) return std::nullopt;
  return found.front().value;
}

std::optional<Exposition> ParseExposition(std::string_view text, std::string* error) {
  Exposition out;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with("# HELP")) continue;
    if (line.starts_with("# TYPE ")) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      out.families[name].type = type;
      continue;
    }
    if (line.starts_with("#")) continue;
    auto sample = ParseSample(line);
    if (!sample) {
      if (error != nullptr) *error = "cannot parse: " + line;
      return std::nullopt;
    }
    FamilyShape& family = out.families[FamilyOf(sample->name, out.families)];
    for (const auto& [name, value] : sample->labels) {
      const bool bucket_bound = name == "le" && family.type == "histogram";
      const bool quantile = name == "quantile" && family.type == "summary";
      if (!bucket_bound && !quantile) family.labels.insert(name);
    }
    out.samples.push_back(std::move(*sample));
  }
  return out;
}

}  // namespace nvmeadapt::metrics::testing
