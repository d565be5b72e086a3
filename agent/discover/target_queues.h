// SPDX-License-Identifier: Apache-2.0
// The NVMe target's own queues (nvmet), as controllers of source nvmet named "nvmet:cCNTLID" in layer "target"
// (docs/fabrics.md). No file of a stock kernel lists nvmet's controllers or queues (configfs has subsystems and
// ports; the debugfs tree of later kernels is optional), so they are found from what the collector counted: a
// key nvmet:cCNTLID:qQID is a queue from its first completion. nvmet gives every (re)connecting host a new
// controller, and nothing tells when one went: a queue is listed while it completed something within
// `target_idle` (the admin queue of a live idle controller answers the host's keep-alives every few
// seconds), and leaves the list after that; it comes back at its next completion. Idle means its count did
// not move: the collector stamps a completion's time only where a rule needs it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/discover/discovery.h"
#include "agent/engine/types.h"

namespace nvmeadapt::discover {

// A target queue the collector counts, with its completions so far.
struct ObservedTargetQueue {
  uint32_t cntlid = 0;
  uint32_t qid = 0;
  uint64_t completions = 0;
};

// Which of the counted target queues completed something within `idle`, from one count to the next.
class TargetQueueActivity {
 public:
  // `observed` is every target queue counted now; a queue seen for the first time counts as active (the
  // collector keeps a queue from its first completion); one no longer counted is forgotten.
  std::vector<ObservedTargetQueue> Active(const std::vector<ObservedTargetQueue>& observed, engine::Nanos now,
                                          engine::Nanos idle);

 private:
  struct Seen {
    uint64_t completions = 0;
    engine::Nanos changed = 0;
  };
  std::map<std::pair<uint32_t, uint32_t>, Seen> seen_;  // (cntlid, qid)
};

// The transports (addr_trtype: "tcp", "rdma", "fc", "loop") of the nvmet ports that export at least one
// subsystem (configfs nvmet/ports/*/subsystems/*). Empty without nvmet or with no port exporting.
std::set<std::string> NvmetExportTransports(const DiscoveryOptions& options);

// The transport a target queue's controller is reached over: the one transport the ports export over;
// "unknown" when they export over several (a controller's port is not in any file of a stock kernel) or none.
std::string TargetTransport(const std::set<std::string>& exported);

// The subsystem an nvmet controller serves, by its cntlid: no file of a stock kernel links the two, but nvmet
// gives a controller a cntlid from its subsystem's range (attr_cntlid_min..attr_cntlid_max; 1..0xffef unless
// set): the one exported subsystem whose range holds it. "" when none or several do (the default ranges of
// two exported subsystems all overlap): giving each subsystem a range of its own makes it known.
std::string NvmetSubsystemOf(const DiscoveryOptions& options, uint32_t cntlid);

// One controller per cntlid of the `active` queues, its queues by qid: the admin queue (qid 0) not eligible,
// the I/O queues eligible (decided on: by our nvmet's polling-queue task where the module has it, else in
// shadow, agent/actuate/resolver.h), its subsystem (NvmetSubsystemOf) in subsysnqn. The queues are listed in
// interrupt mode whatever pqt_enable says: a queue listed anew while the agent polls its namespace must not
// take the agent's poll for the mode to go back to.
std::vector<Controller> DiscoverTargets(const DiscoveryOptions& options,
                                        const std::vector<ObservedTargetQueue>& active);

}  // namespace nvmeadapt::discover
