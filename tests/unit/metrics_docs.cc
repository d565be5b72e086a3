// SPDX-License-Identifier: Apache-2.0
#include "tests/unit/metrics_docs.h"

#include <cctype>
#include <sstream>

namespace nvmeadapt::metrics::testing {
namespace {

// The `backticked` words of a table cell.
std::vector<std::string> Ticked(const std::string& cell) {
  std::vector<std::string> words;
  for (size_t open = cell.find('`'); open != std::string::npos; open = cell.find('`', open)) {
    const size_t close = cell.find('`', open + 1);
    if (close == std::string::npos) break;
    words.push_back(cell.substr(open + 1, close - open - 1));
    open = close + 1;
  }
  return words;
}

}  // namespace

std::map<std::string, FamilyShape> DocumentedFamilies(std::string_view markdown, std::string_view first_column) {
  const std::string header = "| " + std::string(first_column) + " | type | labels | meaning |";
  std::map<std::string, FamilyShape> families;
  std::istringstream lines{std::string(markdown)};
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(header)) {
      in_table = true;
      continue;
    }
    if (!line.starts_with("|")) in_table = false;
    if (!in_table || line.starts_with("|---")) continue;
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 4) continue;
    const auto names = Ticked(cells[0]);
    if (names.size() != 1) continue;
    FamilyShape& family = families[names.front()];
    std::istringstream type(cells[1]);
    type >> family.type;
    for (const auto& label : Ticked(cells[2])) family.labels.insert(label);
  }
  return families;
}

std::vector<std::string> NameTokens(std::string_view text) {
  std::vector<std::string> tokens;
  std::string current;
  for (char c : std::string(text) + ' ') {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':') {
      current += c;
    } else if (!current.empty()) {
      tokens.push_back(std::move(current));
      current.clear();
    }
  }
  return tokens;
}

}  // namespace nvmeadapt::metrics::testing
