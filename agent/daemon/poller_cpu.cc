// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/poller_cpu.h"

#include <cerrno>
#include <charconv>
#include <string_view>
#include <cmath>

#include "agent/discover/reaper_threads.h"
#include "agent/metrics/process_stats.h"
#include "common/files.h"

namespace nvmeadapt::daemon {

Result<engine::Nanos> ReadPollerCpu(const ManagedQueue& q, const std::string& proc_root) {
  switch (q.desc.key.source) {
    case Source::kUvnvme: {
      NA_ASSIGN_OR_RETURN(auto task, discover::FindThread(proc_root, static_cast<pid_t>(q.desc.key.pid),
                                                          discover::ReaperThreadName(q.desc.key.ctrl, q.desc.key.qid)));
      // schedstat's first field is the time on CPU in ns: a polling try of a few milliseconds shows there,
      // where stat's utime and stime count clock ticks (10 ms). Without it (no CONFIG_SCHED_INFO), the ticks.
      if (auto schedstat = ReadWholeFile(task + "/schedstat", 256)) {
        engine::Nanos on_cpu = 0;
        const std::string_view text = *schedstat;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), on_cpu);
        if (ec == std::errc() && end != text.data()) return on_cpu;
        return MakeError(ErrorCode::kIo, task + "/schedstat: unexpected format");
      }
      NA_ASSIGN_OR_RETURN(auto stats, metrics::ReadProcessStats(task));
      return static_cast<engine::Nanos>(std::llround(stats.cpu_seconds * 1e9));
    }
    case Source::kKernelNvme:
      return MakeError(ErrorCode::kUnsupported,
                       "kernel queue: the collector brackets nvme_poll but does not sum the time inside it per "
                       "queue, and the submitter's own polling loop (io_uring, pvsync2) is outside it");
    default:
      return MakeError(ErrorCode::kUnsupported,
                       std::string(SourceName(q.desc.key.source)) + " queue: no probe says which thread polls it");
  }
}

}  // namespace nvmeadapt::daemon
