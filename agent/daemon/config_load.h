// SPDX-License-Identifier: Apache-2.0
// The daemon's config as a start reads it: the file, the command line's flags over it, and every check that
// needs no root, no device and no socket. The same checks serve a start, a reload and `--check-config`, so a file
// that passes the offline check is one the daemon takes.
#pragma once

#include <string>

#include "agent/daemon/flags.h"
#include "common/result.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::daemon {

// The config file (an absent default file: built-in defaults), the flags over it, checked. Errors are one line
// naming the file and the field.
Result<v1::Config> LoadDaemonConfig(const DaemonFlags& flags);

// `nvme-adaptd --check-config PATH`: the file alone, checked as LoadDaemonConfig checks it (the policy book with
// its profiles and floors, the levers, the node layer, metrics and api sections included). Reads nothing else:
// no state dir, no token or TLS file, no device.
Status CheckConfigFile(const std::string& path);

}  // namespace nvmeadapt::daemon
