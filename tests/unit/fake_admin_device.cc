// SPDX-License-Identifier: Apache-2.0
#include "tests/unit/fake_admin_device.h"

#include <dlfcn.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <mutex>

namespace nvmeadapt::testing {
namespace {

// The fds of open fake devices and their controllers.
std::mutex registry_mutex;
std::map<int, std::shared_ptr<FakeController>>& Registry() {
  static auto* registry = new std::map<int, std::shared_ptr<FakeController>>();
  return *registry;
}

std::shared_ptr<FakeController> ControllerOf(int fd) {
  std::lock_guard lock(registry_mutex);
  auto it = Registry().find(fd);
  return it == Registry().end() ? nullptr : it->second;
}

class FakeDevice final : public AdminDevice {
 public:
  FakeDevice(int fd, std::shared_ptr<FakeController> c) : AdminDevice(fd) {
    std::lock_guard lock(registry_mutex);
    Registry()[fd] = std::move(c);
  }
  ~FakeDevice() override {
    std::lock_guard lock(registry_mutex);
    Registry().erase(fd());  // before the base closes the fd, which a later open may get again
  }
};

}  // namespace

int FakeController::Answer(nvme_passthru_cmd* cmd) {
  commands.push_back(*cmd);
  const uint8_t fid = cmd->cdw10 & 0xff;
  if (auto it = fail.find({cmd->opcode, fid}); it != fail.end()) return it->second;
  const uint16_t iv = cmd->cdw11 & 0xffff;
  if (cmd->opcode == kOpcodeGetFeatures) {
    cmd->result = fid == kFidInterruptCoalescing ? coalescing : VectorConfigCdw11(iv, disabled[iv]);
  } else if (fid == kFidInterruptCoalescing) {
    coalescing = cmd->cdw11 & 0xffff;
  } else {
    disabled[iv] = (cmd->cdw11 & kCoalescingDisableBit) != 0;
  }
  return 0;
}

Result<std::unique_ptr<AdminDevice>> FakeOpener::Open(const std::string& path) {
  opened.push_back(path);
  const int fd = eventfd(0, EFD_CLOEXEC);
  if (fd < 0) return SysError("eventfd", path, errno);
  return std::unique_ptr<AdminDevice>(std::make_unique<FakeDevice>(fd, c_));
}

}  // namespace nvmeadapt::testing

// libnvme's calls reach the kernel through ioctl(2); the definition in the test program comes first in the
// lookup of libnvme's reference, so the fake devices answer here, as the kernel's NVMe driver would: the
// status (or -1 and errno) as the ioctl's return, Dword 0 in the command's result.
extern "C" int ioctl(int fd, unsigned long request, ...) __THROW {
  va_list args;
  va_start(args, request);
  void* argument = va_arg(args, void*);
  va_end(args);
  if (request == NVME_IOCTL_ADMIN_CMD) {
    if (auto controller = nvmeadapt::testing::ControllerOf(fd)) {
      const int answer = controller->Answer(static_cast<nvme_passthru_cmd*>(argument));
      if (answer >= 0) return answer;
      errno = -answer;
      return -1;
    }
  }
  using Ioctl = int (*)(int, unsigned long, ...);
  static const auto libc_ioctl = reinterpret_cast<Ioctl>(dlsym(RTLD_NEXT, "ioctl"));
  return libc_ioctl(fd, request, argument);
}
