// SPDX-License-Identifier: Apache-2.0
// What a journal entry is checked against before it is replayed: the boot it was written in and the device its
// controller name named then. A name can come back as another device (a driver restarted under a reused pid,
// nvme0 after a hot swap) and every setting a lever changes is volatile: replaying blindly would write one
// device's safe value into another, or reset a controller for a setting that died with the last boot.
#pragma once

#include <sys/types.h>

#include <string>

namespace nvmeadapt::state {

struct IdentityRoots {
  std::string sysfs_root = "/sys";
  std::string procfs_root = "/proc";
};

// /proc/sys/kernel/random/boot_id; "" when unreadable (the boot rule is then not applied).
std::string ReadBootId(const std::string& procfs_root = "/proc");

// A kernel controller's identity. PCIe (or no transport attribute): "pci=0000:00:04.0 serial=S123", as every
// journal has it. A fabrics host: its connection, "tcp=traddr=10.0.0.2,trsvcid=4420 subsysnqn=nqn... serial=S"
// (the address without src_addr, the local end the kernel picked for this connect), which it keeps when it
// connects again under another name.
std::string KernelControllerIdentity(const std::string& transport, const std::string& address,
                                     const std::string& subsysnqn, const std::string& serial);
// The stable ID of a kernel controller, which policy entries, the API's controller_id and the metrics' controller
// label use: "nvme-" and 16 hex digits of a hash of what tells this controller from every other, so that it
// survives a reboot that renumbers (docs/operations.md, "Stable identity"). PCIe: its serial, subsystem NQN and
// controller ID (cntlid: the controllers of one NVM subsystem, a dual-port drive's ports, SR-IOV functions,
// share serial and NQN; the drive keeps all three in another slot). A fabrics host: its connection, as
// KernelControllerIdentity (its cntlid is handed out anew at each connect). The fields are hashed each after
// its length, so no two sets of fields run into one string. "" when the controller says neither serial nor
// NQN: its name is then its ID.
std::string StableControllerId(const std::string& transport, const std::string& address,
                               const std::string& subsysnqn, const std::string& serial, const std::string& cntlid);
// The ID versions before issue 45 gave (serial and NQN joined without lengths, no cntlid): policy entries and
// `id=` selectors written with it still match the controllers it named (every controller of the subsystem).
std::string LegacyStableControllerId(const std::string& transport, const std::string& address,
                                     const std::string& subsysnqn, const std::string& serial);

// "pid=1234 start=5678" (start: field 22 of /proc/PID/stat); "" when the process is gone.
std::string ProcessIdentity(const std::string& procfs_root, pid_t pid);

// The identity the controller name has now ("nvme0" from sysfs, "uvnvme:PID:N" from procfs); "" when no
// device answers to that name any more.
std::string CurrentIdentity(const std::string& controller, const IdentityRoots& roots);

// The identity the device a journal entry recorded (`recorded`, for `controller`) has now: the controller
// name's; for a fabrics host, whose identity is its connection, the one of any controller connected over it
// (after a crash the host may be back under another name); for a fabrics host journaled by a version that
// wrote "pci=<address> serial=..." for it, `recorded` when the name's controller matches that. "" when no
// device answers.
std::string IdentityNow(const std::string& controller, const std::string& recorded, const IdentityRoots& roots);

}  // namespace nvmeadapt::state
