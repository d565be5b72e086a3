// SPDX-License-Identifier: Apache-2.0
// Stands in for an SPDK application: defines spdk_nvme_qpair_process_completions with SPDK's signature
// (returns completions reaped, or a negative errno) and calls it on two qpairs. Prints "qpair 0x..." for
// each, waits for a line on stdin (the collector attached), then runs the calls and exits.
// Usage: spdk_fixture CALLS  -- call i passes max_completions = i % 6 and gets max - 1 back: -1, 0, 1..4.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

struct spdk_nvme_qpair {
  uint64_t reaped = 0;
};

extern "C" __attribute__((noinline, used)) int32_t spdk_nvme_qpair_process_completions(spdk_nvme_qpair* qpair,
                                                                                      uint32_t max_completions) {
  asm volatile("" ::: "memory");
  const int32_t reaped = static_cast<int32_t>(max_completions) - 1;
  if (reaped > 0) qpair->reaped += static_cast<uint64_t>(reaped);
  return reaped;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CALLS\n", argv[0]);
    return 2;
  }
  const uint32_t calls = static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10));
  static spdk_nvme_qpair qpairs[2];
  for (const spdk_nvme_qpair& qpair : qpairs) std::printf("qpair %p\n", static_cast<const void*>(&qpair));
  std::fflush(stdout);
  std::string go;
  if (!std::getline(std::cin, go)) return 3;
  for (uint32_t i = 0; i < calls; ++i) {
    for (spdk_nvme_qpair& qpair : qpairs) spdk_nvme_qpair_process_completions(&qpair, i % 6);
  }
  std::printf("reaped %llu %llu\n", static_cast<unsigned long long>(qpairs[0].reaped),
              static_cast<unsigned long long>(qpairs[1].reaped));
  return 0;
}
