// SPDX-License-Identifier: Apache-2.0
// Shell completion scripts for nvme-adaptctl, made from its command table (command words, then each
// command's options and the global ones), so they cannot fall behind the commands.
#pragma once

#include <span>
#include <string>

#include "agent/ctl/cli.h"

namespace nvmeadapt::ctl {

// For bash: `source <(nvme-adaptctl completion bash)`, or a file in bash-completion's completions directory.
std::string BashCompletion(std::span<const CommandSpec> commands);

// For zsh: a file `_nvme-adaptctl` in a directory of $fpath (compinit autoloads it), or in a running shell
// with compinit loaded, `source <(nvme-adaptctl completion zsh)`.
std::string ZshCompletion(std::span<const CommandSpec> commands);

}  // namespace nvmeadapt::ctl
