// SPDX-License-Identifier: Apache-2.0
// Fuzzes what the API and the CLI accept from outside: the first byte picks the target, the rest is its
// input. Requests are parsed from protobuf wire format and validated as the server does; the CLI's
// durations, queue names and command lines are parsed as nvme-adaptctl does. Invariants: nothing crashes,
// errors are one line, and what the CLI prints (durations, queue names) parses back to the same value.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/api/validate.h"
#include "agent/ctl/cli.h"
#include "agent/ctl/values.h"

namespace {

using namespace nvmeadapt;

void CheckOneLine(const Status& status) {
  if (!status && status.error().message.find('\n') != std::string::npos) std::abort();
}

template <class Request, class Validate>
void ParseAndValidate(const std::string& bytes, Validate validate) {
  Request request;
  if (!request.ParseFromString(bytes)) return;
  const Status status = validate(request);
  CheckOneLine(status);
  if (!status && status.error().code != ErrorCode::kInvalidArgument) std::abort();
}

void Durations(const std::string& text) {
  auto nanos = nvmeadapt::ParseDuration(text);
  if (!nanos) return CheckOneLine(nanos.error());
  if (*nanos < 0) std::abort();
  auto again = nvmeadapt::ParseDuration(nvmeadapt::FormatDuration(*nanos));
  if (!again || *again != *nanos) std::abort();
}

void QueueNames(const std::string& text) {
  auto id = ctl::ParseQueueName(text);
  if (!id) return CheckOneLine(id.error());
  auto again = ctl::ParseQueueName(ctl::QueueName(*id));
  if (!again || again->controller() != id->controller() || again->queue() != id->queue()) std::abort();
}

void CommandLines(const std::string& text) {
  std::vector<std::string> words{"nvme-adaptctl"};
  size_t start = 0;
  for (size_t end; (end = text.find('\0', start)) != std::string::npos; start = end + 1) {
    words.push_back(text.substr(start, end - start));
  }
  words.push_back(text.substr(start));
  std::vector<const char*> argv;
  for (const auto& word : words) argv.push_back(word.c_str());
  // policy set's own options; its run function is never called.
  static const std::vector<ctl::CommandSpec> commands = {
      {{"policy", "set"}, "", {{"mode", "M", ""}, {"queue", "Q", ""}, {"controller", "C", ""}, {"replace", "", ""}}}};
  std::ostringstream out;
  std::streambuf* saved = std::cerr.rdbuf(out.rdbuf());  // usage errors: one line each, not the fuzzer's log
  ctl::ParseCommandLine(commands, static_cast<int>(argv.size()), argv.data(), out);
  std::cerr.rdbuf(saved);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0: ParseAndValidate<v1::ListQueuesRequest>(rest, api::ValidateListQueuesRequest); break;
    case 1: ParseAndValidate<v1::SetPolicyRequest>(rest, api::ValidateSetPolicyRequest); break;
    case 2: ParseAndValidate<v1::SetQueueModeRequest>(rest, api::ValidateSetQueueModeRequest); break;
    case 3: ParseAndValidate<v1::WatchEventsRequest>(rest, api::ValidateWatchEventsRequest); break;
    case 4: Durations(rest); break;
    case 5: QueueNames(rest); break;
    case 6: CommandLines(rest); break;
  }
  return 0;
}
