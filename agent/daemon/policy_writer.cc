// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/policy_writer.h"

#include "common/log.h"

namespace nvmeadapt::daemon {

PolicyWriter::~PolicyWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status PolicyWriter::Run(Write write, Write undo, Clock::time_point deadline) {
  auto job = std::make_shared<Job>();
  job->write = std::move(write);
  job->undo = std::move(undo);
  job->may_give_up = true;
  return Queue(std::move(job), deadline);
}

Status PolicyWriter::Must(Write write, std::string what, Clock::time_point deadline) {
  auto job = std::make_shared<Job>();
  job->write = std::move(write);
  job->what = std::move(what);
  return Queue(std::move(job), deadline);
}

Status PolicyWriter::Queue(std::shared_ptr<Job> job, Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) thread_ = std::thread([this] { Drain(); });
  jobs_.push_back(job);
  changed_cv_.notify_all();
  if (changed_cv_.wait_until(lock, deadline, [&] { return job->done; })) return job->status;
  job->abandoned = true;  // its caller hears no more of it: Drain gives it up, undoes it or logs it
  return MakeError(ErrorCode::kUnavailable, std::string(job->started ? "the state dir had not finished the write "
                                                                       "by the call's deadline"
                                                                     : "an earlier write to the state dir had "
                                                                       "not finished by the call's "
                                                                       "deadline (is its disk stuck?)"));
}

void PolicyWriter::Drain() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, with nothing left to write
    std::shared_ptr<Job> job = jobs_.front();
    jobs_.pop_front();
    if (job->abandoned && job->may_give_up) {  // its caller was told it failed before it began
      job->done = true;
      continue;
    }
    job->started = true;
    lock.unlock();
    Status status = job->write();
    lock.lock();
    job->status = status;
    job->done = true;
    changed_cv_.notify_all();
    if (!job->abandoned) continue;
    if (job->may_give_up && status && job->undo) {
      // Its caller was told it failed: what it wrote goes, before any later write (they wait for this thread).
      lock.unlock();
      Status undone = job->undo();
      if (undone) {
        NA_INFO(
            "policy: a change whose caller was told it failed (its "
            "deadline passed) was written late, and "
            "is taken back off disk");
      } else {
        NA_ERROR(
            "policy: a change whose caller was told it failed (its "
            "deadline passed) was written late, and "
            "cannot be taken back off disk: "
            << undone.error().message);
      }
      lock.lock();
    } else if (!job->may_give_up && !status) {
      NA_ERROR("policy: " << job->what << ": " << status.error().message);
    }
  }
}

}  // namespace nvmeadapt::daemon
