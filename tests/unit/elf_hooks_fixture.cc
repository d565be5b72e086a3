// SPDX-License-Identifier: Apache-2.0
// A binary for collect_elf_hooks_test, built several times: which USDT notes and symbols it carries is
// chosen by the definitions of each build (tests/unit/collect.cmake).
#include <sys/sdt.h>

#ifdef FIXTURE_SPDK
extern "C" int spdk_nvme_qpair_process_completions(void* qpair, unsigned max) { return qpair == nullptr ? 0 : static_cast<int>(max); }
#endif

int main() {
#ifdef FIXTURE_UVNVME_COMPLETE
  DTRACE_PROBE(uvnvme, complete);
#endif
#ifdef FIXTURE_UVNVME_TALLY
  DTRACE_PROBE(uvnvme, tally);
#endif
#ifdef FIXTURE_OTHER_PROVIDER
  DTRACE_PROBE(uvnvme2, tally);  // a provider whose name only starts with "uvnvme"
#endif
  return 0;
}
