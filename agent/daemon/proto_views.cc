#include "agent/daemon/proto_views.h"

namespace nvmeadapt::daemon {

v1::ReapMode ToProto(engine::ReapMode mode) {
  return mode == engine::ReapMode::kPoll ? v1::REAP_MODE_POLL : v1::REAP_MODE_INTERRUPT;
}

v1::QueueState ToProto(engine::QueueState state) {
  switch (state) {
    case engine::QueueState::kObserving: return v1::QUEUE_STATE_OBSERVING;
    case engine::QueueState::kMeasuring: return v1::QUEUE_STATE_MEASURING;
    case engine::QueueState::kPolling: return v1::QUEUE_STATE_POLLING;
    case engine::QueueState::kBackoff: return v1::QUEUE_STATE_BACKOFF;
    case engine::QueueState::kForced: return v1::QUEUE_STATE_FORCED;
    case engine::QueueState::kShadow: return v1::QUEUE_STATE_SHADOW;
  }
  return v1::QUEUE_STATE_UNSPECIFIED;
}

}  // namespace nvmeadapt::daemon
