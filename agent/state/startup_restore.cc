// SPDX-License-Identifier: Apache-2.0
#include "agent/state/startup_restore.h"

namespace nvmeadapt::state {

Result<actuate::RestorePoint> RestorePointOf(const v1::JournalEntry& entry) {
  auto point = actuate::RestorePoint::FromJson(entry.safe_value());
  if (!point) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "journal entry for " + entry.target() + " has no usable restore point: " + point.error().message);
  }
  return point;
}

Status RestoreWithFreshLever(const v1::JournalEntry& entry, const config::LeverSettings& settings,
                             const actuate::LeverEnvironment& environment) {
  NA_ASSIGN_OR_RETURN(const actuate::RestorePoint point, RestorePointOf(entry));
  auto lever = actuate::MakeLever(point.lever, /*dry_run=*/false, settings, environment);
  // One message that names the lever and the code, as the daemon reports lever errors.
  if (auto restored = lever->Restore(point); !restored) return restored.error().Flattened();
  return OkStatus();
}

RestoreRules SystemRestoreRules(const IdentityRoots& roots) {
  RestoreRules rules;
  rules.boot_id = ReadBootId(roots.procfs_root);
  rules.entry_time_box = kEntryTimeBox;
  rules.identity_now = [roots](const v1::JournalEntry& entry) {
    return IdentityNow(entry.controller(), entry.device_identity(), roots);
  };
  return rules;
}

StartupRestore RestoreBeforeAnything(const std::string& state_dir, const config::LeverSettings& settings,
                                     const actuate::LeverEnvironment& environment, const RestoreRules& rules) {
  StartupRestore result;
  StateStore store(state_dir);
  // Not created here: a state dir that does not exist holds no journal.
  Journal journal(store);
  if (Status loaded = journal.Load(); !loaded) {
    result.status = MakeError(loaded.error().code, "journal unreadable: " + loaded.error().message);
    return result;
  }
  result.journal_warning = journal.load_warning();
  result.entries_before = journal.entries().entries_size();
  config::LeverSettings real = settings;
  real.dry_run = false;
  // By value: a restore left running past its time box outlives this frame.
  result.status = journal.RestoreAll(
      [real, environment](const v1::JournalEntry& entry) { return RestoreWithFreshLever(entry, real, environment); },
      rules, &result.report);
  return result;
}

}  // namespace nvmeadapt::state
