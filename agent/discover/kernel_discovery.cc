// SPDX-License-Identifier: Apache-2.0
// Kernel NVMe controllers from sysfs and procfs. Layout relied on (drivers/nvme/host/core.c, pci.c; block/):
//   /sys/class/nvme/nvmeN/{model,serial,firmware_rev,transport,address,subsysnqn,cntlid,state,queue_count}
//   /sys/class/nvme/nvmeN/device -> the PCI function, whose msi_irqs/IRQ files say "msix" or "msi"
//   /sys/class/nvme/nvmeN/<disk>/mq/H/cpu_list   hardware queue H is nvme qid H + 1 (same tag set for every ns)
//   /proc/interrupts handler names "nvme%dq%d"; the CQ of qid uses vector qid, or 0 when the device got one
//   /sys/module/nvme/parameters/use_threaded_interrupts, /proc/cmdline "threadirqs", /sys/kernel/realtime
#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "agent/discover/discovery.h"
#include "agent/discover/fabrics_layer.h"
#include "agent/discover/fs.h"
#include "agent/discover/procfs_parse.h"

namespace nvmeadapt::discover {
namespace {

struct KernelFacts {
  std::map<std::string, const IrqLine*> by_handler;  // "nvme0q1" -> its line
  std::map<uint32_t, std::vector<uint32_t>> qids_by_instance;  // from the handler names
  std::string threaded_reason;                        // empty: handlers run in hard interrupt context
};

std::string OptionalAttribute(const std::string& dir, const char* name) {
  auto value = ReadTrimmed(JoinPath(dir, name));
  return value ? *value : std::string();
}

bool IsControllerName(std::string_view name, uint32_t* instance) {
  return name.substr(0, 4) == "nvme" && ParseU32(name.substr(4), instance) &&
         name.find_first_not_of("0123456789", 4) == std::string_view::npos;
}

// nvme0n1, or nvme0c0n1: the per-path disk under native multipath.
bool IsNamespaceName(std::string_view name) {
  if (name.substr(0, 4) != "nvme") return false;
  const size_t n = name.rfind('n');
  if (n == std::string_view::npos || n < 5) return false;
  uint32_t unused = 0;
  std::string_view middle = name.substr(4, n - 4);
  const size_t c = middle.find('c');
  const bool middle_ok = c == std::string_view::npos
                             ? ParseU32(middle, &unused)
                             : ParseU32(middle.substr(0, c), &unused) && ParseU32(middle.substr(c + 1), &unused);
  return middle_ok && ParseU32(name.substr(n + 1), &unused) &&
         name.substr(n + 1).find_first_not_of("0123456789") == std::string_view::npos;
}

std::string ThreadedReason(const DiscoveryOptions& options) {
  auto param = ReadTrimmed(JoinPath(options.sysfs_root, "module/nvme/parameters/use_threaded_interrupts"));
  if (param && ParamIsTrue(*param)) return "threaded interrupts (nvme use_threaded_interrupts=" + *param + ")";
  auto cmdline = ReadText(JoinPath(options.procfs_root, "cmdline"));
  if (cmdline && CmdlineHasOption(*cmdline, "threadirqs")) return "threaded interrupts (threadirqs boot option)";
  auto realtime = ReadTrimmed(JoinPath(options.sysfs_root, "kernel/realtime"));
  if (realtime && *realtime == "1") return "threaded interrupts (PREEMPT_RT kernel)";
  return {};
}

// IRQ -> "msix" / "msi" for the vectors of a PCI function.
std::map<uint32_t, std::string> MsiKinds(const std::string& pci_dir) {
  std::map<uint32_t, std::string> kinds;
  const std::string msi_dir = JoinPath(pci_dir, "msi_irqs");
  auto names = ListDir(msi_dir);
  if (!names) return kinds;
  for (const auto& name : *names) {
    uint32_t irq = 0;
    if (!ParseU32(name, &irq)) continue;
    auto kind = ReadTrimmed(JoinPath(msi_dir, name));
    kinds[irq] = kind ? *kind : "msix";
  }
  return kinds;
}

void Classify(const Controller& controller, const KernelFacts& facts, Queue& q) {
  const auto set = [&q](Ineligibility reason, std::string text) {
    q.eligible = false;
    q.reason = reason;
    q.reason_text = std::move(text);
  };
  q.eligible = true;
  q.reason = Ineligibility::kNone;
  q.reason_text.clear();
  const std::string self = controller.name + "q" + std::to_string(q.qid);
  if (q.qid == 0) return set(Ineligibility::kAdminQueue, "admin queue");
  if (controller.transport == "tcp") {
    // nvme_tcp reaps its default queues in io_work and its poll queues (nr_poll_queues at connect) when
    // polled: the connection is switched as a whole by the reconnect lever, like PCIe's poll_queues + reset.
    if (q.mode == ReapMode::kPoll) return set(Ineligibility::kPollQueue, "poll queue (nr_poll_queues at connect)");
    return;
  }
  if (!controller.transport.empty() && controller.transport != "pcie") {
    // Its transport reaps completions itself, with no lever here to change how.
    return set(Ineligibility::kNoInterrupts, controller.transport + " host queue: no MSI-X vector and no lever (the "
                                             "reconnect lever serves tcp only)");
  }
  if (!q.vector) return set(Ineligibility::kPollQueue, "poll queue (no vector)");
  if (q.vector->kind == VectorKind::kMsi) return set(Ineligibility::kNotMsix, "MSI, not MSI-X");
  if (q.vector->kind == VectorKind::kIntx) return set(Ineligibility::kNotMsix, "INTx, not MSI-X");
  std::string others;
  for (const auto& handler : q.vector->handlers) {
    if (handler == self) continue;
    if (!others.empty()) others += ", ";
    others += handler;
  }
  if (!others.empty()) return set(Ineligibility::kSharedVector, "shared vector with " + others);
  if (!facts.threaded_reason.empty()) return set(Ineligibility::kThreaded, facts.threaded_reason);
}

// The states nvme_reset_work and the fabrics' reconnect pass through before live (drivers/nvme/host/core.c
// nvme_ctrl_state_show): the vectors are freed and re-requested meanwhile.
bool IsPassingState(const std::string& state) {
  return state == "new" || state == "resetting" || state == "connecting";
}

// `state_before`: the controller's state read before /proc/interrupts was, so that a reset that began or ended
// while the controller was read shows as a state that changed.
// The interrupt vector of controller `name`'s queue `qid`, from its /proc/interrupts line; none if it has
// no line of its own (a poll queue).
std::optional<Vector> QueueVector(const DiscoveryOptions& options, const KernelFacts& facts,
                                  const std::map<uint32_t, std::string>& msi_kinds, const std::string& name,
                                  uint32_t qid) {
  auto it = facts.by_handler.find(name + "q" + std::to_string(qid));
  if (it == facts.by_handler.end()) return std::nullopt;
  const IrqLine& line = *it->second;
  Vector v;
  v.irq = line.irq;
  v.chip = line.chip;
  v.handlers = line.handlers;
  const bool with_admin = std::find(v.handlers.begin(), v.handlers.end(), name + "q0") != v.handlers.end();
  v.index = with_admin ? 0 : qid;  // pci.c: vector = dev->num_vecs == 1 ? 0 : qid
  const auto kind = msi_kinds.find(line.irq);
  v.kind = kind == msi_kinds.end() ? VectorKind::kIntx
           : kind->second == "msi" ? VectorKind::kMsi
                                    : VectorKind::kMsix;
  const std::string irq_dir = JoinPath(JoinPath(options.procfs_root, "irq"), std::to_string(line.irq));
  if (auto affinity = ReadText(JoinPath(irq_dir, "smp_affinity_list"))) {
    if (auto cpus = ParseCpuList(*affinity)) v.affinity = std::move(*cpus);
  }
  return v;
}

// A TCP host's poll queues are its last qids (up to `last`); UINT32_MAX when it has none. `known` false right
// after a connect, its namespace not scanned yet: which queues poll is known at the next scan.
uint32_t FirstTcpPollQid(const DiscoveryOptions& options, const std::string& dir, uint32_t last, bool* known) {
  const std::optional<uint32_t> polls = FabricsPollQueues(dir, OnlineCpus(options.sysfs_root));
  *known = polls.has_value() || last == 0;
  return polls && *polls > 0 && *polls <= last ? last - *polls + 1 : UINT32_MAX;
}

Result<Controller> ReadController(const DiscoveryOptions& options, const std::string& dir, const std::string& name,
                                  uint32_t instance, const KernelFacts& facts, const std::string& state_before) {
  if (!IsDirectory(dir)) return MakeError(ErrorCode::kNotFound, dir + ": not a directory");
  Controller c;
  c.name = name;
  c.source = Source::kKernelNvme;
  c.instance = instance;
  c.model = OptionalAttribute(dir, "model");
  c.serial = OptionalAttribute(dir, "serial");
  c.firmware = OptionalAttribute(dir, "firmware_rev");
  c.transport = OptionalAttribute(dir, "transport");
  c.address = OptionalAttribute(dir, "address");
  c.subsysnqn = OptionalAttribute(dir, "subsysnqn");
  c.cntlid = OptionalAttribute(dir, "cntlid");

  NA_ASSIGN_OR_RETURN(auto entries, ListDir(dir));
  std::map<uint32_t, std::vector<uint32_t>> cpus_by_qid;
  bool have_hctx = false;
  for (const auto& entry : entries) {
    if (!IsNamespaceName(entry)) continue;
    Namespace ns;
    ns.name = entry;
    ParseU32(OptionalAttribute(JoinPath(dir, entry), "nsid"), &ns.nsid);
    c.namespaces.push_back(ns);
    if (have_hctx) continue;
    const std::string mq = JoinPath(JoinPath(dir, entry), "mq");
    auto hctxs = ListDir(mq);
    if (!hctxs) continue;
    for (const auto& hctx : *hctxs) {
      uint32_t index = 0;
      if (!ParseU32(hctx, &index)) continue;
      const std::string list_path = JoinPath(JoinPath(mq, hctx), "cpu_list");
      NA_ASSIGN_OR_RETURN(auto text, ReadText(list_path));
      auto cpus = ParseCpuList(text);
      if (!cpus) return MakeError(ErrorCode::kIo, list_path + ": " + cpus.error().message);
      cpus_by_qid[index + 1] = std::move(*cpus);
      have_hctx = true;
    }
  }

  std::set<uint32_t> qids{0};
  uint32_t queue_count = 0;
  if (ParseU32(OptionalAttribute(dir, "queue_count"), &queue_count)) {
    for (uint32_t qid = 1; qid < queue_count; ++qid) qids.insert(qid);
  }
  for (const auto& [qid, cpus] : cpus_by_qid) qids.insert(qid);
  if (auto it = facts.qids_by_instance.find(instance); it != facts.qids_by_instance.end()) {
    qids.insert(it->second.begin(), it->second.end());
  }

  const std::map<uint32_t, std::string> msi_kinds = MsiKinds(JoinPath(dir, "device"));
  bool tcp_layout_known = true;
  const uint32_t first_tcp_poll_qid =
      c.transport == "tcp" ? FirstTcpPollQid(options, dir, *qids.rbegin(), &tcp_layout_known) : UINT32_MAX;
  for (uint32_t qid : qids) {
    Queue q;
    q.qid = qid;
    q.key = QueueKey{Source::kKernelNvme, instance, qid, 0};
    q.vector = QueueVector(options, facts, msi_kinds, name, qid);
    const bool pcie = c.transport.empty() || c.transport == "pcie";
    q.mode = ((pcie && !q.vector && qid != 0) || qid >= first_tcp_poll_qid) ? ReapMode::kPoll
                                                                     : ReapMode::kInterrupt;
    if (auto it = cpus_by_qid.find(qid); it != cpus_by_qid.end()) {
      q.cpus = it->second;
    } else if (q.vector && qid != 0 && !have_hctx) {
      q.cpus = q.vector->affinity;  // no namespace (hence no mq/): the vector's CPUs are the best there is
    }
    Classify(c, facts, q);
    c.queues.push_back(std::move(q));
  }
  c.state = OptionalAttribute(dir, "state");
  c.settled = !IsPassingState(state_before) && state_before == c.state && tcp_layout_known;
  return c;
}

}  // namespace

Result<std::vector<Controller>> DiscoverKernel(const DiscoveryOptions& options, std::vector<Skipped>* skipped) {
  std::vector<Controller> controllers;
  const std::string class_dir = JoinPath(options.sysfs_root, "class/nvme");
  if (!IsDirectory(class_dir)) return controllers;  // no nvme module: no kernel controllers
  NA_ASSIGN_OR_RETURN(auto entries, ListDir(class_dir));
  std::vector<std::pair<uint32_t, std::string>> names;
  for (const auto& entry : entries) {
    uint32_t instance = 0;
    if (IsControllerName(entry, &instance)) names.emplace_back(instance, entry);
  }
  if (names.empty()) return controllers;
  std::sort(names.begin(), names.end());

  std::map<std::string, std::string> states_before;
  for (const auto& [instance, name] : names) states_before[name] = OptionalAttribute(JoinPath(class_dir, name), "state");
  const std::string interrupts_path = JoinPath(options.procfs_root, "interrupts");
  // The kernel writes this file, and its size grows with CPUs times IRQs (well over 16 MiB on a 512-CPU
  // host): no fixed bound, or such a host would have no kernel queues at all.
  NA_ASSIGN_OR_RETURN(auto interrupts, ReadText(interrupts_path, kUnboundedRead));
  const std::vector<IrqLine> lines = ParseInterrupts(interrupts);
  KernelFacts facts;
  for (const IrqLine& line : lines) {
    for (const auto& handler : line.handlers) {
      if (auto parsed = ParseNvmeHandler(handler)) {
        facts.by_handler[handler] = &line;
        facts.qids_by_instance[parsed->instance].push_back(parsed->qid);
      }
    }
  }
  facts.threaded_reason = ThreadedReason(options);
  const std::set<std::string> exported = NvmetExportedDisks(options);

  for (const auto& [instance, name] : names) {
    const std::string dir = JoinPath(class_dir, name);
    auto controller = ReadController(options, dir, name, instance, facts, states_before[name]);
    if (!controller) {
      if (skipped) skipped->push_back(Skipped{dir, controller.error()});
      continue;
    }
    controller->layer = std::string(ControllerLayer(*controller, exported));
    controllers.push_back(std::move(*controller));
  }
  return controllers;
}

}  // namespace nvmeadapt::discover
