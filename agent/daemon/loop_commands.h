// SPDX-License-Identifier: Apache-2.0
// Work handed to the agent's loop thread from other threads: an RPC's call (OnLoop, which waits for its
// answer) and a worker's result (ToLoop: a switch's step, a scan's snapshot). The loop owns the engine, the
// managed queues and the BPF controls, so nothing else touches them; before it runs, calls run inline on their
// caller, one at a time; once it stopped, calls are refused and results dropped.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/engine/types.h"
#include "common/result.h"

namespace nvmeadapt::daemon {

class LoopCommands {
 public:
  // `wake` ends the loop's wait at once; an RPC waits at most `rpc_wait` for the loop to take its call, then
  // is answered kUnavailable and its call dropped unrun (callers retry).
  LoopCommands(std::function<void()> wake, engine::Nanos rpc_wait) : wake_(std::move(wake)), rpc_wait_(rpc_wait) {}

  // Runs `fn` on the loop thread (inline when no loop runs) and returns its result.
  template <class Fn>
  auto OnLoop(Fn fn) -> decltype(fn());
  // The same for a call whose answer has no error: `unanswered(error)` makes the answer given instead.
  template <class Fn, class Unanswered>
  auto OnLoop(Fn fn, Unanswered unanswered) -> decltype(fn());
  // The same, but the loop must take the call before `deadline` (or rpc_wait, whichever is first): a
  // request with a deadline of its own (SetPolicy) is answered within it.
  template <class Fn>
  auto OnLoopBy(std::chrono::steady_clock::time_point deadline, Fn fn) -> decltype(fn());
  // Runs `step` on the loop thread: queued while the loop runs, inline before it runs, dropped once it
  // stopped (the worker that posted it is told by ModeSwitcher::Quiesce).
  void ToLoop(std::function<void()> step);

  // The calling thread becomes the loop thread; `starting` runs first, while no call can run inline.
  void Begin(const std::function<void()>& starting);
  // On the loop: runs the commands queued until now.
  void RunQueued();
  bool AnyQueued() const;
  // The loop ended: no call will run any more.
  bool stopped() const {
    std::lock_guard lock(mutex_);
    return state_ == State::kStopped;
  }
  // The loop ended: calls are refused from now on (Shutdown owns the agent), `stopping` runs, then the calls
  // that were already waiting run to get their answer.
  void End(const std::function<void()>& stopping);

 private:
  enum class State { kNotStarted, kRunning, kStopped };
  template <class Fn, class Unanswered>
  auto OnLoopWithin(engine::Nanos wait, Fn fn, Unanswered unanswered) -> decltype(fn());

  const std::function<void()> wake_;
  const engine::Nanos rpc_wait_;
  mutable std::mutex mutex_;
  std::deque<std::function<void()>> queued_;  // mutex_
  State state_ = State::kNotStarted;          // mutex_
  std::recursive_mutex inline_mutex_;         // serializes calls made before the loop runs
  std::thread::id loop_thread_;
};

template <class Fn, class Unanswered>
auto LoopCommands::OnLoop(Fn fn, Unanswered unanswered) -> decltype(fn()) {
  return OnLoopWithin(rpc_wait_, std::move(fn), std::move(unanswered));
}

template <class Fn, class Unanswered>
auto LoopCommands::OnLoopWithin(engine::Nanos wait, Fn fn, Unanswered unanswered) -> decltype(fn()) {
  using T = decltype(fn());
  struct Call {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool started = false, cancelled = false;
    std::optional<T> result;
  };
  auto call = std::make_shared<Call>();
  {
    // Held by Begin() while it hands the agent to the loop: an inline call never overlaps the loop.
    std::unique_lock inline_lock(inline_mutex_);
    std::unique_lock lock(mutex_);
    if (state_ == State::kStopped) {
      return unanswered(MakeError(ErrorCode::kUnavailable, "the agent is stopping: it takes no more calls"));
    }
    if (state_ == State::kNotStarted || std::this_thread::get_id() == loop_thread_) {
      lock.unlock();
      return fn();
    }
    inline_lock.unlock();
    // `fn` refers to the caller's frame: it runs only while the caller still waits (not cancelled).
    queued_.push_back([call, fn = std::move(fn)]() mutable {
      {
        std::lock_guard guard(call->mutex);
        if (call->cancelled) return;
        call->started = true;
      }
      T result = fn();
      std::lock_guard guard(call->mutex);
      call->result.emplace(std::move(result));
      call->done_cv.notify_all();
    });
  }
  wake_();  // the loop takes the call now, not when its wait ends
  std::unique_lock lock(call->mutex);
  if (!call->done_cv.wait_for(lock, std::chrono::nanoseconds(wait), [&] { return call->result.has_value(); })) {
    if (!call->started) {
      call->cancelled = true;
      return unanswered(MakeError(ErrorCode::kUnavailable, "the agent's loop did not take the call within " +
                                                               std::to_string(wait / 1'000'000) +
                                                               " ms (the loop is held up); try again"));
    }
    call->done_cv.wait(lock, [&] { return call->result.has_value(); });  // running now: its answer is near
  }
  return std::move(*call->result);
}

template <class Fn>
auto LoopCommands::OnLoop(Fn fn) -> decltype(fn()) {
  return OnLoop(std::move(fn), [](const Error& error) -> decltype(fn()) { return error; });
}

template <class Fn>
auto LoopCommands::OnLoopBy(std::chrono::steady_clock::time_point deadline, Fn fn) -> decltype(fn()) {
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now());
  return OnLoopWithin(std::clamp<engine::Nanos>(left.count(), 0, rpc_wait_), std::move(fn),
                      [](const Error& error) -> decltype(fn()) { return error; });
}

}  // namespace nvmeadapt::daemon
