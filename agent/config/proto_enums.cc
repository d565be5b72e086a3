// SPDX-License-Identifier: Apache-2.0
// Compile-time checks that every value of each API enum but UNSPECIFIED has its row in the vocabulary's
// table: a value added to a proto enum does not build until its table knows it. That each row's number is the
// proto value of the same name is vocabulary_test's (Vocabulary.NamesAreTheApiValueNames).
#include "agent/config/proto_enums.h"

namespace nvmeadapt::config {
namespace {

// Every number in [first, last] has a row in `table`.
template <class Table>
constexpr bool CoversAll(const Table& table, int first, int last) {
  for (int number = first; number <= last; ++number) {
    if (!table.FromProto(number)) return false;
  }
  return true;
}

static_assert(CoversAll(kReapModes, v1::REAP_MODE_UNSPECIFIED + 1, v1::ReapMode_MAX));
static_assert(CoversAll(kSources, v1::SOURCE_UNSPECIFIED + 1, v1::Source_MAX));
static_assert(CoversAll(kLeverKinds, v1::LeverKind_MIN, v1::LeverKind_MAX));
static_assert(CoversAll(engine::kControllerModes, v1::CONTROLLER_MODE_UNSPECIFIED + 1, v1::ControllerMode_MAX));
static_assert(CoversAll(engine::kQueueStates, v1::QUEUE_STATE_UNSPECIFIED + 1, v1::QueueState_MAX));

}  // namespace
}  // namespace nvmeadapt::config
