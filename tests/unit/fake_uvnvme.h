// SPDX-License-Identifier: Apache-2.0
// A uvnvme driver's control socket for tests: a real Unix stream socket, served from a thread, speaking the
// protocol of docs/uvnvme-control.md over JSON lines. Behaviours cover what a client must survive.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nvmeadapt::testing {

class FakeUvnvmeServer {
 public:
  enum class Behavior {
    kProtocol,     // answers as docs/uvnvme-control.md says
    kGarbage,      // answers every request with a line that is not JSON
    kSilent,       // reads requests and never answers
    kCloseAtOnce,  // closes the connection after reading a request
  };

  struct QueueState {
    uint32_t ctrl = 0;
    uint32_t qid = 0;
    std::string mode = "interrupt";
    uint32_t coalesce_threshold = 0;
    uint32_t coalesce_time_us = 0;
    uint64_t mode_switches = 0;
  };

  // Listens on `path` (replacing a file there) and serves until destroyed or Stop().
  FakeUvnvmeServer(std::string path, uint32_t pid, std::vector<QueueState> queues);
  ~FakeUvnvmeServer();
  FakeUvnvmeServer(const FakeUvnvmeServer&) = delete;
  FakeUvnvmeServer& operator=(const FakeUvnvmeServer&) = delete;

  void SetBehavior(Behavior behavior);
  // The next set_mode is refused with this message (and changes nothing).
  void RefuseNextSetMode(std::string message);
  // Stops serving, closes every connection and removes the socket file: the process is gone.
  void Stop();

  std::vector<std::string> Requests() const;  // every request line received, in order
  int Connections() const;                    // every connection accepted
  QueueState Queue(uint32_t ctrl, uint32_t qid) const;
  const std::string& path() const { return path_; }

 private:
  void Serve();
  std::string Answer(const std::string& line);

  std::string path_;
  uint32_t pid_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<QueueState> queues_;
  std::vector<std::string> requests_;
  int connections_ = 0;
  Behavior behavior_ = Behavior::kProtocol;
  std::string refuse_next_;
  bool stopped_ = false;
};

// Leaves a socket file at `path` with nobody listening: what a crashed driver leaves behind.
void MakeStaleSocket(const std::string& path);

}  // namespace nvmeadapt::testing
