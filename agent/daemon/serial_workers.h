// SPDX-License-Identifier: Apache-2.0
// Jobs that may block (a lever, a driver's socket, a scan of sysfs), kept off the loop thread: jobs of one
// key run one after the other on that key's own thread, keys in parallel, so a job that hangs delays only
// the jobs of its key. Until Start() every job runs inline on the caller's thread (no loop runs yet).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace nvmeadapt::daemon {

class SerialWorkers {
 public:
  // `thread_name`: what ps and top show for the workers (at most 15 characters).
  explicit SerialWorkers(std::string thread_name) : thread_name_(std::move(thread_name)) {}
  ~SerialWorkers() { Join(); }
  SerialWorkers(const SerialWorkers&) = delete;
  SerialWorkers& operator=(const SerialWorkers&) = delete;

  // From now on jobs run on the workers.
  void Start();
  // Runs `job` after the jobs of `key` queued before it: inline before Start(), else on the key's thread
  // (started when the key has none; it ends once the key's queue is empty).
  void Run(const std::string& key, std::function<void()> job);
  // Waits for every queued and running job; afterwards jobs run inline again.
  void Join();

 private:
  struct Lane {
    std::deque<std::function<void()>> jobs;
    bool running = false;  // a thread drains the lane
    std::thread thread;    // the last thread that drained it (joined before the next one starts)
  };
  void Drain(const std::string& key);
  // Joins the threads of lanes with nothing to do and forgets those lanes (keys come and go with drivers).
  void Sweep(std::unique_lock<std::mutex>& lock);

  const std::string thread_name_;
  std::mutex mutex_;
  std::condition_variable idle_cv_;
  bool started_ = false;
  std::map<std::string, Lane> lanes_;
};

}  // namespace nvmeadapt::daemon
