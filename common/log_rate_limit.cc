// SPDX-License-Identifier: Apache-2.0
#include "common/log_rate_limit.h"

#include <algorithm>

namespace nvmeadapt {

std::string LogRateLimit::Note(uint64_t lines, int64_t over_ns) {
  const int64_t seconds = std::max<int64_t>(1, (over_ns + 999'999'999) / 1'000'000'000);
  return " (" + std::to_string(lines) + " similar line" + (lines == 1 ? "" : "s") + " suppressed in the last " +
         std::to_string(seconds) + " s)";
}

bool LogRateLimit::Admit(std::string_view subject, int64_t now, std::string* note) {
  note->clear();
  auto [it, added] = subjects_.try_emplace(std::string(subject));
  Subject& s = it->second;
  if (added || now - s.period_start >= settings_.period_ns) {
    s.period_start = now;
    s.admitted = 0;
  }
  if (s.admitted >= settings_.burst) {
    if (s.held == 0) s.first_held = now;
    ++s.held;
    return false;
  }
  ++s.admitted;
  if (s.held > 0) {
    *note = Note(s.held, now - s.first_held);
    s.held = 0;
  }
  return true;
}

std::vector<LogRateLimit::Suppressed> LogRateLimit::Flush(int64_t now) {
  std::vector<Suppressed> said;
  for (auto it = subjects_.begin(); it != subjects_.end();) {
    Subject& s = it->second;
    if (now - s.period_start < settings_.period_ns) {
      ++it;
      continue;
    }
    if (s.held > 0) {
      said.push_back({it->first, s.held, now - s.first_held});
      // Said, and a period of its own begins: a subject still flapping says so at most once a period.
      s.held = 0;
      s.period_start = now;
      s.admitted = 0;
      ++it;
      continue;
    }
    it = subjects_.erase(it);
  }
  std::sort(said.begin(), said.end(), [](const Suppressed& a, const Suppressed& b) { return a.subject < b.subject; });
  return said;
}

std::optional<LogRateLimit::Suppressed> LogRateLimit::Forget(std::string_view subject, int64_t now) {
  auto it = subjects_.find(std::string(subject));
  if (it == subjects_.end()) return std::nullopt;
  std::optional<Suppressed> said;
  if (it->second.held > 0) said = Suppressed{it->first, it->second.held, now - it->second.first_held};
  subjects_.erase(it);
  return said;
}

}  // namespace nvmeadapt
