// SPDX-License-Identifier: Apache-2.0
// Fuzzes the uvnvme control protocol (docs/uvnvme-control.md) as the driver serves it: every line of the
// input is one request. Invariants: nothing crashes or leaks; every response is one line holding a JSON
// object with a boolean "ok", and a refusal carries a string "error"; a request refused changes nothing.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "uvnvme/control_protocol.h"

namespace {

using namespace nvmeadapt;
using namespace nvmeadapt::uvnvme;

class Target final : public ControlTarget {
 public:
  std::vector<QueueInfo> ListQueues() const override { return queues; }
  Status SetMode(uint32_t ctrl, uint32_t qid, ReapMode mode) override {
    QueueInfo* q = Find(ctrl, qid);
    if (!q) return MakeError(ErrorCode::kNotFound, "unknown queue");
    q->mode = mode;
    return OkStatus();
  }
  Status SetCoalescing(uint32_t ctrl, uint32_t qid, Coalescing coalescing) override {
    QueueInfo* q = Find(ctrl, qid);
    if (!q) return MakeError(ErrorCode::kNotFound, "unknown queue");
    q->coalescing = coalescing;
    return OkStatus();
  }
  QueueInfo* Find(uint32_t ctrl, uint32_t qid) {
    for (QueueInfo& q : queues) {
      if (q.ctrl == ctrl && q.qid == qid) return &q;
    }
    return nullptr;
  }
  std::vector<QueueInfo> queues{{0, 1, ReapMode::kInterrupt, 10, 9, 4, 0, {}},
                                {1, 2, ReapMode::kPoll, 5, 5, 0, 1, {8, 100}}};
};

bool SameState(const std::vector<QueueInfo>& a, const std::vector<QueueInfo>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].mode != b[i].mode || !(a[i].coalescing == b[i].coalescing)) return false;
  }
  return a.size() == b.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Target target;
  for (size_t start = 0; start <= input.size();) {
    const size_t newline = std::min(input.find('\n', start), input.size());
    const std::string_view line = input.substr(start, newline - start);
    start = newline + 1;
    const std::vector<QueueInfo> before = target.queues;
    const std::string response = HandleControlRequest(line, target, 4242);
    if (response.find('\n') != std::string::npos) std::abort();
    const nlohmann::json reply = nlohmann::json::parse(response, nullptr, /*allow_exceptions=*/false);
    if (reply.is_discarded() || !reply.is_object()) std::abort();
    const auto ok = reply.find("ok");
    if (ok == reply.end() || !ok->is_boolean()) std::abort();
    if (!ok->get<bool>()) {
      const auto error = reply.find("error");
      if (error == reply.end() || !error->is_string()) std::abort();
      if (!SameState(before, target.queues)) std::abort();
    }
  }
  return 0;
}
