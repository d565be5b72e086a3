// SPDX-License-Identifier: Apache-2.0
// The journal's native protocol for the daemon's log (sd_journal_sendv): one entry per line with MESSAGE=,
// PRIORITY=, SYSLOG_IDENTIFIER= and the line's CONTROLLER=, QUEUE=, REASON=. A field's value may hold any
// byte (the protocol sends a value with a newline by its length), so a name a peer chose can neither end
// the entry nor set its priority. Only nvme-adaptd links it (libsystemd).
#pragma once

#include <string_view>

#include "common/log.h"

namespace nvmeadapt {

// The JournalSink for SetJournalSink: false when the journal did not take the entry (no journald socket at
// /run/systemd/journal/socket, or sd_journal_sendv failed).
bool SendToJournald(int priority, std::string_view message, const LogFields& fields);

}  // namespace nvmeadapt
