// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/queue_log.h"

#include "common/log.h"

namespace nvmeadapt::daemon {

QueueLog::QueueLog(std::function<engine::Nanos()> monotonic, LogRateLimit::Settings limits)
    : monotonic_(std::move(monotonic)), changes_(limits), errors_(limits) {}

void QueueLog::Change(const ManagedQueue& queue, std::string_view reason, const std::string& message) {
  Write(Kind::kChange, queue, reason, message);
}

void QueueLog::Error(const ManagedQueue& queue, std::string_view reason, const std::string& message) {
  Write(Kind::kError, queue, reason, message);
}

void QueueLog::Write(Kind kind, const ManagedQueue& queue, std::string_view reason, const std::string& message) {
  controllers_.try_emplace(queue.name, queue.desc.controller);
  const LogFields fields{.controller = queue.desc.controller, .queue = queue.name, .reason = reason};
  LogRateLimit& limit = kind == Kind::kChange ? changes_ : errors_;
  std::string note;
  if (!limit.Admit(queue.name, monotonic_(), &note)) {
    // Held back at its level; whoever asked for debug still reads every line.
    NA_LOG_FIELDS(LogLevel::kDebug, fields, message);
    return;
  }
  NA_LOG_FIELDS(kind == Kind::kChange ? LogLevel::kInfo : LogLevel::kWarn, fields, message << note);
}

void QueueLog::SayHeldBack(Kind kind, const LogRateLimit::Suppressed& held) {
  auto controller = controllers_.find(held.subject);
  const LogFields fields{.controller = controller == controllers_.end() ? std::string_view() : controller->second,
                         .queue = held.subject};
  NA_LOG_FIELDS(kind == Kind::kChange ? LogLevel::kInfo : LogLevel::kWarn, fields,
                "queue " << held.subject << ": " << (kind == Kind::kChange ? "state changes" : "errors")
                         << LogRateLimit::Note(held.lines, held.over_ns));
}

void QueueLog::Flush() {
  const engine::Nanos now = monotonic_();
  for (const auto& held : changes_.Flush(now)) SayHeldBack(Kind::kChange, held);
  for (const auto& held : errors_.Flush(now)) SayHeldBack(Kind::kError, held);
}

void QueueLog::Forget(const ManagedQueue& queue) {
  const engine::Nanos now = monotonic_();
  if (auto held = changes_.Forget(queue.name, now)) SayHeldBack(Kind::kChange, *held);
  if (auto held = errors_.Forget(queue.name, now)) SayHeldBack(Kind::kError, *held);
  controllers_.erase(queue.name);
}

}  // namespace nvmeadapt::daemon
