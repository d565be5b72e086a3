// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/loop_commands.h"

namespace nvmeadapt::daemon {

void LoopCommands::ToLoop(std::function<void()> step) {
  std::unique_lock lock(mutex_);
  switch (state_) {
    case State::kNotStarted:
      lock.unlock();
      step();  // no loop yet: the caller is the only thread (a switch or scan runs inline)
      return;
    case State::kRunning:
      queued_.push_back(std::move(step));
      lock.unlock();
      wake_();
      return;
    case State::kStopped:
      return;
  }
}

void LoopCommands::Begin(const std::function<void()>& starting) {
  std::lock_guard inline_lock(inline_mutex_);
  std::lock_guard lock(mutex_);
  loop_thread_ = std::this_thread::get_id();
  state_ = State::kRunning;
  starting();
}

void LoopCommands::RunQueued() {
  std::deque<std::function<void()>> batch;
  {
    std::lock_guard lock(mutex_);
    batch.swap(queued_);
  }
  for (auto& command : batch) command();
}

bool LoopCommands::AnyQueued() const {
  std::lock_guard lock(mutex_);
  return !queued_.empty();
}

void LoopCommands::End(const std::function<void()>& stopping) {
  std::deque<std::function<void()>> left;
  {
    // From here on a call is refused, never run inline: Shutdown() owns the agent (issue 15, the race of
    // RPCs after the loop exits).
    std::lock_guard lock(mutex_);
    state_ = State::kStopped;
    left.swap(queued_);
  }
  stopping();
  for (auto& command : left) command();  // calls that were already waiting get their answer
}

}  // namespace nvmeadapt::daemon
