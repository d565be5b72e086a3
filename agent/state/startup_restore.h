// SPDX-License-Identifier: Apache-2.0
// The first thing nvme-adaptd does, before it parses anything that can fail: put back every device setting
// the journal says an earlier run changed, for real (never in dry run), by the rules of journal.h. Also all
// that `nvme-adaptd --restore-only` (the unit's ExecStopPost=) does.
#pragma once

#include <chrono>
#include <string>

#include "agent/actuate/lever_registry.h"
#include "agent/actuate/restore_point.h"
#include "agent/config/levers_config.h"
#include "agent/state/device_identity.h"
#include "agent/state/journal.h"

namespace nvmeadapt::state {

struct StartupRestore {
  RestoreReport report;
  std::string journal_warning;  // a corrupt journal set aside (state_store.h)
  Status status;                // the journal unreadable, or an entry that could not be restored
  int entries_before = 0;
};

// How long one entry's restore may take: a lever's own timeouts (a driver's socket, 2 s) are shorter, so
// only a restore stuck in the kernel or a file system reaches it, and the rest of the journal still goes back
// within the unit's TimeoutStopSec= (60 s).
inline constexpr std::chrono::seconds kEntryTimeBox{5};

// The rules with this boot's id, identities read from `roots` and kEntryTimeBox.
RestoreRules SystemRestoreRules(const IdentityRoots& roots = {});

// The restore point a journal entry keeps (its safe value); an error naming the entry's target when it has none
// that can be used.
Result<actuate::RestorePoint> RestorePointOf(const v1::JournalEntry& entry);

// Writes a journal entry's restore point back with a new lever of its kind, never in dry run: what the
// daemon runs before anything else at start, and --restore-only.
Status RestoreWithFreshLever(const v1::JournalEntry& entry, const config::LeverSettings& settings,
                             const actuate::LeverEnvironment& environment);

StartupRestore RestoreBeforeAnything(const std::string& state_dir, const config::LeverSettings& settings,
                                     const actuate::LeverEnvironment& environment, const RestoreRules& rules);

}  // namespace nvmeadapt::state
