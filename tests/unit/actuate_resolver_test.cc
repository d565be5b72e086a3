// Which lever serves which controller, probing what the machine offers, building levers, restore points as JSON.
#include <gtest/gtest.h>

#include <algorithm>

#include "agent/actuate/resolver.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

discover::Controller Kernel(const std::string& name = "nvme0") {
  discover::Controller c;
  c.name = name;
  c.source = Source::kKernelNvme;
  return c;
}

discover::Controller Uvnvme() {
  discover::Controller c;
  c.name = "uvnvme:4242:0";
  c.source = Source::kUvnvme;
  c.pid = 4242;
  c.socket_path = "/run/uvnvme/4242.sock";
  return c;
}

TEST(ResolveLever, SourceDefaults) {
  const config::LeverSettings settings;
  LeverChoice uvnvme = ResolveLever(settings, Uvnvme(), {});
  EXPECT_EQ(uvnvme.kind, LeverKind::kUvnvmeSocket);
  EXPECT_FALSE(uvnvme.dry_run);
  EXPECT_EQ(uvnvme.why, "uvnvme default: control socket");

  EXPECT_EQ(ResolveLever(settings, Kernel(), {}).kind, LeverKind::kCoalescing);
  EXPECT_EQ(ResolveLever(settings, Kernel(), {false, true}).kind, LeverKind::kGsim);
  EXPECT_EQ(ResolveLever(settings, Kernel(), {true, false}).kind, LeverKind::kAdaptivePollSysfs);
  LeverChoice both = ResolveLever(settings, Kernel(), {true, true});
  EXPECT_EQ(both.kind, LeverKind::kAdaptivePollSysfs) << "the in-kernel mechanism comes first";
  EXPECT_EQ(both.why, "kernel default: adaptive-poll attribute present");
}

TEST(ResolveLever, ConfiguredChoicesWin) {
  config::LeverSettings settings;
  settings.kernel_lever = LeverKind::kPollQueuesReset;
  settings.controllers = {{"nvme1", LeverKind::kGsim}, {"nvme2", LeverKind::kAuto}};
  LeverChoice nvme0 = ResolveLever(settings, Kernel("nvme0"), {true, true});
  EXPECT_EQ(nvme0.kind, LeverKind::kPollQueuesReset);
  EXPECT_EQ(nvme0.why, "levers.kernel_lever");
  LeverChoice nvme1 = ResolveLever(settings, Kernel("nvme1"), {});
  EXPECT_EQ(nvme1.kind, LeverKind::kGsim) << "an explicit choice stands even where GSIM is missing";
  EXPECT_EQ(nvme1.why, "levers.controllers[0]");
  EXPECT_EQ(ResolveLever(settings, Kernel("nvme2"), {}).kind, LeverKind::kPollQueuesReset)
      << "an AUTO override falls through to the source default";
}

TEST(ResolveLever, DryRun) {
  config::LeverSettings settings;
  settings.dry_run = true;
  LeverChoice choice = ResolveLever(settings, Kernel(), {false, true});
  EXPECT_EQ(choice.kind, LeverKind::kGsim);
  EXPECT_TRUE(choice.dry_run);
  EXPECT_EQ(choice.why, "kernel default: GSIM present (levers.dry_run)");

  settings.dry_run = false;
  settings.uvnvme_lever = LeverKind::kDryRun;
  LeverChoice explicit_dry = ResolveLever(settings, Uvnvme(), {});
  EXPECT_EQ(explicit_dry.kind, LeverKind::kDryRun);
  EXPECT_TRUE(explicit_dry.dry_run);
  EXPECT_FALSE(explicit_dry.shadow_only) << "a dry-run lever asked for records the switches it pretends";

  discover::Controller spdk = Uvnvme();
  spdk.source = Source::kSpdk;
  EXPECT_EQ(ResolveLever(config::LeverSettings{}, spdk, {}).kind, LeverKind::kDryRun);
  EXPECT_TRUE(ResolveLever(config::LeverSettings{}, spdk, {}).shadow_only) << "no lever serves SPDK";
  EXPECT_FALSE(ResolveLever(settings, Kernel(), {}).shadow_only);
}

TEST(ProbeLeverFacts, LooksForTheAttributeAndGsim) {
  nvmeadapt::testing::TempDir tmp;
  const config::LeverSettings settings;
  LeverEnvironment environment{tmp / "sys", tmp / "proc", tmp / "dev", nullptr};
  LeverFacts none = ProbeLeverFacts(settings, Kernel(), environment);
  EXPECT_FALSE(none.adaptive_poll_attribute);
  EXPECT_FALSE(none.gsim);
  nvmeadapt::testing::WriteFile(tmp / "sys/class/nvme/nvme0/adaptive_poll", "0\n");
  nvmeadapt::testing::WriteFile(tmp / "proc/irq/soft_moderation", "delay_us 0\n");
  LeverFacts both = ProbeLeverFacts(settings, Kernel(), environment);
  EXPECT_TRUE(both.adaptive_poll_attribute);
  EXPECT_TRUE(both.gsim);
  EXPECT_FALSE(ProbeLeverFacts(settings, Kernel("nvme1"), environment).adaptive_poll_attribute);
  EXPECT_FALSE(ProbeLeverFacts(settings, Uvnvme(), environment).gsim) << "kernel levers do not serve uvnvme";
}

discover::Controller Target() {
  discover::Controller c;
  c.name = "nvmet:c1";
  c.source = Source::kNvmet;
  return c;
}

TEST(ResolveLever, ATargetQueueGetsShadowDecisionsSayingWhy) {
  config::LeverSettings settings;
  settings.kernel_lever = LeverKind::kCoalescing;  // serves the PCIe controllers, never a target's queues
  LeverChoice stock = ResolveLever(settings, Target(), {});
  EXPECT_EQ(stock.kind, LeverKind::kDryRun);
  EXPECT_TRUE(stock.dry_run);
  EXPECT_TRUE(stock.shadow_only);
  EXPECT_EQ(stock.why, "nvmet target queue: shadow decisions only (no lever on this kernel: it has no "
                       "polling-queue task, /sys/module/nvmet/parameters/pqt_*)");
  LeverFacts series;
  series.nvmet_polling_task = true;
  EXPECT_NE(ResolveLever(settings, Target(), series).why.find("this kernel has the polling-queue task"),
            std::string::npos);
  EXPECT_EQ(ResolveLever(settings, Target(), series).kind, LeverKind::kDryRun);
}

TEST(ProbeLeverFacts, LooksForThePollingQueueTaskOfTheTargetByPath) {
  nvmeadapt::testing::TempDir tmp;
  const config::LeverSettings settings;
  LeverEnvironment environment{tmp / "sys", tmp / "proc", tmp / "dev", nullptr};
  EXPECT_FALSE(ProbeLeverFacts(settings, Target(), environment).nvmet_polling_task);
  nvmeadapt::testing::WriteFile(tmp / "sys/module/nvmet/parameters/pqt_idle_usecs", "1000\n");
  EXPECT_TRUE(ProbeLeverFacts(settings, Target(), environment).nvmet_polling_task);
  EXPECT_FALSE(ProbeLeverFacts(settings, Kernel(), environment).nvmet_polling_task);
}

TEST(ProbeLeverFacts, FindsGsimInEveryLayout) {
  const config::LeverSettings settings;
  for (const char* tree : {"gsim-v3", "gsim-v4", "gsim-sw"}) {
    SCOPED_TRACE(tree);
    nvmeadapt::testing::TempDir tmp;
    nvmeadapt::testing::CopyTree(nvmeadapt::testing::SysfsCase(tree), tmp.path());
    LeverEnvironment environment{tmp / "sys", tmp / "proc", tmp / "dev", nullptr};
    EXPECT_TRUE(ProbeLeverFacts(settings, Kernel(), environment).gsim);
    EXPECT_EQ(ResolveLever(settings, Kernel(), ProbeLeverFacts(settings, Kernel(), environment)).kind,
              LeverKind::kGsim);
  }
}

// Every lever of the vocabulary registered itself once (the library is linked whole), and builds its kind.
TEST(LeverRegistry, EveryLeverKindButAutoIsRegisteredAndBuildsItsKind) {
  const config::LeverSettings settings;
  const LeverEnvironment environment;
  std::vector<LeverKind> expected;
  for (const auto& row : kLeverKinds) {
    if (row.value != LeverKind::kAuto) expected.push_back(row.value);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(RegisteredLevers(), expected);
  EXPECT_EQ(FindLever(LeverKind::kAuto), nullptr);
  for (LeverKind kind : expected) {
    SCOPED_TRACE(LeverKindName(kind));
    ASSERT_NE(FindLever(kind), nullptr);
    EXPECT_EQ(FindLever(kind)->traits.kind, kind);
    for (bool dry_run : {false, true}) {
      auto lever = MakeLever(kind, dry_run, settings, environment);
      ASSERT_NE(lever, nullptr);
      EXPECT_EQ(lever->Kind(), kind);
      EXPECT_EQ(lever->DryRun(), dry_run || kind == LeverKind::kDryRun);
    }
  }
  EXPECT_EQ(MakeLever(LeverKind::kAuto, false, settings, environment)->Kind(), LeverKind::kDryRun);
}

// What each lever states of itself: what a switch disturbs, what adaptive means for it, whether it is spaced.
TEST(LeverRegistry, EachLeverStatesItsRiskItsAdaptiveModeAndWhetherItDisrupts) {
  struct Expected {
    LeverKind kind;
    LeverRisk risk;
    engine::ControllerMode adaptive_as;
    bool disruptive;
  };
  using M = engine::ControllerMode;
  for (const Expected& e : {Expected{LeverKind::kAdaptivePollSysfs, LeverRisk::kDriverSpecific, M::kPoll, false},
                            Expected{LeverKind::kGsim, LeverRisk::kDriverSpecific, M::kAdaptive, false},
                            Expected{LeverKind::kCoalescing, LeverRisk::kNothingElse, M::kAdaptive, false},
                            Expected{LeverKind::kPollQueuesReset, LeverRisk::kResetsController, M::kOff, true},
                            Expected{LeverKind::kUvnvmeSocket, LeverRisk::kNothingElse, M::kAdaptive, false},
                            Expected{LeverKind::kDryRun, LeverRisk::kNothingElse, M::kAdaptive, false},
                            Expected{LeverKind::kTcpReconnect, LeverRisk::kReconnectsHost, M::kOff, true}}) {
    SCOPED_TRACE(LeverKindName(e.kind));
    const LeverTraits& traits = FindLever(e.kind)->traits;
    EXPECT_EQ(traits.risk, e.risk);
    EXPECT_EQ(traits.adaptive_as, e.adaptive_as);
    EXPECT_EQ(traits.disruptive, e.disruptive);
    EXPECT_EQ(LeverRiskOf(LeverKindName(e.kind)), e.risk);
  }
  EXPECT_EQ(LeverRiskOf("no_such_lever"), LeverRisk::kDriverSpecific);
}

TEST(DryRunLever, RecordsTheModeAndTouchesNothing) {
  DryRunLever lever;
  LeverTarget target;
  target.controller = "nvme0";
  target.qid = 2;
  auto applied = lever.Apply(target, ReapMode::kPoll);
  ASSERT_TRUE(applied);
  EXPECT_EQ(applied->writes, (std::vector<WriteRecord>{{"nvme0 q2", "poll", false}}));
  EXPECT_TRUE(applied->restore.steps.empty());
  EXPECT_EQ(lever.Recorded(), applied->writes);
}

TEST(RestorePointJson, RoundTrip) {
  RestorePoint point;
  point.lever = LeverKind::kCoalescing;
  point.target.controller = "nvme0";
  point.target.qid = 1;
  point.target.irq = 29;
  point.target.vector = 1;
  point.steps = {{"/dev/nvme0 feature 08h", "0x00000000"}, {"/dev/nvme0 feature 09h vector 1", "0x00000001"}};
  const std::string json = point.ToJson();
  EXPECT_EQ(json.find('\n'), std::string::npos);
  auto back = RestorePoint::FromJson(json);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, point);

  RestorePoint socket;
  socket.lever = LeverKind::kUvnvmeSocket;
  socket.target.controller = "uvnvme:4242:1";
  socket.target.qid = 3;
  socket.target.socket_path = "/run/uvnvme/4242.sock";
  socket.target.ctrl_index = 1;
  socket.steps = {{"uvnvme:4242:1 q3 mode", "interrupt"}};
  auto socket_back = RestorePoint::FromJson(socket.ToJson());
  ASSERT_TRUE(socket_back);
  EXPECT_EQ(*socket_back, socket);
}

TEST(RestorePointJson, BadInputIsRefused) {
  for (const char* bad : {"", "[]", R"({"lever": "magic", "target": {"controller": "nvme0"}, "steps": []})",
                          R"({"lever": "auto", "target": {"controller": "nvme0"}, "steps": []})",
                          R"({"lever": "gsim", "steps": []})",
                          R"({"lever": "gsim", "target": {"controller": "nvme0", "irq": -1}, "steps": []})",
                          R"({"lever": "gsim", "target": {"controller": "nvme0"}, "steps": [{"object": 1}]})"}) {
    auto point = RestorePoint::FromJson(bad);
    EXPECT_FALSE(point) << bad;
    if (!point) {
      EXPECT_EQ(point.error().code, ErrorCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace nvmeadapt::actuate
