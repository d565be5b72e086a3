#include "agent/daemon/state_store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/files.h"

namespace nvmeadapt::daemon {
namespace {

// The pid the holder wrote, or "unknown" (it may hold the lock and not have written it yet).
std::string HolderPid(int fd) {
  char text[32] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  std::string pid = n > 0 ? std::string(text, static_cast<size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return "unknown";
  return pid;
}

}  // namespace

std::string StateDirLockPath(const std::string& state_dir) { return state_dir + "/nvme-adaptd.lock"; }

Result<StateDirLock> StateDirLock::Acquire(const std::string& state_dir) {
  if (Status made = MakeDirectories(state_dir, 0750); !made) return made.error();
  const std::string path = StateDirLockPath(state_dir);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) return SysError("open", path, errno);
  StateDirLock lock(fd);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) return SysError("flock", path, err);
    return MakeError(ErrorCode::kFailedPrecondition, "another nvme-adaptd (pid " + HolderPid(fd) +
                                                         ") holds " + path + ": one daemon per state dir");
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0) return SysError("truncate", path, errno);
  if (pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return SysError("write pid to", path, errno);
  }
  return lock;
}

StateDirLock::~StateDirLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace nvmeadapt::daemon
