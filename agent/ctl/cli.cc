// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/cli.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <sstream>

namespace nvmeadapt::ctl {

// Options every command takes: where the agent is, how to reach it, how to print.
const std::vector<OptionSpec>& GlobalOptions() {
  static const std::vector<OptionSpec> options = {
      {"addr", "ADDRESS", "Unix socket path (default /run/nvme-adapt/agent.sock) or host:port (TLS)"},
      {"ca", "FILE", "PEM roots that verify the agent's certificate (default: the system's)"},
      {"cert", "FILE", "client certificate (PEM), with --key"},
      {"key", "FILE", "client key (PEM)"},
      {"token-file", "FILE", "bearer token, sent as \"authorization: Bearer ...\""},
      {"server-name", "NAME", "name expected in the agent's certificate, when not the host of --addr"},
      {"insecure-loopback-tcp", "", "plain TCP without TLS; loopback addresses only"},
      {"timeout", "DURATION", "deadline of each call (default 10s)"},
      {"json", "", "the same as -o json"},
  };
  return options;
}

namespace {

constexpr const char* kFooter =
    "DURATION: numbers with a unit each (ns, us, ms, s, m, h, d), e.g. 30s, 5m, 10us, 1m30s, 2d: absl's grammar\n"
    "plus d for days, as nvme-adaptd's flags and config take them.\n"
    "Exit status: 0 done, 1 the agent refused or could not be reached, 2 bad command line.";

// The CLI11 options made for the OptionSpecs, by the Args name they fill.
struct BoundOption {
  std::string name;
  CLI::Option* option;
  bool flag;
};
using Bound = std::vector<BoundOption>;

void AddOption(CLI::App& app, const OptionSpec& spec, Bound& bound) {
  const std::string name = "--" + spec.name;
  CLI::Option* option = nullptr;
  if (spec.value.empty()) {
    option = app.add_flag(name, spec.help);
  } else {
    option = app.add_option(name, spec.help)->type_name(spec.value)->type_size(1)->expected(1);
    option->multi_option_policy(spec.repeated ? CLI::MultiOptionPolicy::TakeAll : CLI::MultiOptionPolicy::TakeLast);
  }
  bound.push_back({spec.name, option, spec.value.empty()});
}

// The command's subcommand under `parent`, made once for every command that shares the word.
CLI::App* Subcommand(CLI::App& parent, const std::string& word, const std::string& summary) {
  for (CLI::App* sub : parent.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == word) return sub;
  }
  CLI::App* sub = parent.add_subcommand(word, summary);
  sub->footer(kFooter);
  // A word that only groups commands ("policy") lists them as its summary.
  if (parent.get_parent() != nullptr) {
    const std::string listed = parent.get_description();
    parent.description(listed.empty() ? "commands: " + word : listed + ", " + word);
  }
  return sub;
}

void Collect(const Bound& bound, Args& args) {
  for (const auto& [name, option, flag] : bound) {
    if (option->count() == 0) continue;
    if (flag) {
      args.flags.insert(name);
    } else {
      auto& values = args.values[name];
      for (const std::string& value : option->results()) values.push_back(value);
    }
  }
}

}  // namespace

CommandLine ParseCommandLine(std::span<const CommandSpec> commands, int argc, const char* const* argv,
                             std::ostream& out) {
  CLI::App app("Control the nvme-adapt agent over its gRPC API.", "nvme-adaptctl");
  app.fallthrough();  // global options after a command's words, as before
  app.require_subcommand(1);
  app.footer(kFooter);
  Bound global;
  for (const OptionSpec& spec : GlobalOptions()) AddOption(app, spec, global);
  CLI::Option* output = app.add_option("-o,--output", "output format: table, wide, json (one object a line), yaml")
                            ->type_name("FORMAT")
                            ->check(CLI::IsMember({"table", "wide", "json", "yaml"}));
  const std::string version_help = "print the version and exit";
  CLI::Option* version = app.add_flag("--version", version_help);

  struct Leaf {
    const CommandSpec* command;
    CLI::App* app;
    Bound options;
    std::vector<CLI::Option*> positionals;
  };
  std::vector<Leaf> leaves;
  leaves.reserve(commands.size());
  for (const CommandSpec& command : commands) {
    CLI::App* at = &app;
    for (size_t i = 0; i < command.words.size(); ++i) {
      const bool last = i + 1 == command.words.size();
      at = Subcommand(*at, command.words[i], last ? command.summary : "");
      if (!last) at->require_subcommand(1);
    }
    if (!command.footer.empty()) at->footer(command.footer + "\n" + kFooter);
    Leaf leaf{&command, at, {}, {}};
    for (const OptionSpec& spec : command.options) AddOption(*at, spec, leaf.options);
    for (const std::string& name : command.positionals) {
      leaf.positionals.push_back(at->add_option(name, name)->required());
    }
    leaves.push_back(std::move(leaf));
  }

  CommandLine line;
  std::vector<std::string> words(argv + 1, argv + argc);
  std::reverse(words.begin(), words.end());  // CLI11 takes a reversed vector
  try {
    app.parse(words);
  } catch (const CLI::ParseError& e) {
    line.exit_now = true;
    if (version->count() > 0 && e.get_exit_code() != 0) {
      line.version = true;  // --version without a command
      return line;
    }
    std::ostringstream err;
    line.exit_code = app.exit(e, out, err) == 0 ? 0 : 2;
    if (line.exit_code != 0) {
      // A word no command has: CLI11 says only that a command is missing; name the word instead.
      const std::vector<std::string> rest = app.remaining();
      const std::string what = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !rest.empty()
                                   ? "unknown command '" + rest.front() + "'"
                                   : std::string(e.what());
      std::cerr << "nvme-adaptctl: " << what << "\n(see nvme-adaptctl --help, or COMMAND --help)\n";
    }
    return line;
  }
  line.version = version->count() > 0;
  Collect(global, line.args);
  if (output->count() > 0) line.args.values["output"].push_back(output->as<std::string>());
  for (const Leaf& leaf : leaves) {
    if (!leaf.app->parsed()) continue;
    line.command = leaf.command;
    line.args.positional = leaf.command->words;
    for (CLI::Option* positional : leaf.positionals) line.args.positional.push_back(positional->as<std::string>());
    Collect(leaf.options, line.args);
  }
  return line;
}

}  // namespace nvmeadapt::ctl
