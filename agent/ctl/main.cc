// nvme-adaptctl: the command-line client of the nvme-adapt agent's gRPC API.
#include <algorithm>
#include <iostream>

#include "agent/api/validate.h"
#include "agent/ctl/args.h"
#include "agent/ctl/client.h"
#include "agent/ctl/commands.h"
#include "agent/ctl/policy_flags.h"
#include "agent/ctl/values.h"

#ifndef NVME_ADAPT_VERSION
#define NVME_ADAPT_VERSION "unknown"
#endif

namespace nvmeadapt::ctl {
namespace {

constexpr const char* kHelpBeforePolicyFlags = R"(usage: nvme-adaptctl [OPTIONS] COMMAND [ARGS]

Commands:
  status                              the agent's state: collector, levers, queue counts
  queues [--source S] [--controller C]
                                      every queue the agent sees (S: kernel, block, uvnvme, spdk)
  policy get                          the policy levels as set, and the effective global policy
  policy set [FIELDS] [--controller C] [--queue N|C:qN] [--replace] [--file JSON]
                                      change the global, a controller's or a queue's policy
)";
// Here the policy fields' options (policy_flags.h), after --mode.
constexpr const char* kHelpAfterPolicyFlags = R"(      Fields not given are left as they are; with --replace the level becomes exactly what is given.
      --file reads a Policy as JSON ("-" for stdin), e.g. {"mode": "CONTROLLER_MODE_ADAPTIVE"};
      flags override its fields.
  override QUEUE MODE [--for DURATION]
                                      force a queue's reaping mode: QUEUE like nvme0:q1 or
                                      uvnvme:1234:0:q2, MODE interrupt|poll|none (none clears)
  watch [--kind K]... [--source S] [--controller C] [--queue N|C:qN] [--count N]
                                      stream events (K: decision, override, policy, lever_error,
                                      queue_added, queue_removed, switch) until interrupted or N events

Options:
  --addr ADDRESS        Unix socket path (default /run/nvme-adapt/agent.sock) or host:port (TLS)
  --ca FILE             PEM roots that verify the agent's certificate (default: the system's)
  --cert FILE --key FILE
                        client certificate and key (PEM)
  --token-file FILE     bearer token, sent as "authorization: Bearer ..."
  --server-name NAME    name expected in the agent's certificate, when not the host of --addr
  --insecure-loopback-tcp
                        plain TCP without TLS; loopback addresses only
  --timeout DURATION    deadline of each call (default 10s)
  --json                one JSON object per line (canonical proto3 JSON) instead of tables
  --help, --version

DURATION: a number and a unit (ns, us, ms, s, m, h, d), e.g. 30s, 5m, 10us, 1m30s.
Exit status: 0 done, 1 the agent refused or could not be reached (for status: or its loop did not
take the call), 2 bad command line.
)";

int Main(int argc, char** argv) {
  auto parsed = ParseArgs(argc, argv);
  if (!parsed) return UsageError(parsed.error().message);
  const Args& args = *parsed;
  if (args.flag("help")) {
    std::cout << kHelpBeforePolicyFlags << PolicyFlagsHelp("--mode off|adaptive|interrupt|poll|shadow", "      ")
              << kHelpAfterPolicyFlags;
    return 0;
  }
  if (args.flag("version")) {
    std::cout << "nvme-adaptctl " << NVME_ADAPT_VERSION << "\n";
    return 0;
  }
  if (args.positional.empty()) return UsageError("no command given");

  const std::string& command = args.positional[0];
  Status allowed = OkStatus();
  int (*run)(const Args&, const AgentClient&, std::ostream&) = nullptr;
  if (command == "status") {
    allowed = CheckOptions(args, command, {});
    run = &RunStatus;
  } else if (command == "queues") {
    allowed = CheckOptions(args, command, {"source", "controller"});
    run = &RunQueues;
  } else if (command == "policy") {
    const bool set = args.positional.size() > 1 && args.positional[1] == "set";
    std::vector<std::string_view> options = {"mode", "controller", "queue", "replace", "file"};
    for (const PolicyFlag& flag : PolicyFlags()) options.push_back(flag.option);
    allowed = set ? CheckOptions(args, "policy set", options) : CheckOptions(args, "policy get", {});
    run = &RunPolicy;
  } else if (command == "override") {
    allowed = CheckOptions(args, command, {"for"});
    run = &RunOverride;
  } else if (command == "watch") {
    allowed = CheckOptions(args, command, {"kind", "source", "controller", "queue", "count"});
    run = &RunWatch;
  } else {
    return UsageError("unknown command " + api::Quoted(command));
  }
  if (!allowed) return UsageError(allowed.error().message);

  ClientOptions options;
  if (const std::string* v = args.value("addr")) options.address = *v;
  if (const std::string* v = args.value("ca")) options.ca_file = *v;
  if (const std::string* v = args.value("cert")) options.cert_file = *v;
  if (const std::string* v = args.value("key")) options.key_file = *v;
  if (const std::string* v = args.value("token-file")) options.token_file = *v;
  if (const std::string* v = args.value("server-name")) options.server_name = *v;
  options.insecure_loopback_tcp = args.flag("insecure-loopback-tcp");
  if (const std::string* v = args.value("timeout")) {
    auto nanos = ParseDuration(*v);
    if (!nanos || *nanos <= 0) return UsageError("--timeout: expected a duration > 0 such as 10s, got " + api::Quoted(*v));
    options.timeout = std::chrono::milliseconds(std::max<int64_t>(1, *nanos / 1'000'000));
  }
  auto client = AgentClient::Create(options);
  if (!client) {
    if (client.error().code == ErrorCode::kInvalidArgument) return UsageError(client.error().message);
    std::cerr << "nvme-adaptctl: " << client.error().message << "\n";  // an unreadable --ca, --cert, ...
    return kExitServerError;
  }
  return run(args, *client, std::cout);
}

}  // namespace
}  // namespace nvmeadapt::ctl

int main(int argc, char** argv) { return nvmeadapt::ctl::Main(argc, argv); }
