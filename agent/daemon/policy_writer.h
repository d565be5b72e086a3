// SPDX-License-Identifier: Apache-2.0
// The writes of policy.json and its note (issue 45, item 10), on a thread of their own, one after the other in the
// order they were asked for, so that a state disk that stops answering (a hung NFS mount, a dying drive: fsync waits
// for as long as it takes) holds up that thread only. The caller waits for its write until its deadline and no longer:
// an admin's retries each get their answer in time instead of piling up on the API's threads behind the stuck write.
//
// A write whose caller stopped waiting was reported as failed, so it must not stay on disk: one that had not begun is
// never run, and one that was running and succeeded is followed by its undo (the policy that was in force written
// back), before any write asked for later.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"

namespace nvmeadapt::daemon {

class PolicyWriter {
 public:
  using Clock = std::chrono::steady_clock;
  using Write = std::function<Status()>;

  PolicyWriter() = default;
  ~PolicyWriter();  // waits for the writes queued (a disk that never answers holds up the exit, as fsync would)
  PolicyWriter(const PolicyWriter&) = delete;
  PolicyWriter& operator=(const PolicyWriter&) = delete;

  // Runs `write` after the writes queued before it and waits for it until `deadline`. Past the deadline the answer is
  // kUnavailable and the write is given up: not run if it has not begun, else, once it succeeds, followed by `undo`.
  Status Run(Write write, Write undo, Clock::time_point deadline);
  // Runs `write` after those queued before it, whether or not its caller still waits (an undo the caller must not
  // lose); waits for it until `deadline`, then kUnavailable while it goes on. `what` names it in the log should it fail
  // with nobody waiting.
  Status Must(Write write, std::string what, Clock::time_point deadline);

 private:
  struct Job {
    Write write, undo;
    std::string what;          // set for a Must: its failure is logged when nobody waits for it
    bool may_give_up = false;  // Run's: not begun once its caller stopped waiting, undone if it succeeds
    // Under mutex_:
    bool started = false, done = false;
    bool abandoned = false;  // its caller stopped waiting
    Status status;
  };
  Status Queue(std::shared_ptr<Job> job, Clock::time_point deadline);
  void Drain();

  std::mutex mutex_;
  std::condition_variable changed_cv_;     // a job queued or ended, or stopping_
  std::deque<std::shared_ptr<Job>> jobs_;  // mutex_
  bool stopping_ = false;                  // mutex_
  std::thread thread_;                     // started with the first write
};

}  // namespace nvmeadapt::daemon
