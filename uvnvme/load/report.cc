// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/load/report.h"

#include <cstdio>
#include <sstream>

namespace nvmeadapt::uvnvme::load {
namespace {

using nlohmann::json;

double Rate(uint64_t count, double seconds) { return seconds > 0 ? static_cast<double>(count) / seconds : 0; }

// The application's work done per second (--io-work-us): CPU seconds of work, as calibrated, per second of
// the run. Beside the IOPS it shows what the application itself got done, which is what a CPU taken by
// polling (or by another task) costs it.
double WorkPerSecond(const LoadOptions& options, uint64_t worked, double seconds) {
  return Rate(worked, seconds) * static_cast<double>(options.io_work_ns) / 1e9;
}

void AddLatency(json& out, const LatencyHistogram& latency) {
  out["lat_p50_us"] = latency.Quantile(0.50) / 1000.0;
  out["lat_p99_us"] = latency.Quantile(0.99) / 1000.0;
  out["lat_p999_us"] = latency.Quantile(0.999) / 1000.0;
}

// The controller's side: how late it posted completions, and the intervals between them (controller.h).
void AddDeviceTiming(json& out, const DeviceTiming& timing, bool available) {
  if (!available) {
    for (const char* key : {"lateness_p50_us", "lateness_p99_us", "lateness_max_us", "interval_max_us",
                            "interval_histogram_us", "signal_write_p50_us", "signal_write_p99_us", "signals"}) {
      out[key] = nullptr;
    }
    return;
  }
  out["lateness_p50_us"] = timing.lateness.Quantile(0.50) / 1000.0;
  out["lateness_p99_us"] = timing.lateness.Quantile(0.99) / 1000.0;
  out["lateness_max_us"] = static_cast<double>(timing.lateness_max_ns) / 1000.0;
  out["interval_max_us"] = static_cast<double>(timing.interval_max_ns) / 1000.0;
  out["signals"] = timing.signal_write.Count();
  out["signal_write_p50_us"] = timing.signal_write.Quantile(0.50) / 1000.0;
  out["signal_write_p99_us"] = timing.signal_write.Quantile(0.99) / 1000.0;
  json histogram = json::array();  // [low_us, high_us, count] for each non-empty log2 bucket
  for (size_t b = 0; b < DeviceTiming::kIntervalBuckets; ++b) {
    if (timing.intervals[b] == 0) continue;
    const int64_t low = DeviceTiming::IntervalBucketLowUs(b);
    const json high = b + 1 == DeviceTiming::kIntervalBuckets ? json(nullptr) : json(b == 0 ? 1 : low * 2);
    histogram.push_back(json::array({low, high, timing.intervals[b]}));
  }
  out["interval_histogram_us"] = std::move(histogram);
}

std::string ModeText(const LoadOptions& options) {
  return options.external ? "external" : std::string(ReapModeName(options.driver.initial_mode));
}

// One object a phase, over every queue.
json PhasesJson(const LoadOptions& options, const LoadResult& result) {
  json phases = json::array();
  for (size_t i = 0; i < result.phases.size(); ++i) {
    const PhaseResult& phase = result.phases[i];
    LatencyHistogram latency;
    DeviceTiming device;
    uint64_t completed = 0;
    uint64_t poll_completed = 0;
    uint64_t worked = 0;
    for (const QueueResult& queue : result.queues) {
      latency.Merge(queue.phases[i].latency);
      device.Merge(queue.phases[i].device);
      completed += queue.phases[i].completed;
      poll_completed += queue.phases[i].poll_completed;
      worked += queue.phases[i].worked;
    }
    json p = {{"label", phase.phase.label},
              {"seconds", phase.seconds},
              {"start_monotonic_ns", phase.start_ns},
              {"end_monotonic_ns", phase.end_ns},
              {"qd", phase.phase.queue_depth},
              {"mode", phase.phase.mode ? json(std::string(ReapModeName(*phase.phase.mode))) : json(nullptr)},
              {"completed", completed},
              {"poll_completed", poll_completed},
              {"iops", Rate(completed, phase.seconds)},
              {"app_work_per_second", WorkPerSecond(options, worked, phase.seconds)},
              {"cpu_seconds", phase.cpu.process},
              {"host_cpu_seconds", phase.cpu.host},
              {"controller_cpu_seconds", phase.cpu.controller},
              {"wakeups", phase.wakeups},
              {"mode_switches", phase.mode_switches}};
    AddLatency(p, latency);
    AddDeviceTiming(p, device, result.device_timing);
    phases.push_back(std::move(p));
  }
  return phases;
}

json ConfigJson(const LoadOptions& options) {
  const DriverConfig& driver = options.driver;
  return {{"controllers", driver.controllers},
          {"queues_per_controller", driver.queues_per_controller},
          {"queue_entries", driver.queue_entries},
          {"controller_threads", driver.controller_threads},
          {"jobs", options.jobs},
          {"bs", options.block_bytes},
          {"rwmixread", options.read_percent},
          {"io_work_us", static_cast<double>(options.io_work_ns) / 1000.0},
          {"model", DescribeModel(driver.model)},
          {"mode", ModeText(options)},
          {"device_clock", options.device_clock_requested},
          {"coalesce_threshold", driver.coalescing.threshold},
          {"coalesce_time_us", driver.coalescing.time_us}};
}

}  // namespace

json ReportJson(const LoadOptions& options, const LoadResult& result) {
  json report;
  QueueCounters total;
  uint64_t interrupts = 0;
  LatencyHistogram all;
  DeviceTiming all_device;
  json queues = json::array();
  for (const QueueResult& queue : result.queues) {
    LatencyHistogram latency;
    DeviceTiming device;
    for (const QueuePhaseResult& phase : queue.phases) {
      latency.Merge(phase.latency);
      device.Merge(phase.device);
    }
    all.Merge(latency);
    all_device.Merge(device);
    json q = {{"ctrl", queue.ctrl},
              {"qid", queue.qid},
              {"mode", std::string(ReapModeName(queue.final_mode))},
              {"submitted", queue.counters.submitted},
              {"completed", queue.counters.completed},
              {"poll_completed", queue.counters.poll_completed},
              {"reaps", queue.counters.reaps},
              {"iops", Rate(queue.counters.completed, result.seconds)},
              {"wakeups", queue.counters.wakeups},
              {"interrupts", queue.interrupts},
              {"mode_switches", queue.counters.mode_switches},
              {"protocol_errors", queue.counters.protocol_errors},
              {"host_cpu_seconds", queue.host_cpu}};
    AddLatency(q, latency);
    AddDeviceTiming(q, device, result.device_timing);
    queues.push_back(std::move(q));
    total.submitted += queue.counters.submitted;
    total.completed += queue.counters.completed;
    total.poll_completed += queue.counters.poll_completed;
    total.wakeups += queue.counters.wakeups;
    total.mode_switches += queue.counters.mode_switches;
    total.protocol_errors += queue.counters.protocol_errors;
    interrupts += queue.interrupts;
  }
  report["submitted"] = total.submitted;
  report["completed"] = total.completed;
  report["poll_completed"] = total.poll_completed;
  report["iops"] = Rate(total.completed, result.seconds);
  AddLatency(report, all);
  report["device_clock"] = std::string(DeviceClockName(result.device_clock));
  report["device_threads"] = result.device_threads;
  AddDeviceTiming(report, all_device, result.device_timing);
  report["cpu_seconds"] = result.cpu.process;
  report["host_cpu_seconds"] = result.cpu.host;
  report["controller_cpu_seconds"] = result.cpu.controller;
  report["mode_switches"] = total.mode_switches;
  report["wakeups"] = total.wakeups;
  report["interrupts"] = interrupts;
  report["protocol_errors"] = total.protocol_errors;
  report["seconds"] = result.seconds;
  report["interrupted"] = result.interrupted;
  report["queues"] = std::move(queues);

  uint64_t worked = 0;
  for (const QueueResult& queue : result.queues) {
    for (const QueuePhaseResult& phase : queue.phases) worked += phase.worked;
  }
  report["app_work"] = {{"io_work_us", static_cast<double>(options.io_work_ns) / 1000.0},
                        {"loops_per_io", result.work_loops_per_io},
                        {"ios_worked", worked},
                        {"per_second", WorkPerSecond(options, worked, result.seconds)}};
  report["phases"] = PhasesJson(options, result);
  report["config"] = ConfigJson(options);
  return report;
}

std::string ReportText(const LoadOptions& options, const LoadResult& result) {
  const json r = ReportJson(options, result);
  std::ostringstream out;
  char line[256];
  out << "uvnvme-load: " << options.driver.controllers << " controller(s) x " << options.driver.queues_per_controller
      << " queue(s), " << options.jobs << " job(s), bs " << options.block_bytes << ", " << options.read_percent
      << "% reads, mode " << ModeText(options) << "\n  model: " << DescribeModel(options.driver.model) << "\n";
  std::snprintf(line, sizeof line,
                "  %.2f s%s: %llu submitted, %llu completed, %.0f IOPS, latency p50 %.1f / p99 %.1f / p99.9 %.1f us\n",
                result.seconds, result.interrupted ? " (interrupted)" : "",
                static_cast<unsigned long long>(r["submitted"].get<uint64_t>()),
                static_cast<unsigned long long>(r["completed"].get<uint64_t>()), r["iops"].get<double>(),
                r["lat_p50_us"].get<double>(), r["lat_p99_us"].get<double>(), r["lat_p999_us"].get<double>());
  out << line;
  std::snprintf(line, sizeof line,
                "  cpu %.2f s (host reapers %.2f s, emulated controllers %.2f s), %llu wakeups, %llu mode switches\n",
                result.cpu.process, result.cpu.host, result.cpu.controller,
                static_cast<unsigned long long>(r["wakeups"].get<uint64_t>()),
                static_cast<unsigned long long>(r["mode_switches"].get<uint64_t>()));
  out << line;
  if (r["lateness_p99_us"].is_number()) {
    std::snprintf(line, sizeof line,
                  "  device clock %s: completions posted late by p50 %.1f / p99 %.1f / max %.1f us; longest gap %.1f us\n",
                  r["device_clock"].get<std::string>().c_str(), r["lateness_p50_us"].get<double>(),
                  r["lateness_p99_us"].get<double>(), r["lateness_max_us"].get<double>(),
                  r["interval_max_us"].get<double>());
    out << line;
  }
  for (const json& q : r["queues"]) {
    std::snprintf(line, sizeof line, "  c%uq%u %-9s %10.0f IOPS  p99 %8.1f us  wakeups %llu  switches %llu\n",
                  q["ctrl"].get<unsigned>(), q["qid"].get<unsigned>(), q["mode"].get<std::string>().c_str(),
                  q["iops"].get<double>(), q["lat_p99_us"].get<double>(),
                  static_cast<unsigned long long>(q["wakeups"].get<uint64_t>()),
                  static_cast<unsigned long long>(q["mode_switches"].get<uint64_t>()));
    out << line;
  }
  if (options.io_work_ns > 0) {
    std::snprintf(line, sizeof line, "  application work %.1f us per I/O: %.3f CPU seconds of it per second\n",
                  static_cast<double>(options.io_work_ns) / 1000.0, r["app_work"]["per_second"].get<double>());
    out << line;
  }
  if (r["phases"].size() > 1) {
    for (const json& p : r["phases"]) {
      std::snprintf(line, sizeof line, "  phase %-18s %10.0f IOPS  p99 %8.1f us  cpu %.2f s (host %.2f s)\n",
                    p["label"].get<std::string>().c_str(), p["iops"].get<double>(), p["lat_p99_us"].get<double>(),
                    p["cpu_seconds"].get<double>(), p["host_cpu_seconds"].get<double>());
      out << line;
    }
  }
  if (r["protocol_errors"].get<uint64_t>() > 0) out << "  PROTOCOL ERRORS: " << r["protocol_errors"] << "\n";
  return out.str();
}

}  // namespace nvmeadapt::uvnvme::load
