#include "agent/api/event_bus.h"

#include <algorithm>

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

void Subscription::Push(const v1::Event& event) {
  {
    std::lock_guard lock(mutex_);
    if (cancelled_) return;
    if (queue_.size() >= capacity_) {
      queue_.pop_front();
      ++pending_missed_;
      ++total_missed_;
    }
    queue_.push_back(event);
  }
  ready_.notify_one();
}

std::optional<v1::Event> Subscription::Next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return cancelled_ || !queue_.empty(); });
  if (cancelled_ || queue_.empty()) return std::nullopt;
  v1::Event event = std::move(queue_.front());
  queue_.pop_front();
  event.set_missed(pending_missed_);
  pending_missed_ = 0;
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

void EventBus::Publish(v1::Event event) {
  std::vector<std::shared_ptr<Subscription>> targets;
  {
    std::lock_guard lock(mutex_);
    event.set_sequence(++sequence_);
    std::erase_if(subscribers_, [&](const std::weak_ptr<Subscription>& weak) {
      auto subscription = weak.lock();
      if (!subscription || subscription->cancelled()) return true;
      if (subscription->Matches(event)) targets.push_back(std::move(subscription));
      return false;
    });
  }
  for (auto& subscription : targets) subscription->Push(event);
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
