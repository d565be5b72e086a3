// SPDX-License-Identifier: Apache-2.0
// Hook selection with a faked kernel: which twin of each hook loads, and when BPF is given up for the
// procfs collector (with its one-line cause).
#include <gtest/gtest.h>

#include <algorithm>

#include "agent/collect/hook_plan.h"
#include "agent/collect/procfs_collector.h"
#include "tests/unit/collect_fake_probe.h"

namespace nvmeadapt::collect {
namespace {

bool Contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool AnyContains(const std::vector<std::string>& lines, std::string_view text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

CollectorOptions WithIrqs() {
  CollectorOptions options;
  options.irqs = true;
  return options;
}

TEST(HookPlan, KernelWithNvmeModuleBtfGetsTpBtfAndFentryAttribution) {
  FakeFeatureProbe probe;
  const HookPlan plan = PlanHooks(probe, WithIrqs());
  ASSERT_TRUE(plan.use_bpf);
  EXPECT_EQ(plan.block, Attach::kTpBtf);
  EXPECT_EQ(plan.irqs, Attach::kTpBtf);
  EXPECT_EQ(plan.nvme, Attach::kTpBtf);
  EXPECT_TRUE(plan.nvme_attribution);
  const std::vector<std::string> expected = {
      "na_block_rq_complete_btf", "na_nvme_sq_btf", "na_nvme_irq_entry", "na_nvme_irq_exit", "na_nvme_poll_entry",
      "na_nvme_poll_exit", "na_irq_handler_entry_btf", "na_irq_handler_exit_btf", "na_uvnvme_complete",
      "na_uvnvme_tally", "na_uvnvme_irq", "na_uvnvme_mode", "na_spdk_process_completions", "na_spdk_process_completions_ret"};
  EXPECT_EQ(plan.Programs(), expected);
  EXPECT_TRUE(Contains(plan.KernelHooks(), "tp_btf/nvme_sq"));
  EXPECT_TRUE(Contains(plan.KernelHooks(), "fexit/nvme_poll"));
  EXPECT_FALSE(Contains(plan.KernelHooks(), "usdt/uvnvme:complete")) << "USDT attaches per process";
}

// With struct nvme_queue in the nvme module's BTF the nvme queues cost one program per reap: no nvme_sq
// program per completion, no separate attribution programs (each reap knows its path).
TEST(HookPlan, NvmeQueueInModuleBtfSelectsThePerBatchPrograms) {
  FakeFeatureProbe probe;
  probe.structs.insert({"nvme:nvme_queue", "nvme:nvme_dev"});
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_TRUE(plan.nvme_per_batch);
  EXPECT_EQ(plan.nvme, Attach::kNone);
  EXPECT_FALSE(plan.nvme_attribution);
  const std::vector<std::string> kernel = {"tp_btf/block_rq_complete", "fentry/nvme_irq", "fexit/nvme_irq",
                                           "fentry/nvme_poll", "fexit/nvme_poll"};
  EXPECT_EQ(plan.KernelHooks(), kernel);
  EXPECT_TRUE(Contains(plan.Programs(), "na_nvme_poll_batch_exit"));
  EXPECT_FALSE(Contains(plan.Programs(), "na_nvme_irq_entry"));
  EXPECT_TRUE(AnyContains(plan.decisions, "per batch"));
}

// Our nvme-pci module (kmod/nvme-pci) reaps polled queues in nvme_adaptive_poll_cq, which neither nvme_irq's
// nor nvme_poll's hooks see: its programs load where the function is, per batch or per completion.
TEST(HookPlan, OurModulesPollPathGetsItsProgramsOnlyWhereItIs) {
  FakeFeatureProbe probe;
  probe.structs.insert({"nvme:nvme_queue", "nvme:nvme_dev"});
  HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_FALSE(plan.nvme_adaptive_poll);
  EXPECT_FALSE(Contains(plan.Programs(), "na_nvme_adaptive_poll_batch_exit"));
  EXPECT_TRUE(AnyContains(plan.decisions, "no nvme_adaptive_poll_cq"));

  probe.fentry.insert("nvme:nvme_adaptive_poll_cq");
  plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_TRUE(plan.nvme_adaptive_poll);
  EXPECT_TRUE(Contains(plan.Programs(), "na_nvme_adaptive_poll_batch_exit"));
  EXPECT_FALSE(Contains(plan.Programs(), "na_nvme_adaptive_poll_entry"));
  EXPECT_TRUE(Contains(plan.KernelHooks(), "fexit/nvme_adaptive_poll_cq"));

  CollectorOptions per_completion;
  per_completion.kernel_nvme_per_batch = false;
  plan = PlanHooks(probe, per_completion);
  EXPECT_TRUE(Contains(plan.Programs(), "na_nvme_adaptive_poll_entry"));
  EXPECT_TRUE(Contains(plan.Programs(), "na_nvme_adaptive_poll_exit"));
  EXPECT_FALSE(Contains(plan.Programs(), "na_nvme_adaptive_poll_batch_exit"));
}

TEST(HookPlan, PerBatchOffOrWithoutFentryFallsBackToThePerCompletionTracepoint) {
  FakeFeatureProbe probe;
  probe.structs.insert({"nvme:nvme_queue", "nvme:nvme_dev"});
  CollectorOptions options;
  options.kernel_nvme_per_batch = false;
  HookPlan plan = PlanHooks(probe, options);
  EXPECT_FALSE(plan.nvme_per_batch);
  EXPECT_EQ(plan.nvme, Attach::kTpBtf);
  EXPECT_TRUE(plan.nvme_attribution);
  EXPECT_TRUE(AnyContains(plan.decisions, "per completion, as asked"));

  probe.fentry.erase("nvme:nvme_irq");
  plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_FALSE(plan.nvme_per_batch);
  EXPECT_EQ(plan.nvme, Attach::kNone);
  for (const std::string& program : plan.Programs()) EXPECT_FALSE(program.starts_with("na_nvme_")) << program;
}

TEST(HookPlan, TpBtfRefusedForNvmeSqFallsBackToRawTp) {
  FakeFeatureProbe probe;
  probe.tp_btf.erase("nvme_core:nvme_sq");
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_EQ(plan.nvme, Attach::kRawTp);
  EXPECT_TRUE(plan.nvme_attribution);
  EXPECT_TRUE(Contains(plan.Programs(), "na_nvme_sq_raw"));
  EXPECT_FALSE(Contains(plan.Programs(), "na_nvme_sq_btf"));
}

// Without nvme_core's BTF neither tp_btf nor a raw tracepoint can decode the request (struct
// nvme_request is a module type), so the classic tracepoint twin is used: its entry carries ctrl_id and qid.
TEST(HookPlan, NvmeCoreModuleBtfAbsentSelectsTheClassicTracepointWithItsLayout) {
  FakeFeatureProbe probe;
  probe.DropModuleBtf("nvme_core");
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_EQ(plan.nvme, Attach::kTracepoint);
  EXPECT_EQ(plan.nvme_sq_layout.offsets.at("ctrl_id"), 8u);
  EXPECT_EQ(plan.nvme_sq_layout.offsets.at("qid"), 44u);
  EXPECT_TRUE(Contains(plan.Programs(), "na_nvme_sq_tp"));
  EXPECT_TRUE(Contains(plan.KernelHooks(), "tracepoint/nvme/nvme_sq"));
  EXPECT_EQ(plan.block, Attach::kTpBtf) << "vmlinux hooks keep tp_btf";
}

TEST(HookPlan, NoModuleBtfAtAllLeavesNvmeToTheBlockLayer) {
  FakeFeatureProbe probe;
  probe.DropModuleBtf("nvme_core");
  probe.DropModuleBtf("nvme");
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_EQ(plan.nvme, Attach::kNone);
  EXPECT_EQ(plan.block, Attach::kTpBtf);
  EXPECT_TRUE(AnyContains(plan.decisions, "observed through the block layer"));
}

TEST(HookPlan, FentryNotAttachableSelectsTheBlockLayerPath) {
  FakeFeatureProbe probe;
  probe.fentry.clear();  // e.g. this host: the kernel refuses fentry, takes tp_btf
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  ASSERT_TRUE(plan.use_bpf);
  EXPECT_EQ(plan.nvme, Attach::kNone);
  EXPECT_FALSE(plan.nvme_attribution);
  EXPECT_EQ(plan.block, Attach::kTpBtf);
  for (const std::string& program : plan.Programs()) EXPECT_FALSE(program.starts_with("na_nvme_")) << program;
  EXPECT_TRUE(AnyContains(plan.decisions, "fentry on nvme_irq/nvme_poll not attachable"));
  EXPECT_TRUE(AnyContains(plan.decisions, "under their controllers' queues"));
}

TEST(HookPlan, TpBtfRefusedEverywhereSelectsRawTpTwins) {
  FakeFeatureProbe probe;
  probe.tp_btf.clear();
  probe.fentry.clear();
  const HookPlan plan = PlanHooks(probe, WithIrqs());
  EXPECT_EQ(plan.block, Attach::kRawTp);
  EXPECT_EQ(plan.irqs, Attach::kRawTp);
  EXPECT_TRUE(Contains(plan.KernelHooks(), "raw_tp/block_rq_complete"));
  EXPECT_TRUE(Contains(plan.KernelHooks(), "raw_tp/irq_handler_exit"));
}

TEST(HookPlan, NoNvmeDriverMeansNoNvmeHooks) {
  FakeFeatureProbe probe;
  probe.DropModuleBtf("nvme_core");
  probe.DropModuleBtf("nvme");
  probe.nvme_sq.reset();
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_EQ(plan.nvme, Attach::kNone);
  EXPECT_TRUE(AnyContains(plan.decisions, "no nvme driver"));
}

// They fire on every interrupt of the machine and nothing the daemon decides or exports reads them.
TEST(HookPlan, IrqHandlerProgramsOnlyWhenAskedFor) {
  FakeFeatureProbe probe;
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  ASSERT_TRUE(plan.use_bpf);
  EXPECT_EQ(plan.irqs, Attach::kNone);
  EXPECT_FALSE(Contains(plan.Programs(), "na_irq_handler_entry_btf"));
  EXPECT_FALSE(Contains(plan.KernelHooks(), "tp_btf/irq_handler_entry"));
  EXPECT_TRUE(Contains(plan.KernelHooks(), "tp_btf/block_rq_complete"));
}

TEST(HookPlan, OptionsTurnSourcesOff) {
  FakeFeatureProbe probe;
  CollectorOptions options;
  options.block = false;
  options.irqs = false;
  options.kernel_nvme = false;
  const HookPlan plan = PlanHooks(probe, options);
  ASSERT_TRUE(plan.use_bpf);
  EXPECT_TRUE(plan.KernelHooks().empty());
  EXPECT_TRUE(Contains(plan.Programs(), "na_uvnvme_complete"));
}

TEST(HookPlan, NoPermissionGivesUpBpfWithTheCause) {
  FakeFeatureProbe probe;
  probe.usable = MakeError(ErrorCode::kPermissionDenied, "BPF not permitted: loading a tracing program failed");
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_FALSE(plan.use_bpf);
  EXPECT_EQ(plan.fallback_cause, "BPF not permitted: loading a tracing program failed");
  EXPECT_TRUE(plan.Programs().empty());
}

// The factory: one log line naming the cause, then the procfs collector in observe-only mode.
void ExpectProcfsFallback(Status usable, std::string_view cause) {
  auto probe = std::make_shared<FakeFeatureProbe>();
  probe->usable = std::move(usable);
  CollectorOptions options;
  options.root = ::testing::TempDir();
  ::testing::internal::CaptureStderr();
  auto collector = OpenCollector(options, probe);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(collector.ok()) << collector.error().message;
  EXPECT_EQ((*collector)->Name(), "procfs");
  EXPECT_TRUE((*collector)->ObserveOnly());
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_NE(log.find(cause), std::string::npos) << log;
  EXPECT_NE(log.find("procfs"), std::string::npos) << log;
  EXPECT_TRUE((*collector)->SetQueueControl(QueueKey{}, QueueControl{}).error().code == ErrorCode::kUnsupported);
}

TEST(OpenCollector, NoBpfPermissionSelectsProcfsWithOneLineCause) {
  ExpectProcfsFallback(MakeError(ErrorCode::kPermissionDenied, "BPF not permitted: EPERM"), "BPF not permitted: EPERM");
}

TEST(OpenCollector, NoKernelBtfSelectsProcfsWithOneLineCause) {
  ExpectProcfsFallback(MakeError(ErrorCode::kUnsupported, "no kernel BTF: /sys/kernel/btf/vmlinux is missing"),
                       "no kernel BTF");
}

TEST(OpenCollector, ForcedProcfsSaysSo) {
  auto probe = std::make_shared<FakeFeatureProbe>();
  CollectorOptions options;
  options.force_procfs = true;
  ::testing::internal::CaptureStderr();
  auto collector = OpenCollector(options, probe);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(collector.ok());
  EXPECT_EQ((*collector)->Name(), "procfs");
  EXPECT_NE(log.find("force_procfs"), std::string::npos) << log;
}

// NVMe over Fabrics: the host program beside the PCIe ones (never without them: the block program would
// count those requests too), the target program where nvmet is loaded with its BTF.
FakeFeatureProbe FabricsKernel() {
  FakeFeatureProbe probe;
  probe.structs.insert({"nvme_core:nvme_ctrl_ops", "nvmet:nvmet_req"});
  probe.module_btf.insert({"nvmet", "nvme_fabrics"});
  probe.tp_btf.insert({"nvme_core:nvme_complete_rq", "nvmet:nvmet_req_complete"});
  return probe;
}

TEST(HookPlan, FabricsHostAndTargetProgramsWhereTheirBtfIs) {
  FakeFeatureProbe probe = FabricsKernel();
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_TRUE(plan.fabrics_host);
  EXPECT_TRUE(plan.fabrics_target);
  EXPECT_TRUE(Contains(plan.KernelHooks(), "tp_btf/nvme_complete_rq"));
  EXPECT_TRUE(Contains(plan.KernelHooks(), "tp_btf/nvmet_req_complete"));
  EXPECT_TRUE(Contains(plan.Programs(), "na_fabrics_host_complete_btf"));
  EXPECT_TRUE(AnyContains(plan.decisions, "fabrics target: tp_btf/nvmet_req_complete"));
}

TEST(HookPlan, NoNvmetLoadedMeansNoTargetProgramAndSaysWhy) {
  FakeFeatureProbe probe = FabricsKernel();
  probe.DropModuleBtf("nvmet");
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_TRUE(plan.fabrics_host);
  EXPECT_FALSE(plan.fabrics_target);
  EXPECT_FALSE(Contains(plan.Programs(), "na_fabrics_target_complete_btf"));
  EXPECT_TRUE(AnyContains(plan.decisions, "nvmet not loaded or without BTF"));
}

TEST(HookPlan, WithoutNvmeProgramsTheBlockLayerCountsFabricsHostsOnce) {
  FakeFeatureProbe probe = FabricsKernel();
  probe.fentry.clear();  // no fentry on nvme_irq/nvme_poll: no kernel nvme programs
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_FALSE(plan.fabrics_host);
  EXPECT_FALSE(Contains(plan.KernelHooks(), "tp_btf/nvme_complete_rq"));
  EXPECT_TRUE(AnyContains(plan.decisions, "fabrics host: through the block layer"));
}

// A PCIe-only machine pays nothing for the host program (it would run at every completion to return early).
TEST(HookPlan, NoNvmeFabricsLoadedMeansNoHostProgram) {
  FakeFeatureProbe probe = FabricsKernel();
  probe.module_btf.erase("nvme_fabrics");
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_FALSE(plan.fabrics_host);
  EXPECT_TRUE(AnyContains(plan.decisions, "nvme_fabrics not loaded"));
}

TEST(HookPlan, NoNvmeCoreCtrlOpsTypeMeansNoHostProgram) {
  FakeFeatureProbe probe = FabricsKernel();
  probe.structs.erase("nvme_core:nvme_ctrl_ops");
  const HookPlan plan = PlanHooks(probe, CollectorOptions{});
  EXPECT_FALSE(plan.fabrics_host);
  EXPECT_TRUE(plan.fabrics_target);
}

TEST(HookOfProgram, NamesEveryProgramByItsHook) {
  EXPECT_EQ(HookOfProgram("na_fabrics_target_complete_btf"), "tp_btf/nvmet_req_complete");
  EXPECT_EQ(HookOfProgram("na_block_rq_complete_btf"), "tp_btf/block_rq_complete");
  EXPECT_EQ(HookOfProgram("na_nvme_sq_tp"), "tracepoint/nvme/nvme_sq");
  EXPECT_EQ(HookOfProgram("na_spdk_process_completions_ret"), "uretprobe/spdk_nvme_qpair_process_completions");
  EXPECT_EQ(HookOfProgram("unknown_program"), "unknown_program");
}

}  // namespace
}  // namespace nvmeadapt::collect
