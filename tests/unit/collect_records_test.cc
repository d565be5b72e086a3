// SPDX-License-Identifier: Apache-2.0
// Keys, records and controls crossing the BPF boundary (the keys themselves: vocabulary_test.cc); the tracefs
// format parser.
#include <gtest/gtest.h>

#include "agent/collect/feature_probe.h"
#include "agent/collect/queue_control.h"
#include "agent/collect/records.h"

namespace nvmeadapt::collect {
namespace {

// The BPF side is told the slack the engine holds a polling window to (engine::PaceSlack), so that it reports only
// misses the engine confirms: with pace_slack_percent, 5 % of the baseline window's span where that is larger.
TEST(QueueControl, ThePaceSlackIsTheEnginesScaledOne) {
  engine::QueueView view;
  view.state = engine::QueueState::kPolling;
  view.baseline_span = 40'960'000;  // 8,192 completions at 5 us
  view.baseline_completions = 8192;
  view.pace_credit = 7;
  EXPECT_EQ(ControlFor(view, ReapMode::kPoll, 1, 0).pace_slack, 2'048'000 + 7);
  view.policy.pace_slack_percent = 0;
  EXPECT_EQ(ControlFor(view, ReapMode::kPoll, 1, 0).pace_slack, view.policy.pace_slack + 7);
}

TEST(BpfRecords, KeysRoundTrip) {
  const QueueKey key{Source::kSpdk, 0xdead, 0xbeef, 42};
  EXPECT_EQ(FromBpfKey(ToBpfKey(key)), key);
}

TEST(BpfRecords, WindowRecordBecomesAWindowEvent) {
  na_window_record record{};
  record.key = {NA_SOURCE_BLOCK, 7u << 20, 1, 0};
  record.kind = NA_RECORD_WINDOW;
  record.mode = NA_MODE_UNKNOWN;
  record.completions = 64;
  record.start_ns = 1000;
  record.end_ns = 9000;
  record.bytes = 262144;
  auto event = FromBpfRecord(record);
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->key.ToString(), "block:7:0:q1");
  EXPECT_FALSE(event->mode_known);
  EXPECT_EQ(event->completions, 64u);
  EXPECT_EQ(event->end - event->start, 8000);
  EXPECT_EQ(event->bytes, 262144u);
  EXPECT_FALSE(event->pace_miss.has_value());
}

TEST(BpfRecords, PaceMissCarriesKAndElapsed) {
  na_window_record record{};
  record.key = {NA_SOURCE_UVNVME, 0, 1, 77};
  record.kind = NA_RECORD_PACE_MISS;
  record.mode = NA_MODE_POLL;
  record.completions = 11;
  record.generation = 5;
  record.start_ns = 100'000;
  record.end_ns = 116'001;
  auto event = FromBpfRecord(record);
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE(event->pace_miss.has_value());
  EXPECT_EQ(event->pace_miss->completion_index, 11u);
  EXPECT_EQ(event->pace_miss->elapsed, 16'001);
  EXPECT_EQ(event->mode, ReapMode::kPoll);
  EXPECT_EQ(event->generation, 5u);
}

TEST(BpfRecords, GarbageRecordsAreRejected) {
  na_window_record record{};
  record.key.source = 9;
  record.kind = NA_RECORD_WINDOW;
  EXPECT_EQ(FromBpfRecord(record).error().code, ErrorCode::kInvalidArgument);
  record.key.source = NA_SOURCE_BLOCK;
  record.kind = 7;
  EXPECT_EQ(FromBpfRecord(record).error().code, ErrorCode::kInvalidArgument);
}

TEST(BpfRecords, CountersCarryTheWindowInFlight) {
  na_queue_counters counters{};
  counters.done_completions = 64;
  counters.done_bytes = 64 * 4096;
  counters.window = (uint64_t{36} << NA_WINDOW_COUNT_SHIFT) | (36 * 4096);
  counters.window_start_ns = 5000;
  counters.last_ns = 6000;
  counters.generation = 3;
  counters.hist[6] = 99;
  const QueueCounters out = FromBpfCounters(counters);
  EXPECT_EQ(out.completions, 100u);
  EXPECT_EQ(out.bytes, 100u * 4096u);
  EXPECT_EQ(out.progress.completions, 36u);
  EXPECT_EQ(out.progress.start, 5000);
  EXPECT_EQ(out.last_completion, 6000);
  EXPECT_EQ(out.generation, 3u);
  EXPECT_EQ(out.interval_histogram[6], 99u);
}

TEST(BpfRecords, ControlsAreValidated) {
  QueueControl control;
  EXPECT_TRUE(ValidateControl(control).ok());
  control.generation = 0;
  EXPECT_EQ(ValidateControl(control).error().code, ErrorCode::kInvalidArgument);
  control.generation = 1;
  control.window_completions = 0;
  EXPECT_EQ(ValidateControl(control).error().code, ErrorCode::kInvalidArgument);
  control.window_completions = NA_MAX_WINDOW + 1;
  EXPECT_EQ(ValidateControl(control).error().code, ErrorCode::kInvalidArgument);
  control.window_completions = 64;
  control.baseline_span = -1;
  EXPECT_EQ(ValidateControl(control).error().code, ErrorCode::kInvalidArgument);
}

TEST(TracepointFormat, ParsesFieldOffsets) {
  const char* format =
      "name: nvme_sq\n"
      "ID: 1234\n"
      "format:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
      "\n"
      "\tfield:int ctrl_id;\toffset:8;\tsize:4;\tsigned:1;\n"
      "\tfield:char disk[32];\toffset:12;\tsize:32;\tsigned:0;\n"
      "\tfield:int qid;\toffset:44;\tsize:4;\tsigned:1;\n"
      "\tfield:u16 sq_head;\toffset:48;\tsize:2;\tsigned:0;\n"
      "\n"
      "print fmt: \"nvme%d: %sqid=%d\"\n";
  const TracepointLayout layout = ParseTracepointFormat(format);
  EXPECT_EQ(layout.offsets.at("ctrl_id"), 8u);
  EXPECT_EQ(layout.offsets.at("disk"), 12u);
  EXPECT_EQ(layout.offsets.at("qid"), 44u);
  EXPECT_EQ(layout.offsets.at("common_pid"), 4u);
  EXPECT_FALSE(layout.offsets.contains("print"));
}

}  // namespace
}  // namespace nvmeadapt::collect
