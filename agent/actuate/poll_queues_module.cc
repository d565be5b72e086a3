// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/poll_queues_module.h"

namespace nvmeadapt::actuate {

std::string PollQueuesModule::SafeValue(const std::string& current) const {
  std::lock_guard lock(mutex_);
  return original_.value_or(current);
}

void PollQueuesModule::WillWrite(const std::string& current) {
  std::lock_guard lock(mutex_);
  if (!original_) original_ = current;
}

void PollQueuesModule::ResetWith(const std::string& controller, const std::string& value) {
  std::lock_guard lock(mutex_);
  holders_[controller] = value;
}

void PollQueuesModule::Forget(const std::string& controller) {
  std::lock_guard lock(mutex_);
  holders_.erase(controller);
  if (holders_.empty()) original_.reset();  // the module is back to its own value: the next change records anew
}

std::optional<std::string> PollQueuesModule::HeldByOthers(const std::string& controller) const {
  std::lock_guard lock(mutex_);
  for (const auto& [holder, value] : holders_) {
    if (holder != controller) return value;
  }
  return std::nullopt;
}

}  // namespace nvmeadapt::actuate
