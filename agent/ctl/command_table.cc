// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/command_table.h"

#include <ostream>

#include "agent/config/profiles.h"
#include "agent/ctl/commands.h"
#include "agent/ctl/completion.h"
#include "agent/ctl/format.h"
#include "agent/ctl/policy_flags.h"
#include "agent/ctl/report.h"

namespace nvmeadapt::ctl {
namespace {

constexpr const char* kSourceHelp = "only queues of source S: kernel, block, uvnvme, spdk";
constexpr const char* kBashCompletionHelp = "Load it with: source <(nvme-adaptctl completion bash)";
constexpr const char* kZshCompletionHelp =
    "Save it as _nvme-adaptctl in a directory of $fpath, or load it after compinit with:\n"
    "  source <(nvme-adaptctl completion zsh)";

int RunCompletion(const Args& args, std::ostream& out) {
  const std::string& shell = args.positional.back();
  out << (shell == "zsh" ? ZshCompletion(Commands()) : BashCompletion(Commands()));
  return 0;
}

// The profiles and their fields, as `policy get` shows levels: a profile's purpose, then its row.
int RunProfiles(const Args&, std::ostream& out) {
  v1::PolicySet as_levels;
  for (const config::Profile& profile : config::Profiles()) {
    out << profile.name << ": " << profile.about << "\n";
    auto* level = as_levels.add_controllers();
    level->set_controller(std::string(profile.name));
    *level->mutable_policy() = config::ProfileLevel(profile);
  }
  out << "\n";
  PrintPolicySet(as_levels, nullptr, out);
  return 0;
}

std::vector<OptionSpec> PolicySetOptions() {
  std::vector<OptionSpec> options = {
      {"mode", "MODE", "the mode: off, adaptive, interrupt, poll, shadow (a global off is the node's off switch)"},
      {"controller", "C", "the controller's level (default: the global one)"},
      {"queue", "N|C:qN", "a queue's level: N with --controller, or CONTROLLER:qN"},
      {"replace", "", "the level becomes exactly what is given (fields not given inherit)"},
      {"selector", "NAME", "a selector entry's level instead (created with --match, which it then keeps)"},
      {"match", "KEY=VALUE",
       "a selector criterion: controller (glob), id, model (glob), serial, firmware (glob), subsysnqn, transport, "
       "layer, pci_address, hostname (glob), kernel_release (glob), node_labels (pool=fast,zone=eu-*), "
       "queues (1,3,5-8)",
       true},
      {"remove", "", "with --selector: drop that entry"},
      {"file", "JSON", "a Policy as JSON (\"-\" for stdin), e.g. {\"mode\": \"CONTROLLER_MODE_ADAPTIVE\"}"},
  };
  for (const PolicyFlag& flag : PolicyFlags()) {
    options.push_back({std::string(flag.option), std::string(flag.value),
                       "policy field shown as " + std::string(flag.column) + " by policy get"});
  }
  return options;
}

CommandSpec PauseCommand() {
  return {{"pause"},
          "hold every queue in interrupt mode (or off) until resume or for a time, whatever the policy says",
          {{"for", "DURATION", "the pause ends after this long (default: until resume)"},
           {"mode", "MODE", "interrupt (default), or off: each queue back to its safe value and left alone"}},
          {},
          "Persisted: the pause holds over config reloads, policy changes and restarts. It erases nothing: the policy\n"
          "stays as set (policy set still works, and applies at resume), and an override set before it comes back\n"
          "at resume unless it expired (new overrides are refused meanwhile). status and the nvme_adapt_paused\n"
          "metric show it.",
          &RunPause};
}

std::vector<CommandSpec> MakeCommands() {
  return {
      {{"status"}, "the agent's state: collector, levers, queue counts", {}, {},
       "Exits 1 when the agent cannot be reached or its loop does not take the call (a held-up agent).", &RunStatus},
      {{"queues"},
       "every queue the agent sees",
       {{"source", "S", kSourceHelp}, {"controller", "C", "only the queues of controller C"}},
       {},
       "-o wide adds the controller's stable ID, the lever, CPUs, vector, windows and failures.",
       &RunQueues},
      {{"policy", "get"}, "the policy levels as set, and the effective global policy", {}, {}, "", &RunPolicy},
      {{"policy", "set"},
       "change the global, a controller's or a queue's policy",
       PolicySetOptions(),
       {},
       "Fields not given are left as they are; with --replace the level becomes exactly what is given.\n"
       "Flags override the fields of --file. --controller takes a name (nvme0) or a stable ID; a name is kept as\n"
       "the controller's stable ID, so the level stays with the device when it is renumbered.\n"
       "Precedence: global < controller selectors < controller < queue selectors (--match queues=...) < queue;\n"
       "among selectors the one with more criteria wins. Example:\n"
       "  nvme-adaptctl policy set --selector pm1743 --match 'model=SAMSUNG MZWLO*' --match transport=pcie --mode adaptive",
       &RunPolicy},
      {{"policy", "profiles"},
       "the named sets of policy fields a level can start from (--profile)",
       {},
       {},
       "",
       nullptr,
       &RunProfiles},
      {{"policy", "explain"},
       "a queue's effective policy, each field with the entry that set it and its source",
       {},
       {"QUEUE"},
       "QUEUE like nvme0:q1. ENTRY is default, global, selector NAME, controller C or queue C:qN (with the\n"
       "profile when the entry's profile set the field, or the lever when it limits the mode); SOURCE is default,\n"
       "config file or api.",
       &RunPolicy},
      {{"policy", "reset"},
       "drop the policy set over the API: the config file's policy is in force again",
       {},
       {},
       "",
       &RunPolicy},
      {{"override"},
       "force a queue's reaping mode",
       {{"for", "DURATION", "the override ends after this long (default: until cleared)"}},
       {"QUEUE", "MODE"},
       "QUEUE like nvme0:q1 or uvnvme:1234:0:q2; MODE interrupt, poll or none (none clears).",
       &RunOverride},
      PauseCommand(),
      {{"resume"}, "end the node's pause: the policy (and any override it held) is in force again", {}, {}, "",
       &RunPause},
      {{"watch"},
       "stream events until interrupted or N events",
       {{"kind", "K", "decision, override, policy, lever_error, queue_added, queue_removed, switch", true},
        {"source", "S", kSourceHelp},
        {"controller", "C", "only events of controller C"},
        {"queue", "N|C:qN", "only events of one queue"},
        {"count", "N", "stop after N events"}},
       {},
       "",
       &RunWatch},
      {{"report"},
       "per controller: the lever and what it disturbs, eligible queues, the record since the agent started "
       "(tries, kept, share polled, speedup, CPU) and a verdict; works in shadow mode",
       {},
       {},
       "",
       &RunReport},
      {{"completion", "bash"}, "print a bash completion script", {}, {}, kBashCompletionHelp, nullptr, &RunCompletion},
      {{"completion", "zsh"}, "print a zsh completion script", {}, {}, kZshCompletionHelp, nullptr, &RunCompletion},
  };
}

}  // namespace

std::span<const CommandSpec> Commands() {
  static const std::vector<CommandSpec> commands = MakeCommands();
  return commands;
}

}  // namespace nvmeadapt::ctl
