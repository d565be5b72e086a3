// Fans agent events out to WatchEvents streams. Publishing never waits for a subscriber: each has a
// bounded queue that drops its oldest event when full and tells the reader how many it missed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
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
  Subscription(v1::WatchEventsRequest filter, size_t capacity) : filter_(std::move(filter)), capacity_(capacity) {}
  bool Matches(const v1::Event& event) const;
  void Push(const v1::Event& event);

  const v1::WatchEventsRequest filter_;
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<v1::Event> queue_;
  uint64_t pending_missed_ = 0;
  uint64_t total_missed_ = 0;
  bool cancelled_ = false;
};

class EventBus {
 public:
  // Registers a subscriber; it stays until the returned pointer is dropped or cancelled.
  std::shared_ptr<Subscription> Subscribe(const v1::WatchEventsRequest& filter, size_t capacity);
  // Stamps the sequence number and hands the event to every matching subscriber.
  void Publish(v1::Event event);
  // Wakes every subscriber with nothing (shutdown).
  void CancelAll();
  size_t subscribers() const;
  uint64_t published() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<Subscription>> subscribers_;
  uint64_t sequence_ = 0;
};

}  // namespace nvmeadapt::api
