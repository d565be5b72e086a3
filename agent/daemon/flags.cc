// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/flags.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <functional>

#include "agent/config/config_file.h"
#include "common/duration.h"

namespace nvmeadapt::daemon {
namespace {

Error Bad(const std::string& message) { return MakeError(ErrorCode::kInvalidArgument, message); }

// A duration of the one grammar ("30s", "500ms", "1m30s", "1d"), or a bare number of seconds (the flags' older
// form, kept so that units and scripts written for it still start); nothing otherwise.
std::optional<double> Seconds(const std::string& text) {
  double seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size()) return seconds;
  auto nanos = ParseDuration(text);
  if (!nanos) return std::nullopt;
  return static_cast<double>(*nanos) / 1e9;
}

// The flags' values are checked by these callbacks, which leave the first refusal here for the one-line error
// (CLI11's own words name its types, not what the daemon wants).
class FlagChecks {
 public:
  explicit FlagChecks(CLI::App& app) : app_(app) {}

  void Text(const std::string& name, std::optional<std::string>& field) {
    Add(name, [this, name, &field](const std::string& value) {
      if (value.empty()) return Refuse(name + ": must not be empty");
      field = value;
    });
  }
  // A number of seconds in [low, 86400].
  void Seconds(const std::string& name, std::optional<double>& field, double low) {
    Add(name, [this, name, low, &field](const std::string& value) {
      const std::optional<double> seconds = daemon::Seconds(value);
      if (!seconds || *seconds < low || *seconds > 86400) {
        return Refuse(name + ": not a duration (30s, 500ms, 1m30s) or number of seconds in [" +
                      std::to_string(static_cast<int>(low)) + ", 86400]: '" + value + "'");
      }
      field = *seconds;
    });
  }
  void Add(const std::string& name, std::function<void(const std::string&)> take) {
    app_.add_option_function<std::string>(name, std::move(take))->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  void Refuse(std::string message) {
    if (!refusal_) refusal_ = std::move(message);
    throw CLI::ValidationError(*refusal_);
  }
  const std::optional<std::string>& refusal() const { return refusal_; }

 private:
  CLI::App& app_;
  std::optional<std::string> refusal_;
};

}  // namespace

std::string DaemonUsage() {
  return std::string(
             "usage: nvme-adaptd [options]\n"
             "\n"
             "Watches NVMe completion queues with eBPF and switches each eligible queue between interrupt\n"
             "and poll reaping by the rules of its policy. Runs until SIGTERM or SIGINT, then puts every\n"
             "queue it changed back to its safe value. SIGHUP reloads the config file, and so does a\n"
             "change of it on disk (a write, a rename over it, a Kubernetes ConfigMap update). Before\n"
             "anything else, even before the config file is read, it puts back every change an earlier run\n"
             "left in the journal (always for real, also with --dry-run).\n"
             "\n"
             "options:\n"
             "  --config PATH          JSON config (default ") +
         std::string(config::kDefaultConfigPath) +
         "; an absent default file means built-in defaults)\n"
         "  --check-config PATH    check the config file as a start would, offline (no root, no BPF, no\n"
         "                         socket, no state dir), print 'PATH: ok' and exit 0, or exit 2 with one\n"
         "                         line naming the field; other flags are not applied\n"
         "  --state-dir DIR        persisted policy and journal of changes (default /var/lib/nvme-adapt)\n"
         "  --runtime-dir DIR      runtime directory; uvnvme sockets are under DIR/uvnvme (default /run)\n"
         "  --log-level LEVEL      debug, info, warn or error (default info)\n"
         "  --default-mode MODE    global default controller mode: off, adaptive, interrupt, poll, shadow\n"
         "  --dry-run              levers record what they would write and change nothing (the journal\n"
         "                         of an earlier run is still restored for real)\n"
         "  --restore-only         restore the journal, print what was done and exit: 0 when nothing is\n"
         "                         left to restore, 1 otherwise (the unit's ExecStopPost)\n"
         "  --record-windows PATH  write every engine input to PATH (replayable with nvme-adapt-replay)\n"
         "                         and every decision to PATH.decisions\n"
         "  --api-socket PATH      gRPC Unix socket (default /run/nvme-adapt/agent.sock)\n"
         "  --metrics-listen ADDR  Prometheus endpoint host:port (default 127.0.0.1:9464; 'off' disables)\n"
         "  --sources LIST         queues to discover: kernel,uvnvme,block (default kernel,uvnvme)\n"
         "  --cpu-scheduling POL   batch (default: the agent never preempts I/O threads when it wakes)\n"
         "                         or normal\n"
         "  --exit-after DURATION  stop by itself after this long (demos and tests)\n"
         "  --min-disruptive-interval DURATION\n"
         "                         least time between two controller resets of one controller by the\n"
         "                         poll_queues lever (default 30s; a change asked sooner is refused)\n"
         "  --target-idle DURATION an NVMe target's queue (nvmet) that completed nothing for this long\n"
         "                         leaves the queue list until its next completion (default 60s; nvmet\n"
         "                         gives each reconnecting host a new controller and no file says when\n"
         "                         one goes, docs/fabrics.md)\n"
         "  --help                 this text\n"
         "  --version              version and build\n"
         "\n"
         "DURATION: 30s, 500ms, 1m30s, 2d: absl's grammar (ns, us, ms, s, m, h, fractions, sums) plus d for\n"
         "days, as nvme-adaptctl and the config take them; or a bare number of seconds.\n"
         "Exit status: 0 after a clean stop, 1 on a runtime failure, 2 for a bad flag or config (the API's\n"
         "token file, socket group or TLS files included) and when another nvme-adaptd holds the state\n"
         "dir (one daemon per state dir, --restore-only included: the message names its pid).\n";
}

Result<DaemonFlags> ParseDaemonFlags(const std::vector<std::string>& args) {
  DaemonFlags flags;
  CLI::App app("nvme-adaptd", "nvme-adaptd");
  app.set_help_flag();  // DaemonUsage() is the help; -h and --help only ask for it
  app.allow_extras();   // a word no flag takes is named in our own words below
  FlagChecks checks(app);
  app.add_flag("-h,--help", flags.help);
  app.add_flag("--version", flags.version);
  app.add_flag("--dry-run", flags.dry_run);
  app.add_flag("--restore-only", flags.restore_only);
  checks.Add("--config", [&](const std::string& v) {
    flags.config_path = v;
    flags.config_explicit = true;
  });
  checks.Text("--check-config", flags.check_config);
  checks.Text("--state-dir", flags.state_dir);
  checks.Text("--runtime-dir", flags.runtime_dir);
  checks.Text("--log-level", flags.log_level);
  checks.Text("--api-socket", flags.api_socket);
  checks.Text("--metrics-listen", flags.metrics_listen);
  checks.Text("--cpu-scheduling", flags.cpu_scheduling);
  checks.Text("--sources", flags.sources);
  checks.Add("--record-windows", [&](const std::string& v) { flags.record_windows = v; });
  checks.Add("--default-mode", [&](const std::string& v) {
    auto mode = engine::ParseControllerMode(v);
    if (!mode) checks.Refuse("--default-mode: unknown mode '" + v + "' (off, adaptive, interrupt, poll, shadow)");
    flags.default_mode = *mode;
  });
  checks.Seconds("--min-disruptive-interval", flags.min_disruptive_interval_seconds, 0);
  checks.Seconds("--target-idle", flags.target_idle_seconds, 1);
  checks.Add("--exit-after", [&](const std::string& v) {
    const std::optional<double> seconds = Seconds(v);
    if (!seconds || *seconds <= 0) checks.Refuse("--exit-after: not a positive duration or number of seconds: '" + v + "'");
    flags.exit_after_seconds = *seconds;
  });

  std::vector<std::string> words(args.rbegin(), args.rend());  // CLI11 takes a reversed vector
  try {
    app.parse(words);
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string what = e.what();
    return Bad(what.substr(0, what.find(':')) + ": needs a value");
  } catch (const CLI::ParseError& e) {
    return Bad(checks.refusal().value_or(e.what()));
  }
  if (const std::vector<std::string> rest = app.remaining(); !rest.empty()) {
    return Bad("unknown argument '" + rest.front() + "' (see --help)");
  }
  if (flags.config_path.empty()) flags.config_path = std::string(config::kDefaultConfigPath);
  return flags;
}

}  // namespace nvmeadapt::daemon
