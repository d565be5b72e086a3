// SPDX-License-Identifier: Apache-2.0
// The few synchronisation primitives uvnvme's host and controller share: a futex on a 32-bit word with
// an absolute CLOCK_MONOTONIC deadline, the eventfd "interrupt line", and a spin hint.
#pragma once

#include <atomic>
#include <cstdint>

namespace nvmeadapt::uvnvme {

// Sleeps while `word` holds `expected`, until woken or `deadline_ns` (CLOCK_MONOTONIC; <= 0: no deadline).
void FutexWait(std::atomic<uint32_t>& word, uint32_t expected, int64_t deadline_ns);
void FutexWakeAll(std::atomic<uint32_t>& word);

inline void CpuRelax() { __builtin_ia32_pause(); }

// An eventfd carries two kinds of events in one 64-bit counter: interrupts (adds of 1 by the controller)
// and host-side kicks (adds of kKickUnit, to wake a blocked reaper for a mode change, a new phase or
// stop). A read returns both and tells them apart, so a kick is never counted as an interrupt.
inline constexpr uint64_t kKickUnit = uint64_t{1} << 32;
inline uint32_t InterruptsIn(uint64_t counter) { return static_cast<uint32_t>(counter & 0xffffffffu); }

}  // namespace nvmeadapt::uvnvme
