#include "agent/actuate/reconnect_lever.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "agent/discover/fabrics_layer.h"
#include "agent/discover/fs.h"

namespace nvmeadapt::actuate {
namespace {

using discover::JoinPath;

constexpr char kConnectSuffix[] = " connect";
constexpr char kPollSuffix[] = " nr_poll_queues";

// The options a restore point may carry: what ReadConnection writes, nothing a journal could add.
bool IsConnectOption(const std::string& arg) {
  for (const char* prefix : {"--transport=", "--traddr=", "--trsvcid=", "--nqn=", "--hostnqn=", "--hostid=",
                             "--host-traddr=", "--host-iface=", "--ctrl-loss-tmo=", "--reconnect-delay="}) {
    if (arg.rfind(prefix, 0) == 0 && arg.size() > std::char_traits<char>::length(prefix)) return true;
  }
  return false;
}

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ReconnectLever::ReconnectLever(ReconnectOptions options)
    : PlannedLever(LeverKind::kTcpReconnect, LeverScope::kController, options.dry_run), options_(std::move(options)) {
  if (!options_.commands) options_.commands = std::make_shared<SystemCommandRunner>();
}

Result<TcpConnection> ReconnectLever::ReadConnection(const std::string& controller) const {
  const std::string dir = JoinPath(JoinPath(options_.sysfs_root, "class/nvme"), controller);
  if (!discover::IsDirectory(dir)) return Fail(ErrorCode::kNotFound, dir, "controller " + controller + ": " + dir + " not found");
  const auto attribute = [&dir](const char* name) {
    auto value = discover::ReadTrimmed(JoinPath(dir, name));
    return value ? *value : std::string();
  };
  const std::string transport = attribute("transport");
  if (transport != "tcp") {
    return Fail(ErrorCode::kUnsupported, dir,
                controller + ": transport " + (transport.empty() ? "unknown" : transport) +
                    ", not tcp: the reconnect lever serves NVMe/TCP host controllers only");
  }
  const std::string nqn = attribute("subsysnqn");
  const auto fields = discover::FabricsAddressFields(attribute("address"));
  const std::map<std::string, std::string> address(fields.begin(), fields.end());
  const auto traddr = address.find("traddr");
  const auto trsvcid = address.find("trsvcid");
  if (nqn.empty() || traddr == address.end() || trsvcid == address.end()) {
    return Fail(ErrorCode::kIo, dir, controller + ": no subsysnqn, or an address without traddr and trsvcid (" +
                                         attribute("address") + "): cannot connect it again");
  }
  TcpConnection connection;
  connection.controller = controller;
  connection.name = "tcp:" + traddr->second + ":" + trsvcid->second + "/" + nqn;
  connection.args = {"--transport=tcp", "--traddr=" + traddr->second, "--trsvcid=" + trsvcid->second, "--nqn=" + nqn};
  for (const auto& [attr, option] : {std::pair{"hostnqn", "--hostnqn="}, std::pair{"hostid", "--hostid="}}) {
    if (const std::string value = attribute(attr); !value.empty()) connection.args.push_back(option + value);
  }
  for (const auto& [field, option] : {std::pair{"host_traddr", "--host-traddr="}, std::pair{"host_iface", "--host-iface="}}) {
    if (const auto it = address.find(field); it != address.end() && !it->second.empty()) {
      connection.args.push_back(option + it->second);
    }
  }
  // How long the host retries a lost connection: a reconnect with the defaults would turn a host set to give
  // up in seconds into one that retries a vanished target for ten minutes. sysfs says "off" for forever.
  // Kernels without these attributes: the connect defaults, as before.
  if (const std::string delay = attribute("reconnect_delay"); !delay.empty()) {
    connection.args.push_back("--reconnect-delay=" + delay);
  }
  if (const std::string loss = attribute("ctrl_loss_tmo"); !loss.empty()) {
    connection.args.push_back("--ctrl-loss-tmo=" + (loss == "off" ? std::string("-1") : loss));
  }
  return connection;
}

std::optional<uint32_t> ReconnectLever::PollQueuesNow(const TcpConnection& connection) const {
  const std::string dir = JoinPath(JoinPath(options_.sysfs_root, "class/nvme"), connection.controller);
  const std::optional<uint32_t> seen = discover::FabricsPollQueues(dir, discover::OnlineCpus(options_.sysfs_root));
  const auto asked = connected_with_.find(connection.name);
  // What this lever asked for is exact; sysfs only says whether there are poll queues. Someone else's
  // reconnect since makes them disagree: sysfs wins then.
  // Right after a connect the namespaces may not be scanned yet: what was asked is what there is.
  if (asked != connected_with_.end() && (!seen || (asked->second > 0) == (*seen > 0))) return asked->second;
  return seen;
}

Result<PlannedLever::StepPlan> ReconnectLever::MakePlan(const LeverTarget& target, ReapMode mode) {
  NA_ASSIGN_OR_RETURN(const TcpConnection connection, ReadConnection(target.controller));
  const std::optional<uint32_t> now = PollQueuesNow(connection);
  const uint32_t wanted = mode == ReapMode::kPoll ? options_.poll_queues : 0;
  StepPlan plan;
  plan.found.push_back({connection.name + kConnectSuffix, nlohmann::json(connection.args).dump()});
  // Unknown (no namespace says): recorded as none, the connect default.
  plan.found.push_back({connection.name + kPollSuffix, std::to_string(now.value_or(0))});
  const bool in_mode = now && (mode == ReapMode::kPoll ? *now > 0 : *now == 0);
  if (!in_mode) plan.steps.push_back(ReconnectStep(connection, wanted, now));
  return plan;
}

PlannedLever::Step ReconnectLever::ReconnectStep(const TcpConnection& connection, uint32_t poll_queues,
                                                 std::optional<uint32_t> before) {
  return Step{connection.name + kPollSuffix, std::to_string(poll_queues),
              [this, connection, poll_queues, before] { return Reconnect(connection, poll_queues, before); }};
}

Result<CommandOutcome> ReconnectLever::RunCli(const std::vector<std::string>& argv) const {
  auto outcome = options_.commands->Run(argv);
  if (!outcome && outcome.error().code == ErrorCode::kNotFound) {
    return Fail(CommandLine(argv), MakeError(ErrorCode::kNotFound, "'" + options_.nvme_cli +
                                                                       "' not found: this lever runs nvme-cli (install "
                                                                       "the nvme-cli package; the image has it): " +
                                                                       outcome.error().message));
  }
  if (!outcome) return Fail(CommandLine(argv), outcome.error());
  return outcome;
}

Status ReconnectLever::Reconnect(const TcpConnection& connection, uint32_t poll_queues, std::optional<uint32_t> before) {
  const auto connect = [&](uint32_t polls) {
    std::vector<std::string> argv{options_.nvme_cli, "connect"};
    argv.insert(argv.end(), connection.args.begin(), connection.args.end());
    // nvme-cli leaves the option out at 0 (the kernel refuses nr_poll_queues=0): none is the default.
    if (polls > 0) argv.push_back("--nr-poll-queues=" + std::to_string(polls));
    return argv;
  };
  const std::vector<std::string> disconnect{options_.nvme_cli, "disconnect", "--device=" + connection.controller};
  NA_ASSIGN_OR_RETURN(const CommandOutcome off, RunCli(disconnect));
  if (off.exit_status != 0) {
    return Fail(ErrorCode::kRefused, connection.controller,
                CommandLine(disconnect) + " failed (status " + std::to_string(off.exit_status) + ": " + off.output +
                    "): " + connection.controller + " left as it was");
  }
  connected_with_.erase(connection.name);
  const std::vector<std::string> argv = connect(poll_queues);
  NA_ASSIGN_OR_RETURN(const CommandOutcome on, RunCli(argv));
  if (on.exit_status == 0) {
    connected_with_[connection.name] = poll_queues;
    return OkStatus();
  }
  std::string why = CommandLine(argv) + " failed (status " + std::to_string(on.exit_status) + ": " + on.output + ")";
  // Disconnected by this lever: connect as it was, so that a refused switch leaves the host usable.
  const uint32_t previous = before.value_or(0);
  auto back = RunCli(connect(previous));
  if (back && back->exit_status == 0) {
    connected_with_[connection.name] = previous;
    return Fail(ErrorCode::kRefused, connection.controller,
                why + "; connected again as it was (nr_poll_queues " + std::to_string(previous) + ")");
  }
  const std::string again = back ? "status " + std::to_string(back->exit_status) + ": " + back->output
                                 : back.error().message;
  return Fail(ErrorCode::kIo, connection.controller,
              why + "; connecting as it was failed too (" + again + "): " + connection.name + " is disconnected");
}

std::optional<TcpConnection> ReconnectLever::FindConnection(const std::string& name, const std::string& hint) const {
  std::vector<std::string> names{hint};
  if (auto listed = discover::ListDir(JoinPath(options_.sysfs_root, "class/nvme"))) {
    for (const auto& entry : *listed) {
      if (entry != hint) names.push_back(entry);
    }
  }
  for (const std::string& controller : names) {
    auto connection = ReadConnection(controller);
    if (connection && connection->name == name) return *connection;
  }
  return std::nullopt;
}

Result<std::vector<PlannedLever::Step>> ReconnectLever::MakeRestore(const RestorePoint& point) {
  const std::string what = "restore point for " + point.target.ToString();
  const auto bad = [&](const std::string& why) { return Fail(ErrorCode::kIo, point.target.controller, what + ": " + why); };
  if (point.steps.size() != 2 || !EndsWith(point.steps[0].object, kConnectSuffix) ||
      !EndsWith(point.steps[1].object, kPollSuffix)) {
    return bad("not the connection and poll queue count this lever records");
  }
  const std::string name = point.steps[0].object.substr(0, point.steps[0].object.size() - std::strlen(kConnectSuffix));
  if (point.steps[1].object != name + kPollSuffix) return bad("its two steps name different connections");
  uint32_t safe = 0;
  if (!discover::ParseU32(point.steps[1].value, &safe)) return bad("poll queue count '" + point.steps[1].value + "'");
  const nlohmann::json args = nlohmann::json::parse(point.steps[0].value, nullptr, false);
  if (!args.is_array() || args.empty() ||
      !std::all_of(args.begin(), args.end(), [](const auto& a) { return a.is_string() && IsConnectOption(a); })) {
    return bad("connect options " + point.steps[0].value + " are not the ones this lever records");
  }
  const std::optional<TcpConnection> connection = FindConnection(name, point.target.controller);
  if (!connection) {
    return Fail(ErrorCode::kNotFound, name, name + ": no controller is connected over it now (disconnected since): "
                                                   "nothing to restore, and a restore does not connect it");
  }
  if (PollQueuesNow(*connection) == safe) return std::vector<Step>{};
  return std::vector<Step>{ReconnectStep(*connection, safe, PollQueuesNow(*connection))};
}

}  // namespace nvmeadapt::actuate
