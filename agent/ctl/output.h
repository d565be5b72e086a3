// SPDX-License-Identifier: Apache-2.0
// -o/--output: tables for people (table, or wide with more columns), JSON lines or YAML documents for
// scripts. JSON and YAML carry the same canonical proto3 JSON fields.
#pragma once

#include <google/protobuf/message.h>

#include <ostream>
#include <string>

#include "agent/ctl/args.h"

namespace nvmeadapt::ctl {

enum class Output { kTable, kWide, kJson, kYaml };

// -o's value; --json is -o json.
Output OutputOf(const Args& args);

// The message as one YAML document ("---" first), zero values printed as in the JSON.
std::string ToYaml(const google::protobuf::Message& message);

// With -o json or yaml, prints `message` so and returns true; else prints nothing and returns false.
bool PrintedAsData(const Args& args, const google::protobuf::Message& message, std::ostream& out);

}  // namespace nvmeadapt::ctl
