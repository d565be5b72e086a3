// SPDX-License-Identifier: Apache-2.0
// A lever whose target does not exist between two of its steps (the reconnect lever: disconnect, connect)
// gets a second journal entry for that time (issue #37 item 3): journaled with the switch's entry before the
// lever runs, with no device identity (no device rule may drop it), and dropped once the lever left the target
// in place; kept when the lever says it could not connect it back (kIo), so the next restore connects it.
#include <gtest/gtest.h>

#include "agent/state/journal.h"
#include "agent/state/state_store.h"
#include "tests/unit/agent_loop_fixture.h"

namespace nvmeadapt::daemon::testing {
namespace {

constexpr char kConnecting[] = "tcp:10.0.0.2:4420/nqn.test connecting";

class AgentInFlight : public AgentLoop {
 protected:
  void SetUp() override {
    AgentLoop::SetUp();
    levers_.in_flight = LeverPlan::InFlight{"tcp:10.0.0.2:4420/nqn.test", kConnecting, "{\"in_flight\":1}"};
    levers_.on_apply = [this](const LeverPlan&) { during_ = Entries(); };
  }
  std::vector<v1::JournalEntry> Entries() const {
    auto journal = state::Journal::ReadFrom(state::StateStore(state_dir_));
    if (!journal) {
      // Not an empty journal: the checks that an entry is gone would pass on a read error.
      ADD_FAILURE() << "journal unreadable: " << journal.error().message;
      return {};
    }
    return {journal->entries().begin(), journal->entries().end()};
  }
  static const v1::JournalEntry* Find(const std::vector<v1::JournalEntry>& entries, const std::string& target) {
    for (const auto& entry : entries) {
      if (entry.target() == target) return &entry;
    }
    return nullptr;
  }
  std::vector<v1::JournalEntry> during_;
};

TEST_F(AgentInFlight, TheInFlightEntryIsJournaledBeforeTheLeverAndDroppedAfterIt) {
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  ASSERT_EQ(levers_.Value("uvnvme:7:0:q1"), "poll");
  const v1::JournalEntry* in_flight = Find(during_, kConnecting);
  ASSERT_NE(in_flight, nullptr) << "the lever ran without its in-flight entry on disk";
  EXPECT_NE(Find(during_, "uvnvme:7:0:q1"), nullptr);
  EXPECT_EQ(in_flight->controller(), "tcp:10.0.0.2:4420/nqn.test");
  EXPECT_EQ(in_flight->safe_value(), "{\"in_flight\":1}");
  EXPECT_EQ(in_flight->device_identity(), "") << "a device rule would drop it while no controller exists";
  const auto after = Entries();
  EXPECT_EQ(Find(after, kConnecting), nullptr) << "the host is back: the in-flight entry stays behind";
  EXPECT_NE(Find(after, "uvnvme:7:0:q1"), nullptr);
}

TEST_F(AgentInFlight, ALeverThatCouldNotConnectBackLeavesItForTheNextRestore) {
  levers_.refuse = 1;
  levers_.refuse_code = ErrorCode::kIo;
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  EXPECT_NE(Find(Entries(), kConnecting), nullptr);
}

// A refusal (kRefused: nothing changed, or connected back as it was) leaves the target in place: dropped.
TEST_F(AgentInFlight, ARefusedSwitchDropsIt) {
  levers_.refuse = 1;
  levers_.refuse_code = ErrorCode::kRefused;
  Start();
  Window(1, ReapMode::kInterrupt, 5 * kUs, 1);
  EXPECT_NE(Find(during_, kConnecting), nullptr);
  EXPECT_EQ(Find(Entries(), kConnecting), nullptr);
}

}  // namespace
}  // namespace nvmeadapt::daemon::testing
