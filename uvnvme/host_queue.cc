// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/host_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/clock.h"
#include "uvnvme/probes.h"
#include "uvnvme/sync.h"

namespace nvmeadapt::uvnvme {

Result<std::unique_ptr<HostQueue>> HostQueue::Create(EmulatedController& controller, uint32_t qid,
                                                     uint32_t entries, ReapMode initial) {
  auto memory = QueueMemory::Create(controller.index(), qid, entries);
  if (!memory) return std::move(memory).take_error();
  int irq_fd = eventfd(0, EFD_CLOEXEC);
  const std::string name = "c" + std::to_string(controller.index()) + "q" + std::to_string(qid);
  if (irq_fd < 0) return SysError("eventfd", "for queue " + name, errno);
  if (Status attached = controller.AttachQueue(qid, **memory, irq_fd); !attached) {
    close(irq_fd);
    return std::move(attached).take_error();
  }
  return std::unique_ptr<HostQueue>(new HostQueue(controller, qid, std::move(*memory), irq_fd, initial));
}

HostQueue::HostQueue(EmulatedController& controller, uint32_t qid, std::unique_ptr<QueueMemory> memory,
                     int irq_fd, ReapMode initial)
    : ctrl_(controller.index()),
      qid_(qid),
      memory_(std::move(memory)),
      irq_fd_(irq_fd),
      waker_(&controller.WakerFor(qid)),
      commands_(memory_->entries()),
      mode_(initial) {
  memory_->registers().irq_masked.store(initial == ReapMode::kPoll ? 1 : 0);
  free_cids_.reserve(Capacity());
  for (uint32_t cid = Capacity(); cid > 0; --cid) free_cids_.push_back(static_cast<uint16_t>(cid - 1));
}

// The controller must be stopped first: it writes to this queue's memory and eventfd.
HostQueue::~HostQueue() { close(irq_fd_); }

bool HostQueue::Submit(const IoCommand& command, int64_t now_ns) {
  if (free_cids_.empty()) return false;
  const uint16_t cid = free_cids_.back();
  free_cids_.pop_back();
  Command& record = commands_[cid];
  record = Command{next_tag_++, command.write, true, now_ns};
  SubmissionEntry sqe;
  sqe.opcode = command.write ? kOpcodeWrite : kOpcodeRead;
  sqe.cid = cid;
  sqe.nsid = 1;
  sqe.submit_ns_lo = static_cast<uint32_t>(now_ns);
  sqe.submit_ns_hi = static_cast<uint32_t>(static_cast<uint64_t>(now_ns) >> 32);
  sqe.cdw10 = static_cast<uint32_t>(command.lba);
  sqe.cdw11 = static_cast<uint32_t>(command.lba >> 32);
  sqe.cdw12 = (command.blocks - 1) & 0xffffu;
  sqe.tag = record.tag;
  std::memcpy(&memory_->submissions()[sq_tail_], &sqe, sizeof sqe);
  sq_tail_ = sq_tail_ + 1 == memory_->entries() ? 0 : sq_tail_ + 1;
  ++inflight_;
  ++unrung_;
  return true;
}

void HostQueue::RingDoorbell(int64_t now_ns) {
  if (unrung_ == 0) return;
  // The model's service time starts at the doorbell: the new entries carry its time, not the time they
  // were built, so a reaper preempted between Submit and here does not make the device look late.
  const int64_t doorbell_ns = now_ns;
  SubmissionEntry* ring = memory_->submissions();
  const uint32_t entries = memory_->entries();
  for (uint64_t i = 0, at = (sq_tail_ + entries - unrung_ % entries) % entries; i < unrung_; ++i) {
    ring[at].submit_ns_lo = static_cast<uint32_t>(doorbell_ns);
    ring[at].submit_ns_hi = static_cast<uint32_t>(static_cast<uint64_t>(doorbell_ns) >> 32);
    at = at + 1 == entries ? 0 : at + 1;
  }
  memory_->registers().sq_tail.store(sq_tail_, std::memory_order_release);
  waker_->AfterDoorbell(doorbell_ns);
  submitted_.store(submitted_.load(std::memory_order_relaxed) + unrung_, std::memory_order_relaxed);
  unrung_ = 0;
}

void HostQueue::ReportReaped() {
  FireTally();
  if (unreported_ == 0) return;
  probes::Complete(ctrl_, qid_, unreported_, static_cast<uint32_t>(unreported_mode_));
  unreported_ = 0;
}

void HostQueue::FireTally() {
  if (tally_.completions > 0) {
    probes::Tally(ctrl_, qid_, tally_.completions, tally_.reaps, static_cast<uint32_t>(tally_.mode), tally_.last_reap,
                  static_cast<uint64_t>(tally_.first_ns), static_cast<uint64_t>(tally_.last_ns));
  }
  tally_ = Tally{};
}

// A tally holds one mode: a switch fires it first (ApplyModeRequest), so `mode` is the mode of every reap.
void HostQueue::AddToTally(uint32_t reaped, int64_t now) {
  if (!probes::TallyAttached()) return;
  if (tally_.completions == 0) {
    tally_.first_ns = now;
    tally_.mode = mode();
  }
  tally_.completions += reaped;
  ++tally_.reaps;
  tally_.last_reap = reaped;
  tally_.last_ns = now;
  const bool polling = tally_.mode == ReapMode::kPoll;
  tally_.due = tally_.completions >= (polling ? kTallyCompletions : kInterruptTallyCompletions) ||
               now - tally_.first_ns >= (polling ? kTallyNanos : kInterruptTallyNanos);
}

void HostQueue::CheckTallyAge() {
  constexpr uint32_t kEmptyPollsPerCheck = 32;  // a clock read costs several empty polls
  if (tally_.completions == 0 || tally_.due || ++tally_.empty_polls < kEmptyPollsPerCheck) return;
  tally_.empty_polls = 0;
  tally_.due = MonotonicNanos() - tally_.first_ns >= kTallyNanos;
}

size_t HostQueue::Reap(std::span<Completion> out) {
  // The previous batch was handled: its completions' next commands are on their way.
  if (tally_.due) FireTally();
  if (unreported_ != 0) {
    probes::Complete(ctrl_, qid_, unreported_, static_cast<uint32_t>(unreported_mode_));
    unreported_ = 0;
  }
  if (out.size() < Capacity()) {  // a cut-short drain could strand completions whose interrupt was consumed
    protocol_errors_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  // A plain load first: a polling reaper passes here millions of times a second and must not write.
  if (mode_request_.load(std::memory_order_relaxed) != 0) {
    const uint32_t request = mode_request_.exchange(0, std::memory_order_acq_rel);
    const ReapMode before = mode();
    if (request != 0) ApplyModeRequest(request);  // 0: SetMode withdrew it meanwhile
    if (before != mode()) return Drain(out);       // after an unmask this drain is what makes blocking safe
  }
  if (mode() == ReapMode::kPoll) return Drain(out);
  uint64_t counter = 0;
  if (read(irq_fd_, &counter, sizeof counter) != sizeof counter) return 0;  // EINTR: the caller loops
  if (InterruptsIn(counter) == 0) return 0;  // only a kick
  wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  probes::Irq(ctrl_, qid_);
  return Drain(out);
}

void HostQueue::ApplyModeRequest(uint32_t request) {
  const ReapMode want = static_cast<ReapMode>(request - 1);
  if (want != mode()) {
    FireTally();  // reaped in the old mode: reported before the switch, so no tally spans one
    // The fence orders the mask store before the drain's loads; it pairs with the controller's fence
    // between posting completions and reading the mask.
    memory_->registers().irq_masked.store(want == ReapMode::kPoll ? 1 : 0, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    mode_.store(want, std::memory_order_release);
    mode_switches_.store(mode_switches_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    probes::Mode(ctrl_, qid_, static_cast<uint32_t>(want));
  }
  std::lock_guard lock(ack_mutex_);
  ++requests_taken_;
  ack_cv_.notify_all();
}

size_t HostQueue::Drain(std::span<Completion> out) {
  CompletionEntry* ring = memory_->completions();
  const uint32_t entries = memory_->entries();
  size_t reaped = 0;
  uint32_t consumed = 0;
  int64_t now = 0;
  while (true) {
    CompletionEntry& cqe = ring[cq_head_];
    const uint32_t cid_status = std::atomic_ref<uint32_t>(cqe.cid_status).load(std::memory_order_acquire);
    if ((cid_status & kPhaseBit) != expected_phase_) break;
    if (now == 0) now = MonotonicNanos();
    const uint32_t cid = CompletionCid(cid_status);
    Command* command = cid < commands_.size() ? &commands_[cid] : nullptr;
    if (command && command->in_flight && command->tag == cqe.result && reaped < out.size()) {
      command->in_flight = false;
      out[reaped++] = Completion{static_cast<uint16_t>(cid), command->tag, command->write, now - command->submit_ns};
      free_cids_.push_back(static_cast<uint16_t>(cid));
      --inflight_;
    } else {
      protocol_errors_.fetch_add(1, std::memory_order_relaxed);
    }
    ++consumed;
    cq_head_ = cq_head_ + 1 == entries ? 0 : cq_head_ + 1;
    if (cq_head_ == 0) expected_phase_ ^= kPhaseBit;
  }
  if (consumed == 0) {
    if (mode() == ReapMode::kPoll) CheckTallyAge();
    return 0;
  }
  memory_->registers().cq_head.store(cq_head_, std::memory_order_release);
  completed_.store(completed_.load(std::memory_order_relaxed) + reaped, std::memory_order_relaxed);
  if (mode() == ReapMode::kPoll) {
    poll_completed_.store(poll_completed_.load(std::memory_order_relaxed) + reaped, std::memory_order_relaxed);
  }
  if (reaped > 0) {
    reaps_.store(reaps_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    unreported_ = static_cast<uint32_t>(reaped);
    unreported_mode_ = mode();
    AddToTally(static_cast<uint32_t>(reaped), now);
  }
  return reaped;
}

Status HostQueue::SetMode(ReapMode mode, std::chrono::milliseconds timeout) {
  std::lock_guard serial(set_mode_mutex_);
  if (this->mode() == mode) return OkStatus();
  std::unique_lock lock(ack_mutex_);
  const uint64_t taken_before = requests_taken_;
  mode_request_.store(static_cast<uint32_t>(mode) + 1, std::memory_order_release);
  Kick();
  if (ack_cv_.wait_for(lock, timeout, [&] { return requests_taken_ > taken_before; })) return OkStatus();
  uint32_t expected = static_cast<uint32_t>(mode) + 1;
  if (mode_request_.compare_exchange_strong(expected, 0)) {
    return MakeError(ErrorCode::kUnavailable, "queue c" + std::to_string(ctrl_) + "q" + std::to_string(qid_) +
                                                  ": its reaper did not take the mode change in time (not running?)");
  }
  ack_cv_.wait(lock, [&] { return requests_taken_ > taken_before; });  // taken: being applied right now
  return OkStatus();
}

void HostQueue::Kick() {
  const uint64_t kick = kKickUnit;
  // Only a full counter (2^64 - 2) makes this fail, and a blocked reaper is woken long before.
  if (write(irq_fd_, &kick, sizeof kick) != sizeof kick) protocol_errors_.fetch_add(1, std::memory_order_relaxed);
}

QueueCounters HostQueue::Counters() const {
  return QueueCounters{submitted_.load(std::memory_order_relaxed), completed_.load(std::memory_order_relaxed),
                       poll_completed_.load(std::memory_order_relaxed), reaps_.load(std::memory_order_relaxed), wakeups_.load(std::memory_order_relaxed), mode_switches_.load(std::memory_order_relaxed),
                       protocol_errors_.load(std::memory_order_relaxed)};
}

}  // namespace nvmeadapt::uvnvme
