// Compile-time checks that each table's API numbers are the proto's: every value of the proto enum but
// UNSPECIFIED has its row, and the rows' numbers are the named constants.
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
static_assert(kReapModes.Proto(ReapMode::kInterrupt) == v1::REAP_MODE_INTERRUPT);
static_assert(kReapModes.Proto(ReapMode::kPoll) == v1::REAP_MODE_POLL);

static_assert(CoversAll(kSources, v1::SOURCE_UNSPECIFIED + 1, v1::Source_MAX));
static_assert(kSources.Proto(Source::kKernelNvme) == v1::SOURCE_KERNEL);
static_assert(kSources.Proto(Source::kBlock) == v1::SOURCE_BLOCK);
static_assert(kSources.Proto(Source::kUvnvme) == v1::SOURCE_UVNVME);
static_assert(kSources.Proto(Source::kSpdk) == v1::SOURCE_SPDK);
static_assert(kSources.Proto(Source::kNvmet) == v1::SOURCE_NVMET);

static_assert(CoversAll(kLeverKinds, v1::LeverKind_MIN, v1::LeverKind_MAX));
static_assert(kLeverKinds.Proto(LeverKind::kAuto) == v1::LEVER_KIND_AUTO);
static_assert(kLeverKinds.Proto(LeverKind::kAdaptivePollSysfs) == v1::LEVER_KIND_ADAPTIVE_POLL_SYSFS);
static_assert(kLeverKinds.Proto(LeverKind::kGsim) == v1::LEVER_KIND_GSIM);
static_assert(kLeverKinds.Proto(LeverKind::kCoalescing) == v1::LEVER_KIND_COALESCING);
static_assert(kLeverKinds.Proto(LeverKind::kPollQueuesReset) == v1::LEVER_KIND_POLL_QUEUES_RESET);
static_assert(kLeverKinds.Proto(LeverKind::kUvnvmeSocket) == v1::LEVER_KIND_UVNVME_SOCKET);
static_assert(kLeverKinds.Proto(LeverKind::kDryRun) == v1::LEVER_KIND_DRY_RUN);

using engine::ControllerMode;
static_assert(CoversAll(engine::kControllerModes, v1::CONTROLLER_MODE_UNSPECIFIED + 1, v1::ControllerMode_MAX));
static_assert(engine::kControllerModes.Proto(ControllerMode::kOff) == v1::CONTROLLER_MODE_OFF);
static_assert(engine::kControllerModes.Proto(ControllerMode::kAdaptive) == v1::CONTROLLER_MODE_ADAPTIVE);
static_assert(engine::kControllerModes.Proto(ControllerMode::kInterrupt) == v1::CONTROLLER_MODE_INTERRUPT);
static_assert(engine::kControllerModes.Proto(ControllerMode::kPoll) == v1::CONTROLLER_MODE_POLL);
static_assert(engine::kControllerModes.Proto(ControllerMode::kShadow) == v1::CONTROLLER_MODE_SHADOW);

using engine::QueueState;
static_assert(CoversAll(engine::kQueueStates, v1::QUEUE_STATE_UNSPECIFIED + 1, v1::QueueState_MAX));
static_assert(engine::kQueueStates.Proto(QueueState::kObserving) == v1::QUEUE_STATE_OBSERVING);
static_assert(engine::kQueueStates.Proto(QueueState::kMeasuring) == v1::QUEUE_STATE_MEASURING);
static_assert(engine::kQueueStates.Proto(QueueState::kPolling) == v1::QUEUE_STATE_POLLING);
static_assert(engine::kQueueStates.Proto(QueueState::kBackoff) == v1::QUEUE_STATE_BACKOFF);
static_assert(engine::kQueueStates.Proto(QueueState::kForced) == v1::QUEUE_STATE_FORCED);
static_assert(engine::kQueueStates.Proto(QueueState::kShadow) == v1::QUEUE_STATE_SHADOW);

}  // namespace
}  // namespace nvmeadapt::config
