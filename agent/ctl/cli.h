// SPDX-License-Identifier: Apache-2.0
// nvme-adaptctl's command line on CLI11: one table of commands (their words, options and run function), from
// which the parser, -h/--help of every command and the bash completion are made. A new command is one row
// in the table (command_table.cc); the commands themselves read the parsed Args. Shell completions: completion.h.
#pragma once

#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/ctl/args.h"

namespace nvmeadapt::ctl {

class AgentClient;

struct OptionSpec {
  std::string name;   // "controller" for --controller
  std::string value;  // as the help names it ("C", "DURATION"); empty: a flag without a value
  std::string help;
  bool repeated = false;  // may be given more than once (every value is kept)
};

struct CommandSpec {
  std::vector<std::string> words;  // {"policy", "set"}
  std::string summary;
  std::vector<OptionSpec> options;         // beyond the global options
  std::vector<std::string> positionals;    // names of the words that follow, e.g. {"QUEUE", "MODE"}
  std::string footer;                      // more help after the options, or empty
  int (*run)(const Args&, const AgentClient&, std::ostream&) = nullptr;
  int (*run_local)(const Args&, std::ostream&) = nullptr;  // instead of `run`: needs no agent
};

// What the command line asks for: run `command` with `args`, or exit at once with `exit_code` (help and
// --version printed, or a usage error reported on stderr).
struct CommandLine {
  const CommandSpec* command = nullptr;
  Args args;
  bool exit_now = false;
  int exit_code = 0;
  bool version = false;  // --version: print it and exit 0
};

// Output formats of -o/--output (--json is -o json).
inline constexpr std::string_view kOutputFormats[] = {"table", "wide", "json", "yaml"};

// Parses argv against `commands`. Help (-h, --help, at any level) and --version go to `out`; usage errors are
// one line on stderr with exit code 2. Args.positional is the command's words, then its positionals.
CommandLine ParseCommandLine(std::span<const CommandSpec> commands, int argc, const char* const* argv,
                             std::ostream& out);

// The options every command takes (--addr, --json, ...), besides -o/--output and --version.
const std::vector<OptionSpec>& GlobalOptions();

}  // namespace nvmeadapt::ctl
