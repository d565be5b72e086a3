// SPDX-License-Identifier: Apache-2.0
// The BPF control of a managed queue (collector.h, QueueControl) from the engine's view of it: the one place a
// policy field becomes part of what the BPF side reads (records.h lays the control out for it). And the BPF
// queue table's limits, as the agent must keep them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "agent/collect/collector.h"
#include "agent/engine/engine.h"
#include "bpf/nvme_adapt.h"

namespace nvmeadapt::collect {

// The queue in `mode` under `generation`, since `mode_since` (0: a switch pending, collector.h). The
// baseline goes with a polling try only: it is what the BPF side checks the pace against.
QueueControl ControlFor(const engine::QueueView& view, ReapMode mode, uint32_t generation, engine::Nanos mode_since);

// Queues the BPF queue table holds.
inline constexpr size_t kQueueTableSlots = NA_MAX_QUEUES;
// The table is split in halves by who can add queues (na_region_base): the machine's own kernel queues, and
// the sources a peer can multiply (userspace drivers' processes, a target's remote hosts). True for the first.
bool InKernelHalf(Source source);

}  // namespace nvmeadapt::collect
