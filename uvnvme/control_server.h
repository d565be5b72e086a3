// SPDX-License-Identifier: Apache-2.0
// The control socket of one uvnvme driver process: $RUNTIME_DIR/uvnvme/PID.sock, a Unix stream socket
// speaking docs/uvnvme-control.md (JSON lines) on a thread of its own.
//
// Safety: the directory is created 0750 (or, if it exists, must be a real directory owned by this user or
// root, writable by no other user, and by its group only with the sticky bit: the packaged /run/uvnvme is
// root:nvme-adapt 3770); the socket gets mode 0600 before bind and 0660 after, so at no moment
// can a user outside the owner's group reach it. The socket file is removed when the server is destroyed.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "uvnvme/control_protocol.h"

namespace nvmeadapt::uvnvme {

inline constexpr const char* kDefaultRuntimeDir = "/run";

class ControlServer {
 public:
  // `cpus`: the CPUs of the server's thread (empty: inherited from the caller); an error names the thread.
  static Result<std::unique_ptr<ControlServer>> Start(const std::string& runtime_dir, ControlTarget& target,
                                                      const std::vector<int>& cpus = {});
  ~ControlServer();  // stops serving, closes every connection, removes the socket file
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const { return path_; }

 private:
  ControlServer(std::string path, int listen_fd, int stop_fd, ControlTarget& target);
  void Serve();

  const std::string path_;
  const int listen_fd_;
  const int stop_fd_;
  ControlTarget& target_;
  const pid_t pid_;
  std::thread thread_;
};

// "$runtime_dir/uvnvme": where the agent lists driver sockets.
std::string ControlSocketDir(const std::string& runtime_dir);

}  // namespace nvmeadapt::uvnvme
