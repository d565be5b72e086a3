// SPDX-License-Identifier: Apache-2.0
// uvnvme's interrupt signalling, seen from the wire: the test plays the host on a bare queue pair (its own
// SQ entries, CQ head doorbell and eventfd), so it can leave completions unconsumed, consume some of them,
// and count the interrupts the controller raised at each step.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "uvnvme/controller.h"
#include "uvnvme/queue_memory.h"

namespace nvmeadapt::uvnvme {
namespace {

constexpr uint32_t kQid = 1;

// One queue pair on one controller thread; the test is its host.
class BareQueue {
 public:
  BareQueue(DeviceClock clock, int64_t latency_ns) {
    ModelConfig model;
    model.kind = ModelKind::kFixed;
    model.read_latency_ns = latency_ns;
    controller_ = std::make_unique<EmulatedController>(0, model, 1, clock);
    auto memory = QueueMemory::Create(0, kQid, 16);
    EXPECT_TRUE(memory) << memory.error().message;
    memory_ = std::move(*memory);
    irq_fd_ = eventfd(0, EFD_CLOEXEC);
    EXPECT_GE(irq_fd_, 0) << "eventfd: " << errno;
    EXPECT_TRUE(controller_->AttachQueue(kQid, *memory_, irq_fd_));
    EXPECT_TRUE(controller_->Start());
  }
  ~BareQueue() {
    controller_->Stop();
    close(irq_fd_);
  }

  // A read command whose doorbell time is `doorbell_ns` (its service starts then), rung at once.
  void Submit(int64_t doorbell_ns) {
    SubmissionEntry& sqe = memory_->submissions()[sq_tail_];
    sqe = SubmissionEntry{};
    sqe.opcode = kOpcodeRead;
    sqe.cid = static_cast<uint16_t>(sq_tail_);
    sqe.tag = sq_tail_;
    sqe.submit_ns_lo = static_cast<uint32_t>(doorbell_ns);
    sqe.submit_ns_hi = static_cast<uint32_t>(static_cast<uint64_t>(doorbell_ns) >> 32);
    sq_tail_ = (sq_tail_ + 1) % memory_->entries();
    memory_->registers().sq_tail.store(sq_tail_, std::memory_order_release);
    controller_->WakerFor(kQid).AfterDoorbell(doorbell_ns);
  }
  // Completion entries posted from the start (the test never wraps the ring).
  uint32_t Posted() const {
    uint32_t posted = 0;
    while (posted < memory_->entries() &&
           (std::atomic_ref<uint32_t>(memory_->completions()[posted].cid_status).load(std::memory_order_acquire) &
            kPhaseBit)) {
      ++posted;
    }
    return posted;
  }
  // The host's handler consumed the entries before `head`.
  void WriteHeadDoorbell(uint32_t head) { memory_->registers().cq_head.store(head, std::memory_order_seq_cst); }
  uint64_t Interrupts() const { return controller_->InterruptsSent(kQid); }
  // Passes of the controller thread that posted: a completion posted in the same pass as the one before
  // it has interval 0 (DeviceTiming), every other one starts a pass.
  uint64_t PostingPasses() {
    EXPECT_TRUE(controller_->CloseTiming(std::chrono::seconds(5)));
    const DeviceTiming timing = controller_->Timing(kQid).at(0);
    return timing.posted - timing.intervals[0];
  }

 private:
  std::unique_ptr<EmulatedController> controller_;
  std::unique_ptr<QueueMemory> memory_;
  int irq_fd_ = -1;
  uint32_t sq_tail_ = 0;
};

// Polls `done` for up to 5 s (the shared test machine may hold the controller thread back a while).
template <typename Done>
bool WaitFor(Done done) {
  const int64_t give_up = MonotonicNanos() + 5'000'000'000;
  while (!done()) {
    if (MonotonicNanos() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// Four completions falling due 200 us apart while the host does not reap: the faithful clock spins between
// them (closer than kFaithfulSleepAheadNs) and, watching the CQ head doorbell, raises one interrupt for
// them (the host reaps everything pending per interrupt), and at most one more when it stops watching to
// sleep (asleep it cannot see the head doorbell, so it raises for what it held back rather than strand it).
// Entries posted after the signal that a head write leaves unconsumed raise the next; a fully consumed
// queue raises nothing. (A controller that signals every pass raises four.) What a loaded machine may
// change is which pass posts what: a late pass can post all four before the first signal, and then the
// signal covered them all, so a partial head write rightly raises nothing: the test reads the passes.
TEST(UvnvmeInterrupts, OneIsOutstandingUntilTheCqHeadDoorbellThenWhatIsLeftRaisesTheNext) {
  BareQueue queue(DeviceClock::kFaithful, 1'000'000);
  static_assert(200'000 < kFaithfulSleepAheadNs);
  const int64_t now = MonotonicNanos();
  for (int i = 0; i < 4; ++i) queue.Submit(now + i * 200'000);
  ASSERT_TRUE(WaitFor([&] { return queue.Posted() == 4; })) << "posted " << queue.Posted() << " of 4";
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const uint64_t raised = queue.Interrupts();
  EXPECT_GE(raised, 1u);
  EXPECT_LE(raised, 2u) << "completions posted while an interrupt was outstanding raised more";
  const uint64_t passes = queue.PostingPasses();
  if (raised == 1 && passes >= 2) {
    // The signal covered the first pass only: the two entries a head write of 2 leaves were posted after
    // it, so they must raise the next (at once if the controller watches the head, or as it stops watching).
    queue.WriteHeadDoorbell(2);
    EXPECT_TRUE(WaitFor([&] { return queue.Interrupts() == 2; })) << "interrupts: " << queue.Interrupts();
  }
  const uint64_t before_full_head = queue.Interrupts();
  queue.WriteHeadDoorbell(4);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(queue.Interrupts(), before_full_head) << "a fully consumed queue raised another interrupt";
}

// The sleeping clock cannot watch the head doorbell while it sleeps, so it does not hold completions back
// behind an outstanding interrupt: every pass that posts raises one (a loaded machine may post two
// completions on one late pass, so the passes are counted, not assumed).
TEST(UvnvmeInterrupts, TheSleepingClockRaisesOneForEveryPassThatPosts) {
  BareQueue queue(DeviceClock::kSleeping, 1'000'000);
  const int64_t now = MonotonicNanos();
  for (int i = 0; i < 4; ++i) queue.Submit(now + i * 2'000'000);
  ASSERT_TRUE(WaitFor([&] { return queue.Posted() == 4; })) << "posted " << queue.Posted() << " of 4";
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const uint64_t passes = queue.PostingPasses();
  EXPECT_GE(passes, 1u);
  EXPECT_EQ(queue.Interrupts(), passes) << "a pass that posted behind an outstanding interrupt raised none";
}

}  // namespace
}  // namespace nvmeadapt::uvnvme
