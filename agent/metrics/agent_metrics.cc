// SPDX-License-Identifier: Apache-2.0
#include "agent/metrics/agent_metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "agent/metrics/metrics_state.h"
#include "common/log.h"

namespace nvmeadapt::metrics {
namespace {

constexpr double kSecondsPerNano = 1e-9;
constexpr size_t kExposerThreads = 2;

// An IPv4 listen address (validated) as a socket address; 0.0.0.0 becomes 127.0.0.1 when `to_reach` it.
sockaddr_in SocketAddress(const std::string& listen_address, int port, bool to_reach) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, listen_address.substr(0, listen_address.rfind(':')).c_str(), &address.sin_addr);
  if (to_reach && address.sin_addr.s_addr == htonl(INADDR_ANY)) address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Connects to the listener and hangs up; errors do not matter (it may be gone already).
void WakeListener(const sockaddr_in& address) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  close(fd);
}

// civetweb says only "possible problem binding to port": binding the address ourselves finds out why.
std::string WhyBindFails(const std::string& listen_address) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return SysError("socket", "AF_INET", errno).message;
  const int yes = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // as civetweb does; only a diagnosis
  const int port = std::stoi(listen_address.substr(listen_address.rfind(':') + 1));
  const sockaddr_in address = SocketAddress(listen_address, port, false);
  std::string why;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    why = SysError("bind", listen_address, errno).message;
  }
  close(fd);
  return why;
}

}  // namespace

AgentMetrics::AgentMetrics(size_t max_tracked_queues, BuildInfo build)
    : state_(std::make_shared<MetricsState>(max_tracked_queues, std::move(build))) {}

AgentMetrics::~AgentMetrics() {
  if (!exposer_) return;
  // civetweb's listener thread notices a stop only when its poll() returns, after up to 2 s; connections
  // to it wake it up at once.
  const sockaddr_in wake_address = SocketAddress(listen_address_, port_, true);
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load()) {
      WakeListener(wake_address);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  exposer_.reset();
  stopped.store(true);
  waker.join();
}

Status AgentMetrics::Start(const std::string& listen_address) {
  if (exposer_) return MakeError(ErrorCode::kFailedPrecondition, "metrics: already serving");
  NA_RETURN_IF_ERROR(ValidateListenAddress(listen_address));
  try {
    auto exposer = std::make_unique<prometheus::Exposer>(listen_address, kExposerThreads);
    exposer->RegisterCollectable(state_);
    const std::vector<int> ports = exposer->GetListeningPorts();
    if (ports.empty()) {
      return MakeError(ErrorCode::kUnavailable, "metrics: " + listen_address + ": no listening port");
    }
    port_ = ports.front();
    listen_address_ = listen_address;
    exposer_ = std::move(exposer);
  } catch (const std::exception& e) {
    const std::string why = WhyBindFails(listen_address);
    return MakeError(ErrorCode::kUnavailable, "metrics: cannot serve on " + listen_address + ": " +
                                                  (why.empty() ? std::string(e.what()) : why));
  }
  NA_INFO("metrics: serving /metrics on " << listen_address << " (port " << port_ << ")");
  return OkStatus();
}

QueueId AgentMetrics::AddQueue(const QueueLabels& labels, bool eligible) {
  std::string source = SanitizeLabelValue(labels.source);
  std::string controller = SanitizeLabelValue(labels.controller);
  std::string queue = std::to_string(labels.queue);
  std::lock_guard lock(state_->mutex);
  auto key = std::make_tuple(source, controller, queue);
  if (auto it = state_->ids_by_labels.find(key); it != state_->ids_by_labels.end()) {
    QueueSeries& known = state_->queues.at(it->second);
    known.eligible = eligible;
    known.transport = SanitizeLabelValue(labels.transport);
    known.layer = SanitizeLabelValue(labels.layer);
    known.kernel_name = SanitizeLabelValue(labels.kernel_name.empty() ? labels.controller : labels.kernel_name);
    known.model = SanitizeLabelValue(labels.model);
    known.firmware = SanitizeLabelValue(labels.firmware);
    return QueueId{it->second};
  }
  const uint64_t id = state_->next_id++;
  QueueSeries& series = state_->queues[id];
  series.source = std::move(source);
  series.controller = std::move(controller);
  series.queue = std::move(queue);
  series.transport = SanitizeLabelValue(labels.transport);
  series.layer = SanitizeLabelValue(labels.layer);
  series.kernel_name = SanitizeLabelValue(labels.kernel_name.empty() ? labels.controller : labels.kernel_name);
  series.model = SanitizeLabelValue(labels.model);
  series.firmware = SanitizeLabelValue(labels.firmware);
  series.eligible = eligible;
  series.tracked = state_->agent.tracked < state_->agent.max_tracked;
  ++(series.tracked ? state_->agent.tracked : state_->agent.untracked);
  state_->ids_by_labels.emplace(std::move(key), id);
  return QueueId{id};
}

void AgentMetrics::RemoveQueue(QueueId id) {
  std::lock_guard lock(state_->mutex);
  auto it = state_->queues.find(static_cast<uint64_t>(id));
  if (it == state_->queues.end()) return;
  const bool was_tracked = it->second.tracked;
  state_->ids_by_labels.erase(std::make_tuple(it->second.source, it->second.controller, it->second.queue));
  state_->queues.erase(it);
  if (!was_tracked) {
    --state_->agent.untracked;
    return;
  }
  --state_->agent.tracked;
  for (auto& [other_id, series] : state_->queues) {
    if (!series.tracked) {  // the oldest untracked queue takes the freed slot
      series.tracked = true;
      ++state_->agent.tracked;
      --state_->agent.untracked;
      break;
    }
  }
}

bool AgentMetrics::IsTracked(QueueId id) const {
  std::lock_guard lock(state_->mutex);
  const QueueSeries* series = state_->Find(static_cast<uint64_t>(id));
  return series != nullptr && series->tracked;
}

void AgentMetrics::ExportPerQueueIntervalHistogram(bool on) {
  std::lock_guard lock(state_->mutex);
  state_->agent.per_queue_interval_histogram = on;
}

void AgentMetrics::SetPollThreshold(QueueId id, engine::Nanos poll_threshold) {
  std::lock_guard lock(state_->mutex);
  if (QueueSeries* series = state_->Find(static_cast<uint64_t>(id))) {
    series->poll_threshold_seconds = static_cast<double>(poll_threshold) * kSecondsPerNano;
  }
}

void AgentMetrics::UpdateQueue(QueueId id, const collect::QueueCounters& counters, ReapMode mode) {
  std::lock_guard lock(state_->mutex);
  QueueSeries* series = state_->Find(static_cast<uint64_t>(id));
  if (series == nullptr) return;
  series->mode = mode;
  series->completions = counters.completions;
  series->bytes = counters.bytes;
  series->interrupt_completions = counters.interrupt_completions;
  series->poll_completions = counters.poll_completions;
  series->interrupts = counters.interrupts;
  series->abandoned_completions = counters.abandoned_completions;
  series->pace_miss_retries = counters.pace_miss_retries;
  series->wakeups = counters.wakeups;
  series->interval_histogram = counters.interval_histogram;
}

void AgentMetrics::OnWindow(QueueId id, engine::Nanos average_interval) {
  std::lock_guard lock(state_->mutex);
  if (QueueSeries* series = state_->Find(static_cast<uint64_t>(id))) {
    series->average_interval_seconds = static_cast<double>(average_interval) * kSecondsPerNano;
  }
}

void AgentMetrics::OnSwitch(QueueId id, engine::Reason reason) {
  std::lock_guard lock(state_->mutex);
  if (QueueSeries* series = state_->Find(static_cast<uint64_t>(id))) ++series->switches[reason];
}

void AgentMetrics::OnPollTry(QueueId id, PollTryResult result) {
  std::lock_guard lock(state_->mutex);
  if (QueueSeries* series = state_->Find(static_cast<uint64_t>(id))) {
    ++series->poll_tries[static_cast<size_t>(result)];
  }
}

void AgentMetrics::SetPayoff(QueueId id, const engine::QueuePayoff& payoff, std::optional<double> polling_cpu_seconds) {
  std::lock_guard lock(state_->mutex);
  if (QueueSeries* series = state_->Find(static_cast<uint64_t>(id))) {
    series->payoff = payoff;
    series->polling_cpu_seconds = polling_cpu_seconds;
  }
}

void AgentMetrics::OnLeverError(std::string_view lever, ErrorCode error) {
  std::lock_guard lock(state_->mutex);
  ++state_->agent.lever_errors[{state_->lever_names.Admit(lever), std::string(ErrorCodeName(error))}];
}

void AgentMetrics::OnSwitchLatency(std::string_view lever, engine::Nanos latency) {
  const double seconds = static_cast<double>(std::max<engine::Nanos>(latency, 0)) / 1e9;
  std::lock_guard lock(state_->mutex);
  SwitchLatency& h = state_->agent.switch_latency[state_->lever_names.Admit(lever.empty() ? "none" : lever)];
  size_t bucket = 0;
  while (bucket < kSwitchLatencyBounds.size() && seconds > kSwitchLatencyBounds[bucket]) ++bucket;
  if (bucket < kSwitchLatencyBounds.size()) ++h.buckets[bucket];
  ++h.count;
  h.sum_seconds += seconds;
}

void AgentMetrics::SetCollector(std::string_view name, const collect::CollectorStats& stats) {
  std::lock_guard lock(state_->mutex);
  AgentWideState& agent = state_->agent;
  agent.collector = SanitizeLabelValue(name);
  agent.ringbuf_drops = stats.ringbuf_drops;
  agent.collector_records = stats.records;
  agent.bpf_programs_attached = stats.programs.size();
  agent.bpf_programs.clear();
  for (const collect::ProgramStats& program : stats.programs) {
    BpfProgramTotals& totals = agent.bpf_programs[state_->bpf_program_names.Admit(program.name)];
    totals.runs += program.run_count;
    totals.run_time_ns += program.run_time_ns;
  }
}

void AgentMetrics::OnGrpcRequest(std::string_view method, int code) {
  std::lock_guard lock(state_->mutex);
  ++state_->agent.grpc_requests[{state_->grpc_methods.Admit(method), std::string(GrpcCodeName(code))}];
}

void AgentMetrics::OnConfigReload(bool applied) {
  std::lock_guard lock(state_->mutex);
  ++(applied ? state_->agent.config_reloads_applied : state_->agent.config_reloads_refused);
  state_->agent.last_config_reload_ok = applied;
}

void AgentMetrics::SetPolicyInfo(std::string_view source, std::string_view hash, std::optional<double> drift_since) {
  std::lock_guard lock(state_->mutex);
  state_->agent.policy.emplace(SanitizeLabelValue(source), SanitizeLabelValue(hash));
  state_->agent.policy_drift_since = drift_since;
}

void AgentMetrics::SetJournalUnrestored(uint64_t entries) {
  std::lock_guard lock(state_->mutex);
  state_->agent.journal_unrestored = entries;
}

void AgentMetrics::SetPause(std::optional<std::pair<std::string, double>> pause) {
  std::lock_guard lock(state_->mutex);
  state_->agent.pause = std::move(pause);
}

void AgentMetrics::SetNode(const NodeSeries& node) {
  std::lock_guard lock(state_->mutex);
  state_->agent.node = node;
}

std::vector<prometheus::MetricFamily> AgentMetrics::Collect() const { return state_->Collect(); }

std::string AgentMetrics::Render() const { return prometheus::TextSerializer().Serialize(Collect()); }

}  // namespace nvmeadapt::metrics
