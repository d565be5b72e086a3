// SPDX-License-Identifier: Apache-2.0
// The payoff listener: per queue, what polling gained and cost (agent/engine/payoff.h), from the decisions
// the engine made and the windows they judged, and the CPU the queue's poller spent while it polled.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "agent/daemon/agent_listener.h"
#include "agent/engine/payoff.h"

namespace nvmeadapt::daemon {

struct QueuePayoffRecord {
  engine::QueuePayoff payoff;
  uint32_t pending_completions = 0;   // of the window (or timer look) the next decision judges
  // CPU spent polling: the poller's CPU time from each reading taken in poll mode (at the switch to poll,
  // at each counter refresh) to the next one (a refresh, or the switch back).
  bool cpu_measured = false;
  engine::Nanos polling_cpu = 0;
  std::string cpu_unmeasured_reason;
  std::optional<engine::Nanos> last_cpu;  // the last reading, if taken in poll mode
};

class PayoffListener final : public AgentListener {
 public:
  // The CPU time of the thread that polls the queue (poller_cpu.h), or why it cannot be read.
  using PollerCpu = std::function<Result<engine::Nanos>(const ManagedQueue&)>;
  explicit PayoffListener(PollerCpu poller_cpu) : poller_cpu_(std::move(poller_cpu)) {}

  void QueueAdded(const ManagedQueue& q, const engine::QueueSetup& setup) override;
  void QueueRemoved(const ManagedQueue& q, std::string_view why) override;
  void Window(const ManagedQueue& q, const engine::WindowRecord& record) override;
  void Timer(const ManagedQueue& q, engine::Nanos now, const engine::WindowProgress& progress) override;
  void Decided(const ManagedQueue& q, const engine::Decision& decision) override;
  void Counters(const ManagedQueue& q) override;
  void SwitchApplied(const ManagedQueue& q, engine::Reason why, const SwitchTimeline& timeline) override;

  // The queue's record; nullptr for a queue this listener was not told of.
  const QueuePayoffRecord* Of(const ManagedQueue& q) const;

 private:
  // Reads the poller's CPU time when the queue polls or just stopped, and counts what was spent polling.
  void Sample(const ManagedQueue& q);

  PollerCpu poller_cpu_;
  std::map<uint64_t, QueuePayoffRecord> records_;  // by the queue's serial
};

// The record as the API's QueueInfo.payoff.
void PayoffToProto(const QueuePayoffRecord& record, v1::Payoff& out);

}  // namespace nvmeadapt::daemon
