// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/bpf_collector.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <algorithm>
#include <cstring>
#include <set>
#include <type_traits>
#include <utility>

#include "agent/collect/elf_hooks.h"
#include "agent/collect/nvme_disks.h"
#include "agent/collect/records.h"
#include "bpf/nvme_adapt.h"
#include "common/log.h"
#include "nvme_adapt_bpf.skel.h"

namespace nvmeadapt::collect {
namespace {

// Every program the plan names is a member of the skeleton: a name it does not have fails the build here.
#define NA_SKELETON_HAS_PROGRAM(name, hook) \
  static_assert(std::is_same_v<decltype(std::declval<nvme_adapt_bpf&>().progs.name), bpf_program*>);
NA_BPF_PROGRAMS(NA_SKELETON_HAS_PROGRAM)
#undef NA_SKELETON_HAS_PROGRAM

// libbpf's warnings (verifier rejections, attach failures) become log lines; its chatter stays at debug.
int LibbpfLog(libbpf_print_level level, const char* format, va_list args) {
  char line[1024];
  std::vsnprintf(line, sizeof line, format, args);
  std::string_view text(line);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (level == LIBBPF_WARN) {
    NA_WARN("libbpf: " << text);
  } else {
    NA_DEBUG("libbpf: " << text);
  }
  return 0;
}

Error LibbpfError(std::string_view what, std::string_view object, int err) {
  return SysError(what, object, err < 0 ? -err : err);
}

}  // namespace

Result<std::unique_ptr<BpfCollector>> BpfCollector::Open(const CollectorOptions& options, const HookPlan& plan,
                                                         std::shared_ptr<FeatureProbe> probe,
                                                         const BpfOpenOptions& extra) {
  if (!plan.use_bpf) return MakeError(ErrorCode::kUnsupported, "BPF collector: " + plan.fallback_cause);
  libbpf_set_print(LibbpfLog);
  std::unique_ptr<BpfCollector> collector(new BpfCollector());
  collector->probe_ = std::move(probe);
  collector->userspace_wakeups_ = options.userspace_wakeups;
  collector->userspace_per_reap_ = options.userspace_per_reap;
  const std::vector<NvmeDisk> disks = ListNvmeDisks(options.root);
  if (Status loaded = collector->Load(options, plan, extra, disks); !loaded.ok()) return std::move(loaded).take_error();
  collector->TellNvmeDisks(disks);
  if (Status attached = collector->AttachKernelHooks(plan); !attached.ok()) return std::move(attached).take_error();
  return collector;
}

Status BpfCollector::Load(const CollectorOptions& options, const HookPlan& plan, const BpfOpenOptions& extra,
                          const std::vector<NvmeDisk>& disks) {
  skel_ = nvme_adapt_bpf__open();
  if (skel_ == nullptr) return LibbpfError("open BPF object", "nvme_adapt", errno);
  if (options.default_window == 0 || options.default_window > NA_MAX_WINDOW) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "collector: default_window must be in [1, " + std::to_string(NA_MAX_WINDOW) + "]");
  }
  skel_->rodata->na_default_window = options.default_window;
  skel_->rodata->na_completion_intervals = options.completion_intervals ? 1 : 0;
  // With the nvme programs attached the block program leaves nvme disks to them; without, it counts an
  // nvme disk's completions under its controller's queue, so nvme queues are observed either way. With no
  // nvme disk at all the lookup is compiled out of the block program.
  const bool any_controller = std::any_of(disks.begin(), disks.end(), [](const NvmeDisk& d) { return d.controller; });
  skel_->rodata->na_nvme_disks_as = disks.empty()                                  ? NA_NVME_DISKS_BLOCK
                                    : plan.nvme != Attach::kNone || plan.nvme_per_batch ? NA_NVME_DISKS_SKIPPED
                                    : plan.block != Attach::kNone && any_controller ? NA_NVME_DISKS_NVME
                                                                                    : NA_NVME_DISKS_BLOCK;
  if (plan.nvme == Attach::kTracepoint) {
    skel_->rodata->na_tp_nvme_sq_ctrl_off = plan.nvme_sq_layout.offsets.at("ctrl_id");
    skel_->rodata->na_tp_nvme_sq_qid_off = plan.nvme_sq_layout.offsets.at("qid");
  }
  std::vector<std::string> programs = plan.Programs();
  if (extra.test_entry) {
    for (BpfProgram test : {BpfProgram::na_test_account, BpfProgram::na_test_mode, BpfProgram::na_test_tally})
      programs.emplace_back(ProgramName(test));
  }
  const std::set<std::string> wanted(programs.begin(), programs.end());
  bpf_program* program = nullptr;
  bpf_object__for_each_program(program, skel_->obj) {
    const std::string name = bpf_program__name(program);
    const bool load = wanted.contains(name);
    bpf_program__set_autoload(program, load);
    if (load) loaded_programs_.push_back(name);
  }
  if (int err = nvme_adapt_bpf__load(skel_); err != 0) return LibbpfError("load BPF object", "nvme_adapt", err);

  auto table = BpfQueueSlots::Map(bpf_map__fd(skel_->maps.na_queue_index), bpf_map__fd(skel_->maps.na_queues));
  if (!table.ok()) return std::move(table).take_error();
  queues_ = std::move(*table);
  ring_ = ring_buffer__new(bpf_map__fd(skel_->maps.na_windows), &BpfCollector::OnRecord, this, nullptr);
  if (ring_ == nullptr) return LibbpfError("open ring buffer", "na_windows", errno);
  return OpenWait();
}

Status BpfCollector::OpenWait() {
  auto waker = LoopWaker::Open();
  if (!waker) return std::move(waker).take_error();
  waker_.emplace(std::move(*waker));
  wait_epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (wait_epoll_ < 0) return SysError("create", "the collector's epoll", errno);
  epoll_event ring{};
  ring.events = EPOLLIN;
  ring.data.u32 = kRingReady;
  if (epoll_ctl(wait_epoll_, EPOLL_CTL_ADD, ring_buffer__epoll_fd(ring_), &ring) != 0) {
    return SysError("watch", "the na_windows ring buffer's epoll", errno);
  }
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u32 = kWoken;
  if (epoll_ctl(wait_epoll_, EPOLL_CTL_ADD, waker_->fd(), &wake) != 0) {
    return SysError("watch", "the agent loop's eventfd", errno);
  }
  return OkStatus();
}

void BpfCollector::TellNvmeDisks(const std::vector<NvmeDisk>& disks) {
  const uint32_t as = skel_->rodata->na_nvme_disks_as;
  if (as == NA_NVME_DISKS_BLOCK) return;
  uint32_t count = 0;
  for (const NvmeDisk& disk : disks) {
    // A disk without a controller (a multipath head) is bio-based: its requests run on the path disks.
    if (as == NA_NVME_DISKS_NVME && !disk.controller) continue;
    if (count == NA_MAX_NVME_DISKS) {
      NA_WARN("collector: more than " << NA_MAX_NVME_DISKS << " nvme disks; from " << disk.name
                                      << " on they are counted as block devices, not as nvme queues");
      break;
    }
    skel_->bss->na_nvme_disk_devs[count] = disk.dev;
    skel_->bss->na_nvme_disk_ctrls[count] = disk.controller.value_or(0);
    ++count;
  }
  __atomic_store_n(&skel_->bss->na_nvme_disk_count, count, __ATOMIC_RELEASE);
}

Status BpfCollector::AttachKernelHooks(const HookPlan& plan) {
  const std::vector<std::string> kernel = plan.KernelHooks();
  for (const std::string& name : loaded_programs_) {
    const std::string hook = HookOfProgram(name);
    if (std::find(kernel.begin(), kernel.end(), hook) == kernel.end()) continue;
    bpf_program* program = bpf_object__find_program_by_name(skel_->obj, name.c_str());
    bpf_link* link = bpf_program__attach(program);
    if (link == nullptr) return LibbpfError("attach BPF program to", hook, errno);
    kernel_links_.push_back(link);
    kernel_hooks_.push_back(hook);
  }
  return OkStatus();
}

BpfCollector::~BpfCollector() {
  for (auto& [pid, process] : processes_) {
    for (bpf_link* link : process.links) bpf_link__destroy(link);
  }
  for (bpf_link* link : kernel_links_) bpf_link__destroy(link);
  if (wait_epoll_ >= 0) close(wait_epoll_);
  ring_buffer__free(ring_);
  queues_.reset();  // unmaps before the maps go away
  nvme_adapt_bpf__destroy(skel_);
}

std::vector<std::string> BpfCollector::Hooks() const {
  std::vector<std::string> hooks = kernel_hooks_;
  std::lock_guard lock(processes_mutex_);
  for (const auto& [pid, process] : processes_) {
    for (const std::string& hook : process.hooks) hooks.push_back(hook + " pid=" + std::to_string(pid));
  }
  return hooks;
}

int BpfCollector::OnRecord(void* context, void* data, size_t size) {
  auto* self = static_cast<BpfCollector*>(context);
  na_window_record record;
  if (size < sizeof record) {
    ++self->bad_records_;
    return 0;
  }
  std::memcpy(&record, data, sizeof record);
  auto event = FromBpfRecord(record);
  if (!event.ok()) {
    ++self->bad_records_;
    return 0;
  }
  if (self->sink_ != nullptr) (*self->sink_)(*event);
  ++self->handed_;
  return 0;
}

Result<int> BpfCollector::Poll(int timeout_ms, const std::function<void(const WindowEvent&)>& sink) {
  epoll_event ready[2];
  const int count = epoll_wait(wait_epoll_, ready, 2, timeout_ms);
  if (count < 0 && errno != EINTR) return SysError("wait on", "the na_windows ring buffer", errno);
  for (int i = 0; i < count; ++i) {
    if (ready[i].data.u32 == kWoken) waker_->Drain();
  }
  // Consumed whatever woke the wait: a record may have come in while the loop was woken for other work.
  sink_ = &sink;
  handed_ = 0;
  const int consumed = ring_buffer__consume(ring_);
  sink_ = nullptr;
  if (consumed < 0) return LibbpfError("consume ring buffer", "na_windows", consumed);
  return handed_;
}

void BpfCollector::Wake() {
  if (waker_) waker_->Signal();
}

Status BpfCollector::SetQueueControl(const QueueKey& key, const QueueControl& control) {
  return queues_->SetControl(key, control);
}

Status BpfCollector::ForgetQueue(const QueueKey& key) { return queues_->Forget(key); }

Result<QueueCounters> BpfCollector::ReadCounters(const QueueKey& key) const { return queues_->Counters(key); }

std::vector<QueueKey> BpfCollector::ObservedQueues() const { return queues_->Keys(); }

Status BpfCollector::AttachProcess(pid_t pid, const std::string& binary_path) {
  if (pid < 0) return MakeError(ErrorCode::kInvalidArgument, "attach process: pid must be >= 0");
  const std::string binary = binary_path.empty() ? "/proc/" + std::to_string(pid) + "/exe" : binary_path;
  if (binary_path.empty() && pid == 0)
    return MakeError(ErrorCode::kInvalidArgument, "attach process: pid 0 (every process) needs a binary path");
  // Opening and reading the binary may block (a FUSE file that never answers): never under processes_mutex_,
  // which Hooks() takes for every GetStatus on the loop.
  std::lock_guard attaching(attach_mutex_);
  {
    std::lock_guard lock(processes_mutex_);
    if (processes_.contains(pid))
      return MakeError(ErrorCode::kFailedPrecondition, "attach process " + std::to_string(pid) + ": already attached");
  }
  NA_ASSIGN_OR_RETURN(auto checked, CheckedBinary::Open(binary));
  auto offered = probe_->ProbeBinary(checked);
  if (!offered.ok()) return std::move(offered).take_error();
  // libbpf opens the path it is given again (for the ELF notes, for a symbol's offset) and the kernel looks
  // a uprobe's path up once more: each must land on the file just checked, not on what a rename put there.
  const std::string pinned = checked.PinnedPath();
  AttachedProcess process{binary, {}, {}};
  const pid_t target = pid == 0 ? -1 : pid;
  auto fail = [&](std::string_view hook, int err) {
    for (bpf_link* link : process.links) bpf_link__destroy(link);
    return LibbpfError("attach " + std::string(hook) + " to", binary, err);
  };
  if (offered->uvnvme_usdt) {
    // Completions through tally where the driver has it, else (or when asked) through complete, never
    // both. mode last: a test fixture starts firing once the completion probe's and mode's semaphores are set.
    const bool per_reap = userspace_per_reap_ || !offered->uvnvme_tally;
    const std::pair<bpf_program*, const char*> probes[] = {
        per_reap ? std::pair{skel_->progs.na_uvnvme_complete, "complete"}
                 : std::pair{skel_->progs.na_uvnvme_tally, "tally"},
        {skel_->progs.na_uvnvme_irq, "irq"},
        {skel_->progs.na_uvnvme_mode, "mode"}};
    for (const auto& [program, name] : probes) {
      if (program == skel_->progs.na_uvnvme_irq && !userspace_wakeups_) continue;
      bpf_link* link = bpf_program__attach_usdt(program, target, pinned.c_str(), "uvnvme", name, nullptr);
      if (link == nullptr) return fail(std::string("usdt/uvnvme:") + name, errno);
      process.links.push_back(link);
      process.hooks.push_back(std::string("usdt/uvnvme:") + name);
    }
  } else if (offered->spdk_symbol) {
    for (bool ret : {false, true}) {
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret, .func_name = "spdk_nvme_qpair_process_completions");
      bpf_program* program =
          ret ? skel_->progs.na_spdk_process_completions_ret : skel_->progs.na_spdk_process_completions;
      bpf_link* link = bpf_program__attach_uprobe_opts(program, target, pinned.c_str(), 0, &opts);
      if (link == nullptr) return fail(HookOfProgram(bpf_program__name(program)), errno);
      process.links.push_back(link);
      process.hooks.push_back(HookOfProgram(bpf_program__name(program)));
    }
  } else {
    return MakeError(ErrorCode::kNotFound, "attach process: " + binary +
                                               " has no uvnvme USDT probes and no spdk_nvme_qpair_process_completions");
  }
  NA_INFO("collector: attached " << process.hooks.size() << " probes to " << binary << " pid " << pid);
  std::lock_guard lock(processes_mutex_);
  processes_.emplace(pid, std::move(process));
  return OkStatus();
}

Status BpfCollector::DetachProcess(pid_t pid) {
  std::lock_guard attaching(attach_mutex_);
  AttachedProcess process;
  {
    std::lock_guard lock(processes_mutex_);
    auto it = processes_.find(pid);
    if (it == processes_.end())
      return MakeError(ErrorCode::kNotFound, "detach process " + std::to_string(pid) + ": not attached");
    process = std::move(it->second);
    processes_.erase(it);
  }
  for (bpf_link* link : process.links) bpf_link__destroy(link);
  if (pid == 0) return OkStatus();
  for (const QueueKey& key : queues_->Keys()) {
    if ((key.source == Source::kUvnvme || key.source == Source::kSpdk) && key.pid == static_cast<uint32_t>(pid)) {
      NA_RETURN_IF_ERROR(queues_->Forget(key));
    }
  }
  return OkStatus();
}

CollectorStats BpfCollector::Stats() const {
  CollectorStats stats;
  stats.ringbuf_drops = __atomic_load_n(&skel_->bss->na_stats.ringbuf_drops, __ATOMIC_RELAXED);
  stats.records = __atomic_load_n(&skel_->bss->na_stats.records, __ATOMIC_RELAXED);
  stats.slots_exhausted = __atomic_load_n(&skel_->bss->na_stats.slots_exhausted, __ATOMIC_RELAXED);
  for (const std::string& name : loaded_programs_) {
    const bpf_program* program = bpf_object__find_program_by_name(skel_->obj, name.c_str());
    bpf_prog_info info{};
    uint32_t length = sizeof info;
    ProgramStats entry{HookOfProgram(name), 0, 0};
    if (program != nullptr && bpf_obj_get_info_by_fd(bpf_program__fd(program), &info, &length) == 0) {
      entry.run_count = info.run_cnt;
      entry.run_time_ns = info.run_time_ns;
    }
    stats.programs.push_back(std::move(entry));
  }
  return stats;
}

Status BpfCollector::TestAccount(const QueueKey& key, uint64_t now_ns, uint32_t n, uint64_t bytes, uint32_t mode) {
  const bpf_program* program = skel_->progs.na_test_account;
  if (bpf_program__fd(program) < 0)
    return MakeError(ErrorCode::kFailedPrecondition, "test entry not loaded (BpfOpenOptions::test_entry)");
  uint64_t args[8] = {static_cast<uint64_t>(key.source), key.ctrl, key.qid, key.pid, now_ns, n, bytes, mode};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args, .ctx_size_in = sizeof args);
  if (bpf_prog_test_run_opts(bpf_program__fd(program), &opts) != 0)
    return SysError("BPF_PROG_TEST_RUN", "na_test_account", errno);
  return OkStatus();
}

Status BpfCollector::TestDriverSwitched(const QueueKey& key, uint64_t now_ns, ReapMode mode) {
  const bpf_program* program = skel_->progs.na_test_mode;
  if (bpf_program__fd(program) < 0)
    return MakeError(ErrorCode::kFailedPrecondition, "test entry not loaded (BpfOpenOptions::test_entry)");
  uint64_t args[6] = {static_cast<uint64_t>(key.source), key.ctrl, key.qid, key.pid, now_ns,
                      static_cast<uint64_t>(mode)};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args, .ctx_size_in = sizeof args);
  if (bpf_prog_test_run_opts(bpf_program__fd(program), &opts) != 0)
    return SysError("BPF_PROG_TEST_RUN", "na_test_mode", errno);
  return OkStatus();
}

Status BpfCollector::TestTally(const QueueKey& key, uint64_t now_ns, uint64_t first_ns, uint32_t n,
                               uint32_t last_reap, uint32_t mode) {
  const bpf_program* program = skel_->progs.na_test_tally;
  if (bpf_program__fd(program) < 0)
    return MakeError(ErrorCode::kFailedPrecondition, "test entry not loaded (BpfOpenOptions::test_entry)");
  uint64_t args[9] = {static_cast<uint64_t>(key.source), key.ctrl, key.qid, key.pid, now_ns, n, last_reap,
                      first_ns, mode};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args, .ctx_size_in = sizeof args);
  if (bpf_prog_test_run_opts(bpf_program__fd(program), &opts) != 0)
    return SysError("BPF_PROG_TEST_RUN", "na_test_tally", errno);
  return OkStatus();
}

Result<BpfCollector::IrqStats> BpfCollector::ReadIrq(uint32_t irq) const {
  na_irq_stats value{};
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.na_irq_stats), &irq, &value) != 0)
    return SysError("lookup in BPF map na_irq_stats, irq", std::to_string(irq), errno);
  return IrqStats{value.count, value.time_ns};
}

}  // namespace nvmeadapt::collect
