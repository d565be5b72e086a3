// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/managed_queues.h"

#include <algorithm>
#include <chrono>

namespace nvmeadapt::daemon {

void SwitchesSettled::Done() {
  std::lock_guard lock(mutex_);
  if (--left_ <= 0) settled_cv_.notify_all();
}

bool SwitchesSettled::WaitFor(engine::Nanos wait) {
  std::unique_lock lock(mutex_);
  return settled_cv_.wait_for(lock, std::chrono::nanoseconds(wait), [&] { return left_ <= 0; });
}

ManagedQueue& ManagedQueues::Insert(ManagedQueue queue) {
  auto owned = std::make_unique<ManagedQueue>(std::move(queue));
  ManagedQueue* raw = owned.get();
  Erase(raw->name);
  by_key_[raw->desc.key] = raw;
  by_handle_[raw->handle] = raw;
  by_name_[raw->name] = std::move(owned);
  ordered_stale_ = true;
  return *raw;
}

void ManagedQueues::Erase(const std::string& name) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return;
  by_key_.erase(it->second->desc.key);
  by_handle_.erase(it->second->handle);
  by_name_.erase(it);
  ordered_stale_ = true;
}

ManagedQueue* ManagedQueues::ByName(const std::string& name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.get();
}

ManagedQueue* ManagedQueues::ByKey(const QueueKey& key) {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second;
}

ManagedQueue* ManagedQueues::ByHandle(engine::QueueHandle handle) {
  auto it = by_handle_.find(handle);
  return it == by_handle_.end() ? nullptr : it->second;
}

bool ManagedQueues::HasController(const std::string& controller) const {
  return std::any_of(by_name_.begin(), by_name_.end(),
                     [&](const auto& entry) { return entry.second->desc.controller == controller; });
}

const std::vector<ManagedQueue*>& ManagedQueues::All() {
  if (!ordered_stale_) return ordered_;
  ordered_.clear();
  for (auto& [name, queue] : by_name_) ordered_.push_back(queue.get());
  std::sort(ordered_.begin(), ordered_.end(), [](const ManagedQueue* a, const ManagedQueue* b) {
    if (a->desc.controller != b->desc.controller) return a->desc.controller < b->desc.controller;
    return a->desc.qid < b->desc.qid;
  });
  ordered_stale_ = false;
  return ordered_;
}

}  // namespace nvmeadapt::daemon
