// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/payoff_text.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "agent/engine/payoff.h"

namespace nvmeadapt::ctl {

std::string Ratio(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "x%.2f", ratio);
  return text;
}

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  return std::to_string(std::llround(100.0 * static_cast<double>(part) / static_cast<double>(whole))) + "%";
}

std::string PayoffText(const v1::Payoff& p) {
  std::string text;
  if (p.kept_windows() > 0) {
    text = Ratio(p.last_kept_speedup()) + " +" + std::to_string(std::llround(p.completions_gained()));
  } else if (p.judged_windows() > 0) {
    text = "tried " + std::to_string(p.judged_windows()) + ", none kept";
  }
  if (p.cpu_measured() && p.polling_cpu_ns() > 0) {
    char cpu[32];
    std::snprintf(cpu, sizeof cpu, "cpu %.2fs", static_cast<double>(p.polling_cpu_ns()) / 1e9);
    text += (text.empty() ? "" : " ") + std::string(cpu);
  }
  if (p.shadow_windows() > 0) {
    text += (text.empty() ? "" : "; ") + std::string("shadow: ") +
            Percent(p.shadow_would_poll_completions(), p.shadow_completions()) + " would poll";
  }
  return text.empty() ? "-" : text;
}

std::string JudgedText(const v1::Decision& d) {
  const std::optional<engine::Reason> reason = engine::kReasons.Parse(d.reason());
  const bool judged = reason && engine::JudgesPollingReason(*reason);
  if (!judged || d.measured_ns() <= 0 || d.limit_ns() <= 0 || d.shadow()) return "";
  return Ratio(static_cast<double>(d.limit_ns()) / static_cast<double>(d.measured_ns())) + " vs baseline";
}

}  // namespace nvmeadapt::ctl
