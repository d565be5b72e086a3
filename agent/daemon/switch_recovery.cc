// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/switch_recovery.h"

#include <algorithm>

#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

constexpr engine::Nanos kFirstRetryDelay = 1'000'000'000;
constexpr engine::Nanos kMaxRetryDelay = 60'000'000'000;

}  // namespace

bool SwitchRecovery::Failed(ManagedQueue& queue, const Error& error) {
  queue.degraded_by = ManagedQueue::DegradedBy::kLever;
  // A lever's error quotes names a driver chose (its socket file): kept with its control characters, C1
  // and bytes that are no UTF-8 escaped, for the terminals status reaches and the API's UTF-8 strings.
  const std::string message = EscapeControlCharacters(error.message);
  // Lever errors already name their lever; others (no plan, no journal) get it here.
  queue.degraded_reason = message.rfind(queue.lever + ":", 0) == 0 ? message : queue.lever + ": " + message;
  LeverErrors& errors = lever_errors_[queue.lever];
  ++errors.count;
  errors.last = message;
  errors.last_code = error.code;
  errors.worked_since = false;
  queue.retry_delay = std::min(queue.retry_delay ? queue.retry_delay * 2 : kFirstRetryDelay, kMaxRetryDelay);
  return error.Retry() == RetryClass::kTransient;
}

void SwitchRecovery::Applied(ManagedQueue& queue) {
  if (auto errors = lever_errors_.find(queue.lever); errors != lever_errors_.end()) errors->second.worked_since = true;
  queue.degraded_by = ManagedQueue::DegradedBy::kNone;
  queue.degraded_reason.clear();
  queue.retry_mode.reset();
  queue.retry_delay = 0;
}

void SwitchRecovery::PlanRetry(ManagedQueue& queue, ReapMode mode, engine::Reason why, engine::Nanos at) {
  queue.retry_mode = mode;
  queue.retry_reason = why;
  queue.retry_at = at;
}

void SwitchRecovery::DescribeLevers(const std::vector<ManagedQueue*>& queues, v1::GetStatusResponse& status) const {
  std::map<std::string, const LeverErrors*> levers;
  for (const ManagedQueue* q : queues) {
    if (!q->lever.empty()) levers.emplace(q->lever, nullptr);
  }
  for (const auto& [lever, errors] : lever_errors_) levers[lever] = &errors;
  for (const auto& [lever, errors] : levers) {
    auto* entry = status.add_levers();
    entry->set_name(lever.empty() ? "none" : lever);
    const bool lacking = errors && !errors->worked_since &&
                         (errors->last_code == ErrorCode::kUnsupported ||
                          errors->last_code == ErrorCode::kPermissionDenied);
    entry->set_available(!lacking);
    if (errors) {
      entry->set_errors(errors->count);
      entry->set_last_error(errors->last);
    }
  }
}

}  // namespace nvmeadapt::daemon
