// SPDX-License-Identifier: Apache-2.0
// Fuzzes the agent's config parsing: JSON in, Config (with its api section resolved) or an error out.
// Invariants: nothing crashes or leaks; ResolveApiConfig's errors are one line; a config that parses
// prints back to JSON that parses to the same message. (ParseConfigJson's own errors are not held to one
// line here: ValidateConfig quotes state_dir and runtime_dir as given, newlines included.)
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/api/api_config.h"
#include "agent/config/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nvmeadapt;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto config = config::ParseConfigJson(json);
  if (!config) return 0;
  auto api = api::ResolveApiConfig(config->api());
  if (!api && api.error().message.find('\n') != std::string::npos) std::abort();  // ours: one line
  std::string printed;
  if (!google::protobuf::util::MessageToJsonString(*config, &printed).ok()) std::abort();
  auto again = config::ParseConfigJson(printed);
  if (!again || !google::protobuf::util::MessageDifferencer::Equals(*config, *again)) std::abort();
  return 0;
}
