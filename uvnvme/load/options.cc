#include "uvnvme/load/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>

namespace nvmeadapt::uvnvme::load {
namespace {

Error Bad(std::string_view arg, std::string what) {
  return MakeError(ErrorCode::kInvalidArgument, std::string(arg) + ": " + std::move(what));
}

Result<double> ParseNumber(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "expected a non-negative number, got '" + std::string(text) + "'");
  }
  return value;
}

// A number with an optional suffix from `units` (longest match first).
Result<double> ParseWithUnits(std::string_view text, const std::vector<std::pair<std::string_view, double>>& units,
                              double default_scale, std::string_view expected) {
  for (const auto& [suffix, scale] : units) {
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      auto number = ParseNumber(text.substr(0, text.size() - suffix.size()));
      if (number) return *number * scale;
      break;
    }
  }
  auto number = ParseNumber(text);
  if (!number) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "expected " + std::string(expected) + ", got '" + std::string(text) + "'");
  }
  return *number * default_scale;
}

Result<uint32_t> ParseU32(std::string_view text, uint32_t min, uint32_t max) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return MakeError(ErrorCode::kInvalidArgument, "expected an integer in [" + std::to_string(min) + ", " +
                                                      std::to_string(max) + "], got '" + std::string(text) + "'");
  }
  return static_cast<uint32_t>(value);
}

Result<std::optional<ReapMode>> ParsePhaseMode(std::string_view text) {
  if (auto mode = ParseReapMode(text)) return std::optional<ReapMode>(*mode);
  return MakeError(ErrorCode::kInvalidArgument, "unknown mode '" + std::string(text) + "' (interrupt, poll)");
}

}  // namespace

DeviceClock AutoDeviceClock(const DriverConfig& driver, const std::vector<int>& host_cpus) {
  const std::vector<int>& device = driver.controller_placement.cpus;
  if (device.empty() || host_cpus.empty()) return DeviceClock::kSleeping;
  for (int cpu : device) {
    if (std::find(host_cpus.begin(), host_cpus.end(), cpu) != host_cpus.end()) return DeviceClock::kSleeping;
  }
  return DeviceThreads(driver) <= device.size() ? DeviceClock::kFaithful : DeviceClock::kSleeping;
}

Result<int64_t> ParseDurationNs(std::string_view text) {
  auto value = ParseWithUnits(text, {{"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"s", 1e9}, {"m", 60e9}}, 1e9,
                              "a duration such as 2s, 500ms or 100us");
  if (!value) return std::move(value).take_error();
  if (*value > 1e9 * 86400 * 365) return MakeError(ErrorCode::kInvalidArgument, "duration too long");
  return static_cast<int64_t>(std::llround(*value));
}

Result<uint64_t> ParseCount(std::string_view text) {
  auto value = ParseWithUnits(text, {{"k", 1e3}, {"m", 1e6}, {"g", 1e9}}, 1, "a count such as 500k");
  if (!value) return std::move(value).take_error();
  if (*value > 1e15 || *value != std::floor(*value)) return MakeError(ErrorCode::kInvalidArgument, "expected a whole count");
  return static_cast<uint64_t>(*value);
}

Result<uint64_t> ParseBytes(std::string_view text) {
  auto value = ParseWithUnits(text, {{"k", 1024.0}, {"m", 1048576.0}}, 1, "a size such as 4k");
  if (!value) return std::move(value).take_error();
  if (*value > 1e12 || *value != std::floor(*value)) return MakeError(ErrorCode::kInvalidArgument, "expected whole bytes");
  return static_cast<uint64_t>(*value);
}

Result<std::vector<Phase>> ParsePhases(std::string_view profile) {
  std::vector<Phase> phases;
  while (!profile.empty()) {
    const size_t comma = profile.find(',');
    const std::string_view item = profile.substr(0, comma);
    profile = comma == std::string_view::npos ? std::string_view() : profile.substr(comma + 1);
    Phase phase;
    phase.label = std::string(item);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': expected DURATION:qdN or DURATION:idle");
    }
    auto duration = ParseDurationNs(item.substr(0, colon));
    if (!duration || *duration <= 0) {
      return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': bad duration");
    }
    phase.duration_ns = *duration;
    std::string_view rest = item.substr(colon + 1);
    const size_t colon2 = rest.find(':');
    const std::string_view load = rest.substr(0, colon2);
    if (load == "idle") {
      phase.queue_depth = 0;
    } else if (load.starts_with("qd")) {
      auto depth = ParseU32(load.substr(2), 1, kMaxQueueEntries - 1);
      if (!depth) return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': " + depth.error().message);
      phase.queue_depth = *depth;
    } else {
      return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': expected qdN or idle after the duration");
    }
    if (colon2 != std::string_view::npos) {
      auto mode = ParsePhaseMode(rest.substr(colon2 + 1));
      if (!mode) return MakeError(ErrorCode::kInvalidArgument, "phase '" + phase.label + "': " + mode.error().message);
      phase.mode = *mode;
    }
    phases.push_back(std::move(phase));
    if (comma != std::string_view::npos && profile.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "trailing ',' in the profile");
    }
  }
  if (phases.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty profile");
  return phases;
}

Result<LoadOptions> ParseLoadOptions(std::span<const std::string_view> args) {
  LoadOptions options;
  int64_t runtime_ns = 5'000'000'000;
  std::optional<std::string_view> phases_text;
  std::string_view mode_text = "interrupt";
  std::string_view model_text = "media";
  bool write_latency_given = false;

  using Handler = std::function<Status(std::string_view)>;
  auto u32 = [](uint32_t& field, uint32_t min, uint32_t max) {
    return [&field, min, max](std::string_view v) -> Status {
      auto parsed = ParseU32(v, min, max);
      if (!parsed) return std::move(parsed).take_error();
      field = *parsed;
      return OkStatus();
    };
  };
  auto micros = [](int64_t& field) {
    return [&field](std::string_view v) -> Status {
      auto parsed = ParseNumber(v);
      if (!parsed) return std::move(parsed).take_error();
      field = static_cast<int64_t>(std::llround(*parsed * 1000));
      return OkStatus();
    };
  };
  DriverConfig& driver = options.driver;
  std::map<std::string_view, Handler> with_value = {
      {"--controllers", u32(driver.controllers, 1, kMaxControllers)},
      {"--queues", u32(driver.queues_per_controller, 1, kMaxQueuesPerController)},
      {"--queue-entries", u32(driver.queue_entries, kMinQueueEntries, kMaxQueueEntries)},
      {"--controller-threads", u32(driver.controller_threads, 1, kMaxQueuesPerController)},
      {"--jobs", u32(options.jobs, 1, 4096)},
      {"--qd", u32(options.queue_depth, 1, kMaxQueueEntries - 1)},
      {"--rwmixread", u32(options.read_percent, 0, 100)},
      {"--latency-us", micros(driver.model.read_latency_ns)},
      {"--write-latency-us", [&](std::string_view v) { write_latency_given = true; return micros(driver.model.write_latency_ns)(v); }},
      {"--jitter-us", micros(driver.model.jitter_ns)},
      {"--bs", [&](std::string_view v) -> Status {
         auto bytes = ParseBytes(v);
         if (!bytes) return std::move(bytes).take_error();
         if (*bytes == 0 || *bytes % kLbaBytes != 0 || *bytes > uint64_t{65536} * kLbaBytes) {
           return MakeError(ErrorCode::kInvalidArgument, "expected a multiple of 512 up to 32m, got '" + std::string(v) + "'");
         }
         options.block_bytes = static_cast<uint32_t>(*bytes);
         return OkStatus();
       }},
      {"--runtime", [&](std::string_view v) -> Status {
         auto ns = ParseDurationNs(v);
         if (!ns) return std::move(ns).take_error();
         if (*ns <= 0) return MakeError(ErrorCode::kInvalidArgument, "must be positive");
         runtime_ns = *ns;
         return OkStatus();
       }},
      {"--iops-cap", [&](std::string_view v) -> Status {
         auto count = ParseCount(v);
         if (!count) return std::move(count).take_error();
         driver.model.iops_cap = *count;
         return OkStatus();
       }},
      {"--bandwidth-mbps", [&](std::string_view v) -> Status {
         auto count = ParseCount(v);
         if (!count) return std::move(count).take_error();
         driver.model.bandwidth_bytes_per_s = *count * 1'000'000;
         return OkStatus();
       }},
      {"--model", [&](std::string_view v) -> Status {
         if (v != "fixed" && v != "media") return MakeError(ErrorCode::kInvalidArgument, "expected fixed or media, got '" + std::string(v) + "'");
         model_text = v;
         return OkStatus();
       }},
      {"--mode", [&](std::string_view v) -> Status {
         if (v != "interrupt" && v != "poll" && v != "external") {
           return MakeError(ErrorCode::kInvalidArgument, "expected interrupt, poll or external, got '" + std::string(v) + "'");
         }
         mode_text = v;
         return OkStatus();
       }},
      {"--coalesce", [&](std::string_view v) -> Status {
         const size_t comma = v.find(',');
         auto threshold = ParseU32(v.substr(0, comma), 0, kMaxCoalesceThreshold);
         auto time_us = comma == std::string_view::npos ? Result<uint32_t>(MakeError(ErrorCode::kInvalidArgument, ""))
                                                         : ParseU32(v.substr(comma + 1), 0, kMaxCoalesceTimeUs);
         if (!threshold || !time_us) {
           return MakeError(ErrorCode::kInvalidArgument, "expected THRESHOLD,TIME_US with threshold <= 256 and time <= 25500, got '" + std::string(v) + "'");
         }
         driver.coalescing = Coalescing{*threshold, *time_us};
         return OkStatus();
       }},
      {"--controller-cpus", [&](std::string_view v) -> Status {
         auto cpus = ParseCpuList(v);
         if (!cpus) return std::move(cpus).take_error();
         driver.controller_placement.cpus = std::move(*cpus);
         return OkStatus();
       }},
      {"--host-cpus", [&](std::string_view v) -> Status {
         auto cpus = ParseCpuList(v);
         if (!cpus) return std::move(cpus).take_error();
         options.host_cpus = std::move(*cpus);
         return OkStatus();
       }},
      {"--device-clock", [&](std::string_view v) -> Status {
         if (v != "faithful" && v != "sleeping" && v != "auto") {
           return MakeError(ErrorCode::kInvalidArgument, "expected faithful, sleeping or auto, got '" + std::string(v) + "'");
         }
         options.device_clock_requested = std::string(v);
         return OkStatus();
       }},
      {"--phases", [&](std::string_view v) -> Status {
         phases_text = v;
         return OkStatus();
       }},
      {"--runtime-dir", [&](std::string_view v) -> Status {
         if (v.empty() || v.front() != '/') return MakeError(ErrorCode::kInvalidArgument, "expected an absolute path");
         options.runtime_dir = std::string(v);
         return OkStatus();
       }},
      {"--seed", [&](std::string_view v) -> Status {
         auto count = ParseCount(v);
         if (!count) return std::move(count).take_error();
         options.seed = *count;
         return OkStatus();
       }},
  };

  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--json") { options.json = true; continue; }
    if (arg == "--no-socket") { options.socket = false; continue; }
    if (arg == "--controller-rt") { options.driver.controller_placement.realtime = true; continue; }
    std::optional<std::string_view> value;
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto handler = with_value.find(arg);
    if (handler == with_value.end()) return Bad(arg, "unknown argument (see --help)");
    if (!value) {
      if (i + 1 >= args.size()) return Bad(arg, "needs a value");
      value = args[++i];
    }
    if (Status parsed = handler->second(*value); !parsed) return Bad(arg, parsed.error().message);
  }

  driver.model.kind = model_text == "fixed" ? ModelKind::kFixed : ModelKind::kMedia;
  if (!write_latency_given) driver.model.write_latency_ns = driver.model.read_latency_ns;
  if (model_text == "fixed" && (write_latency_given || driver.model.jitter_ns > 0)) {
    return Bad("--model", "fixed takes only --latency-us (use media for write latency and jitter)");
  }
  if (Status model = ValidateModel(driver.model); !model) return Bad("--latency-us", model.error().message);
  options.external = mode_text == "external";
  driver.initial_mode = mode_text == "poll" ? ReapMode::kPoll : ReapMode::kInterrupt;
  if (phases_text) {
    auto phases = ParsePhases(*phases_text);
    if (!phases) return Bad("--phases", phases.error().message);
    options.phases = std::move(*phases);
  } else {
    options.phases.push_back(Phase{"run", runtime_ns, options.queue_depth, std::nullopt});
  }
  for (const Phase& phase : options.phases) {
    if (phase.mode && options.external) return Bad("--phases", "a phase sets a mode but --mode is external");
  }
  if (options.phases.front().mode) driver.initial_mode = *options.phases.front().mode;

  const uint32_t queues = driver.controllers * driver.queues_per_controller;
  if (uint64_t{queues} * options.phases.size() > kMaxQueuePhases) {  // a latency histogram each
    return Bad(phases_text ? "--phases" : "--queues", "queues x phases exceeds " + std::to_string(kMaxQueuePhases));
  }
  if (options.jobs == 0) options.jobs = queues;
  driver.timing_periods = static_cast<uint32_t>(options.phases.size());
  // Device threads sharing a CPU starve each other (one spins, or runs real-time, until its next due
  // time while the others' completions wait: the evaluation saw 0.5 s gaps with 4 controllers on 1 CPU).
  // With one thread per controller, controllers that outnumber --controller-cpus share one thread per CPU.
  const size_t device_cpus = driver.controller_placement.cpus.size();
  if (device_cpus != 0 && driver.controller_threads == 1 && driver.controllers > device_cpus) {
    driver.device_threads = static_cast<uint32_t>(device_cpus);
  }
  if (options.device_clock_requested == "faithful") {
    const uint64_t threads = DeviceThreads(driver);
    if (device_cpus != 0 && threads > device_cpus) {
      return Bad("--device-clock", "faithful needs a CPU per device thread: " + std::to_string(threads) +
                                       " threads on " + std::to_string(device_cpus) +
                                       " CPU(s) of --controller-cpus (use --controller-threads 1, auto or sleeping)");
    }
    driver.device_clock = DeviceClock::kFaithful;
  } else if (options.device_clock_requested == "sleeping") {
    driver.device_clock = DeviceClock::kSleeping;
  } else {
    driver.device_clock = AutoDeviceClock(driver, options.host_cpus);
  }
  if (driver.controller_threads > driver.queues_per_controller) {
    return Bad("--controller-threads", "more threads than queues per controller");
  }
  const uint32_t jobs_per_queue = (options.jobs + queues - 1) / queues;
  uint32_t deepest = 0;
  for (const Phase& phase : options.phases) deepest = std::max(deepest, phase.queue_depth);
  if (uint64_t{deepest} * jobs_per_queue > driver.queue_entries - 1) {
    return Bad(phases_text ? "--phases" : "--qd",
               "depth " + std::to_string(deepest) + " x " + std::to_string(jobs_per_queue) +
                   " job(s) per queue exceeds the " + std::to_string(driver.queue_entries - 1) +
                   " commands a queue holds (raise --queue-entries)");
  }
  return options;
}

std::string LoadUsage() {
  return R"(usage: uvnvme-load [options]
Runs the uvnvme userspace NVMe driver (emulated controllers, host queues, control socket) under a
fio-like closed-loop load and reports IOPS, latency percentiles and CPU.

load:
  --controllers N          emulated controllers (1)
  --queues N               I/O queues per controller, qid 1..N (1)
  --queue-entries N        entries per submission/completion ring (1024)
  --jobs N                 I/O streams; job j drives queue j mod queues (one per queue)
  --qd N                   queue depth per job (1)
  --bs SIZE                block size, a multiple of 512: 4k, 128k (4k)
  --rwmixread PCT          percentage of reads (100)
  --runtime DUR            run time: 5s, 500ms (5s); ignored with --phases
  --phases PROFILE         phases of DUR:qdN or DUR:idle, each optionally :interrupt or :poll,
                           e.g. 2s:qd1,4s:qd64,2s:idle
reaping:
  --mode M                 interrupt, poll, or external: interrupt at start, then only the control
                           socket changes modes (interrupt)
  --coalesce THR,TIME_US   interrupt coalescing (NVMe feature 08h) of every queue (0,0 = off)
device model:
  --model M                fixed (--latency-us only) or media (media)
  --latency-us US          read (fixed: every) command latency (20)
  --write-latency-us US    write latency (same as --latency-us)
  --jitter-us US           uniform extra latency in [0, US) (0)
  --iops-cap N             commands per second per controller, 0 = none (500k)
  --bandwidth-mbps N       MB/s per controller, 0 = none (3200)
  --controller-threads N   emulation threads per controller (1)
  --controller-rt          run them SCHED_FIFO (needs CAP_SYS_NICE) so a spinning host does not
                           delay the emulated device
  --controller-cpus LIST   CPUs of the controller threads, e.g. 1 or 2-3 (any); more controllers
                           than CPUs (one thread each) share one device thread per CPU
  --host-cpus LIST         CPUs of the reaper threads (any); with --controller-cpus, of every
                           thread but the controller threads (main, control socket, reapers)
  --device-clock C         how the controller threads wait for a completion's due time:
                           faithful: spin to it (watching the doorbells), so completions are posted
                             within a few us of their due time; keeps a CPU busy while commands are
                             in flight (sleeps after 20 ms idle): give each device thread a CPU
                             of its own (refused with fewer --controller-cpus than threads)
                           sleeping: a timed futex sleep, cheap but late by the wakeup (10-40 us here)
                           auto: faithful when --controller-cpus gives every controller thread a CPU
                             not in --host-cpus, else sleeping (auto)
output and control:
  --json                   one JSON object on stdout instead of the summary
  --runtime-dir DIR        control socket at DIR/uvnvme/PID.sock (/run)
  --no-socket              no control socket
  --seed N                 random seed for the read/write mix and LBAs (1)
  --help                   this text
Exit status: 0 done, 1 runtime error, 2 bad arguments.
)";
}

}  // namespace nvmeadapt::uvnvme::load
