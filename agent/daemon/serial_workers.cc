// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/serial_workers.h"

#include <pthread.h>

#include <vector>

namespace nvmeadapt::daemon {

void SerialWorkers::Start() {
  std::lock_guard lock(mutex_);
  started_ = true;
}

void SerialWorkers::Run(const std::string& key, std::function<void()> job) {
  std::unique_lock lock(mutex_);
  if (!started_) {
    lock.unlock();
    job();
    return;
  }
  Sweep(lock);
  Lane& lane = lanes_[key];
  lane.jobs.push_back(std::move(job));
  if (lane.running) return;
  if (lane.thread.joinable()) lane.thread.join();  // it left the lane empty and is at its end
  lane.running = true;
  lane.thread = std::thread([this, key] {
    pthread_setname_np(pthread_self(), thread_name_.c_str());
    Drain(key);
  });
}

void SerialWorkers::Drain(const std::string& key) {
  std::unique_lock lock(mutex_);
  Lane& lane = lanes_[key];  // std::map: the reference stays valid while the lane is running
  while (!lane.jobs.empty()) {
    std::function<void()> job = std::move(lane.jobs.front());
    lane.jobs.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
  lane.running = false;
  idle_cv_.notify_all();
}

void SerialWorkers::Sweep(std::unique_lock<std::mutex>& lock) {
  (void)lock;
  for (auto it = lanes_.begin(); it != lanes_.end();) {
    Lane& lane = it->second;
    if (lane.running || !lane.jobs.empty()) {
      ++it;
      continue;
    }
    if (lane.thread.joinable()) lane.thread.join();  // past its last job: only its return is left
    it = lanes_.erase(it);
  }
}

void SerialWorkers::Join() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [&] {
    for (const auto& [key, lane] : lanes_) {
      if (lane.running) return false;
    }
    return true;
  });
  std::vector<std::thread> threads;
  for (auto& [key, lane] : lanes_) {
    if (lane.thread.joinable()) threads.push_back(std::move(lane.thread));
  }
  lanes_.clear();
  started_ = false;
  lock.unlock();
  for (std::thread& thread : threads) thread.join();
}

}  // namespace nvmeadapt::daemon
