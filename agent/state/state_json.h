// SPDX-License-Identifier: Apache-2.0
// The JSON of every file under the state dir (policy.json and its note, journal.json, each record of
// journal.log) and its state schema version, so that an agent reading a file of a newer layout says so instead
// of reading it halfway, dropping it as unreadable or setting it aside as corrupt (issue 46: a downgrade once
// dropped a newer persisted policy as "ignored").
#pragma once

#include <google/protobuf/message.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace nvmeadapt::state {

// The layout this agent writes and the newest it reads. Raise it when a file's meaning changes so that an
// older agent must not read it; a field an older agent may ignore does not need it.
inline constexpr uint32_t kStateSchemaVersion = 1;
inline constexpr std::string_view kSchemaVersionKey = "schema_version";
// Schema 1 is the layout of every version so far, and it is written without the field: the versions before
// the field (0.1.0) parse these files rejecting unknown fields, so a stamped journal would make a rollback to
// them set it aside as corrupt and refuse to start. A file without the field is schema 1; from schema 2 on a
// file carries its version, which every version from this one on reads.
inline constexpr uint32_t kFirstStampedSchema = 2;

// `message` as JSON, with "schema_version" first when `version` >= kFirstStampedSchema; `lines`: indented,
// else one line (journal.log's records). `version` is for tests, which write the files of a later version.
Result<std::string> ToStateJson(const google::protobuf::Message& message, const std::string& path, bool lines = true,
                                uint32_t version = kStateSchemaVersion);

// Parses `text`, read from `where`, into `message`: kFailedPrecondition naming the file and both versions when
// its schema is newer than kStateSchemaVersion (nothing of it is read), kInvalidArgument when it is no such
// message.
Status FromStateJson(std::string_view text, google::protobuf::Message* message, const std::string& where);

// The schema version `text` declares (1 for none), or nullopt when it is not a JSON object with a usable one.
std::optional<uint32_t> SchemaVersionOf(std::string_view text);

// Refuses to replace the file at `path` when it holds a newer schema (kFailedPrecondition, saying what drops it
// instead: `how_to_drop`); a missing or older file may be replaced.
Status RefuseToReplaceNewer(const std::string& path, std::string_view how_to_drop);

}  // namespace nvmeadapt::state
