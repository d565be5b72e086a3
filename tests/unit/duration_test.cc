// SPDX-License-Identifier: Apache-2.0
// The one duration grammar (common/duration.h): absl's, plus days, without a sign; the same everywhere a
// duration is read (the daemon's flags, the config, nvme-adaptctl, uvnvme-load).
#include <absl/time/time.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "common/duration.h"

namespace nvmeadapt {
namespace {

TEST(Durations, ParseUnitsCompoundsAndFractions) {
  const std::pair<const char*, int64_t> cases[] = {
      {"30s", 30'000'000'000}, {"5m", 300'000'000'000}, {"10us", 10'000}, {"1m30s", 90'000'000'000},
      {"1.5ms", 1'500'000},    {"250ns", 250},          {"2h", 7'200'000'000'000}, {"1d", 86'400'000'000'000},
      {"0", 0},                {".5s", 500'000'000},    {"9223372036854775807ns", INT64_MAX}, {"1d12h", 129'600'000'000'000}};
  for (const auto& [text, nanos] : cases) {
    auto parsed = ParseDuration(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, nanos) << text;
  }
}

TEST(Durations, RefuseWhatIsNotOne) {
  // "m1\x03\n..." is the input fuzz_requests found: the text is quoted in the error, escaped.
  for (const char* text : {"", "5", "s", "-1s", "+1s", "inf", "5x", "1.2.3s", "9223372036854775808ns", "106752d",
                           "1s 2s", " 1s", "m1\x03\n\x02=&", "1s\n2s"}) {
    auto parsed = ParseDuration(text);
    EXPECT_FALSE(parsed) << text;
    if (!parsed) {
      EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos);
    }
  }
  EXPECT_EQ(ParseDuration("5").error().message,
            "duration '5': each number needs a unit: ns, us, ms, s, m, h or d (e.g. 30s, 5m, 10us, 1m30s, 2d)");
  EXPECT_EQ(ParseDuration("1s\n2s").error().message,
            "duration '1s\\x0a2s': expected a number followed by a unit (e.g. 30s, 5m, 10us, 1m30s, 2d)");
  EXPECT_EQ(ParseDuration("-1s").error().message,
            "duration '-1s': no sign: a duration here is never negative (e.g. 30s, 5m, 10us, 1m30s, 2d)");
}

TEST(Durations, FormatIsShortExactAndParsesBack) {
  EXPECT_EQ(FormatDuration(30'000'000'000), "30s");
  EXPECT_EQ(FormatDuration(90'000'000'000), "1m30s");
  EXPECT_EQ(FormatDuration(3'600'000'000'000), "1h");
  EXPECT_EQ(FormatDuration(1'500'000), "1.5ms");
  EXPECT_EQ(FormatDuration(10'000), "10us");
  EXPECT_EQ(FormatDuration(1'000'000'001), "1.000000001s");
  EXPECT_EQ(FormatDuration(999), "999ns");
  EXPECT_EQ(FormatDuration(0), "0");
  for (int64_t nanos : {int64_t{1}, int64_t{1'234'567}, int64_t{86'400'000'000'001}, INT64_MAX}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(nanos)), nanos) << FormatDuration(nanos);
  }
}

// Without `d` and a sign the grammar is absl's: what absl::ParseDuration takes is taken, at the same value, and
// what it refuses is refused. Were the two to drift, a config value would mean one thing and a flag another.
TEST(Durations, AgreeWithAbslWhereAbslHasTheUnit) {
  for (const char* text : {"0", "30s", "1m30s", "1.5ms", "10us", "250ns", "2h", ".5s", "1.s", "1h2m3s4ms5us6ns",
                           "0.000000001s", "100000h", "5", "s", "1.2.3s", "1s 2s", "", "5x", "1e3s", "1_000s",
                           "2h45m", "3.25m", "0s", "00010ms"}) {
    absl::Duration expected;
    const bool absl_takes = absl::ParseDuration(text, &expected);
    auto ours = ParseDuration(text);
    EXPECT_EQ(static_cast<bool>(ours), absl_takes) << "'" << text << "'";
    if (ours && absl_takes) {
      EXPECT_EQ(*ours, absl::ToInt64Nanoseconds(expected)) << "'" << text << "'";
    }
  }
}

}  // namespace
}  // namespace nvmeadapt
