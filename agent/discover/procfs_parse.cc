// SPDX-License-Identifier: Apache-2.0
#include "agent/discover/procfs_parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "agent/discover/fs.h"

namespace nvmeadapt::discover {
namespace {

bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "81920-edge", "11-fasteoi", "-edge" (no irq domain): the hwirq and flow name that precede the handlers.
bool IsHwirqFlow(std::string_view token) {
  const size_t dash = token.find('-');
  if (dash == std::string_view::npos || dash + 1 >= token.size()) return false;
  if (dash > 0 && !AllDigits(token.substr(0, dash))) return false;
  const std::string_view flow = token.substr(dash + 1);
  return std::all_of(flow.begin(), flow.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

std::vector<IrqLine> ParseInterrupts(std::string_view text) {
  std::vector<IrqLine> lines;
  size_t cpus = 0;
  bool header_seen = false;
  for (std::string_view line : Split(text, "\n")) {
    const std::vector<std::string_view> tokens = Split(line, " \t");
    if (tokens.empty()) continue;
    if (!header_seen) {
      header_seen = true;
      if (tokens.front().substr(0, 3) == "CPU") {
        cpus = tokens.size();
        continue;
      }
    }
    std::string_view label = tokens.front();
    if (label.size() < 2 || label.back() != ':') continue;
    label.remove_suffix(1);
    IrqLine irq;
    if (!ParseU32(label, &irq.irq) || !AllDigits(label)) continue;  // NMI:, LOC:, ...
    size_t i = 1;
    for (; i < tokens.size() && i <= cpus && AllDigits(tokens[i]); ++i) {
      uint64_t count = 0;
      std::from_chars(tokens[i].data(), tokens[i].data() + tokens[i].size(), count);
      irq.count += count;
    }
    size_t flow = i;
    while (flow < tokens.size() && !IsHwirqFlow(tokens[flow])) ++flow;
    if (flow < tokens.size()) {
      for (size_t c = i; c < flow; ++c) {
        if (AllDigits(tokens[c])) continue;  // the hwirq printed apart from the flow on some kernels
        if (!irq.chip.empty()) irq.chip += ' ';
        irq.chip += tokens[c];
      }
      std::string rest;
      for (size_t h = flow + 1; h < tokens.size(); ++h) {
        if (!rest.empty()) rest += ' ';
        rest += tokens[h];
      }
      for (std::string_view name : Split(rest, ",")) {
        name = Trim(name);
        if (!name.empty()) irq.handlers.emplace_back(name);
      }
    } else {
      // An unexpected layout: keep what certainly is a handler name of ours.
      if (i < tokens.size()) irq.chip = std::string(tokens[i]);
      for (size_t h = i; h < tokens.size(); ++h) {
        std::string_view name = tokens[h];
        while (!name.empty() && name.back() == ',') name.remove_suffix(1);
        if (ParseNvmeHandler(name)) irq.handlers.emplace_back(name);
      }
    }
    lines.push_back(std::move(irq));
  }
  return lines;
}

Result<std::vector<uint32_t>> ParseCpuList(std::string_view text) {
  std::vector<uint32_t> cpus;
  for (std::string_view piece : Split(text, ", \n\t")) {
    const size_t dash = piece.find('-');
    uint32_t first = 0;
    uint32_t last = 0;
    const bool ok = dash == std::string_view::npos
                        ? ParseU32(piece, &first) && ParseU32(piece, &last)
                        : ParseU32(piece.substr(0, dash), &first) && ParseU32(piece.substr(dash + 1), &last);
    if (!ok || last < first || last - first > 65535) {
      return MakeError(ErrorCode::kIo, "cpu list '" + std::string(Trim(text)) + "': bad element '" +
                                           std::string(piece) + "'");
    }
    for (uint32_t cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::optional<NvmeHandler> ParseNvmeHandler(std::string_view name) {
  if (name.substr(0, 4) != "nvme") return std::nullopt;
  name.remove_prefix(4);
  const size_t q = name.find('q');
  if (q == std::string_view::npos) return std::nullopt;
  const std::string_view instance = name.substr(0, q);
  const std::string_view qid = name.substr(q + 1);
  NvmeHandler handler;
  if (!AllDigits(instance) || !AllDigits(qid) || !ParseU32(instance, &handler.instance) ||
      !ParseU32(qid, &handler.qid)) {
    return std::nullopt;
  }
  return handler;
}

bool CmdlineHasOption(std::string_view cmdline, std::string_view word) {
  for (std::string_view option : Split(cmdline, " \t\n")) {
    if (option == word) return true;
  }
  return false;
}

bool ParamIsTrue(std::string_view value) {
  value = Trim(value);
  return value == "Y" || value == "y" || value == "1";
}

}  // namespace nvmeadapt::discover
