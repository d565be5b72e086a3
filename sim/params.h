// SPDX-License-Identifier: Apache-2.0
// The model's parameters: the host's costs, the drive, the load and the agent. Every number has a name, a
// default and where that default comes from, so that a printed result can say what it rests on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/engine/policy.h"

namespace nvmeadapt::sim {

using Nanos = int64_t;

// How a queue in poll mode is reaped: the patch's hrtimer-driven irq_poll on the queue's CPU, or the
// submitting thread spinning on its own queue (uvnvme, SPDK, io_uring IOPOLL).
enum class PollStyle : uint8_t { kHrtimer, kSpin };

struct HostCosts {
  Nanos submit = 0;             // job CPU per I/O submitted (fio, block layer, nvme submit, doorbell)
  Nanos job_complete = 0;       // job CPU per completion it consumes (getevents, accounting)
  Nanos irq_entry_exit = 0;     // CPU per hardirq: entry, exit, re-arm
  Nanos irq_per_entry = 0;      // CPU per completion entry reaped in interrupt context
  Nanos irq_vector_switch = 0;  // extra CPU per entry of an interrupt whose vector is not the CPU's last one
  // The platform's interrupt ceiling (0: none): interrupt messages the host (interrupt remapping) and each
  // CPU accept per second. A message waits for both; the device's later completion writes wait behind it.
  double irq_host_ceiling = 0;
  double irq_cpu_ceiling = 0;
  Nanos wakeup = 0;             // reaping CPU's cost of waking a sleeping job
  Nanos wake_latency = 0;       // from that wakeup to the job running (idle exit, IPI, scheduler)
  PollStyle poll_style = PollStyle::kHrtimer;
  Nanos poll_period = 0;        // hrtimer period of a polled queue
  uint32_t poll_budget = 256;   // entries per irq_poll run (lib/irq_poll.c)
  Nanos poll_run = 0;           // CPU per poll run, found work or not
  Nanos poll_per_entry = 0;     // CPU per completion entry reaped by polling
};

struct HostLayout {
  uint32_t cpus = 1;
  uint32_t device_queues = 128;  // I/O queues a device offers; CPUs beyond share them in groups (nvme-pci)
};

// A drive: service time min + exponential(mean - min) per direction, a serial controller gate of
// max(1 / IOPS cap, bytes / bandwidth) per command, and at most `parallelism` commands in the media at once.
struct DriveProfile {
  std::string name;
  Nanos read_mean = 80'000, read_min = 80'000;
  Nanos write_mean = 20'000, write_min = 20'000;
  double read_iops_cap = 1e6, write_iops_cap = 1e6;
  double bandwidth_bytes_per_s = 1e12;
  uint32_t parallelism = 1024;
  std::string source;
};

struct Workload {
  uint32_t devices = 1;
  uint32_t jobs_per_device = 1;
  uint32_t qd = 1;
  double read_fraction = 1.0;
  uint32_t block_bytes = 4096;
};

// The agent between the BPF side and the driver (nvme-adaptd), per its measured switch timeline.
struct AgentLatency {
  Nanos ring_delay = 0;           // window record: BPF ring buffer to the engine
  Nanos to_poll_effect = 0;       // decision to the driver polling
  Nanos to_interrupt_effect = 0;  // decision to the driver back in interrupt mode
  Nanos to_poll_blocking = 0;     // the agent's loop waits this long for the lever's acknowledgement
  Nanos to_interrupt_blocking = 0;
};

struct NamedValue {
  std::string name;
  double value;
  std::string unit;
  std::string source;
};

// What makes interrupt mode slow at 15 devices in the model: the platform's interrupt ceiling, or the
// older fit, a penalty per entry of an interrupt that follows another queue's reaping on its CPU.
enum class ScaleMechanism : uint8_t { kCeiling, kPerEntry };
std::string MechanismName(ScaleMechanism mechanism);
bool ParseMechanism(const std::string& name, ScaleMechanism& mechanism);

// The seed's host as the fit found it, and uvnvme on this machine (from a uvnvme bench run's figures).
HostCosts SeedHostCosts(ScaleMechanism mechanism = ScaleMechanism::kCeiling);
HostLayout SeedHostLayout();
DriveProfile SeedDrive();
engine::Policy PatchPolicy();
AgentLatency MeasuredAgentLatency();
std::vector<DriveProfile> SweepDrives();

// Sets one named parameter (the names Describe* print, without their unit suffix rules: "submit_ns",
// "cpus", "read_mean_ns", ...). False when no parameter has that name.
bool SetParameter(HostCosts& costs, HostLayout& layout, DriveProfile& drive, const std::string& name, double value);

std::vector<NamedValue> DescribeCosts(const HostCosts& costs, const std::string& source);
// The seed host's costs, each with its own source: fitted to the published points, or assumed.
std::vector<NamedValue> DescribeSeedCosts(ScaleMechanism mechanism = ScaleMechanism::kCeiling);
// The values the calibration fitted (host costs, layout and the seed drive's), with their sources.
std::vector<NamedValue> FittedSeedParameters(ScaleMechanism mechanism = ScaleMechanism::kCeiling);
std::vector<NamedValue> DescribeLayout(const HostLayout& layout, const std::string& source);
std::vector<NamedValue> DescribeDrive(const DriveProfile& drive);
std::vector<NamedValue> DescribeAgent(const AgentLatency& agent);

}  // namespace nvmeadapt::sim
