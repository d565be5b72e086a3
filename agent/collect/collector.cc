#include "agent/collect/collector.h"

#include <cstdio>

namespace nvmeadapt::collect {

std::string_view SourceName(Source source) {
  switch (source) {
    case Source::kKernelNvme: return "kernel";
    case Source::kBlock: return "block";
    case Source::kUvnvme: return "uvnvme";
    case Source::kSpdk: return "spdk";
    case Source::kNvmet: return "nvmet";
  }
  return "unknown";
}

std::string QueueKey::ToString() const {
  char text[96];
  switch (source) {
    case Source::kKernelNvme:
      std::snprintf(text, sizeof text, "kernel:nvme%u:q%u", ctrl, qid);
      break;
    case Source::kBlock:  // dev_t as the kernel encodes it: major << 20 | minor
      std::snprintf(text, sizeof text, "block:%u:%u:q%u", ctrl >> 20, ctrl & 0xfffff, qid);
      break;
    case Source::kUvnvme:
      std::snprintf(text, sizeof text, "uvnvme:%u:c%u:q%u", pid, ctrl, qid);
      break;
    case Source::kSpdk:
      std::snprintf(text, sizeof text, "spdk:%u:0x%08x%08x", pid, ctrl, qid);
      break;
    case Source::kNvmet:
      std::snprintf(text, sizeof text, "nvmet:c%u:q%u", ctrl, qid);
      break;
    default:
      std::snprintf(text, sizeof text, "source%u:%u:%u:%u", static_cast<unsigned>(source), pid, ctrl, qid);
      break;
  }
  return text;
}

size_t QueueKeyHash::operator()(const QueueKey& k) const noexcept {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the four fields
  for (uint64_t part : {uint64_t(k.source), uint64_t(k.ctrl), uint64_t(k.qid), uint64_t(k.pid)}) {
    h ^= part;
    h *= 0x100000001b3ULL;
  }
  return static_cast<size_t>(h);
}

}  // namespace nvmeadapt::collect
