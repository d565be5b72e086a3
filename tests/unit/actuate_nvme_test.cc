// SPDX-License-Identifier: Apache-2.0
// NVMe admin commands through libnvme: the 72-byte command layout, the ioctl number, the Get/Set Features
// commands libnvme sends for the lever's calls (captured at the ioctl by the fake device) against the NVMe base
// specification's field definitions, status decoding, and the coalescing lever over a fake device.
#include <gtest/gtest.h>

#include <sys/ioctl.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <map>

#include "agent/actuate/coalescing_lever.h"
#include "agent/actuate/nvme_admin.h"
#include "tests/unit/fake_admin_device.h"
#include "tests/unit/lever_printers.h"
#include "tests/unit/test_fs.h"

namespace nvmeadapt::actuate {
namespace {

using nvmeadapt::testing::FakeController;
using nvmeadapt::testing::FakeOpener;

TEST(NvmePassthru, StructLayoutIsTheKernelAbi) {
  EXPECT_EQ(sizeof(nvme_passthru_cmd), 72u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, opcode), 0u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, flags), 1u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, rsvd1), 2u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, nsid), 4u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, cdw2), 8u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, cdw3), 12u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, metadata), 16u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, addr), 24u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, metadata_len), 32u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, data_len), 36u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, cdw10), 40u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, cdw11), 44u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, cdw12), 48u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, cdw13), 52u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, cdw14), 56u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, cdw15), 60u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, timeout_ms), 64u);
  EXPECT_EQ(offsetof(nvme_passthru_cmd, result), 68u);
}

TEST(NvmePassthru, AdminIoctlNumber) {
  // _IOWR('N', 0x41, struct nvme_passthru_cmd): read|write, size 72, type 'N', number 0x41.
  EXPECT_EQ(static_cast<unsigned long>(NVME_IOCTL_ADMIN_CMD), 0xC0484E41ul);
  EXPECT_EQ(_IOC_DIR(NVME_IOCTL_ADMIN_CMD), static_cast<unsigned>(_IOC_READ | _IOC_WRITE));
  EXPECT_EQ(_IOC_TYPE(NVME_IOCTL_ADMIN_CMD), static_cast<unsigned>('N'));
  EXPECT_EQ(_IOC_NR(NVME_IOCTL_ADMIN_CMD), 0x41u);
  EXPECT_EQ(_IOC_SIZE(NVME_IOCTL_ADMIN_CMD), 72u);
}

// Every field of the 72 bytes, as little-endian bytes at their offsets.
std::array<uint8_t, 72> Bytes(const nvme_passthru_cmd& cmd) {
  std::array<uint8_t, 72> bytes{};
  std::memcpy(bytes.data(), &cmd, sizeof cmd);
  return bytes;
}
uint32_t Dword(const std::array<uint8_t, 72>& b, size_t offset) {
  return uint32_t{b[offset]} | uint32_t{b[offset + 1]} << 8 | uint32_t{b[offset + 2]} << 16 |
         uint32_t{b[offset + 3]} << 24;
}
void ExpectOnly(const std::array<uint8_t, 72>& b, uint8_t opcode, uint32_t cdw10, uint32_t cdw11, uint32_t timeout) {
  EXPECT_EQ(b[0], opcode) << "opcode";
  EXPECT_EQ(b[1], 0) << "flags";
  EXPECT_EQ(Dword(b, 0) >> 16, 0u) << "rsvd1";
  EXPECT_EQ(Dword(b, 4), 0u) << "nsid: features 08h/09h are controller wide";
  EXPECT_EQ(Dword(b, 8), 0u) << "cdw2";
  EXPECT_EQ(Dword(b, 12), 0u) << "cdw3";
  for (size_t offset : {16u, 20u, 24u, 28u}) EXPECT_EQ(Dword(b, offset), 0u) << "metadata/addr at " << offset;
  EXPECT_EQ(Dword(b, 32), 0u) << "metadata_len";
  EXPECT_EQ(Dword(b, 36), 0u) << "data_len: no data buffer";
  EXPECT_EQ(Dword(b, 40), cdw10) << "cdw10";
  EXPECT_EQ(Dword(b, 44), cdw11) << "cdw11";
  for (size_t offset : {48u, 52u, 56u, 60u}) EXPECT_EQ(Dword(b, offset), 0u) << "cdw12..15 at " << offset;
  EXPECT_EQ(Dword(b, 64), timeout) << "timeout_ms";
  EXPECT_EQ(Dword(b, 68), 0u) << "result";
}

// The command libnvme sent for `call`, as the fake controller received it at the ioctl.
std::array<uint8_t, 72> Sent(const std::function<int(const AdminDevice&)>& call) {
  auto controller = std::make_shared<FakeController>();
  FakeOpener opener(controller);
  auto device = opener.Open("/dev/nvme0");
  EXPECT_TRUE(device);
  if (!device) return {};
  EXPECT_EQ(call(**device), 0);
  EXPECT_EQ(controller->commands.size(), 1u) << "one command per call";
  return controller->commands.empty() ? std::array<uint8_t, 72>{} : Bytes(controller->commands.front());
}

TEST(NvmeFeatures, GetFeaturesEncoding) {
  // CDW10: FID bits 7:0, SEL bits 10:8 (0: current); 09h names the vector in CDW11.
  uint32_t result = 0;
  ExpectOnly(Sent([&](const AdminDevice& d) { return GetInterruptCoalescing(d, 5000, &result); }), 0x0a, 0x08, 0, 5000);
  ExpectOnly(Sent([&](const AdminDevice& d) { return GetInterruptVectorConfig(d, 3, 1, &result); }), 0x0a, 0x09,
             0x0003, 1);
}

TEST(NvmeFeatures, SetFeaturesEncoding) {
  // CDW10: FID bits 7:0, SV bit 31 never set (nothing the agent sets outlives a power cycle).
  ExpectOnly(Sent([](const AdminDevice& d) { return SetInterruptCoalescing(d, 0x0107, 5000); }), 0x09, 0x08, 0x0107,
             5000);
  ExpectOnly(Sent([](const AdminDevice& d) { return SetInterruptVectorConfig(d, 0x10002, 7); }), 0x09, 0x09, 0x10002, 7);
  // Bits beyond the feature's fields are not sent.
  ExpectOnly(Sent([](const AdminDevice& d) { return SetInterruptCoalescing(d, 0xabc0107, 1); }), 0x09, 0x08, 0x0107, 1);
}

TEST(NvmeFeatures, TheCompletionsDword0IsTheResultAndStatusesAndErrnosComeBack) {
  auto controller = std::make_shared<FakeController>();
  controller->coalescing = 0x0a01;
  FakeOpener opener(controller);
  auto device = opener.Open("/dev/nvme0");
  ASSERT_TRUE(device);
  uint32_t result = 0;
  EXPECT_EQ(GetInterruptCoalescing(**device, 1, &result), 0);
  EXPECT_EQ(result, 0x0a01u);
  controller->fail[{kOpcodeSetFeatures, kFidInterruptCoalescing}] = 0x410e;
  EXPECT_EQ(SetInterruptCoalescing(**device, 0x0107, 1), 0x410e) << "QEMU's Feature Not Changeable";
  controller->fail[{kOpcodeGetFeatures, kFidInterruptVectorConfig}] = -EACCES;
  EXPECT_EQ(GetInterruptVectorConfig(**device, 1, 1, &result), -EACCES) << "libnvme's -1 and errno as -errno";
}

TEST(NvmeFeatures, InterruptCoalescingDword11) {
  // THR bits 7:0 (0's based: 8 completions -> 7), TIME bits 15:8 in 100 us.
  EXPECT_EQ(CoalescingCdw11(8, 1), 0x0107u);
  EXPECT_EQ(CoalescingCdw11(1, 0), 0x0000u);
  EXPECT_EQ(CoalescingCdw11(256, 255), 0xffffu);
  EXPECT_EQ(CoalescingCdw11(2, 10), 0x0a01u);
}

TEST(NvmeFeatures, InterruptVectorConfigurationDword11) {
  // IV bits 15:0, CD bit 16.
  EXPECT_EQ(VectorConfigCdw11(1, false), 0x00001u);
  EXPECT_EQ(VectorConfigCdw11(1, true), 0x10001u);
  EXPECT_EQ(VectorConfigCdw11(0xffff, true), 0x1ffffu);
}

TEST(NvmeStatusDecode, FeatureNotChangeableAsQemuAnswers) {
  const NvmeStatus s = NvmeStatus::Decode(0x410e);
  EXPECT_EQ(s.sc, 0x0e);
  EXPECT_EQ(s.sct, 1);
  EXPECT_EQ(s.crd, 0);
  EXPECT_FALSE(s.more);
  EXPECT_TRUE(s.dnr);
  EXPECT_EQ(s.Code(), ErrorCode::kRefused);
  EXPECT_EQ(s.ToString(), "Feature Not Changeable (SCT 1h, SC 0Eh, DNR) [0x410e]") << "libnvme's name, our fields";
}

TEST(NvmeStatusDecode, OtherStatuses) {
  struct Case {
    uint16_t raw;
    uint8_t sct, sc;
    bool more, dnr;
    uint8_t crd;
    ErrorCode code;
    const char* text;
  };
  for (const Case& c : {
           Case{0x4002, 0, 0x02, false, true, 0, ErrorCode::kUnsupported, "Invalid Field in Command (SCT 0h, SC 02h, DNR)"},
           Case{0x0001, 0, 0x01, false, false, 0, ErrorCode::kUnsupported, "Invalid Command Opcode"},
           Case{0x2006, 0, 0x06, true, false, 0, ErrorCode::kIo, "Internal Error (SCT 0h, SC 06h, More)"},
           Case{0x410d, 1, 0x0d, false, true, 0, ErrorCode::kRefused, "Feature Identifier Not Saveable"},
           Case{0x0371, 3, 0x71, false, false, 0, ErrorCode::kUnavailable, "Command Aborted By Host (SCT 3h, SC 71h)"},
           Case{0x0281, 2, 0x81, false, false, 0, ErrorCode::kIo, "Unrecovered Read Error (SCT 2h, SC 81h)"},
           Case{0x0807, 0, 0x07, false, false, 1, ErrorCode::kUnavailable, "Command Abort Requested"},
           Case{0x47c0, 7, 0xc0, false, true, 0, ErrorCode::kRefused, "Vendor Specific Status (SCT 7h, SC C0h, DNR)"},
       }) {
    const NvmeStatus s = NvmeStatus::Decode(c.raw);
    SCOPED_TRACE(s.ToString());
    EXPECT_EQ(s.sct, c.sct);
    EXPECT_EQ(s.sc, c.sc);
    EXPECT_EQ(s.more, c.more);
    EXPECT_EQ(s.dnr, c.dnr);
    EXPECT_EQ(s.crd, c.crd);
    EXPECT_EQ(s.Code(), c.code);
    EXPECT_NE(s.ToString().find(c.text), std::string::npos);
  }
}

LeverTarget Queue1() {
  LeverTarget target;
  target.controller = "nvme0";
  target.qid = 1;
  target.irq = 29;
  target.vector = 1;
  return target;
}

class Coalescing : public ::testing::Test {
 protected:
  CoalescingLever Make(bool dry_run = false) {
    return CoalescingLever({"/dev", 8, 100, 5000, dry_run, opener_});
  }
  std::shared_ptr<FakeController> controller_ = std::make_shared<FakeController>();
  std::shared_ptr<FakeOpener> opener_ = std::make_shared<FakeOpener>(controller_);
};

TEST_F(Coalescing, PollEnablesCoalescingAndRestorePutsItBack) {
  CoalescingLever lever = Make();
  EXPECT_EQ(lever.Scope(), LeverScope::kVector);
  auto on = lever.Apply(Queue1(), ReapMode::kPoll);
  ASSERT_TRUE(on) << on.error().ToString();
  EXPECT_EQ(opener_->opened, std::vector<std::string>{"/dev/nvme0"});
  ASSERT_EQ(controller_->commands.size(), 3u);
  EXPECT_EQ(controller_->commands[0].opcode, kOpcodeGetFeatures);
  EXPECT_EQ(controller_->commands[0].cdw10, 0x08u);
  EXPECT_EQ(controller_->commands[1].opcode, kOpcodeGetFeatures);
  EXPECT_EQ(controller_->commands[1].cdw10, 0x09u);
  EXPECT_EQ(controller_->commands[1].cdw11, 1u) << "Get Features 09h names the vector";
  EXPECT_EQ(controller_->commands[2].opcode, kOpcodeSetFeatures);
  EXPECT_EQ(controller_->commands[2].cdw10, 0x08u) << "no SV bit";
  EXPECT_EQ(controller_->commands[2].cdw11, 0x0107u);
  EXPECT_EQ(controller_->commands[2].timeout_ms, 5000u);
  EXPECT_EQ(on->writes, (Writes{{"/dev/nvme0 feature 08h", "0x00000107", true}}));
  EXPECT_EQ(on->restore.steps,
            (Steps{{"/dev/nvme0 feature 08h", "0x00000000"}, {"/dev/nvme0 feature 09h vector 1", "0x00000001"}}));

  auto off = lever.Apply(Queue1(), ReapMode::kInterrupt);
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_EQ(off->writes, (Writes{{"/dev/nvme0 feature 09h vector 1", "0x00010001", true}}));
  EXPECT_TRUE(controller_->disabled[1]);
  EXPECT_EQ(controller_->coalescing, 0x0107u) << "interrupt mode leaves the controller-wide setting";

  auto back = lever.Apply(Queue1(), ReapMode::kPoll);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->writes, (Writes{{"/dev/nvme0 feature 09h vector 1", "0x00000001", true}}));
  EXPECT_EQ(back->restore, on->restore) << "restore points keep the first values found";

  auto restored = lever.Restore(on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(controller_->coalescing, 0u);
  EXPECT_FALSE(controller_->disabled[1]);
  EXPECT_EQ(*restored, (Writes{{"/dev/nvme0 feature 08h", "0x00000000", true}}))
      << "the vector is coalescing again since the last poll: only 08h differs";
}

TEST_F(Coalescing, FeatureNotChangeableIsRefused) {
  controller_->fail[{kOpcodeSetFeatures, kFidInterruptCoalescing}] = 0x410e;
  CoalescingLever lever = Make();
  auto result = lever.Apply(Queue1(), ReapMode::kPoll);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kRefused);
  EXPECT_EQ(LeverOf(result.error()), LeverKind::kCoalescing);
  EXPECT_EQ(result.error().object, "/dev/nvme0");
  EXPECT_EQ(result.error().nvme_status, 0x410e);
  EXPECT_EQ(result.error().sys_errno, 0);
  EXPECT_EQ(result.error().message,
            "/dev/nvme0 Set Features 08h: Feature Not Changeable (SCT 1h, SC 0Eh, DNR) [0x410e]");
  EXPECT_EQ(result.error().ToString(), "coalescing: refused: " + result.error().message);
}

TEST_F(Coalescing, RestoreSetsOnlyWhatDiffers) {
  CoalescingLever lever = Make();
  auto on = lever.Apply(Queue1(), ReapMode::kPoll);  // changes 08h only: the vector was already coalescing
  ASSERT_TRUE(on) << on.error().ToString();
  controller_->commands.clear();
  auto restored = lever.Restore(on->restore);
  ASSERT_TRUE(restored) << restored.error().ToString();
  EXPECT_EQ(*restored, (Writes{{"/dev/nvme0 feature 08h", "0x00000000", true}}));
  EXPECT_EQ(controller_->coalescing, 0u);
  int sets = 0;
  for (const auto& cmd : controller_->commands) sets += cmd.opcode == kOpcodeSetFeatures;
  EXPECT_EQ(sets, 1) << "09h vector 1 was never changed: not set again";
}

TEST_F(Coalescing, RestoreAfterARefusedApplyWritesNothing) {
  // QEMU: the daemon journals the restore point (Preview), Apply is refused before any write, and the
  // journal's restore at shutdown must not ask the device to set what it never changed (it refuses that too).
  controller_->fail[{kOpcodeSetFeatures, kFidInterruptCoalescing}] = 0x410e;
  CoalescingLever lever = Make();
  auto preview = lever.Preview(Queue1(), ReapMode::kPoll);
  ASSERT_TRUE(preview) << preview.error().ToString();
  ASSERT_FALSE(lever.Apply(Queue1(), ReapMode::kPoll));
  CoalescingLever after_restart = Make();
  for (CoalescingLever* restoring : {&lever, &after_restart}) {
    controller_->commands.clear();
    auto restored = restoring->Restore(preview->restore);
    ASSERT_TRUE(restored) << restored.error().ToString();
    EXPECT_TRUE(restored->empty());
    for (const auto& cmd : controller_->commands) EXPECT_EQ(cmd.opcode, kOpcodeGetFeatures);
  }
}

TEST_F(Coalescing, OtherStatusesAndErrnos) {
  struct Case {
    uint8_t opcode;
    uint8_t fid;
    int ret;
    ErrorCode code;
    int sys_errno;
    const char* text;
  };
  for (const Case& c : {
           Case{kOpcodeGetFeatures, kFidInterruptVectorConfig, 0x4002, ErrorCode::kUnsupported, 0,
                "Get Features 09h: Invalid Field in Command"},
           Case{kOpcodeGetFeatures, kFidInterruptCoalescing, 0x0371, ErrorCode::kUnavailable, 0, "SCT 3h"},
           Case{kOpcodeGetFeatures, kFidInterruptCoalescing, -EACCES, ErrorCode::kPermissionDenied, EACCES,
                "Permission denied"},
           Case{kOpcodeGetFeatures, kFidInterruptCoalescing, -ENOTTY, ErrorCode::kUnsupported, ENOTTY,
                "Inappropriate ioctl"},
           Case{kOpcodeSetFeatures, kFidInterruptCoalescing, -EINTR, ErrorCode::kUnavailable, EINTR,
                "Set Features 08h on /dev/nvme0: Interrupted"},
           Case{kOpcodeSetFeatures, kFidInterruptCoalescing, -EIO, ErrorCode::kIo, EIO, "Input/output error"},
       }) {
    SCOPED_TRACE(c.text);
    controller_ = std::make_shared<FakeController>();
    opener_ = std::make_shared<FakeOpener>(controller_);
    controller_->fail[{c.opcode, c.fid}] = c.ret;
    CoalescingLever lever = Make();
    auto result = lever.Apply(Queue1(), ReapMode::kPoll);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, c.code);
    EXPECT_EQ(result.error().sys_errno, c.sys_errno);
    EXPECT_EQ(result.error().nvme_status, c.ret > 0 ? c.ret : 0);
    EXPECT_EQ(result.error().object, "/dev/nvme0");
    EXPECT_NE(result.error().message.find(c.text), std::string::npos) << result.error().message;
  }
}

TEST_F(Coalescing, QueuesWithoutAVectorOfTheirOwn) {
  CoalescingLever lever = Make();
  LeverTarget poll = Queue1();
  poll.vector.reset();
  auto none = lever.Apply(poll, ReapMode::kPoll);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kUnsupported);
  LeverTarget shared = Queue1();
  shared.vector = 0;
  EXPECT_EQ(lever.Apply(shared, ReapMode::kPoll).error().code, ErrorCode::kUnsupported);
  EXPECT_TRUE(controller_->commands.empty());
}

TEST_F(Coalescing, DryRunReadsButSetsNothing) {
  CoalescingLever lever = Make(/*dry_run=*/true);
  auto on = lever.Apply(Queue1(), ReapMode::kPoll);
  ASSERT_TRUE(on);
  EXPECT_EQ(on->writes, (Writes{{"/dev/nvme0 feature 08h", "0x00000107", false}}));
  for (const auto& cmd : controller_->commands) EXPECT_EQ(cmd.opcode, kOpcodeGetFeatures);
  EXPECT_EQ(controller_->coalescing, 0u);
}

TEST(CoalescingDevice, MissingDeviceAndNotAnNvmeDevice) {
  nvmeadapt::testing::TempDir dev;
  CoalescingLever lever({dev.path(), 8, 100, 5000, false, SystemAdminDeviceOpener()});
  auto missing = lever.Apply(Queue1(), ReapMode::kPoll);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().object, dev / "nvme0");

  nvmeadapt::testing::WriteFile(dev / "nvme0", "a regular file, not a character device\n");
  auto not_nvme = lever.Apply(Queue1(), ReapMode::kPoll);  // the real ioctl answers ENOTTY
  ASSERT_FALSE(not_nvme);
  EXPECT_EQ(not_nvme.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(not_nvme.error().sys_errno, ENOTTY);
}

TEST(CoalescingRestore, BadRestorePointsAreRefused) {
  auto controller = std::make_shared<FakeController>();
  CoalescingLever lever({"/dev", 8, 100, 5000, false, std::make_shared<FakeOpener>(controller)});
  auto bad_value = lever.Restore({LeverKind::kCoalescing, Queue1(), {{"/dev/nvme0 feature 08h", "seven"}}});
  ASSERT_FALSE(bad_value);
  EXPECT_EQ(bad_value.error().code, ErrorCode::kIo);
  auto other_vector = lever.Restore({LeverKind::kCoalescing, Queue1(), {{"/dev/nvme0 feature 09h vector 2", "0x0"}}});
  ASSERT_FALSE(other_vector);
  EXPECT_TRUE(controller->commands.empty());
}

}  // namespace
}  // namespace nvmeadapt::actuate
