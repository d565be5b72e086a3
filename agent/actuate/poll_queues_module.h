// SPDX-License-Identifier: Apache-2.0
// The nvme module's poll_queues parameter as the poll_queues levers of all controllers share it (poll_queues_lever.h).
// Its own file, below the levers, so that the lever registry's environment can hold one.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace nvmeadapt::actuate {

// The nvme module's poll_queues parameter, one for every controller: shared by the levers of all of them, so
// that it has one restore point. It keeps the value the module had before any of them changed it (what each
// controller's restore point records, rather than another controller's applied value) and which
// controllers were reset with the lever's value, so that the module's value is put back once, when the last
// of them is restored, and a controller restored before the others is reset without poll queues while they
// keep theirs. Thread-safe: the levers of different controllers may run on different threads.
class PollQueuesModule {
 public:
  // The value to record as safe, given the value read now: the original if a lever changed it.
  std::string SafeValue(const std::string& current) const;
  // A lever is about to write the parameter, which reads `current`: kept as the original if none is yet.
  void WillWrite(const std::string& current);
  // `controller` was reset with `value` (a poll-mode switch) or back to the module's safe value (forget).
  void ResetWith(const std::string& controller, const std::string& value);
  void Forget(const std::string& controller);
  // The value another controller than `controller` still holds the parameter at, if any.
  std::optional<std::string> HeldByOthers(const std::string& controller) const;

 private:
  mutable std::mutex mutex_;
  std::optional<std::string> original_;
  std::map<std::string, std::string> holders_;  // controller -> value it was reset with by a poll-mode switch
};

}  // namespace nvmeadapt::actuate
