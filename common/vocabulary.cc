// SPDX-License-Identifier: Apache-2.0
#include "common/vocabulary.h"

#include <cstdio>

namespace nvmeadapt {

std::string QueueName(std::string_view owner, uint32_t qid) {
  return std::string(owner) + std::string(kQueueNameMark) + std::to_string(qid);
}

std::string QueueObjectName(std::string_view controller, uint32_t qid) {
  return std::string(controller) + " q" + std::to_string(qid);
}

std::string NvmetControllerName(uint32_t cntlid) { return "nvmet:c" + std::to_string(cntlid); }

std::string QueueKey::ToString() const {
  char owner[64];
  switch (source) {
    case Source::kKernelNvme:
      std::snprintf(owner, sizeof owner, "kernel:nvme%u", ctrl);
      break;
    case Source::kBlock:  // dev_t as the kernel encodes it: major << 20 | minor
      std::snprintf(owner, sizeof owner, "block:%u:%u", ctrl >> 20, ctrl & 0xfffff);
      break;
    case Source::kUvnvme:
      std::snprintf(owner, sizeof owner, "uvnvme:%u:c%u", pid, ctrl);
      break;
    case Source::kSpdk: {  // a qpair pointer, not a queue id
      char text[64];
      std::snprintf(text, sizeof text, "spdk:%u:0x%08x%08x", pid, ctrl, qid);
      return text;
    }
    case Source::kNvmet:
      return QueueName(NvmetControllerName(ctrl), qid);
    default: {
      char text[96];
      std::snprintf(text, sizeof text, "source%u:%u:%u:%u", static_cast<unsigned>(source), pid, ctrl, qid);
      return text;
    }
  }
  return QueueName(owner, qid);
}

size_t QueueKeyHash::operator()(const QueueKey& k) const noexcept {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the four fields
  for (uint64_t part : {uint64_t(k.source), uint64_t(k.ctrl), uint64_t(k.qid), uint64_t(k.pid)}) {
    h ^= part;
    h *= 0x100000001b3ULL;
  }
  return static_cast<size_t>(h);
}

}  // namespace nvmeadapt
