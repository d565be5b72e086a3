// SPDX-License-Identifier: Apache-2.0
#include "common/files.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace nvmeadapt {
namespace {

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Result<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  FdCloser fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return SysError("open", path, errno);
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysError("read", path, errno);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > max_bytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  return text;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode) {
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    FdCloser fd(open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (fd.get() < 0) return SysError("create", temp, errno);
    size_t written = 0;
    while (written < contents.size()) {
      const ssize_t n = write(fd.get(), contents.data() + written, contents.size() - written);
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        unlink(temp.c_str());
        return SysError("write", temp, err);
      }
      written += static_cast<size_t>(n);
    }
    if (fsync(fd.get()) != 0) {
      const int err = errno;
      unlink(temp.c_str());
      return SysError("fsync", temp, err);
    }
    if (close(fd.release()) != 0) {
      const int err = errno;
      unlink(temp.c_str());
      return SysError("close", temp, err);
    }
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(temp.c_str());
    return SysError("rename", temp + " -> " + path, err);
  }
  const std::string dir = DirectoryOf(path);
  FdCloser dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) return SysError("open", dir, errno);
  if (fsync(dir_fd.get()) != 0) return SysError("fsync", dir, errno);
  return OkStatus();
}

Status MakeDirectories(const std::string& path, mode_t mode) {
  if (path.empty()) return MakeError(ErrorCode::kInvalidArgument, "mkdir: empty path");
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) return SysError("mkdir", prefix, errno);
  }
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return SysError("stat", path, errno);
  if (!S_ISDIR(st.st_mode)) return MakeError(ErrorCode::kInvalidArgument, path + ": not a directory");
  return OkStatus();
}


namespace {

Error Confined(const std::string& path, const std::string& why) {
  return MakeError(ErrorCode::kPermissionDenied, path + ": refused: " + why);
}

// Where openat2 is missing (kernels before 5.6, some seccomp filters): the real parent must be under the
// real root, and the file itself is opened without following a link.
Result<int> OpenBeneathByRealPath(const std::string& root, const std::string& path, int flags) {
  char real_root[PATH_MAX];
  char real_parent[PATH_MAX];
  if (realpath(root.c_str(), real_root) == nullptr) return SysError("realpath", root, errno);
  const std::string parent = DirectoryOf(path);
  if (realpath(parent.c_str(), real_parent) == nullptr) return SysError("realpath", parent, errno);
  const std::string under(real_root);
  const std::string got(real_parent);
  if (got != under && !(got.starts_with(under) && (under == "/" || got[under.size()] == '/'))) {
    return Confined(path, "resolves outside " + root + " (to " + got + ")");
  }
  const int fd = open((got + path.substr(path.rfind('/'))).c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) return Confined(path, "the file is a symlink");
    return SysError("open", path, errno);
  }
  return fd;
}

}  // namespace

Result<int> OpenBeneath(const std::string& root, const std::string& path, int flags) {
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const size_t skip = base == "/" ? 1 : base.size() + 1;
  if (path.size() <= skip || path.compare(0, base.size(), base) != 0 || path[skip - 1] != '/') {
    return Confined(path, "not under " + root);
  }
  const std::string relative = path.substr(skip);
  for (size_t start = 0; start <= relative.size();) {
    const size_t slash = std::min(relative.find('/', start), relative.size());
    const std::string_view part = std::string_view(relative).substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") {
      return Confined(path, "an empty, '.' or '..' component");
    }
    start = slash + 1;
  }
  const int root_fd = open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return SysError("open", base, errno);
  FdCloser root_closer(root_fd);
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_NOFOLLOW | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const long fd = syscall(SYS_openat2, root_fd, relative.c_str(), &how, sizeof how);
  if (fd >= 0) return static_cast<int>(fd);
  const int err = errno;
  if (err == ENOSYS || err == EPERM) return OpenBeneathByRealPath(base, path, flags);
  if (err == EXDEV) return Confined(path, "a symlink on the way leads out of " + root);
  if (err == ELOOP) return Confined(path, "the file is a symlink");
  return SysError("open", path, err);
}

}  // namespace nvmeadapt
