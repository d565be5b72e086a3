// SPDX-License-Identifier: Apache-2.0
// The memory layout uvnvme's host and emulated controller share: NVMe-style submission entries (64 bytes),
// completion entries (16 bytes, phase bit in the status word) and the doorbells of one queue pair.
// Fields follow the NVMe base specification; where the emulator needs something NVMe does not carry,
// the comment says which reserved or protection-information dword it borrows.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace nvmeadapt::uvnvme {

inline constexpr size_t kCacheLine = 64;
inline constexpr uint32_t kLbaBytes = 512;   // namespace format: 512-byte logical blocks
inline constexpr uint8_t kOpcodeWrite = 0x01;
inline constexpr uint8_t kOpcodeRead = 0x02;

struct SubmissionEntry {
  uint8_t opcode = 0;
  uint8_t flags = 0;
  uint16_t cid = 0;
  uint32_t nsid = 0;
  uint32_t submit_ns_lo = 0;  // CDW2: reserved for I/O commands; uvnvme puts the doorbell time here so the
  uint32_t submit_ns_hi = 0;  // CDW3: controller's service time starts at the doorbell, not at its fetch
  uint64_t metadata = 0;
  uint64_t prp1 = 0;  // no data moves: the model charges transfer time, DMA costs the host nothing
  uint64_t prp2 = 0;
  uint32_t cdw10 = 0;  // starting LBA, low
  uint32_t cdw11 = 0;  // starting LBA, high
  uint32_t cdw12 = 0;  // bits 15:0 number of logical blocks, 0's based
  uint32_t cdw13 = 0;
  uint32_t cdw14 = 0;
  uint32_t tag = 0;  // CDW15 (end-to-end protection tags, unused here): echoed in the completion's DW0 so
                     // the host can tell a duplicated or stale completion from a fresh one of a reused cid
};
static_assert(sizeof(SubmissionEntry) == 64);

struct CompletionEntry {
  uint32_t result = 0;    // DW0, command specific: the submission's tag
  uint32_t reserved = 0;  // DW1
  uint16_t sq_head = 0;   // DW2
  uint16_t sq_id = 0;
  uint32_t cid_status = 0;  // DW3: cid in bits 15:0, phase in bit 16, status in bits 31:17; stored last
};
static_assert(sizeof(CompletionEntry) == 16);

inline constexpr uint32_t kPhaseBit = 1u << 16;
inline constexpr uint32_t CompletionCid(uint32_t cid_status) { return cid_status & 0xffffu; }

// Host-written registers of one queue pair, each on its own cache line like separate doorbell registers.
// The controller only reads them.
struct alignas(kCacheLine) QueueRegisters {
  alignas(kCacheLine) std::atomic<uint32_t> sq_tail{0};     // SQ y tail doorbell
  alignas(kCacheLine) std::atomic<uint32_t> cq_head{0};     // CQ y head doorbell
  alignas(kCacheLine) std::atomic<uint32_t> irq_masked{0};  // the queue's MSI-X vector mask bit (1 = masked)
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// One queue pair in one shared mapping: registers, then the submission ring, then the completion ring.
struct QueueLayout {
  uint32_t entries = 0;
  size_t sq_offset = 0;
  size_t cq_offset = 0;
  size_t bytes = 0;

  static QueueLayout For(uint32_t entries) {
    QueueLayout layout;
    layout.entries = entries;
    layout.sq_offset = sizeof(QueueRegisters);
    layout.cq_offset = layout.sq_offset + size_t{entries} * sizeof(SubmissionEntry);
    layout.bytes = layout.cq_offset + size_t{entries} * sizeof(CompletionEntry);
    return layout;
  }
};

inline constexpr uint32_t kMinQueueEntries = 2;
inline constexpr uint32_t kMaxQueueEntries = 65536;  // NVMe's limit for I/O queues

}  // namespace nvmeadapt::uvnvme
