// SPDX-License-Identifier: Apache-2.0
// nvme-adaptd: the node agent. Exceptions stop here; everything below returns typed results.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "agent/api/server.h"
#include "agent/config/levers_config.h"
#include "agent/config/node_config.h"
#include "agent/config/node_identity.h"
#include "agent/config/policy_convert.h"
#include "agent/daemon/agent.h"
#include "agent/daemon/config_load.h"
#include "agent/daemon/config_watch.h"
#include "agent/daemon/cpu_scheduling.h"
#include "agent/daemon/flags.h"
#include "agent/state/startup_restore.h"
#include "agent/state/state_store_lock.h"
#include "agent/daemon/wiring.h"
#include "agent/metrics/agent_metrics.h"
#include "agent/metrics/metrics_options.h"
#include "common/clock.h"
#include "common/journald_sink.h"
#include "common/log.h"
#include "nvme_adapt_version.h"

namespace nvmeadapt::daemon {
namespace {

constexpr int kExitRuntime = 1;

// gRPC calls counted in nvme_adapt_grpc_requests_total.
class GrpcMetrics : public api::RequestObserver {
 public:
  explicit GrpcMetrics(metrics::AgentMetrics* metrics) : metrics_(metrics) {}
  void OnRequest(const api::RequestRecord& record) override {
    if (metrics_) metrics_->OnGrpcRequest(record.method, static_cast<int>(record.code));
  }

 private:
  metrics::AgentMetrics* metrics_;
};
constexpr int kExitUsage = 2;

// An API start refusal that restarting cannot fix (a token file others can read, a group that does not exist,
// a TLS file that is missing): the operator's config, exit 2 as for any bad config.
bool IsConfigRefusal(const Error& error) {
  return error.code == ErrorCode::kInvalidArgument || error.code == ErrorCode::kNotFound ||
         error.code == ErrorCode::kPermissionDenied;
}

// Restore first: before the config is judged, the collector opened or any port bound, so that no failure of
// theirs can leave a device changed. The state dir and lever settings come from the config when it is
// good, else from the flags and the defaults.
std::string StateDirOf(const DaemonFlags& flags, const Result<v1::Config>& config) {
  return config ? config->state_dir() : flags.state_dir.value_or("/var/lib/nvme-adapt");
}

state::StartupRestore RestoreFirst(const std::string& state_dir, const Result<v1::Config>& config,
                            const state::RestoreRules& rules) {
  config::LeverSettings settings;
  if (config) {
    if (auto configured = config::LeverSettingsFromConfig(*config)) settings = std::move(*configured);
  }
  state::StartupRestore restore = state::RestoreBeforeAnything(state_dir, settings, actuate::LeverEnvironment{}, rules);
  if (!restore.journal_warning.empty()) NA_ERROR("journal: " << restore.journal_warning);
  for (const std::string& line : restore.report.lines) NA_INFO("journal: " << line);
  if (!restore.status) NA_ERROR("journal: not everything was restored: " << restore.status.error().message);
  return restore;
}

// Another daemon holds the state dir (exit 2, as a bad flag: restarting cannot fix it), or the lock file
// cannot be made (exit 1).
int Refused(const Error& lock_error) {
  std::fprintf(stderr, "nvme-adaptd: %s\n", lock_error.message.c_str());
  return lock_error.code == ErrorCode::kFailedPrecondition ? kExitUsage : kExitRuntime;
}

// A config the daemon cannot run with (exit 2: a restart cannot fix it).
int BadConfig(const std::string& message) {
  std::fprintf(stderr, "nvme-adaptd: %s\n", message.c_str());
  return kExitUsage;
}

int RestoreOnly(const state::StartupRestore& restore) {
  std::printf("journal: %d entr%s: %d restored, %d dropped by rule, %d kept\n", restore.entries_before,
              restore.entries_before == 1 ? "y" : "ies", restore.report.restored, restore.report.dropped,
              restore.report.kept);
  if (!restore.journal_warning.empty()) std::printf("journal: %s\n", restore.journal_warning.c_str());
  for (const std::string& line : restore.report.lines) std::printf("%s\n", line.c_str());
  if (!restore.status) std::printf("error: %s\n", restore.status.error().message.c_str());
  return restore.status ? 0 : kExitRuntime;
}

// Signals are read from a signalfd by a watcher thread, so no handler runs inside the loop. Before any
// thread starts: every thread inherits the mask.
Result<int> BlockedSignalFd() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  if (const int err = pthread_sigmask(SIG_BLOCK, &signals, nullptr); err != 0) {
    return SysError("block", "SIGTERM, SIGINT and SIGHUP", err);
  }
  const int fd = signalfd(-1, &signals, SFD_CLOEXEC);
  if (fd < 0) return SysError("signalfd", "SIGTERM, SIGINT and SIGHUP", errno);
  return fd;
}

// Reads signals until one asks the daemon to stop (true) or the signalfd fails (false); a SIGHUP calls
// `reload` and goes on.
bool WatchSignals(int signal_fd, const std::function<void()>& reload) {
  pthread_setname_np(pthread_self(), "na-signals");
  for (;;) {
    signalfd_siginfo info{};
    const ssize_t n = read(signal_fd, &info, sizeof info);
    if (n != static_cast<ssize_t>(sizeof info)) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    if (info.ssi_signo != SIGHUP) {
      NA_INFO("signal " << info.ssi_signo << ": stopping");
      return true;
    }
    reload();
  }
}

// The metrics endpoint, unless --metrics-listen off (then null).
Result<std::unique_ptr<metrics::AgentMetrics>> StartMetrics(const v1::Config& config, const DaemonFlags& flags) {
  if (flags.metrics_listen && *flags.metrics_listen == "off") return std::unique_ptr<metrics::AgentMetrics>();
  auto metrics_options = metrics::MetricsOptionsFromConfig(config.metrics());
  auto agent_metrics = std::make_unique<metrics::AgentMetrics>(metrics_options->max_tracked_queues);
  agent_metrics->ExportPerQueueIntervalHistogram(metrics_options->per_queue_interval_histogram);
  NA_RETURN_IF_ERROR(agent_metrics->Start(metrics_options->listen_address));
  return agent_metrics;
}

// systemd's watchdog (WatchdogSec=), fed only when the loop takes a call: a loop held up by anything stops
// the feeding, and systemd restarts the unit, whose ExecStopPost= and the next start restore first. Without
// systemd (no NOTIFY_SOCKET, no WATCHDOG_USEC) nothing runs.
class LoopWatchdog {
 public:
  explicit LoopWatchdog(Agent& agent) {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
    thread_ = std::thread([this, &agent, period = std::chrono::microseconds(usec / 3)] {
      pthread_setname_np(pthread_self(), "na-watchdog");
      std::unique_lock lock(mutex_);
      while (!stop_cv_.wait_for(lock, period, [this] { return stop_; })) {
        lock.unlock();
        // Answered from outside the loop (no collector named) when the loop did not take the call.
        if (!agent.api().GetStatus().collector().empty()) (void)sd_notify(0, "WATCHDOG=1");
        lock.lock();
      }
    });
  }
  ~LoopWatchdog() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

AgentOptions AgentOptionsFor(const v1::Config& config, const DaemonFlags& flags, const state::RestoreRules& rules,
                             const state::StartupRestore& restored_first, engine::NodeIdentity node_identity) {
  AgentOptions options;
  options.node_identity = std::move(node_identity);
  options.state_dir = config.state_dir();
  options.config_policies = config::PoliciesOf(config);
  options.policy_file_authoritative = config.policy_file_authoritative();
  options.record_windows_path = flags.record_windows;
  options.version = NVME_ADAPT_VERSION;
  options.restore_rules = rules;
  options.restore_at_start = false;  // done before: RestoreFirst
  options.journal_warning = restored_first.journal_warning;
  options.node = *config::NodeLayerFromConfig(config.node());  // ParseConfigJson validated it
  if (flags.min_disruptive_interval_seconds) {
    options.min_disruptive_interval = static_cast<engine::Nanos>(*flags.min_disruptive_interval_seconds * 1e9);
  }
  return options;
}

// --exit-after: SIGTERM to itself once the time is up (demos and tests); else no thread.
std::thread ExitTimer(const std::optional<double>& seconds) {
  if (!seconds) return std::thread();
  return std::thread([deadline = MonotonicNanos() + static_cast<int64_t>(*seconds * 1e9)] {
    while (MonotonicNanos() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(getpid(), SIGTERM);
  });
}

int Run(const DaemonFlags& flags) {
  auto config = LoadDaemonConfig(flags);
  if (config) SetLogLevel(*ParseLogLevel(config->log_level()));
  // Before the restore: a second daemon's restore would undo the queues the first one drives.
  const auto instance = state::StateDirLock::Acquire(StateDirOf(flags, config));
  if (!instance) return Refused(instance.error());
  const state::RestoreRules rules = state::SystemRestoreRules();
  const state::StartupRestore restored_first = RestoreFirst(StateDirOf(flags, config), config, rules);
  if (flags.restore_only) return RestoreOnly(restored_first);
  if (!config) return BadConfig(config.error().message);
  auto node_identity = config::ReadNodeIdentity(config->node_labels_file());  // unreadable: a bad config
  if (!node_identity) return BadConfig("node_labels_file: " + node_identity.error().message);
  // Before any thread starts: every thread of the agent inherits it.
  if (Status scheduled = ApplyCpuScheduling(config->cpu_scheduling()); !scheduled) {
    NA_WARN("cpu scheduling: " << scheduled.error().message << "; the agent runs as it was started");
  }

  const Result<int> signal_fd = BlockedSignalFd();
  if (!signal_fd) {
    NA_ERROR(signal_fd.error().message);
    return kExitRuntime;
  }
  auto components = BuildComponents(*config, flags);
  if (!components) {
    NA_ERROR("cannot start: " << components.error().message);
    return kExitRuntime;
  }
  // Metrics first: a port in use is a start failure the operator should see at once.
  auto agent_metrics = StartMetrics(*config, flags);
  if (!agent_metrics) {
    NA_ERROR("cannot start: metrics: " << agent_metrics.error().message);
    return kExitRuntime;
  }
  Agent agent(AgentOptionsFor(*config, flags, rules, restored_first, std::move(*node_identity)),
              AgentDeps{components->collector.get(), components->discovery.get(), components->levers.get(), nullptr,
                        nullptr, agent_metrics->get()});
  if (Status started = agent.Start(); !started) {
    NA_ERROR("cannot start: " << started.error().message);
    return kExitRuntime;
  }
  GrpcMetrics grpc_metrics(agent_metrics->get());
  auto api_server = api::StartApiServer(config->api(), agent.api(), &grpc_metrics);
  if (!api_server) {
    NA_ERROR("cannot start: api: " << api_server.error().message);
    (void)agent.Shutdown();
    return IsConfigRefusal(api_server.error()) ? kExitUsage : kExitRuntime;
  }
  NA_INFO("nvme-adaptd " << NVME_ADAPT_VERSION << " running: collector " << components->collector->Name()
                         << (components->collector->ObserveOnly() ? " (observe only)" : "") << ", api "
                         << (*api_server)->unix_socket().value_or("tcp only"));

  (void)sd_notify(0, "READY=1");  // Type=notify: started once restored, the loop built and the API bound
  // A mounted ConfigMap changes with no signal: the file's change reloads as SIGHUP does.
  ConfigReloader reloader(flags.config_path, [&] { return LoadDaemonConfig(flags); }, agent, agent_metrics->get());
  auto config_watch = ConfigWatch::Start(flags.config_path, [&] { (void)reloader.Reload("file changed"); });
  if (!config_watch) NA_WARN("config watch: " << config_watch.error().message << "; only SIGHUP reloads");

  std::thread watcher([&] {
    const bool stop = WatchSignals(*signal_fd, [&] {
      if (Status tokens = (*api_server)->Reload(); !tokens) NA_ERROR("reload: " << tokens.error().message);
      (void)reloader.Reload("SIGHUP");
    });
    if (stop) agent.Stop();
  });
  std::thread timer = ExitTimer(flags.exit_after_seconds);
  {
    LoopWatchdog watchdog(agent);
    agent.Run();
  }
  (void)sd_notify(0, "STOPPING=1");
  if (config_watch) config_watch->reset();  // no reload reaches the agent while it puts things back
  (*api_server)->Shutdown();  // no call reaches the agent while it puts things back
  Status restored = agent.Shutdown();
  if (!restored) NA_ERROR("shutdown: not every change could be put back: " << restored.error().message);
  watcher.join();
  if (timer.joinable()) timer.join();
  close(*signal_fd);
  NA_INFO("stopped");
  return restored ? 0 : kExitRuntime;
}

}  // namespace
}  // namespace nvmeadapt::daemon

int main(int argc, char** argv) {
  using namespace nvmeadapt::daemon;
  nvmeadapt::SetJournalSink(&nvmeadapt::SendToJournald);  // used only when stderr is the journal's stream
  auto flags = ParseDaemonFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!flags) {
    std::fprintf(stderr, "nvme-adaptd: %s\n", flags.error().message.c_str());
    return 2;
  }
  if (flags->help) {
    std::fputs(DaemonUsage().c_str(), stdout);
    return 0;
  }
  if (flags->version) {
    std::printf("nvme-adaptd %s (commit %s)\n", NVME_ADAPT_VERSION, NVME_ADAPT_COMMIT);
    return 0;
  }
  // Offline, before the state dir's lock and the restore: a check needs no root and touches no device.
  if (flags->check_config) {
    if (nvmeadapt::Status checked = CheckConfigFile(*flags->check_config); !checked) {
      std::fprintf(stderr, "nvme-adaptd: %s\n", checked.error().message.c_str());
      return 2;
    }
    std::printf("%s: ok\n", flags->check_config->c_str());
    return 0;
  }
  // A few malloc arenas, not one per thread that ever ran: discovery asks drivers from many threads, and
  // every arena keeps the peak of what its threads parsed, which reads as growth a MemoryMax= would kill.
  (void)mallopt(M_ARENA_MAX, 2);
  try {
    return Run(*flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nvme-adaptd: fatal: %s\n", e.what());
    return 1;
  }
}
