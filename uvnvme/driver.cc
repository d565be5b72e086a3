// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/driver.h"

#include <string>

namespace nvmeadapt::uvnvme {

Status ValidateDriverConfig(const DriverConfig& config) {
  auto bad = [](std::string what) { return MakeError(ErrorCode::kInvalidArgument, std::move(what)); };
  if (config.controllers < 1 || config.controllers > kMaxControllers) {
    return bad("controllers must be in [1, " + std::to_string(kMaxControllers) + "]");
  }
  if (config.queues_per_controller < 1 || config.queues_per_controller > kMaxQueuesPerController) {
    return bad("queues per controller must be in [1, " + std::to_string(kMaxQueuesPerController) + "]");
  }
  if (config.queue_entries < kMinQueueEntries || config.queue_entries > kMaxQueueEntries) {
    return bad("queue entries must be in [" + std::to_string(kMinQueueEntries) + ", " +
               std::to_string(kMaxQueueEntries) + "]");
  }
  if (config.timing_periods < 1 || config.timing_periods > 65536) return bad("timing periods must be in [1, 65536]");
  if (config.controller_threads < 1 || config.controller_threads > config.queues_per_controller) {
    return bad("controller threads must be in [1, queues per controller]");
  }
  if (config.device_threads > config.controllers * config.controller_threads) {
    return bad("device threads must be at most controllers x controller threads");
  }
  if (config.device_threads != 0 && config.device_threads < config.controllers && config.controller_threads != 1) {
    return bad("controllers can share device threads only with one controller thread each");
  }
  if (config.coalescing.threshold > kMaxCoalesceThreshold || config.coalescing.time_us > kMaxCoalesceTimeUs) {
    return bad("coalescing must have threshold <= 256 and time_us <= 25500");
  }
  return ValidateModel(config.model);
}

uint64_t DeviceThreads(const DriverConfig& config) {
  return config.device_threads != 0 ? config.device_threads : uint64_t{config.controllers} * config.controller_threads;
}

Result<std::unique_ptr<Driver>> Driver::Create(const DriverConfig& config) {
  if (Status valid = ValidateDriverConfig(config); !valid) return std::move(valid).take_error();
  std::unique_ptr<Driver> driver(new Driver(config));
  for (uint32_t c = 0; c < config.controllers; ++c) {
    driver->controllers_.push_back(std::make_unique<EmulatedController>(c, config.model, config.controller_threads,
                                                                        config.device_clock, config.timing_periods));
    if (config.device_threads != 0 && c >= config.device_threads) {
      Status shared = driver->controllers_.back()->ServeOnThreadsOf(*driver->controllers_[c % config.device_threads]);
      if (!shared) return std::move(shared).take_error();
    }
    for (uint32_t qid = 1; qid <= config.queues_per_controller; ++qid) {
      auto queue = HostQueue::Create(*driver->controllers_.back(), qid, config.queue_entries,
                                     config.initial_mode);
      if (!queue) return std::move(queue).take_error();
      driver->queues_.push_back(std::move(*queue));
      if (Status set = driver->controllers_.back()->SetCoalescing(qid, config.coalescing, config.ack_timeout); !set) {
        return std::move(set).take_error();
      }
    }
  }
  return driver;
}

Driver::~Driver() {
  Stop();  // controller threads write into the queues' memory: they go first
}

Status Driver::Start() {
  for (auto& controller : controllers_) {
    if (Status started = controller->Start(config_.controller_placement); !started) return started;
  }
  return OkStatus();
}

void Driver::Stop() {
  for (auto& controller : controllers_) controller->Stop();
}

HostQueue* Driver::FindQueue(uint32_t ctrl, uint32_t qid) const {
  if (ctrl >= config_.controllers || qid < 1 || qid > config_.queues_per_controller) return nullptr;
  return queues_[size_t{ctrl} * config_.queues_per_controller + (qid - 1)].get();
}

Result<HostQueue*> Driver::Queue(uint32_t ctrl, uint32_t qid) const {
  if (ctrl >= config_.controllers) {
    return MakeError(ErrorCode::kNotFound, "unknown ctrl " + std::to_string(ctrl) + " (this driver has " +
                                               std::to_string(config_.controllers) + ")");
  }
  HostQueue* queue = FindQueue(ctrl, qid);
  if (!queue) {
    return MakeError(ErrorCode::kNotFound, "unknown qid " + std::to_string(qid) + " on ctrl " +
                                               std::to_string(ctrl) + " (I/O queues are 1.." +
                                               std::to_string(config_.queues_per_controller) + ")");
  }
  return queue;
}

double Driver::ControllerCpuSeconds() const {
  double total = 0;
  for (auto& controller : controllers_) total += controller->CpuSeconds();
  return total;
}

uint64_t Driver::InterruptsSent(uint32_t ctrl, uint32_t qid) const {
  return ctrl < controllers_.size() ? controllers_[ctrl]->InterruptsSent(qid) : 0;
}

void Driver::EnterTimingPeriod(uint32_t period) {
  for (auto& controller : controllers_) controller->EnterTimingPeriod(period);
}

Status Driver::CloseTiming() {
  for (auto& controller : controllers_) {
    if (Status closed = controller->CloseTiming(config_.ack_timeout); !closed) return closed;
  }
  return OkStatus();
}

std::vector<DeviceTiming> Driver::Timing(uint32_t ctrl, uint32_t qid) const {
  return ctrl < controllers_.size() ? controllers_[ctrl]->Timing(qid) : std::vector<DeviceTiming>{};
}

std::vector<QueueInfo> Driver::ListQueues() const {
  std::vector<QueueInfo> list;
  for (const auto& queue : queues_) {
    QueueCounters counters = queue->Counters();
    list.push_back(QueueInfo{queue->ctrl(), queue->qid(), queue->mode(), counters.submitted, counters.completed,
                             counters.wakeups, counters.mode_switches,
                             controllers_[queue->ctrl()]->GetCoalescing(queue->qid())});
  }
  return list;
}

Status Driver::SetMode(uint32_t ctrl, uint32_t qid, ReapMode mode) {
  auto queue = Queue(ctrl, qid);
  if (!queue) return std::move(queue).take_error();
  return (*queue)->SetMode(mode, config_.ack_timeout);
}

Status Driver::SetCoalescing(uint32_t ctrl, uint32_t qid, Coalescing coalescing) {
  auto queue = Queue(ctrl, qid);
  if (!queue) return std::move(queue).take_error();
  return controllers_[ctrl]->SetCoalescing(qid, coalescing, config_.ack_timeout);
}

}  // namespace nvmeadapt::uvnvme
