// SPDX-License-Identifier: Apache-2.0
// Fans agent events out to WatchEvents streams. Publishing never waits for a subscriber: each has a
// bounded queue that drops its oldest event when full and tells the reader how many it missed. Nor does
// it pay for waking the readers: a thread of the bus does that, so a publish costs one copy of the event
// and a queue append per matching subscriber, however many streams there are.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "nvmeadapt/v1/agent.pb.h"

namespace nvmeadapt::api {

class EventBus;

class Subscription {
 public:
  // The next event, or nullopt after `timeout` or once cancelled. Its `missed` field counts the events
  // dropped for this subscriber since the previous one returned.
  std::optional<v1::Event> Next(std::chrono::milliseconds timeout);
  void Cancel();
  bool cancelled() const;
  uint64_t total_missed() const;

 private:
  friend class EventBus;
  enum class PushResult { kQueued, kWakeReader, kCancelled };

  Subscription(v1::WatchEventsRequest filter, size_t capacity) : filter_(std::move(filter)), capacity_(capacity) {}
  bool Matches(const v1::Event& event) const;
  // Queues the event. kWakeReader: a reader is waiting and nobody has been asked to wake it yet.
  PushResult Push(const std::shared_ptr<const v1::Event>& event);
  void Wake();

  const v1::WatchEventsRequest filter_;
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  // Shared with every other subscriber: publishing copies an event once, not once per stream.
  std::deque<std::shared_ptr<const v1::Event>> queue_;
  uint64_t pending_missed_ = 0;
  uint64_t total_missed_ = 0;
  int waiting_ = 0;
  bool wake_queued_ = false;
  bool cancelled_ = false;
};

class EventBus {
 public:
  EventBus();
  ~EventBus();
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  // Registers a subscriber; it stays until the returned pointer is dropped or cancelled.
  std::shared_ptr<Subscription> Subscribe(const v1::WatchEventsRequest& filter, size_t capacity);
  // Stamps the sequence number and queues the event for every matching subscriber.
  void Publish(v1::Event event);
  // Wakes every subscriber with nothing (shutdown).
  void CancelAll();
  size_t subscribers() const;
  uint64_t published() const;

 private:
  void WakeReaders();

  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<Subscription>> subscribers_;
  uint64_t sequence_ = 0;

  std::mutex wake_mutex_;
  std::condition_variable wake_needed_;
  std::vector<std::shared_ptr<Subscription>> to_wake_;
  bool stopping_ = false;
  std::thread waker_;
};

}  // namespace nvmeadapt::api
