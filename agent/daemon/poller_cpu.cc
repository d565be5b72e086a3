#include "agent/daemon/poller_cpu.h"

#include <dirent.h>

#include <cerrno>
#include <charconv>
#include <string_view>
#include <cmath>

#include "agent/metrics/process_stats.h"
#include "common/files.h"

namespace nvmeadapt::daemon {
namespace {

// The task directory of the thread named `name` in process `pid`.
Result<std::string> FindThread(const std::string& proc_root, uint32_t pid, const std::string& name) {
  const std::string tasks = proc_root + "/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return SysError("opendir", tasks, errno);
  std::string found;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const std::string task = tasks + "/" + entry->d_name;
    auto comm = ReadWholeFile(task + "/comm", 64);
    if (comm && comm->substr(0, comm->find('\n')) == name) {
      found = task;
      break;
    }
  }
  closedir(dir);
  if (found.empty()) return MakeError(ErrorCode::kNotFound, tasks + ": no reaper thread named " + name);
  return found;
}

}  // namespace

Result<engine::Nanos> ReadPollerCpu(const ManagedQueue& q, const std::string& proc_root) {
  switch (q.desc.key.source) {
    case Source::kUvnvme: {
      // The thread name as uvnvme sets it, cut to the kernel's 15 characters.
      const std::string name = ("uvnvme-c" + std::to_string(q.desc.key.ctrl) + "q" + std::to_string(q.desc.key.qid))
                                   .substr(0, 15);
      auto task = FindThread(proc_root, q.desc.key.pid, name);
      if (!task) return task.error();
      // schedstat's first field is the time on CPU in ns: a polling try of a few milliseconds shows there,
      // where stat's utime and stime count clock ticks (10 ms). Without it (no CONFIG_SCHED_INFO), the ticks.
      if (auto schedstat = ReadWholeFile(*task + "/schedstat", 256)) {
        engine::Nanos on_cpu = 0;
        const std::string_view text = *schedstat;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), on_cpu);
        if (ec == std::errc() && end != text.data()) return on_cpu;
        return MakeError(ErrorCode::kIo, *task + "/schedstat: unexpected format");
      }
      auto stats = metrics::ReadProcessStats(*task);
      if (!stats) return stats.error();
      return static_cast<engine::Nanos>(std::llround(stats->cpu_seconds * 1e9));
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
