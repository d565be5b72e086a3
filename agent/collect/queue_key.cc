#include <string>

#include "agent/collect/collector.h"

namespace nvmeadapt::collect {

std::string_view SourceName(Source source) {
  switch (source) {
    case Source::kKernelNvme: return "kernel";
    case Source::kBlock: return "block";
    case Source::kUvnvme: return "uvnvme";
    case Source::kSpdk: return "spdk";
  }
  return "unknown";
}

std::string QueueKey::ToString() const {
  std::string out(SourceName(source));
  if (pid != 0) out += ":" + std::to_string(pid);
  out += ":c" + std::to_string(ctrl) + ":q" + std::to_string(qid);
  return out;
}

size_t QueueKeyHash::operator()(const QueueKey& k) const noexcept {
  uint64_t h = static_cast<uint64_t>(k.source) * 0x9e3779b97f4a7c15ULL;
  h ^= (static_cast<uint64_t>(k.ctrl) << 32 | k.qid) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(k.pid) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

}  // namespace nvmeadapt::collect
