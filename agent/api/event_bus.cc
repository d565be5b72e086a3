// SPDX-License-Identifier: Apache-2.0
#include "agent/api/event_bus.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace nvmeadapt::api {

bool Subscription::Matches(const v1::Event& event) const {
  if (filter_.kinds_size() > 0 &&
      std::find(filter_.kinds().begin(), filter_.kinds().end(), event.kind()) == filter_.kinds().end()) {
    return false;
  }
  if (filter_.source() != v1::SOURCE_UNSPECIFIED && filter_.source() != event.source()) return false;
  if (!filter_.controller().empty() && filter_.controller() != event.queue().controller()) return false;
  if (filter_.queue() != 0 && filter_.queue() != event.queue().queue()) return false;
  return true;
}

Subscription::PushResult Subscription::Push(const std::shared_ptr<const v1::Event>& event) {
  std::lock_guard lock(mutex_);
  if (cancelled_) return PushResult::kCancelled;
  if (queue_.size() >= capacity_) {
    queue_.pop_front();
    ++pending_missed_;
    ++total_missed_;
  }
  queue_.push_back(event);
  if (waiting_ == 0 || wake_queued_) return PushResult::kQueued;
  wake_queued_ = true;
  return PushResult::kWakeReader;
}

void Subscription::Wake() {
  {
    std::lock_guard lock(mutex_);
    wake_queued_ = false;
  }
  ready_.notify_one();
}

std::optional<v1::Event> Subscription::Next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ++waiting_;
  ready_.wait_for(lock, timeout, [&] { return cancelled_ || !queue_.empty(); });
  --waiting_;
  if (cancelled_ || queue_.empty()) return std::nullopt;
  std::shared_ptr<const v1::Event> shared = std::move(queue_.front());
  queue_.pop_front();
  const uint64_t missed = std::exchange(pending_missed_, 0);
  lock.unlock();
  v1::Event event = *shared;
  event.set_missed(missed);
  return event;
}

void Subscription::Cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  ready_.notify_all();
}

bool Subscription::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

uint64_t Subscription::total_missed() const {
  std::lock_guard lock(mutex_);
  return total_missed_;
}

std::shared_ptr<Subscription> EventBus::Subscribe(const v1::WatchEventsRequest& filter, size_t capacity) {
  std::shared_ptr<Subscription> subscription(new Subscription(filter, std::max<size_t>(capacity, 1)));
  std::lock_guard lock(mutex_);
  subscribers_.push_back(subscription);
  return subscription;
}

EventBus::EventBus()
    : waker_([this] {
        pthread_setname_np(pthread_self(), "na-event-waker");
        WakeReaders();
      }) {}

EventBus::~EventBus() {
  {
    std::lock_guard lock(wake_mutex_);
    stopping_ = true;
  }
  wake_needed_.notify_one();
  waker_.join();
}

void EventBus::WakeReaders() {
  std::vector<std::shared_ptr<Subscription>> batch;
  std::unique_lock lock(wake_mutex_);
  for (;;) {
    wake_needed_.wait(lock, [&] { return stopping_ || !to_wake_.empty(); });
    if (stopping_) return;
    batch.swap(to_wake_);
    lock.unlock();
    for (auto& subscription : batch) subscription->Wake();
    batch.clear();
    lock.lock();
  }
}

void EventBus::Publish(v1::Event event) {
  // Stamping and queueing under one lock keeps every subscriber's events in sequence order when several
  // threads publish. Push takes only the subscriber's own lock, which no reader holds for long.
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    event.set_sequence(++sequence_);
    const auto shared = std::make_shared<const v1::Event>(std::move(event));
    std::erase_if(subscribers_, [&](const std::weak_ptr<Subscription>& weak) {
      auto subscription = weak.lock();
      if (!subscription) return true;
      if (!subscription->Matches(*shared)) return subscription->cancelled();
      switch (subscription->Push(shared)) {
        case Subscription::PushResult::kCancelled:
          return true;
        case Subscription::PushResult::kWakeReader: {
          std::lock_guard wake_lock(wake_mutex_);
          to_wake_.push_back(std::move(subscription));
          wake = true;
          return false;
        }
        case Subscription::PushResult::kQueued:
          return false;
      }
      return false;
    });
  }
  if (wake) wake_needed_.notify_one();
}

void EventBus::CancelAll() {
  std::vector<std::shared_ptr<Subscription>> all;
  {
    std::lock_guard lock(mutex_);
    for (auto& weak : subscribers_) {
      if (auto subscription = weak.lock()) all.push_back(std::move(subscription));
    }
    subscribers_.clear();
  }
  for (auto& subscription : all) subscription->Cancel();
}

size_t EventBus::subscribers() const {
  std::lock_guard lock(mutex_);
  return subscribers_.size();
}

uint64_t EventBus::published() const {
  std::lock_guard lock(mutex_);
  return sequence_;
}

}  // namespace nvmeadapt::api
