// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/nvmet_poll_votes.h"

namespace nvmeadapt::actuate {

void NvmetPollVotes::Vote(const std::string& queue, const std::vector<std::string>& paths, bool poll) {
  std::lock_guard lock(mutex_);
  for (const std::string& path : paths) {
    if (poll) {
      polling_[path].insert(queue);
      continue;
    }
    const auto it = polling_.find(path);
    if (it == polling_.end()) continue;
    it->second.erase(queue);
    if (it->second.empty()) polling_.erase(it);
  }
}

bool NvmetPollVotes::WantsPoll(const std::string& path) const {
  std::lock_guard lock(mutex_);
  return polling_.count(path) > 0;
}

std::string NvmetPollVotes::WantedLocked(const std::string& path) const { return polling_.count(path) ? "1" : "0"; }

std::string NvmetPollVotes::SafeValue(const std::string& path, const std::string& current) const {
  std::lock_guard lock(mutex_);
  const auto it = originals_.find(path);
  return it != originals_.end() ? it->second : current;
}

void NvmetPollVotes::Restored(const std::string& path) {
  std::lock_guard lock(mutex_);
  polling_.erase(path);
  originals_.erase(path);
}

}  // namespace nvmeadapt::actuate
