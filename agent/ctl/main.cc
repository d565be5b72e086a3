// SPDX-License-Identifier: Apache-2.0
// nvme-adaptctl: the command-line client of the nvme-adapt agent's gRPC API.
#include <algorithm>
#include <iostream>

#include "agent/api/validate.h"
#include "agent/ctl/client.h"
#include "agent/ctl/command_table.h"
#include "agent/ctl/commands.h"
#include "agent/ctl/output.h"
#include "agent/ctl/terminal_text.h"
#include "agent/ctl/values.h"

#ifndef NVME_ADAPT_VERSION
#define NVME_ADAPT_VERSION "unknown"
#endif

namespace nvmeadapt::ctl {
namespace {

int Main(int argc, char** argv) {
  TerminalText safe_out(std::cout, TerminalMode::kText), safe_err(std::cerr, TerminalMode::kText);
  CommandLine line = ParseCommandLine(Commands(), argc, argv, std::cout);
  if (line.version) {
    std::cout << "nvme-adaptctl " << NVME_ADAPT_VERSION << "\n";
    return 0;
  }
  if (line.exit_now) return line.exit_code;
  const Args& args = line.args;
  if (const Output output = OutputOf(args); output == Output::kJson || output == Output::kYaml) {
    safe_out.set_mode(TerminalMode::kData);
  }
  if (line.command->run_local != nullptr) return line.command->run_local(args, std::cout);

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
  return line.command->run(args, *client, std::cout);
}

}  // namespace
}  // namespace nvmeadapt::ctl

int main(int argc, char** argv) { return nvmeadapt::ctl::Main(argc, argv); }
