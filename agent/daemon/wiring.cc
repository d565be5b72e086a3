#include "agent/daemon/wiring.h"

namespace nvmeadapt::daemon {

Result<Components> BuildComponents(const v1::Config&, const DaemonFlags&) {
  return MakeError(ErrorCode::kUnsupported, "this build has no collectors, discovery or levers yet");
}

}  // namespace nvmeadapt::daemon
