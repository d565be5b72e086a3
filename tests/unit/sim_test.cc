// SPDX-License-Identifier: Apache-2.0
// The scale model (sim/): its clock's ordering, its cost accounting, closed-form cases it must reproduce
// exactly, and the policies' behaviour on loads whose answer is known.
#include <gtest/gtest.h>

#include <vector>

#include "sim/event_queue.h"
#include "sim/json.h"
#include "sim/scenarios.h"

namespace nvmeadapt::sim {
namespace {

// Every cost distinct, so that a wrong term shows in the sum.
HostCosts DistinctCosts() {
  HostCosts c;
  c.submit = 700;
  c.job_complete = 300;
  c.irq_entry_exit = 1100;
  c.irq_per_entry = 130;
  c.irq_vector_switch = 0;
  c.wakeup = 270;
  c.wake_latency = 1900;
  c.poll_period = 5000;
  c.poll_run = 400;
  c.poll_per_entry = 90;
  return c;
}

DriveProfile FixedDrive(Nanos service) {
  DriveProfile d;
  d.name = "fixed";
  d.read_min = d.read_mean = d.write_min = d.write_mean = service;
  d.read_iops_cap = d.write_iops_cap = 1e12;
  d.bandwidth_bytes_per_s = 1e15;
  d.parallelism = 1 << 20;
  return d;
}

RunStats RunStatic(const HostCosts& costs, const DriveProfile& drive, const Workload& load, ReapMode mode,
                   Nanos warmup, Nanos measure) {
  StaticController control(mode);
  Host host(costs, HostLayout{1, 1}, drive, load, control, 7);
  return host.Run(warmup, measure);
}

TEST(SimEventQueue, PopsInTimeOrderAndTiesInSchedulingOrder) {
  EventQueue q;
  q.Schedule(30, EventKind::kControl, 1);
  q.Schedule(10, EventKind::kControl, 2);
  q.Schedule(20, EventKind::kControl, 3);
  q.Schedule(10, EventKind::kControl, 4);
  q.Schedule(10, EventKind::kJobWake, 5);
  std::vector<uint32_t> order;
  while (!q.Empty()) order.push_back(q.Pop().a);
  EXPECT_EQ(order, (std::vector<uint32_t>{2, 4, 5, 3, 1}));
}

// QD1, fixed service time, interrupt mode: one completion per cycle of device + handler + wake-up + job,
// every one of them exact, and each CPU nanosecond accounted to the handler or to the job.
TEST(SimClosedForm, Qd1InterruptModeGivesTheCycleExactly) {
  const HostCosts c = DistinctCosts();
  const Nanos service = 20'000;
  const Nanos handler = c.irq_entry_exit + c.irq_per_entry + c.wakeup;
  const Nanos job = c.job_complete + c.submit;
  const Nanos cycle = service + handler + c.wake_latency + job;
  // Device k runs from submit + k * cycle for `service`, the CPU idle meanwhile: both ends of the measured
  // interval fall there, so it holds whole cycles only.
  const Nanos warmup = c.submit + 10 * cycle + service / 2;
  const int cycles = 1000;
  const RunStats s = RunStatic(c, FixedDrive(service), Workload{1, 1, 1, 1.0, 4096}, ReapMode::kInterrupt, warmup,
                               cycles * cycle);
  EXPECT_EQ(s.completions, static_cast<uint64_t>(cycles));
  EXPECT_DOUBLE_EQ(s.Iops(), 1e9 / static_cast<double>(cycle));
  EXPECT_DOUBLE_EQ(s.MeanLatencyUs(), cycle / 1e3);
  EXPECT_EQ(s.interrupts, static_cast<uint64_t>(cycles));
  EXPECT_EQ(s.wakeups, static_cast<uint64_t>(cycles));
  EXPECT_EQ(s.reap_cpu, cycles * handler);
  EXPECT_EQ(s.job_cpu, cycles * job);
  EXPECT_EQ(s.polled, 0u);
}

// QD1 with the submitting thread spinning on its queue (uvnvme, SPDK): no handler, no wake-up.
TEST(SimClosedForm, Qd1SpinPollGivesTheCycleExactly) {
  HostCosts c = DistinctCosts();
  c.poll_style = PollStyle::kSpin;
  const Nanos service = 20'000;
  const Nanos cycle = service + c.job_complete + c.submit + c.poll_per_entry;
  const int cycles = 500;
  const RunStats s = RunStatic(c, FixedDrive(service), Workload{1, 1, 1, 1.0, 4096}, ReapMode::kPoll,
                               c.submit + 3 * cycle + service / 2, cycles * cycle);
  EXPECT_EQ(s.completions, static_cast<uint64_t>(cycles));
  EXPECT_DOUBLE_EQ(s.Iops(), 1e9 / static_cast<double>(cycle));
  EXPECT_EQ(s.polled, static_cast<uint64_t>(cycles));
  EXPECT_EQ(s.wakeups, 0u);
}

// Interrupt work preempts the job: the job's CPU is still exactly its segments, the handler's exactly its
// passes, and together they never exceed the CPU's time.
TEST(SimAccounting, PreemptedJobWorkIsConservedAtDepth) {
  HostCosts c = DistinctCosts();
  DriveProfile drive = FixedDrive(1'000);  // the device outruns the CPU: interrupts hit running jobs
  drive.read_mean = 6'000;                 // and its spread makes completions arrive during handlers
  const RunStats s = RunStatic(c, drive, Workload{1, 1, 16, 1.0, 4096}, ReapMode::kInterrupt, 1'000'000, 20'000'000);
  ASSERT_GT(s.completions, 1000u);
  const Nanos job = c.job_complete + c.submit;
  // At most one segment at each end of the interval is partly inside it.
  EXPECT_NEAR(static_cast<double>(s.job_cpu), static_cast<double>(s.completions * job), 2.0 * job);
  EXPECT_LE(s.job_cpu + s.reap_cpu, s.measured);
  EXPECT_GT(s.job_cpu + s.reap_cpu, s.measured * 99 / 100) << "a CPU-bound load leaves the CPU idle";
  EXPECT_LT(s.interrupts, s.reaped) << "completions arriving during a handler are reaped by it";
}

TEST(SimAccounting, TheIopsCapHoldsUnderAnyDepth) {
  HostCosts c = DistinctCosts();
  c.poll_style = PollStyle::kSpin;
  DriveProfile drive = FixedDrive(20'000);
  drive.read_iops_cap = 250'000;
  const RunStats s = RunStatic(c, drive, Workload{1, 1, 64, 1.0, 4096}, ReapMode::kPoll, 2'000'000, 40'000'000);
  EXPECT_NEAR(s.Iops(), 250'000, 250'000 * 0.01);
}

Case FastDeviceCase(uint32_t qd) {
  return Case{"t", SeedHostCosts(), HostLayout{1, 1}, SeedDrive(), Workload{1, 1, qd, 1.0, 4096}};
}

TEST(SimPolicies, TheInDriverEngineSwitchesAFastQueueToPollAndKeepsIt) {
  const Case c = FastDeviceCase(128);
  const CaseResult r = RunCase(c, PolicyKind::kInDriver, PatchPolicy(), MeasuredAgentLatency(),
                               RunLength{40'000'000, 40'000'000});
  EXPECT_GT(r.stats.PollShare(), 0.95);
  EXPECT_GE(r.counts.to_poll, 1u);
  EXPECT_EQ(r.counts.behind_pace + r.counts.not_faster + r.counts.stalled, 0u);
}

TEST(SimPolicies, ASlowQueueIsNeverTried) {
  const Case c = FastDeviceCase(1);  // ~13k IOPS: each window averages far over the 10 us threshold
  for (PolicyKind kind : {PolicyKind::kInDriver, PolicyKind::kAgent}) {
    const CaseResult r = RunCase(c, kind, PatchPolicy(), MeasuredAgentLatency(), RunLength{5'000'000, 2'000'000'000});
    EXPECT_EQ(r.counts.to_poll, 0u) << PolicyName(kind);
    EXPECT_EQ(r.stats.polled, 0u) << PolicyName(kind);
  }
}

TEST(SimPolicies, TheAgentSwitchesOnlyAfterItsDecisionToEffectLatency) {
  const Case c = FastDeviceCase(128);
  const RunLength length{5'000'000, 60'000'000};
  AgentLatency never = MeasuredAgentLatency();
  never.to_poll_effect = 10'000'000'000;  // beyond the run
  const CaseResult late = RunCase(c, PolicyKind::kAgent, PatchPolicy(), never, length);
  EXPECT_GE(late.counts.to_poll, 1u) << "the engine decided";
  EXPECT_EQ(late.stats.polled, 0u) << "but the switch never took effect";
  const CaseResult measured = RunCase(c, PolicyKind::kAgent, PatchPolicy(), MeasuredAgentLatency(), length);
  EXPECT_GT(measured.stats.PollShare(), 0.5);
}

// The node layer in the model (sim/control.h, NodeModel): each window_fast goes through its gate.
CaseResult RunNode(const Case& c, const NodeModel& node, const RunLength& length) {
  EngineController control = EngineController::Node(PatchPolicy(), MeasuredAgentLatency(), node);
  Host host(c.costs, c.layout, c.drive, c.load, control, 1);
  CaseResult r;
  r.stats = host.Run(length.warmup, length.measure);
  r.counts = control.Counts();
  return r;
}

TEST(SimNode, ALayerThatNeedsNoHeadroomRunsAsTheAgent) {
  const Case c = FastDeviceCase(128);
  const RunLength length{5'000'000, 60'000'000};
  NodeModel free;
  free.settings.min_headroom = free.settings.stop_headroom = 0;
  const CaseResult node = RunNode(c, free, length);
  const CaseResult agent = RunCase(c, PolicyKind::kAgent, PatchPolicy(), MeasuredAgentLatency(), length);
  EXPECT_EQ(node.counts.node_deferred, 0u);
  EXPECT_EQ(node.counts.to_poll, agent.counts.to_poll);
  EXPECT_EQ(node.stats.completions, agent.stats.completions);
}

TEST(SimNode, ACpuWithoutTheHeadroomItNeedsDefersEveryTry) {
  const Case c = FastDeviceCase(128);
  NodeModel strict;
  strict.settings.min_headroom = 1.0;  // any other work on the reaping CPU is too much
  const CaseResult r = RunNode(c, strict, RunLength{5'000'000, 60'000'000});
  EXPECT_GE(r.counts.node_deferred, 1u);
  EXPECT_EQ(r.counts.to_poll, 0u);
  EXPECT_EQ(r.stats.polled, 0u);
  EXPECT_EQ(PolicyName(PolicyKind::kNode), "node");
}

TEST(SimPolicies, TheSameSeedGivesTheSameRun) {
  const Case c{"t", SeedHostCosts(), HostLayout{4, 4}, SweepDrives()[1], Workload{2, 2, 16, 0.7, 4096}};
  const RunLength length{2'000'000, 10'000'000};
  const CaseResult a = RunCase(c, PolicyKind::kAgent, PatchPolicy(), MeasuredAgentLatency(), length, 3);
  const CaseResult b = RunCase(c, PolicyKind::kAgent, PatchPolicy(), MeasuredAgentLatency(), length, 3);
  EXPECT_EQ(a.stats.completions, b.stats.completions);
  EXPECT_EQ(a.stats.events, b.stats.events);
  EXPECT_EQ(a.stats.reap_cpu, b.stats.reap_cpu);
}

TEST(SimParameters, EveryDescribedParameterCanBeSetByNameAndUnknownNamesAreRefused) {
  HostCosts costs = SeedHostCosts();
  HostLayout layout = SeedHostLayout();
  DriveProfile drive = SeedDrive();
  for (const NamedValue& v : DescribeCosts(costs, "")) EXPECT_TRUE(SetParameter(costs, layout, drive, v.name, v.value)) << v.name;
  for (const NamedValue& v : DescribeLayout(layout, "")) EXPECT_TRUE(SetParameter(costs, layout, drive, v.name, v.value)) << v.name;
  for (const NamedValue& v : DescribeDrive(drive)) EXPECT_TRUE(SetParameter(costs, layout, drive, v.name, v.value)) << v.name;
  EXPECT_FALSE(SetParameter(costs, layout, drive, "no_such_parameter", 1));
  EXPECT_TRUE(SetParameter(costs, layout, drive, "wake_latency_ns", 12345));
  EXPECT_EQ(costs.wake_latency, 12345);
  for (const NamedValue& v : DescribeCosts(SeedHostCosts(), "fit")) EXPECT_FALSE(v.source.empty()) << v.name;
  for (const DriveProfile& d : SweepDrives()) EXPECT_FALSE(d.source.empty()) << d.name;
  for (const NamedValue& v : DescribeAgent(MeasuredAgentLatency())) EXPECT_FALSE(v.source.empty()) << v.name;
}

// GSIM's delay rule: multiplicative growth from the first step up to delay_max while over target, decay
// by the same factor otherwise, and moderation only from delay_active (10 us) on.
TEST(SimGsim, TheDelayGrowsAndDecaysMultiplicativelyBetweenItsBounds) {
  const GsimParams p = GsimSuggested();
  std::vector<Nanos> grown{0};
  while (grown.size() < 12) grown.push_back(GsimNextDelay(p, grown.back(), true));
  EXPECT_EQ(grown[1], p.delay_step);
  EXPECT_EQ(grown[2], static_cast<Nanos>(p.delay_step * p.factor));
  EXPECT_EQ(grown.back(), p.delay_max) << "capped at delay_us";
  size_t first_moderating = 0;
  while (!GsimModerates(p, grown[first_moderating])) ++first_moderating;
  EXPECT_GE(grown[first_moderating], p.delay_active);
  EXPECT_LT(grown[first_moderating - 1], p.delay_active);
  EXPECT_EQ(GsimNextDelay(p, p.delay_max, false), static_cast<Nanos>(p.delay_max / p.factor));
  Nanos d = p.delay_max;
  for (int i = 0; i < 20; ++i) d = GsimNextDelay(p, d, false);
  EXPECT_EQ(d, 0) << "decays to nothing";
  GsimParams off = p;
  off.enabled = false;
  EXPECT_FALSE(GsimModerates(off, p.delay_max));
}

TEST(SimGsim, ACpuModeratesOverTheGlobalTargetWithItsShareOrOverItsHardirqLimit) {
  const GsimParams p = GsimSuggested();
  // 60 CPUs taking interrupts: a CPU's share of the 1 M/s target is 16.7k/s.
  EXPECT_TRUE(GsimOverTarget(p, GsimSample{2e6, 40e3, 60, 0.1}));
  EXPECT_FALSE(GsimOverTarget(p, GsimSample{2e6, 10e3, 60, 0.1})) << "its own share is low";
  EXPECT_FALSE(GsimOverTarget(p, GsimSample{0.9e6, 40e3, 60, 0.1})) << "the host is under target";
  EXPECT_TRUE(GsimOverTarget(p, GsimSample{0.1e6, 1e3, 60, 0.75})) << "hardirq time over 70 %";
}

// A deep load of many queues whose interrupts exceed the platform's ceiling: interrupt-mode IOPS fall to
// what the ceiling lets through, and GSIM, with fewer interrupts per completion, gets most of it back.
TEST(SimCeiling, TheInterruptCeilingCapsInterruptModeAndGsimRecovers) {
  const Case open{"t", SeedHostCosts(ScaleMechanism::kPerEntry), HostLayout{16, 16}, SeedDrive(), Workload{8, 2, 32, 1.0, 4096}};
  Case capped = open;
  capped.costs.irq_vector_switch = 0;
  capped.costs.irq_host_ceiling = 2e6;
  Case free = capped;
  free.costs.irq_host_ceiling = 0;
  const RunLength length{45'000'000, 10'000'000};
  const RunStats limited = RunCase(capped, PolicyKind::kInterrupt, PatchPolicy(), MeasuredAgentLatency(), length).stats;
  const RunStats unlimited = RunCase(free, PolicyKind::kInterrupt, PatchPolicy(), MeasuredAgentLatency(), length).stats;
  const RunStats gsim = RunCase(capped, PolicyKind::kGsim, PatchPolicy(), MeasuredAgentLatency(), length).stats;
  const double rate = limited.interrupts * 1e9 / limited.measured;
  EXPECT_LE(rate, 2e6 * 1.001) << "never more interrupts than the ceiling delivers";
  EXPECT_GT(rate, 2e6 * 0.95) << "a load over the ceiling uses all of it";
  EXPECT_LT(limited.Iops(), unlimited.Iops() * 0.8);
  EXPECT_GT(gsim.gsim_masks, 0u);
  EXPECT_GT(gsim.Iops(), limited.Iops() * 1.2);
  EXPECT_LT(gsim.interrupts, limited.interrupts);
}

// The try clock: switched in the quiet gap after a burst, a CPU-saturated queue's first polled completion
// comes a device round trip later and fails the pace check at k = 1 when the try's clock started at the
// switch; started at that first completion, no try fails there.
TEST(SimTryClock, StartingATryAtItsFirstCompletionRemovesTheFailuresAtTheFirstIndex) {
  const Case c{"t", SeedHostCosts(ScaleMechanism::kPerEntry), HostLayout{16, 16}, SeedDrive(), Workload{4, 8, 64, 1.0, 4096}};
  AgentLatency fast = MeasuredAgentLatency();
  fast.to_poll_effect = fast.to_interrupt_effect = fast.to_poll_blocking = fast.to_interrupt_blocking = 10'000;
  const RunLength length{5'000'000, 100'000'000};
  const CaseResult at_switch = RunCase(c, PolicyKind::kAgent, PatchPolicy(), fast, length);
  engine::Policy first = PatchPolicy();
  first.try_clock_first_completion = true;
  const CaseResult at_first = RunCase(c, PolicyKind::kAgent, first, fast, length);
  EXPECT_GT(at_switch.counts.behind_pace_first, 5u) << "the case shows the k = 1 failures";
  EXPECT_EQ(at_first.counts.behind_pace_first, 0u);
  EXPECT_GT(at_first.stats.PollShare(), at_switch.stats.PollShare());
}

TEST(SimJson, QuotesAndSeparatesMembers) {
  Json json;
  json.Open('{');
  json.Key("a\"b").Value(1.5);
  json.Key("list").Open('[');
  json.Value("x\n");
  json.Value(true);
  json.Close(']');
  json.Key("inf").Value(1.0 / 0.0);
  json.Close('}');
  EXPECT_EQ(json.Text(), "{\"a\\\"b\": 1.5, \"list\": [\"x\\u000a\", true], \"inf\": null}");
}

}  // namespace
}  // namespace nvmeadapt::sim
