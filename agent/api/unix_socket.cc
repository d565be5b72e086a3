// SPDX-License-Identifier: Apache-2.0
#include "agent/api/unix_socket.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "common/files.h"

namespace nvmeadapt::api {
namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Whether some process accepts connections on the socket at `path`.
Result<bool> SomeoneListens(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return SysError("socket", path, errno);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int rc = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int err = errno;
  close(fd);
  if (rc == 0) return true;
  if (err == ECONNREFUSED) return false;
  return SysError("connect", path, err);
}

}  // namespace

Result<gid_t> LookUpGroup(const std::string& name, const std::string& field) {
  struct group entry {};
  struct group* found = nullptr;
  std::vector<char> buffer(16384);
  const int rc = getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (rc != 0) return SysError("getgrnam", "group " + name, rc);
  if (!found) {
    return MakeError(ErrorCode::kNotFound, field + ": group '" + name +
                                               "' does not exist (create it, e.g. groupadd --system " + name +
                                               ", or name another group)");
  }
  return found->gr_gid;
}

Result<UnixSocketListener> UnixSocketListener::Prepare(const std::string& path, const std::string& group) {
  NA_ASSIGN_OR_RETURN(auto gid, LookUpGroup(group));
  const std::string dir = DirectoryOf(path);
  NA_RETURN_IF_ERROR(MakeDirectories(dir, 0755));

  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return MakeError(ErrorCode::kFailedPrecondition, "api.unix_socket: " + path +
                                                           " exists and is not a socket; refusing to replace it");
    }
    NA_ASSIGN_OR_RETURN(auto listening, SomeoneListens(path));
    if (listening) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "api.unix_socket: " + path + " is in use: another process listens on it");
    }
  } else if (errno != ENOENT) {
    return SysError("lstat", path, errno);
  }

  std::string private_dir = dir + (dir == "/" ? "" : "/") + ".agent-sock.XXXXXX";
  if (mkdtemp(private_dir.data()) == nullptr) return SysError("mkdtemp", private_dir, errno);
  return UnixSocketListener(path, std::move(private_dir), gid);
}

UnixSocketListener::UnixSocketListener(UnixSocketListener&& other) noexcept
    : path_(std::move(other.path_)),
      private_dir_(std::exchange(other.private_dir_, std::string())),
      gid_(other.gid_),
      published_dev_(other.published_dev_),
      published_ino_(other.published_ino_),
      published_(std::exchange(other.published_, false)) {}

UnixSocketListener::~UnixSocketListener() {
  Remove();
  RemovePrivateDir();
}

std::string UnixSocketListener::private_path() const { return private_dir_ + "/" + BaseName(path_); }

void UnixSocketListener::RemovePrivateDir() {
  if (private_dir_.empty()) return;
  unlink(private_path().c_str());
  rmdir(private_dir_.c_str());
  private_dir_.clear();
}

Result<int> UnixSocketListener::Listen(int backlog) {
  const std::string bound = private_path();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (bound.size() >= sizeof address.sun_path) {
    return MakeError(ErrorCode::kInvalidArgument, "api.unix_socket: " + bound + " is too long for a Unix socket");
  }
  std::memcpy(address.sun_path, bound.c_str(), bound.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SysError("socket", bound, errno);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 || listen(fd, backlog) != 0) {
    const int err = errno;
    close(fd);
    return SysError("bind/listen", bound, err);
  }
  return fd;
}

Status UnixSocketListener::Publish() {
  const std::string bound = private_path();
  if (chown(bound.c_str(), static_cast<uid_t>(-1), gid_) != 0) return SysError("chown", bound, errno);
  if (chmod(bound.c_str(), kSocketMode) != 0) return SysError("chmod", bound, errno);
  if (rename(bound.c_str(), path_.c_str()) != 0) return SysError("rename to " + path_, bound, errno);
  struct stat st {};
  if (lstat(path_.c_str(), &st) != 0) return SysError("lstat", path_, errno);
  published_dev_ = st.st_dev;
  published_ino_ = st.st_ino;
  published_ = true;
  RemovePrivateDir();
  return OkStatus();
}

void UnixSocketListener::Remove() {
  if (!published_) return;
  published_ = false;
  struct stat st {};
  if (lstat(path_.c_str(), &st) == 0 && st.st_dev == published_dev_ && st.st_ino == published_ino_) {
    unlink(path_.c_str());
  }
}

}  // namespace nvmeadapt::api
