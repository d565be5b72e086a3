// SPDX-License-Identifier: Apache-2.0
#include "agent/ctl/completion.h"

#include <map>
#include <set>
#include <sstream>

namespace nvmeadapt::ctl {
namespace {

// Per path of command words typed so far ("" at the start, "policy", "policy set"): the words that may
// follow it, and what may be completed there (those words, the command's options and the global ones).
struct CompletionTable {
  std::map<std::string, std::set<std::string>> next;
  std::map<std::string, std::string> candidates;  // space-separated
};

CompletionTable MakeTable(std::span<const CommandSpec> commands) {
  CompletionTable table;
  std::map<std::string, std::set<std::string>> options;
  std::set<std::string> global = {"-h", "--help", "-o", "--output", "--version"};
  for (const OptionSpec& spec : GlobalOptions()) global.insert("--" + spec.name);
  for (const CommandSpec& command : commands) {
    std::string path;
    for (const std::string& word : command.words) {
      table.next[path].insert(word);
      path += (path.empty() ? "" : " ") + word;
    }
    for (const OptionSpec& spec : command.options) options[path].insert("--" + spec.name);
  }
  std::set<std::string> paths;
  for (const auto& [path, unused] : table.next) paths.insert(path);
  for (const auto& [path, unused] : options) paths.insert(path);
  for (const std::string& path : paths) {
    std::string words;
    for (const std::string& w : table.next[path]) words += w + " ";
    for (const std::string& o : options[path]) words += o + " ";
    for (const std::string& o : global) words += o + " ";
    words.pop_back();
    table.candidates[path] = words;
  }
  return table;
}

// The `case` arms that follow the command words typed: '<path>|<word>') VAR='<path word>' ;;
void PathArms(const CompletionTable& table, const std::string& var, std::ostream& script) {
  for (const auto& [path, words] : table.next) {
    for (const std::string& word : words) {
      const std::string joined = path.empty() ? word : path + " " + word;
      script << "      '" << path << "|" << word << "') " << var << "='" << joined << "' ;;\n";
    }
  }
}

}  // namespace

std::string BashCompletion(std::span<const CommandSpec> commands) {
  const CompletionTable table = MakeTable(commands);
  std::ostringstream script;
  script << "# bash completion for nvme-adaptctl (made by nvme-adaptctl completion bash)\n"
         << "_nvme_adaptctl() {\n"
         << "  local cur=${COMP_WORDS[COMP_CWORD]} path='' w i\n"
         << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         << "    w=${COMP_WORDS[i]}\n"
         << "    [[ $w == -* ]] && continue\n"
         << "    case \"$path|$w\" in\n";
  PathArms(table, "path", script);
  script << "    esac\n  done\n  local words\n  case \"$path\" in\n";
  for (const auto& [path, words] : table.candidates) {
    script << "    '" << path << "') words='" << words << " ' ;;\n";
  }
  script << "  esac\n  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n"
         << "complete -F _nvme_adaptctl nvme-adaptctl\n";
  return script.str();
}

std::string ZshCompletion(std::span<const CommandSpec> commands) {
  const CompletionTable table = MakeTable(commands);
  std::ostringstream script;
  // Autoloaded from $fpath, the file's body is the function _nvme-adaptctl: it defines the function and
  // runs it. Sourced, it registers the function with compdef. `path` is not used as a name: zsh ties it
  // to $PATH.
  script << "#compdef nvme-adaptctl\n"
         << "# zsh completion for nvme-adaptctl (made by nvme-adaptctl completion zsh)\n"
         << "_nvme-adaptctl() {\n"
         << "  local command_path='' w i\n"
         << "  for ((i = 2; i < CURRENT; i++)); do\n"
         << "    w=${words[i]}\n"
         << "    [[ $w == -* ]] && continue\n"
         << "    case \"$command_path|$w\" in\n";
  PathArms(table, "command_path", script);
  script << "    esac\n  done\n  local -a candidates\n  case \"$command_path\" in\n";
  for (const auto& [path, words] : table.candidates) {
    script << "    '" << path << "') candidates=(" << words << ") ;;\n";
  }
  script << "  esac\n  compadd -- \"${candidates[@]}\"\n}\n"
         << "if [[ ${funcstack[1]} == _nvme-adaptctl ]]; then\n"
         << "  _nvme-adaptctl \"$@\"\n"
         << "else\n"
         << "  compdef _nvme-adaptctl nvme-adaptctl\n"
         << "fi\n";
  return script.str();
}

}  // namespace nvmeadapt::ctl
