#include "agent/daemon/flags.h"

#include <absl/time/time.h>

#include <charconv>

#include "agent/config/config_file.h"

namespace nvmeadapt::daemon {
namespace {

Error Bad(const std::string& message) { return MakeError(ErrorCode::kInvalidArgument, message); }

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
         "                         poll_queues lever (default 30; a change asked sooner is refused)\n"
         "  --target-idle DURATION an NVMe target's queue (nvmet) that completed nothing for this long\n"
         "                         leaves the queue list until its next completion (default 60; nvmet\n"
         "                         gives each reconnecting host a new controller and no file says when\n"
         "                         one goes, docs/fabrics.md)\n"
         "  --help                 this text\n"
         "  --version              version and build\n"
         "\n"
         "DURATION: 30s, 500ms, 1m30s (absl's grammar, as nvme-adaptctl and the config take them), or a\n"
         "bare number of seconds.\n"
         "Exit status: 0 after a clean stop, 1 on a runtime failure, 2 for a bad flag or config (the API's\n"
         "token file, socket group or TLS files included) and when another nvme-adaptd holds the state\n"
         "dir (one daemon per state dir, --restore-only included: the message names its pid).\n";
}

namespace {

// The whole of `text` as seconds: a duration in absl's grammar, as the CLI and the config take them ("30s",
// "500ms", "1m30s"), or a bare number of seconds (the flags' older form); nothing otherwise.
std::optional<double> Seconds(const std::string& text) {
  double seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size()) return seconds;
  absl::Duration duration;
  if (!absl::ParseDuration(text, &duration)) return std::nullopt;
  return absl::ToDoubleSeconds(duration);
}

// "--name=value" as name and value; any other word as it is.
struct FlagWord {
  std::string name;
  std::optional<std::string> inline_value;
};
FlagWord SplitFlag(const std::string& word) {
  if (const size_t eq = word.find('='); word.rfind("--", 0) == 0 && eq != std::string::npos) {
    return {word.substr(0, eq), word.substr(eq + 1)};
  }
  return {word, std::nullopt};
}

// One flag of the command line and its value: the word after it, or after '=' in "--name=value".
class FlagCursor {
 public:
  FlagCursor(const std::vector<std::string>& args, size_t& i) : args_(args), i_(i), word_(SplitFlag(args[i])) {}
  const std::string& name() const { return word_.name; }

  Result<std::string> Value() {
    if (word_.inline_value) return *word_.inline_value;
    if (i_ + 1 >= args_.size()) return Bad(word_.name + ": needs a value");
    return args_[++i_];
  }
  Status Take(std::optional<std::string>& field) {
    NA_ASSIGN_OR_RETURN(auto v, Value());
    if (v.empty()) return Bad(word_.name + ": must not be empty");
    field = v;
    return OkStatus();
  }
  // A number of seconds in [low, 86400].
  Status TakeSeconds(std::optional<double>& field, double low) {
    NA_ASSIGN_OR_RETURN(auto v, Value());
    const std::optional<double> seconds = Seconds(v);
    if (!seconds || *seconds < low || *seconds > 86400) {
      return Bad(word_.name + ": not a duration (30s, 500ms) or number of seconds in [" + std::to_string(static_cast<int>(low)) +
                 ", 86400]: '" + v + "'");
    }
    field = *seconds;
    return OkStatus();
  }

 private:
  const std::vector<std::string>& args_;
  size_t& i_;
  FlagWord word_;
};

}  // namespace

Result<DaemonFlags> ParseDaemonFlags(const std::vector<std::string>& args) {
  DaemonFlags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    FlagCursor cursor(args, i);
    const std::string& arg = cursor.name();
    Status status;
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
    } else if (arg == "--version") {
      flags.version = true;
    } else if (arg == "--dry-run") {
      flags.dry_run = true;
    } else if (arg == "--restore-only") {
      flags.restore_only = true;
    } else if (arg == "--config") {
      NA_ASSIGN_OR_RETURN(auto v, cursor.Value());
      flags.config_path = v;
      flags.config_explicit = true;
    } else if (arg == "--state-dir") {
      status = cursor.Take(flags.state_dir);
    } else if (arg == "--runtime-dir") {
      status = cursor.Take(flags.runtime_dir);
    } else if (arg == "--log-level") {
      status = cursor.Take(flags.log_level);
    } else if (arg == "--api-socket") {
      status = cursor.Take(flags.api_socket);
    } else if (arg == "--metrics-listen") {
      status = cursor.Take(flags.metrics_listen);
    } else if (arg == "--cpu-scheduling") {
      status = cursor.Take(flags.cpu_scheduling);
    } else if (arg == "--sources") {
      status = cursor.Take(flags.sources);
    } else if (arg == "--record-windows") {
      NA_ASSIGN_OR_RETURN(auto v, cursor.Value());
      flags.record_windows = v;
    } else if (arg == "--default-mode") {
      NA_ASSIGN_OR_RETURN(auto v, cursor.Value());
      auto mode = engine::ParseControllerMode(v);
      if (!mode) return Bad("--default-mode: unknown mode '" + v + "' (off, adaptive, interrupt, poll, shadow)");
      flags.default_mode = *mode;
    } else if (arg == "--min-disruptive-interval") {
      status = cursor.TakeSeconds(flags.min_disruptive_interval_seconds, 0);
    } else if (arg == "--target-idle") {
      status = cursor.TakeSeconds(flags.target_idle_seconds, 1);
    } else if (arg == "--exit-after") {
      NA_ASSIGN_OR_RETURN(auto v, cursor.Value());
      const std::optional<double> seconds = Seconds(v);
      if (!seconds || *seconds <= 0) return Bad("--exit-after: not a positive number of seconds: '" + v + "'");
      flags.exit_after_seconds = *seconds;
    } else {
      return Bad("unknown argument '" + args[i] + "' (see --help)");
    }
    if (!status) return status.error();
  }
  if (flags.config_path.empty()) flags.config_path = std::string(config::kDefaultConfigPath);
  return flags;
}

}  // namespace nvmeadapt::daemon
