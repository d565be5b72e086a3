// SPDX-License-Identifier: Apache-2.0
// The Unix socket of the API, created so that no other user can reach it even for a moment: it is bound
// inside a private 0700 directory next to the final path; there it gets mode 0660 and its group, and
// only then is it renamed into place.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace nvmeadapt::api {

inline constexpr mode_t kSocketMode = 0660;

// The id of `group`; a clear error naming the field when it does not exist.
Result<gid_t> LookUpGroup(const std::string& group, const std::string& field = "api.unix_socket_group");

class UnixSocketListener {
 public:
  // Creates the parent directory if needed (0755) and the private directory. Refuses a path that is
  // not a socket, or a socket some process still listens on; a stale socket is replaced at Publish().
  static Result<UnixSocketListener> Prepare(const std::string& path, const std::string& group);

  UnixSocketListener(UnixSocketListener&& other) noexcept;
  UnixSocketListener& operator=(UnixSocketListener&&) = delete;
  ~UnixSocketListener();

  // A listening socket bound inside the private directory (the caller owns the fd); Publish() moves it
  // into place.
  Result<int> Listen(int backlog);
  const std::string& path() const { return path_; }
  // After gRPC has bound: mode, group, rename into place, private directory removed.
  Status Publish();
  // Unlinks the socket if the file at the path is still the one Publish() put there.
  void Remove();

 private:
  UnixSocketListener(std::string path, std::string private_dir, gid_t gid)
      : path_(std::move(path)), private_dir_(std::move(private_dir)), gid_(gid) {}
  std::string private_path() const;
  void RemovePrivateDir();

  std::string path_;
  std::string private_dir_;  // empty once published
  gid_t gid_;
  dev_t published_dev_ = 0;
  ino_t published_ino_ = 0;
  bool published_ = false;
};

}  // namespace nvmeadapt::api
