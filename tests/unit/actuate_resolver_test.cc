// SPDX-License-Identifier: Apache-2.0
// Which lever serves which controller, probing what the machine offers, and which levers a config may name
// for which controllers.
#include <gtest/gtest.h>

#include "agent/actuate/resolver.h"
#include "agent/config/config_file.h"
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

// The facts of a machine that offers the controller `levers`.
LeverFacts Offering(std::initializer_list<LeverKind> levers) { return LeverFacts{std::set<LeverKind>(levers)}; }

TEST(ResolveLever, SourceDefaults) {
  const config::LeverSettings settings;
  LeverChoice uvnvme = ResolveLever(settings, Uvnvme(), {});
  EXPECT_EQ(uvnvme.kind, LeverKind::kUvnvmeSocket);
  EXPECT_FALSE(uvnvme.dry_run);
  EXPECT_EQ(uvnvme.why, "uvnvme default: control socket");

  EXPECT_EQ(ResolveLever(settings, Kernel(), {}).kind, LeverKind::kCoalescing);
  EXPECT_EQ(ResolveLever(settings, Kernel(), Offering({LeverKind::kGsim})).kind, LeverKind::kGsim);
  EXPECT_EQ(ResolveLever(settings, Kernel(), Offering({LeverKind::kAdaptivePollSysfs})).kind, LeverKind::kAdaptivePollSysfs);
  LeverChoice both = ResolveLever(settings, Kernel(), Offering({LeverKind::kAdaptivePollSysfs, LeverKind::kGsim}));
  EXPECT_EQ(both.kind, LeverKind::kAdaptivePollSysfs) << "the in-kernel mechanism comes first";
  EXPECT_EQ(both.why, "kernel default: adaptive-poll attribute present");
}

TEST(ResolveLever, ConfiguredChoicesWin) {
  config::LeverSettings settings;
  settings.kernel_lever = LeverKind::kPollQueuesReset;
  settings.controllers = {{"nvme1", LeverKind::kGsim}, {"nvme2", std::nullopt}};
  LeverChoice nvme0 = ResolveLever(settings, Kernel("nvme0"), Offering({LeverKind::kAdaptivePollSysfs, LeverKind::kGsim}));
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
  LeverChoice choice = ResolveLever(settings, Kernel(), Offering({LeverKind::kGsim}));
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
  EXPECT_FALSE(none.Offers(LeverKind::kAdaptivePollSysfs));
  EXPECT_FALSE(none.Offers(LeverKind::kGsim));
  nvmeadapt::testing::WriteFile(tmp / "sys/class/nvme/nvme0/adaptive_poll", "0\n");
  nvmeadapt::testing::WriteFile(tmp / "proc/irq/soft_moderation", "delay_us 0\n");
  LeverFacts both = ProbeLeverFacts(settings, Kernel(), environment);
  EXPECT_TRUE(both.Offers(LeverKind::kAdaptivePollSysfs));
  EXPECT_TRUE(both.Offers(LeverKind::kGsim));
  EXPECT_FALSE(ProbeLeverFacts(settings, Kernel("nvme1"), environment).Offers(LeverKind::kAdaptivePollSysfs));
  EXPECT_FALSE(ProbeLeverFacts(settings, Uvnvme(), environment).Offers(LeverKind::kGsim))
      << "kernel levers do not serve uvnvme";
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
  EXPECT_EQ(stock.why, "nvmet target queue: shadow decisions only (no lever on this kernel: its nvmet has no "
                       "polling-queue task, /sys/module/nvmet/pqt; kmod/nvmet builds ours)");
  LeverFacts ours;  // loaded, but its lever not offered (actuate_nvmet_poll_task_test.cc: when it is)
  ours.nvmet_polling_task = true;
  EXPECT_NE(ResolveLever(settings, Target(), ours).why.find("the polling-queue task is loaded, but"),
            std::string::npos);
  EXPECT_EQ(ResolveLever(settings, Target(), ours).kind, LeverKind::kDryRun);
}

TEST(ProbeLeverFacts, LooksForThePollingQueueTaskOfTheTargetByPath) {
  nvmeadapt::testing::TempDir tmp;
  const config::LeverSettings settings;
  LeverEnvironment environment{tmp / "sys", tmp / "proc", tmp / "dev", nullptr};
  EXPECT_FALSE(ProbeLeverFacts(settings, Target(), environment).nvmet_polling_task);
  nvmeadapt::testing::WriteFile(tmp / "sys/module/nvmet/pqt/state", "none\n");
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
    EXPECT_TRUE(ProbeLeverFacts(settings, Kernel(), environment).Offers(LeverKind::kGsim));
    EXPECT_EQ(ResolveLever(settings, Kernel(), ProbeLeverFacts(settings, Kernel(), environment)).kind,
              LeverKind::kGsim);
  }
}

// A lever the config names must serve the controllers it is named for (its traits say which), and only the
// lever that takes them is given connection digests. Refused with the field named, as config validation does.
Status Checked(const char* json) {
  auto config = config::ParseConfigJson(json);
  if (!config) return config.error();
  NA_ASSIGN_OR_RETURN(const config::LeverSettings settings, config::LeverSettingsFromConfig(*config));
  return CheckLeverChoices(settings);
}

TEST(LeverChoices, ALeverNamedForAControllerItCannotServeIsRefusedNamingTheField) {
  const struct {
    const char* json;
    const char* expected;
  } refused[] = {
      {R"({"levers": {"kernelLever": "LEVER_KIND_UVNVME_SOCKET"}})", "levers.kernel_lever"},
      {R"({"levers": {"uvnvmeLever": "LEVER_KIND_GSIM"}})", "levers.uvnvme_lever"},
      {R"({"levers": {"controllers": [{"controller": "uvnvme:1:0", "lever": "LEVER_KIND_COALESCING"}]}})",
       "levers.controllers[0].lever"},
      {R"({"levers": {"controllers": [{"controller": "nvme1", "lever": "LEVER_KIND_GSIM", "hdrDigest": false,
                                        "dataDigest": false}]}})",
       "levers.controllers[0].hdr_digest: digests are declared for the tcp_reconnect lever only"},
  };
  for (const auto& refusal : refused) {
    SCOPED_TRACE(refusal.json);
    const Status checked = Checked(refusal.json);
    ASSERT_FALSE(checked);
    EXPECT_EQ(checked.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(checked.error().message.find(refusal.expected), std::string::npos) << checked.error().message;
    EXPECT_EQ(checked.error().message.find('\n'), std::string::npos);
  }
}

TEST(LeverChoices, WhatEachLeverServesIsAccepted) {
  for (const char* json : {R"({"levers": {"kernelLever": "LEVER_KIND_GSIM", "uvnvmeLever": "LEVER_KIND_DRY_RUN"}})",
                           R"({"levers": {"controllers": [{"controller": "nvme1", "lever": "LEVER_KIND_TCP_RECONNECT",
                                                           "hdrDigest": true, "dataDigest": false},
                                                          {"controller": "uvnvme:1:0", "lever": "LEVER_KIND_UVNVME_SOCKET"}]}})"}) {
    SCOPED_TRACE(json);
    const Status checked = Checked(json);
    EXPECT_TRUE(checked) << checked.error().message;
  }
}

}  // namespace
}  // namespace nvmeadapt::actuate
