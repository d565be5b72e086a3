// SPDX-License-Identifier: Apache-2.0
// The policy numbers the engine runs on, as a plain struct, each with its default and why. Names, bounds and
// the kernel patch's values of the fields are in one table (agent/engine/policy_fields.h), which also
// validates.
#pragma once

#include <cstdint>

#include "agent/engine/types.h"
#include "common/result.h"

namespace nvmeadapt::engine {

struct Policy {
  uint32_t window_completions = 8192;
  Nanos poll_threshold = 10'000;
  Nanos pace_slack = 20'000;
  uint32_t max_failures = 3;
  uint32_t backoff_windows = 64;
  uint32_t max_poll_windows = 64;
  Nanos timer_granularity = 1'000'000;
  // Pace of a batch (DESIGN.md section 3): a reap of n completions bringing the window to k is held to
  // k + n - 1. Off: held to k, the patch's rule for every n. Identical for n = 1 (every kernel event).
  bool batch_pace_allowance = true;
  // Interrupt-mode windows that follow polling and are not taken as the baseline: right after polling, a
  // host's interrupt path runs faster than it will in steady state (idle states and wake-ups still warm),
  // and a try held to that transient fails although polling beats the steady state. 0: the patch's rule
  // (the first window after polling is the baseline).
  uint32_t settle_windows = 1;
  // Pace credit of a kept run: a polling window that follows a kept polling window is held to its pace with
  // pace_slack plus what that window finished ahead of its own limit, at most pace_credit. The pace rule
  // starts again at every window, so without credit a run that has beaten its baseline for seconds fails on
  // the first host or device hiccup longer than the slack that lands in a window's first completions (the
  // evaluation's QD8 runs: 27 of 49 failed tries, at k <= 32, 30-100 us over). A try's first window gets no
  // credit: it fails as fast as the patch's. A run that a re-measure resumes is not a try: it keeps the
  // credit its last kept window earned (the demo's QD16: the interrupt window measured right after polling
  // ran 17.7-19.4 ms per 8,192 completions against 23.5 steady, and the resumed run's first window fell
  // behind that transient at k = 410-1,700 by 2-13 %, then two fresh tries did the same and it backed
  // off). 5 ms, not 1: with 1 ms the evaluation's QD8 kept runs still failed on stalls 0.9-2.7 ms over their
  // limit, the length of the stops the device's CPU sees from the hypervisor (uvnvme_bench's stall probe: up
  // to 3.1 ms), which stop an interrupt-mode queue just the same. The credit never exceeds what the previous
  // window was ahead. 0: the patch's rule.
  Nanos pace_credit = 5'000'000;
  // A polling window's pace slack is at least this share of its baseline window's span (the time the
  // baseline took for a whole window), in percent. A fixed slack set for one device's pace is too tight
  // where completion times vary: on the evaluation's jittered device at QD32 (issue 48; 30 % writes at 50 us,
  // 40 us of jitter, poll 1.065 x interrupt) every try failed behind pace within its first 0.6-6 ms, up to
  // 0.4 ms over a 20 or 50 us slack, and adaptive kept none of polling's gain; with the pace rule out of
  // the way the same tries kept their windows and adaptive reached 0.97-1.0 x poll. A try that truly loses
  // still fails early: at half its baseline's pace, after about twice this share of a window's time. 0: the
  // fixed slack alone (the patch's rule).
  uint32_t pace_slack_percent = 5;
  // A window of a kept run (one after the run's first kept window) that is not faster than its baseline is
  // kept when it and the window before it, together, are: one slow window in a run that keeps beating its
  // baseline is the device's spread, two in a row are the load. On the jittered device at QD32, with the
  // pace slack above, 8-12 runs per 6 s still ended on a single window 1-7 % over its limit (polling's gain
  // there: 6.5 %), each paying a settle and a measure window in interrupt mode. A load that stops wanting
  // polling is caught one window later. false: every window alone (the patch's rule).
  bool run_pair_verdict = true;
  // Backoffs that follow each other without a kept polling window double, up to this many windows: a queue
  // where polling keeps losing stops paying for tries (each try spins a reaper on a CPU other queues need).
  // 0: every backoff is backoff_windows long, idle time or not (the patch's rule). Idle time decays the doubling: a full window
  // that took at least Engine::kIdleFactor (8) times its baseline's time for as many completions (the
  // queue idled, or its load fell to an eighth) ends a backoff (reason load_changed) and starts the backoff
  // and polling-run levels again, so a queue's level of yesterday does not keep today's new load waiting.
  uint32_t max_backoff_windows = 1024;
  // A backoff window whose completion rate differs from the baseline's by at least this many percent ends
  // the backoff (reason load_changed) and the doubling: the failures were evidence about another load.
  // 0 (the default): a backoff always runs to its end. Off by default because a queue's rate also moves
  // when a neighbour on its CPU tries polling: with 25 % the evaluation's four controllers on one host CPU
  // ended 113-137 backoffs per run that way, every try of one queue ending the backoffs of the others.
  uint32_t backoff_load_change_percent = 0;
  // Runs of polling between re-measures grow: a run is max_poll_windows long, and each re-measure that
  // finds polling still pays doubles the next one, up to this many windows. A failed try or a re-measure
  // that keeps interrupts starts again at max_poll_windows. Each re-measure costs a settling and a measuring
  // window in interrupt mode (the evaluation's QD8: about 94 ms of every 1.4 s at 0.46 x poll's rate); a load
  // that no longer wants polling is still caught by every polling window's own judgement against its
  // baseline. 0: every run is max_poll_windows long (the patch's rule). Idle time starts the growth again
  // (see max_backoff_windows): the try that follows it is a new one.
  uint32_t max_poll_run_windows = 1024;
  // A try that reaped and then stalled before it kept a window (its reaper went a whole timer period
  // without reaping while completions were due: the CPU it polls on is busy with other work) backs off at
  // once instead of trying max_failures times: the next tries meet the same busy CPU, and each spins a
  // reaper that the other queues on that CPU need (the evaluation's eight reapers on one host CPU: 114-129
  // stalled first windows per run, at k = 321-2351, each slowing its neighbours to about 40 % of their
  // rate). A stall before the try's first completion (the switch slow to take effect in the reaper), in a
  // kept run, or in a run resumed after a re-measure is one failure. false: the patch's rule.
  bool stall_backoff = true;
  // Where a try's clock starts: false (the patch's rule), when the switch to polling took effect; true, at
  // the try's first completion in poll mode (the BPF side starts the try's first window there, so neither
  // its pace check nor its rate counts the device round trip between the switch and that completion). The
  // scale model (docs/scale.md, "try clock") shows it matters only where interrupt-mode throughput is lost to
  // CPU work per interrupt entry (the per-entry penalty), not under the platform's interrupt ceiling that
  // fits the published points: off by default. The timer still judges a try with no completion at all from
  // the switch.
  bool try_clock_first_completion = false;
  // The node layer (agent/engine/node.h) decides this queue's tries: each is admitted or deferred on the
  // node's CPU budget, its reaping CPU's headroom, the node's CPU pressure and the tries of queues sharing
  // that CPU, and a run the node can no longer afford is ended. false: the per-queue rules alone (the patch's
  // behaviour). Off by default until the evaluation shows it never worse than per-queue deciding (issue 34).
  bool node_layer = false;
  ControllerMode mode = ControllerMode::kOff;

  bool operator==(const Policy&) const = default;
};

// The BPF side counts a window in 20 bits (NA_MAX_WINDOW in the shared BPF header; agent/collect asserts the two
// agree): a larger window could never close there.
inline constexpr uint32_t kMaxWindowCompletions = (1u << 20) - 1;
// The shortest timer period (the engine's soonest timer when it has no queue).
inline constexpr Nanos kMinTimerGranularity = 10'000;

// Checks every field against its bounds in the table; the error names the first bad one, prefixed by
// `field_prefix` ("policy."). Defined with the table (policy_fields.cc).
Status ValidatePolicy(const Policy& policy, std::string_view field_prefix = "policy.");

}  // namespace nvmeadapt::engine
