// SPDX-License-Identifier: Apache-2.0
// nvme-adaptctl's commands, one row each (cli.h): what the parser, the help and the completion are made of.
#pragma once

#include <span>

#include "agent/ctl/cli.h"

namespace nvmeadapt::ctl {

std::span<const CommandSpec> Commands();

}  // namespace nvmeadapt::ctl
