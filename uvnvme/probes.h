// SPDX-License-Identifier: Apache-2.0
// The uvnvme USDT probes (docs/probes.md is the contract). Each probe has a semaphore that a tracer
// increments when it attaches; arguments are evaluated and the probe's nop executed only while it is
// non-zero, so an unattached probe costs one load and one branch.
#pragma once

#include <cstdint>

#define _SDT_HAS_SEMAPHORES 1
// Every argument in a register: sys/sdt.h's default lets the compiler leave one in memory ("4@8(%rsp)"),
// which a tracer must then copy from the driver's memory at each fire (a user-memory read per argument in
// the BPF program behind the probe); a register is read from the trap's saved registers. The moves this
// adds run only while a tracer is attached (the semaphore test comes first).
#define STAP_SDT_ARG_CONSTRAINT r
#include <sys/sdt.h>

#if defined(__x86_64__) && !defined(UVNVME_PROBE_SITE_NOP1)
// The probe site is a 5-byte nop (nopl 0x0(%rax,%rax,1)) instead of sys/sdt.h's 1-byte nop. A tracer
// traps on either; from Linux 6.18 on, the kernel rewrites a uprobe on a 5-byte nop into a call to its
// uprobe trampoline and a syscall, which costs far less than the int3 trap (bench/probe_cost.py).
// Any other kernel and tracer treats it as one nop instruction. Redefined after the include: the probe
// macros expand _SDT_NOP where they are used.
#undef _SDT_NOP
#define _SDT_NOP .nops 5
#endif

extern "C" {
// Defined once in probes.cc, in section .probes, as the sys/sdt.h convention wants.
extern volatile unsigned short uvnvme_complete_semaphore;
extern volatile unsigned short uvnvme_irq_semaphore;
extern volatile unsigned short uvnvme_mode_semaphore;
extern volatile unsigned short uvnvme_tally_semaphore;
}

namespace nvmeadapt::uvnvme::probes {

// complete(ctrl, qid, n, mode): one reaped batch of n > 0 completions; mode 0 interrupt, 1 poll.
inline void Complete(uint32_t ctrl, uint32_t qid, uint32_t n, uint32_t mode) {
  if (__builtin_expect(uvnvme_complete_semaphore != 0, 0)) STAP_PROBE4(uvnvme, complete, ctrl, qid, n, mode);
}

// tally(ctrl, qid, completions, reaps, mode, last_reap, first_ns, last_ns): the queue's completions since
// the previous tally, reaped in `reaps` reaps in one mode; the last reap had last_reap completions; first_ns
// and last_ns are CLOCK_MONOTONIC times of the tally's first and last reap. The default probe: it fires once
// per many completions (docs/probes.md), where `complete` fires per reap.
inline bool TallyAttached() { return __builtin_expect(uvnvme_tally_semaphore != 0, 0); }
inline void Tally(uint32_t ctrl, uint32_t qid, uint32_t completions, uint32_t reaps, uint32_t mode, uint32_t last_reap,
                  uint64_t first_ns, uint64_t last_ns) {
  if (TallyAttached()) STAP_PROBE8(uvnvme, tally, ctrl, qid, completions, reaps, mode, last_reap, first_ns, last_ns);
}

// irq(ctrl, qid): one wakeup of an interrupt-mode reaper (an eventfd read that returned an interrupt).
inline void Irq(uint32_t ctrl, uint32_t qid) {
  if (__builtin_expect(uvnvme_irq_semaphore != 0, 0)) STAP_PROBE2(uvnvme, irq, ctrl, qid);
}

// mode(ctrl, qid, mode): a switch, fired once the new mode is in effect.
inline void Mode(uint32_t ctrl, uint32_t qid, uint32_t mode) {
  if (__builtin_expect(uvnvme_mode_semaphore != 0, 0)) STAP_PROBE3(uvnvme, mode, ctrl, qid, mode);
}

}  // namespace nvmeadapt::uvnvme::probes
