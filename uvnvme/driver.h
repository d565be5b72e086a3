// SPDX-License-Identifier: Apache-2.0
// A uvnvme driver instance: its emulated controllers and their host queues (qid 1..N per controller, as
// NVMe I/O queues; the admin queue is not emulated). It is the ControlTarget the control socket manages.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "common/result.h"
#include "uvnvme/control_protocol.h"
#include "uvnvme/controller.h"
#include "uvnvme/host_queue.h"
#include "uvnvme/model.h"

namespace nvmeadapt::uvnvme {

struct DriverConfig {
  uint32_t controllers = 1;
  uint32_t queues_per_controller = 1;
  uint32_t queue_entries = 1024;
  uint32_t controller_threads = 1;
  // Device threads in all: 0 gives every controller its controller_threads; fewer than controllers (with
  // one thread per controller) makes controller c run on controller (c mod device_threads)'s thread, so
  // one device thread per CPU serves several controllers (EmulatedController::ServeOnThreadsOf).
  uint32_t device_threads = 0;
  ThreadPlacement controller_placement;  // CPUs and real-time class of the controller threads
  DeviceClock device_clock = DeviceClock::kSleeping;  // how the controller threads wait (controller.h)
  uint32_t timing_periods = 1;                        // DeviceTiming periods per queue (one per load phase)
  ModelConfig model;
  Coalescing coalescing;  // every queue's at start
  ReapMode initial_mode = ReapMode::kInterrupt;
  std::chrono::milliseconds ack_timeout{2000};  // how long SetMode/SetCoalescing wait for the acknowledgement
};

inline constexpr uint32_t kMaxControllers = 64;
inline constexpr uint32_t kMaxQueuesPerController = 64;

class Driver : public ControlTarget {
 public:
  static Result<std::unique_ptr<Driver>> Create(const DriverConfig& config);
  ~Driver() override;

  Status Start();  // starts the controller threads
  void Stop();     // stops them; queues keep their counters

  const DriverConfig& config() const { return config_; }
  const std::vector<std::unique_ptr<HostQueue>>& queues() const { return queues_; }
  HostQueue* FindQueue(uint32_t ctrl, uint32_t qid) const;
  double ControllerCpuSeconds() const;
  uint64_t InterruptsSent(uint32_t ctrl, uint32_t qid) const;
  // The controllers' DeviceTiming periods (EmulatedController::EnterTimingPeriod and friends).
  void EnterTimingPeriod(uint32_t period);
  Status CloseTiming();
  std::vector<DeviceTiming> Timing(uint32_t ctrl, uint32_t qid) const;

  std::vector<QueueInfo> ListQueues() const override;
  Status SetMode(uint32_t ctrl, uint32_t qid, ReapMode mode) override;
  Status SetCoalescing(uint32_t ctrl, uint32_t qid, Coalescing coalescing) override;

 private:
  explicit Driver(const DriverConfig& config) : config_(config) {}
  Result<HostQueue*> Queue(uint32_t ctrl, uint32_t qid) const;

  DriverConfig config_;
  std::vector<std::unique_ptr<EmulatedController>> controllers_;
  std::vector<std::unique_ptr<HostQueue>> queues_;  // controller-major order
};

Status ValidateDriverConfig(const DriverConfig& config);
// The emulated device's threads: controllers x controller threads, or fewer where controllers share.
uint64_t DeviceThreads(const DriverConfig& config);

}  // namespace nvmeadapt::uvnvme
