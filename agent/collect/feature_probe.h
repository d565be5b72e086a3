// SPDX-License-Identifier: Apache-2.0
// What the collector needs to know about the running kernel and a target binary before it chooses hooks.
// The system implementation asks the kernel (BTF, trial program loads, tracefs) and reads the binary's ELF
// notes (elf_hooks.h); unit tests fake it to exercise every selection path.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agent/collect/elf_hooks.h"
#include "common/result.h"

namespace nvmeadapt::collect {

// A classic tracepoint's entry layout, from tracefs events/<category>/<event>/format: field -> offset.
struct TracepointLayout {
  std::map<std::string, uint32_t, std::less<>> offsets;
};

class FeatureProbe {
 public:
  virtual ~FeatureProbe() = default;

  // Kernel BTF is there and this process may load tracing programs and ring buffers. The error says why
  // not (kUnsupported: no BTF or no BPF syscall; kPermissionDenied: EPERM/EACCES), in one line.
  virtual Status BpfUsable() = 0;
  // /sys/kernel/btf/<module> exists (module BTF, CONFIG_DEBUG_INFO_BTF_MODULES).
  virtual bool ModuleBtf(std::string_view module) = 0;
  // A trial tp_btf program against btf_trace_<event> (in vmlinux BTF, or in `module`'s) loads.
  virtual bool TpBtfAttachable(std::string_view module, std::string_view event) = 0;
  // A trial fentry program against `function` (in vmlinux BTF, or in `module`'s) loads.
  virtual bool FentryAttachable(std::string_view module, std::string_view function) = 0;
  // The struct is in vmlinux BTF or in `module`'s BTF (a CO-RE relocation target).
  virtual bool BtfHasStruct(std::string_view module, std::string_view name) = 0;
  // The classic tracepoint, if tracefs has it.
  virtual std::optional<TracepointLayout> Tracepoint(std::string_view category, std::string_view event) = 0;
  virtual Result<BinaryHooks> ProbeBinary(const CheckedBinary& binary) = 0;
};

std::unique_ptr<FeatureProbe> MakeSystemFeatureProbe();

// Parses a tracefs format file ("\tfield:int qid;\toffset:44;\tsize:4;\tsigned:1;").
TracepointLayout ParseTracepointFormat(std::string_view text);

}  // namespace nvmeadapt::collect
