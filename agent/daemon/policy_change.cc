// SPDX-License-Identifier: Apache-2.0
// SetPolicy as one change, all or nothing, within its deadline (issue 45, item 10). It used to write policy.json and
// then, on a second visit to the loop, apply it: a loop that did not take that visit left on disk a change the caller
// was told failed, applied at the next start; a lever that refused one queue left the policy in force with that queue
// out of it; and a state disk that stopped answering held the change mutex with no timeout, so an admin's retries used
// up the API's threads.
//
// Now: read the book on the loop (validation: nothing written yet); write policy.json on the policy writer's thread
// until the deadline (policy_writer.h: given up past it, and undone should it land later); apply on the loop; wait for
// the switches it started until the deadline; and judge on the loop. A switch refused by then takes the whole change
// back: the book and origin it found, the queues that switched switched back, policy.json written back. The change
// mutex is waited for until the deadline only.
#include <algorithm>
#include <memory>
#include <set>

#include "agent/daemon/api_adapter.h"
#include "common/log.h"

namespace nvmeadapt::daemon {
namespace {

// The set has an entry of the request's level under the very name the request gives.
bool HasEntryNamed(const v1::PolicySet& set, const v1::SetPolicyRequest& request) {
  if (request.queue() == 0) {
    return std::any_of(set.controllers().begin(), set.controllers().end(),
                       [&](const v1::ControllerPolicy& c) { return c.controller() == request.controller(); });
  }
  return std::any_of(set.queues().begin(), set.queues().end(), [&](const v1::QueuePolicy& q) {
    return q.controller() == request.controller() && q.queue() == request.queue();
  });
}

// How the switches a change started ended, heard on the loop as they end.
struct SwitchesEnded {
  std::set<std::pair<std::string, uint64_t>> ended;  // (queue name, serial)
  std::vector<std::string> refused;                  // "queue NAME: why", in the order they ended

  static SwitchProtocol::SwitchThen Hear(const std::shared_ptr<SwitchesEnded>& into) {
    return [into](ManagedQueue& queue, const Status& outcome) {
      into->ended.insert({queue.name, queue.serial});
      // A lever whose target is gone (kNotFound: a driver that exited, a controller removed) refuses nothing: the
      // queue leaves at the next discovery, and the change holds for the queues that remain.
      if (!outcome && outcome.error().code != ErrorCode::kNotFound) {
        into->refused.push_back("queue " + queue.name + ": " + queue.degraded_reason);
      }
    };
  }
};

void Wait(const std::shared_ptr<SwitchesSettled>& waiter, PolicyWriter::Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - PolicyWriter::Clock::now());
  if (left.count() > 0) waiter->WaitFor(left.count());
}

}  // namespace

// One SetPolicy call, step by step; its caller holds the change mutex throughout.
class PolicyChange {
 public:
  PolicyChange(ApiAdapter& api, const v1::SetPolicyRequest& request, ApiAdapter::Deadline deadline)
      : api_(api), policy_(api.parts_.policy), source_(policy_.source()), request_(request), deadline_(deadline) {
    note_.set_set_by(request.caller());
  }

  // Reads the book on the loop and makes the new one: every check the request can fail, before any write.
  Status Read() {
    auto read = api_.parts_.loop.OnLoopBy(deadline_, [&]() -> Status {
      // A controller named by its kernel name is kept by its stable ID: its policy stays with the device when a reboot
      // renumbers it (the request may name either). An entry the file already keys by that name is changed where it is,
      // so that `replace` leaves nothing of it behind.
      v1::SetPolicyRequest keyed = request_;
      if (!request_.controller().empty()) {
        const ManagedQueue* any = api_.AnyQueueOf(request_.controller());
        if (any == nullptr) {
          return MakeError(ErrorCode::kNotFound, "controller " + request_.controller() + ": no such controller");
        }
        if (request_.queue() != 0 &&
            api_.parts_.queues.ByName(QueueName(any->desc.controller, request_.queue())) == nullptr) {
          return MakeError(ErrorCode::kNotFound,
                           "queue " + QueueName(request_.controller(), request_.queue()) + ": no such queue");
        }
        if (!HasEntryNamed(policy_.book().policies(), request_)) keyed.set_controller(any->desc.ControllerId());
      }
      cleared_.clear();
      NA_ASSIGN_OR_RETURN(PolicyBook book, request_.reset() ? PolicyBook::Create(policy_.file())
                                                            : policy_.book().With(keyed, &cleared_));
      note_.set_set_unix_ns(api_.settings_.wall());
      book_.emplace(std::move(book));
      before_.emplace(policy_.book());
      before_origin_ = source_.origin();
      generation_ = policy_.changes();
      scope_ = !request_.selector().empty()    ? "selector " + request_.selector()
               : request_.controller().empty() ? "global"
               : request_.queue() == 0         ? keyed.controller()
                                               : QueueName(keyed.controller(), request_.queue());
      return OkStatus();
    });
    return read;
  }

  // Durable before it applies; a write that lands after the deadline is undone by the writer.
  Status Write() {
    // By value: a write given up may run after this call returned.
    auto write = [&source = source_, reset = request_.reset(), book = *book_, note = note_] {
      return reset ? source.Forget() : source.Persist(book, note);
    };
    Status saved = policy_.writer().Run(write, PutBack(), deadline_);
    if (saved) return saved;
    return MakeError(saved.error().code,
                     "policy not changed: " + source_.path() + ": " + saved.error().message + "; nothing changed");
  }

  // On the loop: the new book in force, unless a reload applied since the reading (`stale`: read again). What was
  // written goes when it did not apply.
  Result<v1::SetPolicyResponse> Apply(bool* stale) {
    auto answer = api_.parts_.loop.OnLoopBy(deadline_, [&]() -> Result<v1::SetPolicyResponse> {
      if (generation_ != policy_.changes()) {
        *stale = true;
        return v1::SetPolicyResponse();
      }
      source_.InForce(request_.reset() ? std::nullopt : std::optional<v1::PolicyNote>(note_));
      started_ = policy_.Apply(std::move(*book_), api_.settings_.monotonic(), SwitchesEnded::Hear(ended_));
      applied_generation_ = policy_.changes();
      const std::string what = request_.reset()    ? "policy reset: the config file's policy is in force again"
                               : request_.remove() ? "policy " + scope_ + ": removed"
                                                   : "policy " + scope_ + ": " + request_.policy().ShortDebugString();
      NA_INFO(what << (request_.caller().empty() ? "" : " (by " + request_.caller() + ")"));
      for (const std::string& level : cleared_) NA_INFO("policy: " << level << ": its own mode cleared (global off)");
      api_.parts_.listeners.Tell(&AgentListener::PolicySet, what);
      v1::SetPolicyResponse response;
      *response.mutable_policy() = policy_.book().policies();
      if (api_.WaitForSwitches(settled_)) switching_ = true;
      return response;
    });
    if (!answer || *stale) {
      (void)policy_.writer().Must(PutBack(), "putting back " + source_.path() + " after a change not applied",
                                  PolicyWriter::Clock::now());
    }
    if (!answer) {
      return MakeError(answer.error().code, "policy not changed: " + answer.error().message + "; nothing changed");
    }
    return answer;
  }

  // Once the switches it started ended (or at the deadline): OK, or the whole change taken back.
  Status Judge();

 private:
  // Writes back, on the writer's thread, the policy this change found in force.
  PolicyWriter::Write PutBack() const {
    return [&source = source_, before = *before_, origin = before_origin_] { return source.PutBack(before, origin); };
  }
  // On the loop: "" when no switch was refused; else the change taken back and what was refused.
  std::string TakeBackIfRefused();

  ApiAdapter& api_;
  PolicyApplier& policy_;
  PolicySource& source_;
  const v1::SetPolicyRequest& request_;
  const ApiAdapter::Deadline deadline_;
  v1::PolicyNote note_;
  // From Read:
  std::optional<PolicyBook> book_;
  std::vector<std::string> cleared_;
  uint64_t generation_ = 0;
  std::string scope_;
  std::optional<PolicyBook> before_;  // what was in force, and where it came from: what a take-back restores
  v1::PolicyOrigin before_origin_;
  // From Apply:
  std::vector<PolicyApplier::Started> started_;
  std::shared_ptr<SwitchesEnded> ended_ = std::make_shared<SwitchesEnded>();
  std::shared_ptr<SwitchesSettled> settled_ = std::make_shared<SwitchesSettled>();
  bool switching_ = false;
  uint64_t applied_generation_ = 0;
  // From a take-back:
  bool taken_back_ = false, switching_back_ = false;
  std::shared_ptr<SwitchesEnded> back_ = std::make_shared<SwitchesEnded>();
  std::shared_ptr<SwitchesSettled> back_settled_ = std::make_shared<SwitchesSettled>();
};

std::string PolicyChange::TakeBackIfRefused() {
  if (ended_->refused.empty()) {
    // A switch still in its lever at the deadline (a controller reset, a fabrics reconnect) is not taken back: that
    // would disrupt the device twice. The change stands, and GetStatus lists the switch.
    for (const PolicyApplier::Started& s : started_) {
      const ManagedQueue* q = api_.parts_.queues.ByName(s.name);
      if (ended_->ended.count({s.name, s.serial}) > 0 || q == nullptr || q->serial != s.serial) continue;
      NA_INFO("policy " << scope_ << ": in force; the switch of " << s.name
                        << " was still in its lever at the call's deadline");
    }
    return "";
  }
  std::string failure;
  for (const std::string& why : ended_->refused) failure += (failure.empty() ? "" : "; ") + why;
  // A reload that replaced the book since (an authoritative config file) is not undone.
  if (policy_.changes() == applied_generation_) {
    source_.Restore(before_origin_);
    policy_.Apply(*before_, api_.settings_.monotonic(), SwitchesEnded::Hear(back_));
    taken_back_ = true;
  }
  const std::string what =
      "policy " + scope_ + ": not applied (" + failure + "); " +
      (taken_back_ ? "the policy before it is in force again" : "a config reload replaced it meanwhile");
  NA_WARN(what);
  api_.parts_.listeners.Tell(&AgentListener::PolicySet, what);
  switching_back_ = api_.WaitForSwitches(back_settled_);
  return failure;
}

Status PolicyChange::Judge() {
  if (switching_) Wait(settled_, deadline_);
  // Judged on the loop even past the deadline: a change must not stay half in force. A loop held up is asked again; one
  // that stopped runs nothing more, and what was written goes.
  std::string failure;
  Status judged = MakeError(ErrorCode::kUnavailable, "not judged");
  while (!judged && !api_.parts_.loop.stopped()) {
    judged = api_.parts_.loop.OnLoop([&]() -> Status {
      failure = TakeBackIfRefused();
      return OkStatus();
    });
  }
  if (judged && failure.empty()) return OkStatus();
  if (switching_back_) Wait(back_settled_, deadline_);
  Status put =
      policy_.writer().Must(PutBack(), "putting back " + source_.path() + " after a change not applied", deadline_);
  if (!judged) {
    return MakeError(ErrorCode::kUnavailable, "policy not changed: the agent stopped before the change was judged; " +
                                                  source_.path() + " is put back" +
                                                  (put ? "" : ": " + put.error().message));
  }
  std::string message =
      "policy not applied: " + failure + "; " +
      (taken_back_ ? "the policy before it is in force again" : "a config reload replaced it meanwhile");
  for (const std::string& why : back_->refused) message += "; not switched back: " + why;
  if (!put) message += "; putting back " + source_.path() + ": " + put.error().message;
  return MakeError(ErrorCode::kRefused, message);
}

Result<v1::SetPolicyResponse> ApiAdapter::SetPolicy(const v1::SetPolicyRequest& request, Deadline deadline) {
  std::unique_lock changing(parts_.policy.change_mutex(), std::defer_lock);
  if (!changing.try_lock_until(deadline)) {
    return MakeError(ErrorCode::kUnavailable,
                     "policy not changed: the change before this one was still under way at this call's deadline "
                     "(is the state disk of " +
                         parts_.policy.source().path() + " stuck?); nothing changed, try again");
  }
  for (;;) {
    PolicyChange change(*this, request, deadline);
    NA_RETURN_IF_ERROR(change.Read());
    NA_RETURN_IF_ERROR(change.Write());
    bool stale = false;
    auto answer = change.Apply(&stale);
    if (stale) continue;  // a reload applied since the reading: read the book again
    if (!answer) return answer.error();
    NA_RETURN_IF_ERROR(change.Judge());
    return answer;
  }
}

}  // namespace nvmeadapt::daemon
