// SPDX-License-Identifier: Apache-2.0
#include "agent/state/state_store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/files.h"

namespace nvmeadapt::state {
namespace {

std::string PidPath(const std::string& state_dir) { return state_dir + "/nvme-adaptd.pid"; }

// The pid the holder wrote, or "unknown" (it may hold the lock and not have written it yet).
std::string HolderPid(const std::string& state_dir) {
  auto text = ReadWholeFile(PidPath(state_dir), 32);
  std::string pid = text ? *text : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return "unknown";
  return pid;
}

}  // namespace

std::string StateDirLockPath(const std::string& state_dir) { return state_dir + "/nvme-adaptd.lock"; }

Result<StateDirLock> StateDirLock::Acquire(const std::string& state_dir) {
  NA_RETURN_IF_ERROR(MakeDirectories(state_dir, 0750));
  const std::string path = StateDirLockPath(state_dir);
  // Held open read-only: a file open for writing would keep the state dir's file system from being remounted
  // read-only, which an operator (and the fault campaign) may do while the daemon runs. The pid goes to a
  // file of its own.
  const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) return SysError("open", path, errno);
  StateDirLock lock(fd);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) return SysError("flock", path, err);
    return MakeError(ErrorCode::kFailedPrecondition, "another nvme-adaptd (pid " + HolderPid(state_dir) +
                                                         ") holds " + path + ": one daemon per state dir");
  }
  if (Status written = WriteFileAtomically(PidPath(state_dir), std::to_string(getpid()) + "\n"); !written) {
    return written.error();
  }
  return lock;
}

StateDirLock::~StateDirLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace nvmeadapt::state
