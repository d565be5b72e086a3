// SPDX-License-Identifier: Apache-2.0
#include "common/duration.h"

#include <cctype>
#include <limits>
#include <utility>

#include "common/log.h"

namespace nvmeadapt {
namespace {

struct Unit {
  std::string_view name;
  int64_t nanos;
};
// Longest names first where one is a prefix of another ("ms" before "m").
constexpr Unit kUnits[] = {{"ns", 1},
                           {"us", 1'000},
                           {"ms", 1'000'000},
                           {"s", 1'000'000'000},
                           {"m", 60'000'000'000},
                           {"h", 3'600'000'000'000},
                           {"d", 86'400'000'000'000}};

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

Result<int64_t> ParseDuration(std::string_view text) {
  // Escaped: the error is one line (a log line, a gRPC status), whatever bytes the text held.
  const std::string original = EscapeControlCharacters(text);
  auto bad = [&](std::string_view why) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "duration '" + original + "': " + std::string(why) + " (e.g. 30s, 5m, 10us, 1m30s, 2d)");
  };
  if (text == "0") return int64_t{0};
  if (text.empty()) return bad("empty");
  constexpr unsigned __int128 kMax = std::numeric_limits<int64_t>::max();
  unsigned __int128 total = 0;
  while (!text.empty()) {
    unsigned __int128 whole = 0;
    size_t i = 0;
    for (; i < text.size() && IsDigit(text[i]); ++i) {
      whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
      if (whole > kMax) return bad("too long");
    }
    const size_t whole_digits = i;
    uint64_t fraction = 0;
    uint64_t fraction_scale = 1;
    if (i < text.size() && text[i] == '.') {
      for (++i; i < text.size() && IsDigit(text[i]); ++i) {
        if (fraction_scale < 1'000'000'000'000'000'000ull) {  // digits past 18 cannot matter
          fraction = fraction * 10 + static_cast<uint64_t>(text[i] - '0');
          fraction_scale *= 10;
        }
      }
      if (i == whole_digits + 1 && whole_digits == 0) return bad("expected a number before the unit");
    }
    if (i == 0) {
      return bad(text.front() == '-' || text.front() == '+' ? "no sign: a duration here is never negative"
                                                             : "expected a number followed by a unit");
    }
    text.remove_prefix(i);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.starts_with(u.name)) {
        unit = &u;
        break;
      }
    }
    if (!unit) return bad("each number needs a unit: " + std::string(kDurationUnits));
    text.remove_prefix(unit->name.size());
    const auto size = static_cast<unsigned __int128>(unit->nanos);
    total += whole * size + static_cast<unsigned __int128>(fraction) * size / fraction_scale;
    if (total > kMax) return bad("too long");
  }
  return static_cast<int64_t>(total);
}

std::string FormatDuration(int64_t nanos) {
  if (nanos == 0) return "0";
  std::string sign = nanos < 0 ? "-" : "";
  uint64_t n = nanos < 0 ? 0 - static_cast<uint64_t>(nanos) : static_cast<uint64_t>(nanos);
  // Whole hours, minutes and seconds compose ("1h30m"); below a second, one unit with a fraction.
  if (n >= 1'000'000'000 && n % 1'000'000'000 == 0) {
    std::string out;
    uint64_t seconds = n / 1'000'000'000;
    for (auto [unit, size] : {std::pair{"h", 3600ull}, {"m", 60ull}, {"s", 1ull}}) {
      if (seconds >= size) {
        out += std::to_string(seconds / size) + unit;
        seconds %= size;
      }
    }
    return sign + out;
  }
  for (auto [unit, size] : {std::pair{"s", 1'000'000'000ull}, {"ms", 1'000'000ull}, {"us", 1'000ull}}) {
    if (n >= size) {
      std::string whole = std::to_string(n / size);
      std::string fraction = std::to_string(size + n % size).substr(1);
      while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
      return sign + whole + (fraction.empty() ? "" : "." + fraction) + unit;
    }
  }
  return sign + std::to_string(n) + "ns";
}

}  // namespace nvmeadapt
