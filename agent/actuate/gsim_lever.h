// SPDX-License-Identifier: Apache-2.0
// GSIM (global software interrupt moderation, genirq; LKML v1 Nov 2025 .. 2026, not merged): a file lever with
// one switch per IRQ and a global moderation delay, in whichever of the published procfs layouts the kernel
// has. See docs/levers.md.
#pragma once

#include <string>
#include <string_view>

#include "agent/actuate/file_lever.h"

namespace nvmeadapt::actuate {

// The procfs layouts GSIM was published with. The probe prefers the newest when it finds several.
enum class GsimLayout {
  kAbsent,
  kGlobalFile,      // v1-v3: /proc/irq/soft_moderation shows statistics, takes "name=value";
                    //        /proc/irq/N/soft_moderation takes "on"/"off"
  kModerationDir,   // v4: /proc/irq/soft_moderation/<name>, one file per parameter; /proc/irq/N/soft_moderation
  kSwModerationDir  // later 2026: /proc/irq/sw_moderation/<name>; /proc/irq/N/allow_sw_moderation
};

std::string_view GsimLayoutName(GsimLayout layout);
GsimLayout ProbeGsimLayout(const std::string& procfs_root);

struct GsimOptions {
  std::string procfs_root = "/proc";
  uint32_t delay_us = 100;  // the global delay_us set in poll mode; 0: left alone
  bool dry_run = false;
};

// Vector scope: kPoll moderates the queue's vector (and sets the delay), kInterrupt stops moderating it. The
// per-IRQ switch is written in the words it reads ("on"/"off", or "1"/"0"); restore points hold the values
// found, in the layout's own form ("delay_us=N" for the v1-v3 file, "N" for a parameter file). The layout is
// probed at each plan, so a restore point only names files of the layout the kernel has now.
class GsimLever final : public FileLever {
 public:
  explicit GsimLever(GsimOptions options);
  GsimLayout Layout() const { return ProbeGsimLayout(options_.procfs_root); }
  // The per-IRQ switch and the file that holds the global delay, in `layout` (kAbsent: the v1-v3 names).
  std::string IrqPath(GsimLayout layout, uint32_t irq) const;
  std::string DelayPath(GsimLayout layout) const;

 private:
  struct IrqSwitch {
    std::string current, on, off;  // the value read and the words that turn moderation on and off
  };
  Result<StepPlan> MakePlan(const LeverTarget& target, ReapMode mode) override;
  Result<std::vector<Step>> MakeRestore(const RestorePoint& point) override;
  Result<IrqSwitch> ReadIrqSwitch(GsimLayout layout, uint32_t irq) const;
  Result<std::string> ReadDelay(GsimLayout layout) const;
  static std::string DelayValue(GsimLayout layout, uint32_t delay_us);
  GsimOptions options_;
};

}  // namespace nvmeadapt::actuate
