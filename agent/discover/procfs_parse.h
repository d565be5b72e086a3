// SPDX-License-Identifier: Apache-2.0
// Parsers for the text the kernel shows in procfs and sysfs. Pure: text in, values out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace nvmeadapt::discover {

// One line of /proc/interrupts for a numbered IRQ.
struct IrqLine {
  uint32_t irq = 0;
  std::string chip;                   // e.g. "PCI-MSI", "IR-PCI-MSI", "PCI-MSIX-0000:00:05.0", "IO-APIC"
  std::vector<std::string> handlers;  // the action names; several when the vector is shared ("nvme0q0, nvme0q1")
  uint64_t count = 0;                 // interrupts over all CPUs
};

// The numbered lines of /proc/interrupts (the NMI/LOC/... summary lines are left out). The layout is the one
// kernel/irq/proc.c prints: "IRQ:", one count per CPU of the header, the chip, "hwirq-flow", then the handler
// names joined by ", ".
std::vector<IrqLine> ParseInterrupts(std::string_view text);

// A CPU list in either form the kernel prints: blk-mq's cpu_list ("0, 1, 2") or a cpulist ("0-3,8").
// Sorted, without duplicates.
Result<std::vector<uint32_t>> ParseCpuList(std::string_view text);

// An interrupt handler name of the kernel nvme driver, "nvme%dq%d": the controller instance and queue id.
struct NvmeHandler {
  uint32_t instance = 0;
  uint32_t qid = 0;
};
std::optional<NvmeHandler> ParseNvmeHandler(std::string_view name);

// True when the kernel command line holds `word` as a whole option ("threadirqs").
bool CmdlineHasOption(std::string_view cmdline, std::string_view word);

// A boolean module parameter as sysfs shows it: "Y"/"N" for bool, "1"/"0" for int.
bool ParamIsTrue(std::string_view value);

}  // namespace nvmeadapt::discover
