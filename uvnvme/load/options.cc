// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/load/options.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace nvmeadapt::uvnvme::load {
namespace {

Error Bad(std::string_view arg, std::string what) {
  return MakeError(ErrorCode::kInvalidArgument, std::string(arg) + ": " + std::move(what));
}

// What the options say that is resolved only once all of them are read.
struct Pending {
  int64_t runtime_ns = 5'000'000'000;
  std::optional<std::string_view> phases_text;
  std::string_view mode_text = "interrupt";
  std::string_view model_text = "media";
  bool write_latency_given = false;
};

using ApplyOption = Status (*)(std::string_view value, LoadOptions& options, Pending& pending);

// One option: where --help lists it, how it is spelled and what it takes, its help text (lines after the
// first are indented under it) and how its value is applied. A flag has no value; --help has no apply
// (main answers it before parsing).
struct OptionSpec {
  std::string_view section;
  std::string_view name;
  std::string_view value;
  std::string_view help;
  ApplyOption apply;
};

Status SetU32(std::string_view text, uint32_t min, uint32_t max, uint32_t& field) {
  auto parsed = ParseU32(text, min, max);
  if (!parsed) return std::move(parsed).take_error();
  field = *parsed;
  return OkStatus();
}

Status SetMicros(std::string_view text, int64_t& field) {
  auto parsed = ParseNumber(text);
  if (!parsed) return std::move(parsed).take_error();
  field = static_cast<int64_t>(std::llround(*parsed * 1000));
  return OkStatus();
}

Status SetCount(std::string_view text, uint64_t scale, uint64_t& field) {
  auto count = ParseCount(text);
  if (!count) return std::move(count).take_error();
  field = *count * scale;
  return OkStatus();
}

Status SetCpus(std::string_view text, std::vector<int>& field) {
  auto cpus = ParseCpuList(text);
  if (!cpus) return std::move(cpus).take_error();
  field = std::move(*cpus);
  return OkStatus();
}

// `text` if it is one of `allowed`, else the error listing them ("expected a, b or c, got 'x'").
Status OneOf(std::string_view text, std::initializer_list<std::string_view> allowed, std::string_view listed) {
  for (std::string_view word : allowed) {
    if (text == word) return OkStatus();
  }
  return MakeError(ErrorCode::kInvalidArgument, "expected " + std::string(listed) + ", got '" + std::string(text) + "'");
}

Status ApplyBlockSize(std::string_view v, LoadOptions& options, Pending&) {
  auto bytes = ParseBytes(v);
  if (!bytes) return std::move(bytes).take_error();
  if (*bytes == 0 || *bytes % kLbaBytes != 0 || *bytes > uint64_t{65536} * kLbaBytes) {
    return MakeError(ErrorCode::kInvalidArgument, "expected a multiple of 512 up to 32m, got '" + std::string(v) + "'");
  }
  options.block_bytes = static_cast<uint32_t>(*bytes);
  return OkStatus();
}

Status ApplyRuntime(std::string_view v, LoadOptions&, Pending& pending) {
  auto ns = ParseDurationNs(v);
  if (!ns) return std::move(ns).take_error();
  if (*ns <= 0) return MakeError(ErrorCode::kInvalidArgument, "must be positive");
  pending.runtime_ns = *ns;
  return OkStatus();
}

Status ApplyCoalesce(std::string_view v, LoadOptions& options, Pending&) {
  const size_t comma = v.find(',');
  auto threshold = ParseU32(v.substr(0, comma), 0, kMaxCoalesceThreshold);
  auto time_us = comma == std::string_view::npos ? Result<uint32_t>(MakeError(ErrorCode::kInvalidArgument, ""))
                                                  : ParseU32(v.substr(comma + 1), 0, kMaxCoalesceTimeUs);
  if (!threshold || !time_us) {
    return MakeError(ErrorCode::kInvalidArgument, "expected THRESHOLD,TIME_US with threshold <= 256 and time <= 25500, got '" + std::string(v) + "'");
  }
  options.driver.coalescing = Coalescing{*threshold, *time_us};
  return OkStatus();
}

Status ApplyMode(std::string_view v, LoadOptions&, Pending& pending) {
  if (Status ok = OneOf(v, {"interrupt", "poll", "external"}, "interrupt, poll or external"); !ok) return ok;
  pending.mode_text = v;
  return OkStatus();
}

Status ApplyModel(std::string_view v, LoadOptions&, Pending& pending) {
  if (Status ok = OneOf(v, {"fixed", "media"}, "fixed or media"); !ok) return ok;
  pending.model_text = v;
  return OkStatus();
}

Status ApplyDeviceClock(std::string_view v, LoadOptions& options, Pending&) {
  if (Status ok = OneOf(v, {"faithful", "sleeping", "auto"}, "faithful, sleeping or auto"); !ok) return ok;
  options.device_clock_requested = std::string(v);
  return OkStatus();
}

Status ApplyRuntimeDir(std::string_view v, LoadOptions& options, Pending&) {
  if (v.empty() || v.front() != '/') return MakeError(ErrorCode::kInvalidArgument, "expected an absolute path");
  options.runtime_dir = std::string(v);
  return OkStatus();
}

constexpr std::string_view kLoad = "load", kReaping = "reaping", kDevice = "device model",
                           kOutput = "output and control";

const OptionSpec kOptions[] = {
    {kLoad, "--controllers", "N", "emulated controllers (1)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetU32(v, 1, kMaxControllers, o.driver.controllers); }},
    {kLoad, "--queues", "N", "I/O queues per controller, qid 1..N (1)",
     [](std::string_view v, LoadOptions& o, Pending&) {
       return SetU32(v, 1, kMaxQueuesPerController, o.driver.queues_per_controller);
     }},
    {kLoad, "--queue-entries", "N", "entries per submission/completion ring (1024)",
     [](std::string_view v, LoadOptions& o, Pending&) {
       return SetU32(v, kMinQueueEntries, kMaxQueueEntries, o.driver.queue_entries);
     }},
    {kLoad, "--jobs", "N", "I/O streams; job j drives queue j mod queues (one per queue)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetU32(v, 1, 4096, o.jobs); }},
    {kLoad, "--qd", "N", "queue depth per job (1)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetU32(v, 1, kMaxQueueEntries - 1, o.queue_depth); }},
    {kLoad, "--bs", "SIZE", "block size, a multiple of 512: 4k, 128k (4k)", ApplyBlockSize},
    {kLoad, "--rwmixread", "PCT", "percentage of reads (100)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetU32(v, 0, 100, o.read_percent); }},
    {kLoad, "--io-work-us", "US",
     "the application's own CPU work per completion: a compute loop of US\n"
     "(calibrated at start) before the next reap, as fio's thinktime spin (0)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetMicros(v, o.io_work_ns); }},
    {kLoad, "--runtime", "DUR", "run time: 5s, 500ms (5s); ignored with --phases", ApplyRuntime},
    {kLoad, "--phases", "PROFILE",
     "phases of DUR:qdN or DUR:idle, each optionally :interrupt or :poll,\ne.g. 2s:qd1,4s:qd64,2s:idle",
     [](std::string_view v, LoadOptions&, Pending& p) {
       p.phases_text = v;
       return OkStatus();
     }},
    {kReaping, "--mode", "M",
     "interrupt, poll, or external: interrupt at start, then only the control\nsocket changes modes (interrupt)",
     ApplyMode},
    {kReaping, "--coalesce", "THR,TIME_US", "interrupt coalescing (NVMe feature 08h) of every queue (0,0 = off)",
     ApplyCoalesce},
    {kDevice, "--model", "M", "fixed (--latency-us only) or media (media)", ApplyModel},
    {kDevice, "--latency-us", "US", "read (fixed: every) command latency (20)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetMicros(v, o.driver.model.read_latency_ns); }},
    {kDevice, "--write-latency-us", "US", "write latency (same as --latency-us)",
     [](std::string_view v, LoadOptions& o, Pending& p) {
       p.write_latency_given = true;
       return SetMicros(v, o.driver.model.write_latency_ns);
     }},
    {kDevice, "--jitter-us", "US", "uniform extra latency in [0, US) (0)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetMicros(v, o.driver.model.jitter_ns); }},
    {kDevice, "--iops-cap", "N", "commands per second per controller, 0 = none (500k)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetCount(v, 1, o.driver.model.iops_cap); }},
    {kDevice, "--bandwidth-mbps", "N", "MB/s per controller, 0 = none (3200)",
     [](std::string_view v, LoadOptions& o, Pending&) {
       return SetCount(v, 1'000'000, o.driver.model.bandwidth_bytes_per_s);
     }},
    {kDevice, "--controller-threads", "N", "emulation threads per controller (1)",
     [](std::string_view v, LoadOptions& o, Pending&) {
       return SetU32(v, 1, kMaxQueuesPerController, o.driver.controller_threads);
     }},
    {kDevice, "--controller-rt", "",
     "run them SCHED_FIFO (needs CAP_SYS_NICE) so a spinning host does not\ndelay the emulated device",
     [](std::string_view, LoadOptions& o, Pending&) {
       o.driver.controller_placement.realtime = true;
       return OkStatus();
     }},
    {kDevice, "--controller-cpus", "LIST",
     "CPUs of the controller threads, e.g. 1 or 2-3 (any); more controllers\n"
     "than CPUs (one thread each) share one device thread per CPU",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetCpus(v, o.driver.controller_placement.cpus); }},
    {kDevice, "--host-cpus", "LIST",
     "CPUs of the reaper threads (any); with --controller-cpus, of every\n"
     "thread but the controller threads (main, control socket, reapers)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetCpus(v, o.host_cpus); }},
    {kDevice, "--device-clock", "C",
     "how the controller threads wait for a completion's due time:\n"
     "faithful: spin to it (watching the doorbells), so completions are posted\n"
     "  within a few us of their due time; keeps a CPU busy while commands are\n"
     "  in flight (sleeps after 20 ms idle): give each device thread a CPU\n"
     "  of its own (refused with fewer --controller-cpus than threads)\n"
     "sleeping: a timed futex sleep, cheap but late by the wakeup (10-40 us here)\n"
     "auto: faithful when --controller-cpus gives every controller thread a CPU\n"
     "  not in --host-cpus, else sleeping (auto)",
     ApplyDeviceClock},
    {kOutput, "--json", "", "one JSON object on stdout instead of the summary",
     [](std::string_view, LoadOptions& o, Pending&) {
       o.json = true;
       return OkStatus();
     }},
    {kOutput, "--runtime-dir", "DIR", "control socket at DIR/uvnvme/PID.sock (/run)", ApplyRuntimeDir},
    {kOutput, "--no-socket", "", "no control socket",
     [](std::string_view, LoadOptions& o, Pending&) {
       o.socket = false;
       return OkStatus();
     }},
    {kOutput, "--seed", "N", "random seed for the read/write mix and LBAs (1)",
     [](std::string_view v, LoadOptions& o, Pending&) { return SetCount(v, 1, o.seed); }},
    {kOutput, "--help", "", "this text", nullptr},
};

const OptionSpec* FindOption(std::string_view name, bool takes_value) {
  for (const OptionSpec& option : kOptions) {
    if (option.name == name && option.apply != nullptr && option.value.empty() != takes_value) return &option;
  }
  return nullptr;
}

// The device model and the initial mode from --model, --latency-us, --write-latency-us, --jitter-us, --mode.
Status ResolveModelAndMode(LoadOptions& options, const Pending& pending) {
  DriverConfig& driver = options.driver;
  driver.model.kind = pending.model_text == "fixed" ? ModelKind::kFixed : ModelKind::kMedia;
  if (!pending.write_latency_given) driver.model.write_latency_ns = driver.model.read_latency_ns;
  if (pending.model_text == "fixed" && (pending.write_latency_given || driver.model.jitter_ns > 0)) {
    return Bad("--model", "fixed takes only --latency-us (use media for write latency and jitter)");
  }
  if (Status model = ValidateModel(driver.model); !model) return Bad("--latency-us", model.error().message);
  options.external = pending.mode_text == "external";
  driver.initial_mode = pending.mode_text == "poll" ? ReapMode::kPoll : ReapMode::kInterrupt;
  return OkStatus();
}

// The phases (--phases, else one of --runtime at --qd), what they imply for the initial mode, and jobs.
Status ResolvePhases(LoadOptions& options, const Pending& pending) {
  DriverConfig& driver = options.driver;
  if (pending.phases_text) {
    auto phases = ParsePhases(*pending.phases_text);
    if (!phases) return Bad("--phases", phases.error().message);
    options.phases = std::move(*phases);
  } else {
    options.phases.push_back(Phase{"run", pending.runtime_ns, options.queue_depth, std::nullopt});
  }
  for (const Phase& phase : options.phases) {
    if (phase.mode && options.external) return Bad("--phases", "a phase sets a mode but --mode is external");
  }
  if (options.phases.front().mode) driver.initial_mode = *options.phases.front().mode;
  const uint32_t queues = driver.controllers * driver.queues_per_controller;
  if (uint64_t{queues} * options.phases.size() > kMaxQueuePhases) {  // a latency histogram each
    return Bad(pending.phases_text ? "--phases" : "--queues",
               "queues x phases exceeds " + std::to_string(kMaxQueuePhases));
  }
  if (options.jobs == 0) options.jobs = queues;
  driver.timing_periods = static_cast<uint32_t>(options.phases.size());
  return OkStatus();
}

// How many device threads run the controllers, and how they wait (--device-clock).
Status ResolveDeviceThreads(LoadOptions& options) {
  DriverConfig& driver = options.driver;
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
  return OkStatus();
}

// Every queue can hold what its jobs keep in flight at the deepest phase.
Status CheckQueueCapacity(const LoadOptions& options, const Pending& pending) {
  const DriverConfig& driver = options.driver;
  if (driver.controller_threads > driver.queues_per_controller) {
    return Bad("--controller-threads", "more threads than queues per controller");
  }
  const uint32_t queues = driver.controllers * driver.queues_per_controller;
  const uint32_t jobs_per_queue = (options.jobs + queues - 1) / queues;
  uint32_t deepest = 0;
  for (const Phase& phase : options.phases) deepest = std::max(deepest, phase.queue_depth);
  if (uint64_t{deepest} * jobs_per_queue > driver.queue_entries - 1) {
    return Bad(pending.phases_text ? "--phases" : "--qd",
               "depth " + std::to_string(deepest) + " x " + std::to_string(jobs_per_queue) +
                   " job(s) per queue exceeds the " + std::to_string(driver.queue_entries - 1) +
                   " commands a queue holds (raise --queue-entries)");
  }
  return OkStatus();
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

Result<LoadOptions> ParseLoadOptions(std::span<const std::string_view> args) {
  LoadOptions options;
  Pending pending;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (const OptionSpec* flag = FindOption(arg, false)) {
      if (Status applied = flag->apply({}, options, pending); !applied) return Bad(arg, applied.error().message);
      continue;
    }
    std::optional<std::string_view> value;
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    const OptionSpec* option = FindOption(arg, true);
    if (option == nullptr) return Bad(arg, "unknown argument (see --help)");
    if (!value) {
      if (i + 1 >= args.size()) return Bad(arg, "needs a value");
      value = args[++i];
    }
    if (Status parsed = option->apply(*value, options, pending); !parsed) return Bad(arg, parsed.error().message);
  }
  if (Status model = ResolveModelAndMode(options, pending); !model) return std::move(model).take_error();
  if (Status phases = ResolvePhases(options, pending); !phases) return std::move(phases).take_error();
  if (Status threads = ResolveDeviceThreads(options); !threads) return std::move(threads).take_error();
  if (Status capacity = CheckQueueCapacity(options, pending); !capacity) return std::move(capacity).take_error();
  return options;
}

std::string LoadUsage() {
  constexpr size_t kHelpColumn = 27;
  std::string text =
      "usage: uvnvme-load [options]\n"
      "Runs the uvnvme userspace NVMe driver (emulated controllers, host queues, control socket) under a\n"
      "fio-like closed-loop load and reports IOPS, latency percentiles and CPU.\n\n";
  std::string_view section;
  for (const OptionSpec& option : kOptions) {
    if (option.section != section) {
      section = option.section;
      text += std::string(section) + ":\n";
    }
    std::string line = "  " + std::string(option.name);
    if (!option.value.empty()) line += " " + std::string(option.value);
    line.resize(std::max(kHelpColumn, line.size() + 1), ' ');
    std::string_view help = option.help;
    for (size_t nl = help.find('\n'); nl != std::string_view::npos; nl = help.find('\n')) {
      text += line + std::string(help.substr(0, nl)) + "\n";
      line.assign(kHelpColumn, ' ');
      help = help.substr(nl + 1);
    }
    text += line + std::string(help) + "\n";
  }
  return text + "Exit status: 0 done, 1 runtime error, 2 bad arguments.\n";
}

}  // namespace nvmeadapt::uvnvme::load
