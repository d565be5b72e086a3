// SPDX-License-Identifier: Apache-2.0
// What discovery reports: controllers, their namespaces and queues, each queue's CPUs and interrupt vector, and
// whether the agent may manage it (DESIGN.md section 3: an I/O queue with a dedicated MSI-X vector and no
// threaded handler) with the reason when it may not. Plain values: snapshots are compared by DiffSnapshots.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/engine/types.h"
#include "common/result.h"
#include "common/vocabulary.h"

namespace nvmeadapt::discover {

enum class VectorKind : uint8_t { kMsix, kMsi, kIntx, kEventfd };
std::string_view VectorKindName(VectorKind kind);  // "msix", "msi", "intx", "eventfd"

// The interrupt vector a completion queue signals.
struct Vector {
  uint32_t irq = 0;                   // Linux IRQ number (0 for uvnvme's eventfd)
  uint32_t index = 0;                 // NVMe interrupt vector (IV) the controller uses for the queue's CQ
  VectorKind kind = VectorKind::kMsix;
  std::string chip;                   // as /proc/interrupts shows it
  std::vector<std::string> handlers;  // every handler on the vector, this queue's included
  std::vector<uint32_t> affinity;     // /proc/irq/N/smp_affinity_list
  bool operator==(const Vector&) const = default;
};

// Why a queue is not managed. kNone: eligible.
enum class Ineligibility : uint8_t {
  kNone,
  kAdminQueue,    // qid 0
  kPollQueue,     // an I/O queue without a vector (nvme poll_queues): always polled by io_uring IOPOLL
  kNotMsix,       // MSI or legacy INTx: one vector for several queues, no per-queue control
  kSharedVector,  // the vector serves other queues (or devices) too
  kThreaded,      // the handler runs in a kernel thread (use_threaded_interrupts, threadirqs, PREEMPT_RT)
  kNoInterrupts,  // a transport without interrupt vectors (nvme over TCP, RDMA, FC, loop)
};
std::string_view IneligibilityName(Ineligibility reason);  // "none", "admin_queue", ... (a bounded metric label)

struct Queue {
  uint32_t qid = 0;                 // NVMe queue id; 0 is the admin queue
  QueueKey key;            // the collector's key for this queue
  std::vector<uint32_t> cpus;       // CPUs that submit to it (blk-mq cpu_list; uvnvme: its reaper thread's affinity)
  std::optional<Vector> vector;     // none: a poll queue
  ReapMode mode = ReapMode::kInterrupt;  // how its completions are reaped now
  bool eligible = false;
  Ineligibility reason = Ineligibility::kNone;
  std::string reason_text;          // one line for people, e.g. "shared vector with nvme0q0"
  bool operator==(const Queue&) const = default;
};

struct Namespace {
  std::string name;  // block device name, e.g. "nvme0n1" (or the path device "nvme0c0n1" under native multipath)
  uint32_t nsid = 0;
  bool operator==(const Namespace&) const = default;
};

struct Controller {
  std::string name;  // "nvme0" for the kernel, "uvnvme:PID:CTRL" for uvnvme (as in config.proto)
  Source source = Source::kKernelNvme;
  uint32_t instance = 0;     // kernel: N of nvmeN; uvnvme: the controller index in the process
  pid_t pid = 0;             // uvnvme: the driver process
  std::string socket_path;   // uvnvme: its control socket
  std::string model;
  std::string serial;
  std::string firmware;
  std::string transport;     // "pcie", "tcp", ...; "uvnvme" for uvnvme
  std::string address;       // PCI address for pcie; "traddr=...,trsvcid=..." for a fabrics host
  std::string subsysnqn;     // the NVM subsystem's NQN (a fabrics host's identity has it)
  std::string cntlid;        // the controller's ID within its subsystem (kernel: the cntlid attribute)
  std::string state;         // "live", "resetting", ... (kernel), as read after its queues
  std::string layer = "local";  // "local", "host", "backing" (fabrics_layer.h); "target" for nvmet queues
  // False while a reset or reconnect is under way (state new, resetting or connecting, or a state that changed
  // while the controller was read): its vectors are freed and re-requested then, so its queues look like poll
  // queues for a moment. SettleSnapshot (diff.h) keeps the previous view of such a controller.
  bool settled = true;
  std::vector<Namespace> namespaces;
  std::vector<Queue> queues;  // by qid

  // Two controllers under one name are the same device when this matches (a new device may reuse "nvme0").
  std::string Identity() const;
  bool operator==(const Controller&) const = default;
};

// A source of controllers that could not be read, with why. Discovery goes on with the others.
struct Skipped {
  std::string object;  // a path: the controller directory, the socket
  Error error;         // kUnavailable for a stale socket, kIo for a driver answering garbage, ...
};

struct Snapshot {
  std::vector<Controller> controllers;  // kernel ones by instance, then uvnvme ones by pid and controller
  std::vector<Skipped> skipped;

  const Controller* Find(std::string_view name) const;
};

// "uvnvme:1234:0"
std::string UvnvmeControllerName(pid_t pid, uint32_t ctrl);

}  // namespace nvmeadapt::discover
