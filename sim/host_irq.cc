// SPDX-License-Identifier: Apache-2.0
// The host's interrupt delivery beyond the handler: the platform's interrupt ceiling (messages through
// interrupt remapping at a host rate, accepted by each CPU at its own rate, a device's later completion
// writes ordered behind its message as PCIe posted writes are) and GSIM's moderation per CPU.
#include <algorithm>
#include <cmath>

#include "sim/host.h"

namespace nvmeadapt::sim {
namespace {

Nanos Gap(double per_second) { return static_cast<Nanos>(std::llround(1e9 / per_second)); }

}  // namespace

void Host::RaiseIrq(uint32_t queue) {
  Queue& q = queues_[queue];
  q.irq_active = true;
  if (costs_.irq_host_ceiling <= 0 && costs_.irq_cpu_ceiling <= 0) {
    QueueReap(queue, false);
    return;
  }
  Nanos at = now_;
  if (costs_.irq_host_ceiling > 0) {
    at = std::max(at, host_irq_gate_) + Gap(costs_.irq_host_ceiling);
    host_irq_gate_ = at;
  }
  Cpu& cpu = cpus_[q.cpu];
  if (costs_.irq_cpu_ceiling > 0) {
    at = std::max(at, cpu.irq_gate);
    cpu.irq_gate = at + Gap(costs_.irq_cpu_ceiling);
  }
  Device& device = devices_[q.device];
  device.blocked_until = std::max(device.blocked_until, at);
  if (at > now_) {
    events_.Schedule(at, EventKind::kIrqDeliver, queue);
  } else {
    QueueReap(queue, false);
  }
}

void Host::ReleaseDevice(uint32_t d) {
  Device& device = devices_[d];
  device.release_scheduled = false;
  while (!device.held.empty()) {
    if (device.blocked_until > now_) {  // a completion just posted raised another message: wait behind it
      device.release_scheduled = true;
      events_.Schedule(device.blocked_until, EventKind::kDeviceRelease, d);
      return;
    }
    const uint32_t slot = device.held.front();
    device.held.pop_front();
    PostCompletion(slot);
  }
}

bool Host::GsimHolds(Cpu& cpu, uint32_t queue) {
  if (!GsimModerates(gsim_, cpu.gsim_delay)) return false;
  cpu.masked.push_back(queue);
  if (Measuring()) ++stats_.gsim_masks;
  if (!cpu.gsim_timer) {
    cpu.gsim_timer = true;
    events_.Schedule(now_ + cpu.gsim_delay, EventKind::kGsimUnmask, static_cast<uint32_t>(&cpu - cpus_.data()));
  }
  return true;
}

void Host::GsimUnmask(uint32_t c) {
  Cpu& cpu = cpus_[c];
  cpu.gsim_timer = false;
  std::vector<uint32_t> masked;
  masked.swap(cpu.masked);
  for (uint32_t queue : masked) {
    Queue& q = queues_[queue];
    q.irq_active = false;
    if (!q.posted.empty() && q.mode == ReapMode::kInterrupt) RaiseIrq(queue);
  }
}

void Host::GsimUpdate() {
  uint64_t total = 0;
  uint32_t active = 0;
  for (const Cpu& cpu : cpus_) {
    total += cpu.period_irqs;
    if (cpu.period_irqs > 0) ++active;
  }
  const double period_s = static_cast<double>(gsim_.update) / 1e9;
  for (Cpu& cpu : cpus_) {
    const GsimSample sample{static_cast<double>(total) / period_s, static_cast<double>(cpu.period_irqs) / period_s,
                            active, static_cast<double>(cpu.period_hardirq) / static_cast<double>(gsim_.update)};
    cpu.gsim_delay = GsimNextDelay(gsim_, cpu.gsim_delay, GsimOverTarget(gsim_, sample));
    cpu.period_irqs = 0;
    cpu.period_hardirq = 0;
  }
  events_.Schedule(now_ + gsim_.update, EventKind::kGsimUpdate);
}

}  // namespace nvmeadapt::sim
