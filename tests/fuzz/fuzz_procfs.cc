// SPDX-License-Identifier: Apache-2.0
// Fuzzes the parsers of kernel text discovery reads (agent/discover/procfs_parse.h): /proc/interrupts,
// CPU lists, nvme handler names, the kernel command line, module parameters. The input is cut in two at
// its first NUL: the text, and a word to look for. Invariants: nothing crashes or leaks; a CPU list that
// parses is sorted without duplicates; an interrupt line's handlers are non-empty names.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/discover/procfs_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nvmeadapt::discover;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::string_view word = nul == std::string_view::npos ? "threadirqs" : input.substr(nul + 1);

  for (const IrqLine& line : ParseInterrupts(text)) {
    for (const std::string& handler : line.handlers) {
      if (handler.empty()) std::abort();
      (void)ParseNvmeHandler(handler);
    }
  }
  if (auto cpus = ParseCpuList(text)) {
    if (!std::is_sorted(cpus->begin(), cpus->end())) std::abort();
    if (std::adjacent_find(cpus->begin(), cpus->end()) != cpus->end()) std::abort();
  }
  (void)ParseNvmeHandler(text);
  (void)CmdlineHasOption(text, word);
  (void)ParamIsTrue(text);
  return 0;
}
