// SPDX-License-Identifier: Apache-2.0
// Conversions between the records and keys of bpf/nvme_adapt.h and the collector's C++ types. Pure
// functions: the unit tests feed them hand-made records.
#pragma once

#include "agent/collect/collector.h"
#include "bpf/nvme_adapt.h"

namespace nvmeadapt::collect {

na_queue_key ToBpfKey(const QueueKey& key);
QueueKey FromBpfKey(const na_queue_key& key);
Result<WindowEvent> FromBpfRecord(const na_window_record& record);
QueueCounters FromBpfCounters(const na_queue_counters& counters);
// The control as BPF reads it; generation is written separately, last.
na_queue_control ToBpfControl(const QueueControl& control);
Status ValidateControl(const QueueControl& control);

}  // namespace nvmeadapt::collect
