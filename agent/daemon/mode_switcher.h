// SPDX-License-Identifier: Apache-2.0
// The mode switcher: the steps of a switch that may block run on a worker of the switch's controller, never
// on the loop thread. A worker plans the change with the lever, checks the controller's reset spacing and
// journals the restore point; the loop then publishes the pending switch to the BPF side (it owns the
// engine and the collector); the worker calls the lever; the loop learns the outcome. So the switch
// protocol's order holds (journal, pending publish, lever, effect) while a hung lever delays only the
// switches of its own controller. A lever that does not return within `lever_timeout` ends its switch as a
// timed-out lever error; no other switch of that controller is queued behind it until it returns.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/state/journal.h"
#include "agent/daemon/ports.h"
#include "agent/daemon/serial_workers.h"
#include "common/result.h"

namespace nvmeadapt::daemon {

struct SwitchOptions {
  // Least time between two disruptive changes (a controller reset) of one controller (AgentOptions).
  engine::Nanos min_disruptive_interval = 30'000'000'000;
  // Longest a lever may take before its switch is given up as a lever error (real levers end sooner by
  // their own timeouts: a socket call 2 s, an admin command 5 s, a reset about 1 s).
  engine::Nanos lever_timeout = 10'000'000'000;
  std::string boot_id;  // stamped on journal entries
  std::function<engine::Nanos()> monotonic;
  std::function<int64_t()> wall;
};

// How a switch ended.
struct SwitchOutcome {
  Status status;           // the first failure: no plan, the reset spacing, the journal, the lever, a timeout
  bool published = false;  // the pending switch reached the BPF side: a failed switch puts it back
  engine::Nanos requested = 0;     // the lever was called
  engine::Nanos acknowledged = 0;  // the lever returned
};

// The steps of one switch that run on the loop thread (inline before the loop runs).
struct SwitchSteps {
  // The restore point is journaled: publish the pending switch. False cancels the switch (its queue left).
  std::function<bool(engine::Nanos journaled)> publish;
  // The switch ended: applied, refused at any step, or timed out.
  std::function<void(const SwitchOutcome&)> done;
  // A lever whose switch had timed out returned after all (with its own result).
  std::function<void(const SwitchOutcome&)> late;
};

class ModeSwitcher {
 public:
  using PostToLoop = std::function<void(std::function<void()>)>;
  // `post` runs a step on the loop thread (inline when no loop runs); it may drop the step once the loop
  // stopped.
  ModeSwitcher(Levers& levers, state::Journal& journal, SwitchOptions options, PostToLoop post);
  ~ModeSwitcher();

  // The loop runs: from now on switches run on the controllers' workers.
  void StartWorkers();
  // The loop stopped: no lever is called any more (a switch waiting for its publish is cancelled).
  void Quiesce();
  // Waits for the levers still running. After it, switches run inline again.
  void Join();

  // Starts a switch of `queue` (served by `lever`) to `mode`. Before StartWorkers it has ended when this
  // returns. Refused at once (`done` runs before this returns) while a lever of the controller is hung.
  void Submit(const DiscoveredQueue& queue, const std::string& lever, ReapMode mode, SwitchSteps steps);

  // On the loop: ends the switches whose lever runs longer than lever_timeout, and those of the same
  // controller queued behind them.
  void ExpireHung(engine::Nanos now);
  // One line per switch in flight for at least `at_least` (GetStatus).
  std::vector<std::string> Slow(engine::Nanos now, engine::Nanos at_least) const;
  // Forgets reset times that no longer hold a change back (a controller's time outlives its vanishing).
  void ForgetOldResets(engine::Nanos now);

 private:
  struct Switch;
  void Run(const std::shared_ptr<Switch>& sw);
  // The worker's steps before the publish: the plan, the reset spacing, the journal.
  Status Prepare(Switch& sw, LeverPlan& plan, bool& disruptive);
  // Runs the publish step on the loop and waits for it; false: cancelled (also when the loop stopped).
  bool PublishOnLoop(const std::shared_ptr<Switch>& sw, engine::Nanos journaled);
  // Hands the outcome to the loop: as the end of the switch, or as a late return after its timeout.
  void Finish(const std::shared_ptr<Switch>& sw, SwitchOutcome outcome);
  bool Hung(const std::string& controller) const;  // mutex_ held

  Levers& levers_;
  state::Journal& journal_;
  const SwitchOptions options_;
  const PostToLoop post_;
  mutable std::mutex mutex_;
  std::condition_variable published_cv_;
  bool quiesced_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::shared_ptr<Switch>> in_flight_;  // by submission: a controller's in its order
  std::map<std::string, engine::Nanos> last_reset_;        // controller -> its last disruptive change
  SerialWorkers workers_{"nvme-adapt-lvr"};                 // last: joined before the rest goes
};

}  // namespace nvmeadapt::daemon
