// SPDX-License-Identifier: Apache-2.0
#include "sim/host.h"

#include <algorithm>
#include <cmath>

namespace nvmeadapt::sim {

Host::Host(const HostCosts& costs, const HostLayout& layout, const DriveProfile& drive, const Workload& load,
           Controller& controller, uint64_t seed)
    : costs_(costs), drive_(drive), load_(load), controller_(controller), rng_(seed * 0x9E3779B97F4A7C15ull + 1) {
  const uint32_t cpus = std::max(1u, layout.cpus);
  const uint32_t per_device = std::min(cpus, std::max(1u, layout.device_queues));
  cpus_.resize(cpus);
  devices_.resize(load.devices);
  const uint64_t outstanding = static_cast<uint64_t>(load.jobs_per_device) * load.qd;
  for (Device& device : devices_) {
    device.unlimited = drive.parallelism >= outstanding;
    for (uint32_t u = 0; !device.unlimited && u < drive.parallelism; ++u) device.units.push(0);
  }
  // nvme-pci: CPU c of n uses queue c * q / n of each device; the vector's affinity is that CPU group, and
  // its interrupt lands on the group's first CPU. Only queues some job submits to exist in the model.
  std::vector<int64_t> queue_of(static_cast<size_t>(load.devices) * per_device, -1);
  for (uint32_t d = 0; d < load.devices; ++d) {
    for (uint32_t j = 0; j < load.jobs_per_device; ++j) {
      Job job;
      job.cpu = (d * load.jobs_per_device + j) % cpus;
      job.device = d;
      job.initial = load.qd;
      const uint32_t group = static_cast<uint32_t>(static_cast<uint64_t>(job.cpu) * per_device / cpus);
      int64_t& q = queue_of[static_cast<size_t>(d) * per_device + group];
      if (q < 0) {
        q = static_cast<int64_t>(queues_.size());
        Queue queue;
        queue.device = d;
        queue.cpu = static_cast<uint32_t>((static_cast<uint64_t>(group) * cpus + per_device - 1) / per_device);
        queues_.push_back(queue);
      }
      job.queue = static_cast<uint32_t>(q);
      queues_[job.queue].jobs.push_back(static_cast<uint32_t>(jobs_.size()));
      jobs_.push_back(job);
    }
  }
  ios_.resize(jobs_.size() * load.qd);
  for (uint32_t j = 0; j < jobs_.size(); ++j) {
    for (uint32_t i = 0; i < load.qd; ++i) ios_[j * load.qd + i].job = j;
    cpus_[jobs_[j].cpu].runnable.push_back(j);
  }
}

double Host::Uniform() {  // xorshift64*: fast, and a run depends on the seed alone
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return ((rng_ * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}

RunStats Host::Run(Nanos warmup, Nanos measure) {
  measure_from_ = warmup;
  const Nanos end = warmup + measure;
  controller_.Attach(*this);
  if (gsim_.enabled) events_.Schedule(gsim_.update, EventKind::kGsimUpdate);
  for (Cpu& cpu : cpus_) Dispatch(cpu);
  while (!events_.Empty() && events_.NextAt() <= end) {
    const Event e = events_.Pop();
    now_ = e.at;
    ++stats_.events;
    switch (e.kind) {
      case EventKind::kDeviceDone: OnDeviceDone(e.a); break;
      case EventKind::kSegmentEnd: {
        Cpu& cpu = cpus_[e.a];
        if (e.b != cpu.gen) break;  // the segment was preempted
        if (cpu.running == Running::kJob) {
          EndJobSegment(cpu);
        } else {
          EndReapPass(cpu);
        }
        Dispatch(cpu);
        break;
      }
      case EventKind::kPollTimer: {
        Queue& q = queues_[e.a];
        if (e.b != q.poll_gen || q.mode != ReapMode::kPoll) break;
        q.last_fire = now_;
        QueueReap(e.a, true);
        break;
      }
      case EventKind::kJobWake: {
        Job& job = jobs_[e.a];
        job.state = JobState::kRunnable;
        cpus_[job.cpu].runnable.push_back(e.a);
        Dispatch(cpus_[job.cpu]);
        break;
      }
      case EventKind::kModeEffect:
        if ((e.b >> 1) == queues_[e.a].mode_gen) SetModeNow(e.a, (e.b & 1) ? ReapMode::kPoll : ReapMode::kInterrupt);
        break;
      case EventKind::kControl: controller_.OnControl(e.a, e.b, now_); break;
      case EventKind::kIrqDeliver: QueueReap(e.a, false); break;
      case EventKind::kDeviceRelease: ReleaseDevice(e.a); break;
      case EventKind::kGsimUpdate: GsimUpdate(); break;
      case EventKind::kGsimUnmask: GsimUnmask(e.a); break;
    }
  }
  now_ = end;
  for (Cpu& cpu : cpus_) {  // work still in progress counts up to the end
    if (cpu.running != Running::kIdle) Account(cpu, cpu.running, cpu.start, end);
  }
  stats_.measured = measure;
  return stats_;
}

void Host::Account(Cpu& cpu, Running kind, Nanos start, Nanos end) {
  if (end > start) {
    cpu.busy += end - start;
    if (kind == Running::kIrq || kind == Running::kPoll) queues_[cpu.id].reap_busy += end - start;
  }
  const Nanos from = std::max(start, measure_from_);
  if (end <= from) return;
  (kind == Running::kJob ? stats_.job_cpu : stats_.reap_cpu) += end - from;
}

Nanos Host::CpuBusy(uint32_t cpu) const {
  const Cpu& c = cpus_[cpu];
  return c.busy + (c.running != Running::kIdle && now_ > c.start ? now_ - c.start : 0);
}

void Host::RequestMode(uint32_t queue, ReapMode mode, Nanos at) {
  Queue& q = queues_[queue];
  ++q.mode_gen;
  events_.Schedule(std::max(at, now_), EventKind::kModeEffect, queue,
                   (q.mode_gen << 1) | (mode == ReapMode::kPoll ? 1u : 0u));
}

void Host::SetModeNow(uint32_t queue, ReapMode mode) {
  Queue& q = queues_[queue];
  if (q.mode == mode) return;
  ++stats_.switches;
  q.mode = mode;
  ++q.poll_gen;  // stops a running hrtimer; a new one starts below
  const bool spin = costs_.poll_style == PollStyle::kSpin;
  if (mode == ReapMode::kPoll) {
    if (spin) {  // the submitting thread reaps its own queue from now on
      for (uint32_t slot : q.posted) jobs_[ios_[slot].job].ready.push_back(slot);
      q.posted.clear();
      for (uint32_t j : q.jobs) {
        if (jobs_[j].state != JobState::kSleeping) continue;
        jobs_[j].state = JobState::kSpinning;
        if (!jobs_[j].ready.empty()) MakeRunnable(j);
      }
    } else {
      q.last_fire = now_;
      events_.Schedule(now_ + costs_.poll_period, EventKind::kPollTimer, queue, q.poll_gen);
    }
  } else {
    for (uint32_t j : q.jobs) {
      if (jobs_[j].state == JobState::kSpinning) jobs_[j].state = JobState::kSleeping;
    }
    // Unmasked: the driver reaps once what was posted while masked, as nvme-pci does after re-enabling.
    if (!q.posted.empty() && !q.irq_active) RaiseIrq(queue);
  }
  controller_.OnModeEffective(queue, mode, now_);
}

void Host::QueueReap(uint32_t queue, bool poll) {
  Queue& q = queues_[queue];
  if (poll) {
    if (q.poll_queued) return;
    q.poll_queued = true;
  }
  Cpu& cpu = cpus_[q.cpu];
  cpu.reap.push_back((static_cast<uint64_t>(queue) << 1) | (poll ? 1u : 0u));
  if (cpu.running == Running::kJob) {  // interrupt and softirq work preempt the job
    Job& job = jobs_[cpu.id];
    job.remaining = cpu.end - now_;
    job.state = JobState::kRunnable;
    Account(cpu, Running::kJob, cpu.start, now_);
    cpu.runnable.push_front(cpu.id);
    cpu.running = Running::kIdle;
    ++cpu.gen;
  }
  Dispatch(cpu);
}

void Host::Dispatch(Cpu& cpu) {
  if (cpu.running != Running::kIdle) return;
  if (!cpu.reap.empty()) {
    const uint64_t item = cpu.reap.front();
    cpu.reap.pop_front();
    StartReapPass(cpu, static_cast<uint32_t>(item >> 1), (item & 1) ? Running::kPoll : Running::kIrq, false);
  } else if (!cpu.runnable.empty()) {
    const uint32_t job = cpu.runnable.front();
    cpu.runnable.pop_front();
    StartJobSegment(cpu, job);
  }
}

void Host::StartReapPass(Cpu& cpu, uint32_t queue, Running kind, bool continuation) {
  Queue& q = queues_[queue];
  const bool poll = kind == Running::kPoll;
  const size_t n = poll ? std::min<size_t>(q.posted.size(), costs_.poll_budget) : q.posted.size();
  cpu.pass.assign(q.posted.begin(), q.posted.begin() + static_cast<std::ptrdiff_t>(n));
  q.posted.erase(q.posted.begin(), q.posted.begin() + static_cast<std::ptrdiff_t>(n));
  cpu.to_wake.clear();
  for (uint32_t slot : cpu.pass) {
    Job& job = jobs_[ios_[slot].job];
    if (job.state == JobState::kSleeping) {
      job.state = JobState::kWaking;
      cpu.to_wake.push_back(ios_[slot].job);
    }
  }
  Nanos cost = 0;
  if (poll) {
    cost = costs_.poll_run + static_cast<Nanos>(n) * costs_.poll_per_entry;
    if (Measuring()) ++stats_.poll_runs;
  } else {
    cost = (continuation ? 0 : costs_.irq_entry_exit) + static_cast<Nanos>(n) * costs_.irq_per_entry;
    if (!continuation) ++cpu.period_irqs;
    if (Measuring() && !continuation) ++stats_.interrupts;
  }
  if (n > 0 && cpu.last_queue != queue) {
    // Another queue's reaping ran here last and evicted this one's queue and requests. An interrupt pays
    // for it entry by entry; a poll run streams its batch (the fit needs no cost there).
    if (!poll) cost += static_cast<Nanos>(n) * costs_.irq_vector_switch;
    cpu.last_queue = queue;
  }
  cost += static_cast<Nanos>(cpu.to_wake.size()) * costs_.wakeup;
  if (Measuring()) {
    stats_.reaped += n;
    if (poll) stats_.polled += n;
    stats_.wakeups += cpu.to_wake.size();
  }
  cpu.running = kind;
  cpu.id = queue;
  cpu.start = now_;
  cpu.end = now_ + cost;
  events_.Schedule(cpu.end, EventKind::kSegmentEnd, static_cast<uint32_t>(&cpu - cpus_.data()), ++cpu.gen);
  if (n > 0) controller_.OnReaped(queue, poll ? ReapMode::kPoll : ReapMode::kInterrupt, static_cast<uint32_t>(n), now_);
}

void Host::EndReapPass(Cpu& cpu) {
  const uint32_t queue = cpu.id;
  const Running kind = cpu.running;
  Account(cpu, kind, cpu.start, now_);
  cpu.running = Running::kIdle;
  for (uint32_t slot : cpu.pass) jobs_[ios_[slot].job].ready.push_back(slot);
  for (uint32_t j : cpu.to_wake) events_.Schedule(now_ + costs_.wake_latency, EventKind::kJobWake, j);
  Queue& q = queues_[queue];
  if (kind == Running::kIrq) {
    cpu.period_hardirq += now_ - cpu.start;
    // The handler loops until the queue is empty: what arrived while it ran is reaped without a new interrupt.
    if (!q.posted.empty() && q.mode == ReapMode::kInterrupt) {
      StartReapPass(cpu, queue, Running::kIrq, true);
      return;
    }
    if (!GsimHolds(cpu, queue)) q.irq_active = false;
    return;
  }
  q.poll_queued = false;
  if (q.mode != ReapMode::kPoll) {
    // The queue went back to interrupt mode while this run waited: what the run left is the handler's.
    if (!q.posted.empty() && !q.irq_active) RaiseIrq(queue);
    return;
  }
  if (!q.posted.empty() && cpu.pass.size() == costs_.poll_budget) {
    QueueReap(queue, true);  // budget used up: irq_poll runs again at once
  } else {
    events_.Schedule(std::max(now_, q.last_fire + costs_.poll_period), EventKind::kPollTimer, queue, q.poll_gen);
  }
}

void Host::StartJobSegment(Cpu& cpu, uint32_t j) {
  Job& job = jobs_[j];
  Nanos cost;
  if (job.remaining >= 0) {
    cost = job.remaining;
    job.remaining = -1;
  } else if (job.initial > 0) {
    job.segment = Segment::kInitialSubmit;
    job.slot = j * load_.qd + job.initial - 1;
    cost = costs_.submit;
  } else {
    job.segment = Segment::kConsume;
    job.slot = job.ready.front();
    job.ready.pop_front();
    cost = costs_.job_complete + costs_.submit;
    if (costs_.poll_style == PollStyle::kSpin && queues_[job.queue].mode == ReapMode::kPoll) {
      cost += costs_.poll_per_entry;  // the spinning thread reaps the entry itself
    }
  }
  job.state = JobState::kRunning;
  cpu.running = Running::kJob;
  cpu.id = j;
  cpu.start = now_;
  cpu.end = now_ + cost;
  events_.Schedule(cpu.end, EventKind::kSegmentEnd, static_cast<uint32_t>(&cpu - cpus_.data()), ++cpu.gen);
}

void Host::EndJobSegment(Cpu& cpu) {
  const uint32_t j = cpu.id;
  Job& job = jobs_[j];
  Account(cpu, Running::kJob, cpu.start, now_);
  cpu.running = Running::kIdle;
  if (job.segment == Segment::kInitialSubmit) {
    --job.initial;
  } else if (Measuring()) {
    ++stats_.completions;
    stats_.latency_sum_ns += static_cast<double>(now_ - ios_[job.slot].submitted);
  }
  Submit(job.slot);
  if (job.initial > 0 || !job.ready.empty()) {
    job.state = JobState::kRunnable;
    cpu.runnable.push_back(j);
  } else {
    const bool spinning = costs_.poll_style == PollStyle::kSpin && queues_[job.queue].mode == ReapMode::kPoll;
    job.state = spinning ? JobState::kSpinning : JobState::kSleeping;
  }
}

void Host::MakeRunnable(uint32_t j) {
  Job& job = jobs_[j];
  job.state = JobState::kRunnable;
  cpus_[job.cpu].runnable.push_back(j);
  Dispatch(cpus_[job.cpu]);
}

void Host::Submit(uint32_t slot) {
  Io& io = ios_[slot];
  io.submitted = now_;
  Device& device = devices_[jobs_[io.job].device];
  const bool read = load_.read_fraction >= 1.0 || Uniform() < load_.read_fraction;
  const double cap = read ? drive_.read_iops_cap : drive_.write_iops_cap;
  const double gate_s = std::max(1.0 / cap, load_.block_bytes / drive_.bandwidth_bytes_per_s);
  const Nanos start = std::max(now_, device.gate_free);
  device.gate_free = start + static_cast<Nanos>(std::llround(gate_s * 1e9));
  Nanos media = start;
  if (!device.unlimited) {
    media = std::max(start, device.units.top());
    device.units.pop();
  }
  const Nanos mean = read ? drive_.read_mean : drive_.write_mean;
  const Nanos min = read ? drive_.read_min : drive_.write_min;
  Nanos service = min;
  if (mean > min) service += static_cast<Nanos>(-std::log(1.0 - Uniform()) * static_cast<double>(mean - min));
  const Nanos done = media + service;
  if (!device.unlimited) device.units.push(done);
  events_.Schedule(done, EventKind::kDeviceDone, slot);
}

void Host::OnDeviceDone(uint32_t slot) {
  Device& device = devices_[jobs_[ios_[slot].job].device];
  if (device.blocked_until > now_ || !device.held.empty()) {  // behind the device's interrupt message
    device.held.push_back(slot);
    if (!device.release_scheduled) {
      device.release_scheduled = true;
      events_.Schedule(std::max(now_, device.blocked_until), EventKind::kDeviceRelease, jobs_[ios_[slot].job].device);
    }
    return;
  }
  PostCompletion(slot);
}

void Host::PostCompletion(uint32_t slot) {
  const uint32_t j = ios_[slot].job;
  Job& job = jobs_[j];
  const uint32_t queue = job.queue;
  Queue& q = queues_[queue];
  if (q.mode == ReapMode::kPoll && costs_.poll_style == PollStyle::kSpin) {
    if (Measuring()) {
      ++stats_.reaped;
      ++stats_.polled;
    }
    controller_.OnReaped(queue, ReapMode::kPoll, 1, now_);
    job.ready.push_back(slot);
    if (job.state == JobState::kSpinning || job.state == JobState::kSleeping) MakeRunnable(j);
    return;
  }
  q.posted.push_back(slot);
  if (q.mode == ReapMode::kInterrupt && !q.irq_active) RaiseIrq(queue);
}

}  // namespace nvmeadapt::sim
