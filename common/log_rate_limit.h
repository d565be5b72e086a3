// SPDX-License-Identifier: Apache-2.0
// At most `burst` log lines about one subject (a queue's state changes, its errors) in each `period`. The
// lines beyond are counted, and the count is said with the next line that goes out ("(N similar lines
// suppressed in the last M s)"), or in a line of its own once the period is over: a queue that flaps
// neither floods journald, whose own rate limit would then drop the lines that matter, nor hides that it
// flapped. Not thread-safe: one owner (the agent's loop).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nvmeadapt {

class LogRateLimit {
 public:
  struct Settings {
    uint32_t burst = 5;
    int64_t period_ns = 60'000'000'000;
  };
  // What was held back about one subject.
  struct Suppressed {
    std::string subject;
    uint64_t lines = 0;
    int64_t over_ns = 0;  // from the first line held back to the moment it is said
  };

  explicit LogRateLimit(Settings settings) : settings_(settings) {}

  // Whether a line about `subject` goes out at `now` (monotonic ns). When it does and lines about it were
  // held back, `*note` is " (N similar lines suppressed in the last M s)", to end the line with; else empty.
  bool Admit(std::string_view subject, int64_t now, std::string* note);
  // The subjects whose period ended with lines held back and none let out since (each said once), in the
  // order of their names; subjects quiet for a whole period are forgotten, so memory follows the subjects in
  // use.
  std::vector<Suppressed> Flush(int64_t now);
  // The subject is gone (its queue left): what was held back about it, if anything, and nothing kept.
  std::optional<Suppressed> Forget(std::string_view subject, int64_t now);
  size_t subjects() const { return subjects_.size(); }

  // " (N similar lines suppressed in the last M s)": M rounded up, at least 1.
  static std::string Note(uint64_t lines, int64_t over_ns);

 private:
  struct Subject {
    int64_t period_start = 0;
    uint32_t admitted = 0;  // lines let out in this period
    uint64_t held = 0;      // lines held back since the last one said
    int64_t first_held = 0;
  };

  const Settings settings_;
  std::unordered_map<std::string, Subject> subjects_;
};

}  // namespace nvmeadapt
