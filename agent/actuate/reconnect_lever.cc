// SPDX-License-Identifier: Apache-2.0
#include "agent/actuate/reconnect_lever.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

#include "agent/actuate/lever_registry.h"
#include "agent/discover/fabrics_layer.h"
#include "agent/discover/fs.h"
#include "common/failpoint.h"

namespace nvmeadapt::actuate {
namespace {

using discover::JoinPath;

constexpr char kConnectSuffix[] = " connect";
constexpr char kPollSuffix[] = " nr_poll_queues";

constexpr char kPendingSuffix[] = " connecting";
// The kernel's defaults (NVMF_DEF_QUEUE_SIZE, NVME_DEFAULT_KATO): a connection at them is connected without
// the option, as it most likely was.
constexpr uint32_t kDefaultQueueSize = 128;
constexpr uint32_t kDefaultKeepAliveSeconds = 5;

// The options a restore point may carry: what ReadConnection writes, nothing a journal could add.
constexpr const char* kRecordedOptions[] = {"--transport=", "--traddr=", "--trsvcid=", "--nqn=", "--hostnqn=",
                                            "--hostid=", "--host-traddr=", "--host-iface=", "--ctrl-loss-tmo=",
                                            "--reconnect-delay=", "--nr-io-queues=", "--queue-size=",
                                            "--keep-alive-tmo=", "--fast_io_fail_tmo=", "--dhchap-secret=",
                                            "--dhchap-ctrl-secret=", "--keyring="};
constexpr const char* kRecordedFlags[] = {"--tls", "--concat", "--hdr-digest", "--data-digest"};

bool IsConnectOption(const std::string& arg) {
  for (const char* prefix : kRecordedOptions) {
    if (arg.rfind(prefix, 0) == 0 && arg.size() > std::char_traits<char>::length(prefix)) return true;
  }
  return std::find(std::begin(kRecordedFlags), std::end(kRecordedFlags), arg) != std::end(kRecordedFlags);
}

// The value of `option` ("--hostnqn=") among a connection's arguments; empty when it has none.
std::string ArgValue(const std::vector<std::string>& args, std::string_view option) {
  for (const std::string& arg : args) {
    if (arg.rfind(option, 0) == 0) return arg.substr(option.size());
  }
  return "";
}

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ReconnectLever::ReconnectLever(ReconnectOptions options)
    : PlannedLever(LeverKind::kTcpReconnect, LeverScope::kController, options.dry_run), options_(std::move(options)) {
  if (!options_.fabrics) options_.fabrics = LibnvmeFabricsConnector();
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
  NA_RETURN_IF_ERROR(ReadSessionSettings(dir, connection));
  return connection;
}

// Everything else sysfs shows of the connection, as the options that give it again. The kernel shows neither
// the header and data digests (AddDigests) nor nr_write_queues, tos or disable_sqflow (docs/fabrics.md).
Status ReconnectLever::ReadSessionSettings(const std::string& dir, TcpConnection& connection) const {
  const auto attribute = [&dir](const char* name) {
    auto value = discover::ReadTrimmed(JoinPath(dir, name));
    return value ? *value : std::string();
  };
  std::vector<std::string>& args = connection.args;
  // queue_count counts the admin queue and the poll queues; the default is one I/O queue per online CPU.
  uint32_t queue_count = 0;
  if (discover::ParseU32(attribute("queue_count"), &queue_count) && queue_count > 1) {
    const uint32_t polls = PollQueuesNow(connection).value_or(0);
    const uint32_t io = queue_count - 1 > polls ? queue_count - 1 - polls : 0;
    if (io > 0 && io != discover::OnlineCpus(options_.sysfs_root)) args.push_back("--nr-io-queues=" + std::to_string(io));
  }
  uint32_t sqsize = 0;  // 0's based
  if (discover::ParseU32(attribute("sqsize"), &sqsize) && sqsize + 1 != kDefaultQueueSize) {
    args.push_back("--queue-size=" + std::to_string(sqsize + 1));
  }
  if (const std::string kato = attribute("kato"); kato == "0") {
    return Fail(ErrorCode::kUnsupported, connection.controller,
                connection.controller + ": keep-alive is off (kato 0), which nvme connect cannot ask for: not switched");
  } else if (!kato.empty() && kato != std::to_string(kDefaultKeepAliveSeconds)) {
    args.push_back("--keep-alive-tmo=" + kato);
  }
  if (const std::string fail = attribute("fast_io_fail_tmo"); !fail.empty() && fail != "off") {
    args.push_back("--fast_io_fail_tmo=" + fail);
  }
  for (const auto& [attr, option] : {std::pair{"dhchap_secret", "--dhchap-secret="},
                                     std::pair{"dhchap_ctrl_secret", "--dhchap-ctrl-secret="}}) {
    if (const std::string secret = attribute(attr); !secret.empty() && secret != "none") args.push_back(option + secret);
  }
  // TLS: tls_mode (6.13+) says which kind; older kernels show tls_key only for a TLS connection. The key is
  // looked up again in the keyring by its identity, as at the first connect.
  const std::string tls_mode = attribute("tls_mode");
  if (tls_mode == "concat") {
    args.push_back("--concat");
  } else if (tls_mode == "tls" || (tls_mode.empty() && !attribute("tls_key").empty())) {
    args.push_back("--tls");
  }
  if (const std::string keyring = attribute("tls_keyring"); !keyring.empty() && keyring != ".nvme") {
    args.push_back("--keyring=" + keyring);
  }
  return OkStatus();
}

Status ReconnectLever::AddDigests(TcpConnection& connection) const {
  const std::vector<std::string>& args = connection.args;
  const PortKey key{ArgValue(args, "--hostnqn="), ArgValue(args, "--nqn="),         ArgValue(args, "--traddr="),
                    ArgValue(args, "--trsvcid="), ArgValue(args, "--host-traddr="), ArgValue(args, "--host-iface=")};
  auto configured = DigestsFromNvmeConfig(options_.nvme_cli_config, key);
  if (!configured) {
    return Fail(ErrorCode::kUnsupported, connection.controller,
                connection.controller + ": " + configured.error().message + ": its digests cannot be told: not switched");
  }
  std::optional<ConnectionDigests> declared;
  if (const auto it = options_.declared_digests.find(connection.controller); it != options_.declared_digests.end()) {
    declared = it->second;
  }
  const bool tls = std::find(args.begin(), args.end(), "--tls") != args.end() ||
                   std::find(args.begin(), args.end(), "--concat") != args.end();
  auto digests = ResolveDigests(connection.controller, declared, *configured, tls, options_.nvme_cli_config);
  if (!digests) return Fail(connection.controller, digests.error());
  if (digests->hdr) connection.args.push_back("--hdr-digest");
  if (digests->data) connection.args.push_back("--data-digest");
  return OkStatus();
}

// A setting libnvme cannot give would fail the connect, and the connect back the same way: checked before
// anything is disconnected.
Status ReconnectLever::CheckConnectable(const TcpConnection& connection) const {
  auto settings = ParseFabricsOptions(connection.args, options_.poll_queues);
  if (!settings) {
    return Fail(ErrorCode::kUnsupported, connection.controller,
                connection.controller + " is connected with " + settings.error().message +
                    ": not switched, the connection is left as it is");
  }
  return OkStatus();
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
  NA_ASSIGN_OR_RETURN(TcpConnection connection, ReadConnection(target.controller));
  NA_RETURN_IF_ERROR(AddDigests(connection));
  NA_RETURN_IF_ERROR(CheckConnectable(connection));
  const std::optional<uint32_t> now = PollQueuesNow(connection);
  const uint32_t wanted = mode == ReapMode::kPoll ? options_.poll_queues : 0;
  StepPlan plan;
  plan.found.push_back({connection.name + kConnectSuffix, nlohmann::json(connection.args).dump()});
  // Unknown (no namespace says): recorded as none, the connect default.
  plan.found.push_back({connection.name + kPollSuffix, std::to_string(now.value_or(0))});
  const bool in_mode = now && (mode == ReapMode::kPoll ? *now > 0 : *now == 0);
  if (!in_mode) {
    plan.steps.push_back(ReconnectStep(connection, wanted, now));
    // Between the disconnect and the connect the controller does not exist: this connects it as it is now.
    plan.in_flight = RestorePoint{Kind(), target,
                                  {{connection.name + kConnectSuffix, nlohmann::json(connection.args).dump()},
                                   {connection.name + kPollSuffix, std::to_string(now.value_or(0))},
                                   {connection.name + kPendingSuffix, "1"}}};
  }
  return plan;
}

PlannedLever::Step ReconnectLever::ReconnectStep(const TcpConnection& connection, uint32_t poll_queues,
                                                 std::optional<uint32_t> before) {
  return Step{connection.name + kPollSuffix, std::to_string(poll_queues),
              [this, connection, poll_queues, before] { return Reconnect(connection, poll_queues, before); }};
}

Status ReconnectLever::Connect(const TcpConnection& connection, uint32_t poll_queues) const {
  Status connected = options_.fabrics->Connect(connection.args, poll_queues);
  if (!connected) return Fail(connection.name, connected.error());
  return OkStatus();
}

Status ReconnectLever::Reconnect(const TcpConnection& connection, uint32_t poll_queues, std::optional<uint32_t> before) {
  NA_RETURN_IF_ERROR(CheckConnectable(connection));
  if (Status off = options_.fabrics->Disconnect(connection.controller); !off) {
    return Fail(off.error().code == ErrorCode::kNotFound ? ErrorCode::kNotFound : ErrorCode::kRefused,
                connection.controller, off.error().message + ": " + connection.controller + " left as it was");
  }
  connected_with_.erase(connection.name);
  Failpoint("reconnect_disconnected");  // the host is down until the connect: the journal's in-flight entry
  const Status on = Connect(connection, poll_queues);
  if (on) {
    connected_with_[connection.name] = poll_queues;
    return OkStatus();
  }
  const std::string why = "connecting with nr_poll_queues " + std::to_string(poll_queues) + " failed (" + on.error().message + ")";
  // Disconnected by this lever: connect as it was, so that a refused switch leaves the host usable.
  const uint32_t previous = before.value_or(0);
  const Status back = Connect(connection, previous);
  if (back) {
    connected_with_[connection.name] = previous;
    return Fail(ErrorCode::kRefused, connection.controller,
                why + "; connected again as it was (nr_poll_queues " + std::to_string(previous) + ")");
  }
  return Fail(ErrorCode::kIo, connection.controller,
              why + "; connecting as it was failed too (" + back.error().message + "): " + connection.name +
                  " is disconnected");
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
  if (point.steps.size() < 2 || point.steps.size() > 3 || !EndsWith(point.steps[0].object, kConnectSuffix) ||
      !EndsWith(point.steps[1].object, kPollSuffix)) {
    return bad("not the connection and poll queue count this lever records");
  }
  const std::string name = point.steps[0].object.substr(0, point.steps[0].object.size() - std::strlen(kConnectSuffix));
  if (point.steps[1].object != name + kPollSuffix) return bad("its two steps name different connections");
  // Journaled while a switch ran between its disconnect and its connect: the connection may be down.
  const bool pending = point.steps.size() == 3;
  if (pending && point.steps[2].object != name + kPendingSuffix) return bad("its third step is not a pending connect");
  uint32_t safe = 0;
  if (!discover::ParseU32(point.steps[1].value, &safe)) return bad("poll queue count '" + point.steps[1].value + "'");
  const nlohmann::json args = nlohmann::json::parse(point.steps[0].value, nullptr, false);
  if (!args.is_array() || args.empty() ||
      !std::all_of(args.begin(), args.end(), [](const auto& a) { return a.is_string() && IsConnectOption(a); })) {
    return bad("connect options " + point.steps[0].value + " are not the ones this lever records");
  }
  const std::optional<TcpConnection> connection = FindConnection(name, point.target.controller);
  if (!connection && pending) {
    return std::vector<Step>{ConnectStep(TcpConnection{point.target.controller, args.get<std::vector<std::string>>(), name}, safe)};
  }
  if (pending) return std::vector<Step>{};  // the switch got to its connect: the host is there
  if (!connection) {
    return Fail(ErrorCode::kNotFound, name, name + ": no controller is connected over it now (disconnected since): "
                                                   "nothing to restore, and a restore does not connect it");
  }
  const std::optional<uint32_t> now = PollQueuesNow(*connection);
  if (now == safe) return std::vector<Step>{};
  // Connected again with the journaled options: they hold what sysfs cannot show (the digests), which a
  // fresh read would have to find in its sources again.
  return std::vector<Step>{
      ReconnectStep(TcpConnection{connection->controller, args.get<std::vector<std::string>>(), name}, safe, now)};
}

PlannedLever::Step ReconnectLever::ConnectStep(const TcpConnection& connection, uint32_t poll_queues) {
  return Step{connection.name + kPollSuffix, std::to_string(poll_queues), [this, connection, poll_queues]() -> Status {
                NA_RETURN_IF_ERROR(CheckConnectable(connection));
                if (const Status on = Connect(connection, poll_queues); !on) {
                  return Fail(ErrorCode::kIo, connection.name,
                              on.error().message + ": " + connection.name + " is still disconnected");
                }
                connected_with_[connection.name] = poll_queues;
                return OkStatus();
              }};
}

// Registered with the levers (lever_registry.h).
namespace {

std::unique_ptr<PlannedLever> MakeReconnect(bool dry_run, const config::LeverSettings& settings,
                                            const LeverEnvironment& environment) {
  ReconnectOptions options{environment.sysfs_root, settings.poll_queues, dry_run, environment.fabrics};
  options.nvme_cli_config = settings.nvme_cli_config;
  options.declared_digests = DeclaredDigests(settings);
  return std::make_unique<ReconnectLever>(std::move(options));
}

// Never the engine's call (adaptive leaves the host alone, AUTO never picks it); it restores DH-HMAC-CHAP secrets.
const LeverRegistrar kRegistered({{.kind = LeverKind::kTcpReconnect, .risk = LeverRisk::kReconnectsHost,
                                   .adaptive_as = engine::ControllerMode::kOff, .disruptive = true,
                                   .serves = {Source::kKernelNvme}, .serves_tcp_hosts = true, .takes_digests = true,
                                   .secret_restore_value = true}, &MakeReconnect});

}  // namespace
}  // namespace nvmeadapt::actuate
