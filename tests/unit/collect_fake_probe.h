// SPDX-License-Identifier: Apache-2.0
// A FeatureProbe whose answers a test sets: by default a kernel like Debian 6.1 with the nvme modules
// (module BTF, tp_btf and fentry all attachable).
#pragma once

#include <set>
#include <string>

#include "agent/collect/feature_probe.h"

namespace nvmeadapt::collect {

class FakeFeatureProbe final : public FeatureProbe {
 public:
  Status usable = OkStatus();
  std::set<std::string> module_btf = {"nvme", "nvme_core"};
  std::set<std::string> tp_btf = {"block_rq_complete", "irq_handler_entry", "nvme_core:nvme_sq"};
  std::set<std::string> fentry = {"nvme:nvme_irq", "nvme:nvme_poll"};
  std::set<std::string> structs = {"nvme_core:nvme_request"};
  std::optional<TracepointLayout> nvme_sq = TracepointLayout{{{"ctrl_id", 8}, {"disk", 12}, {"qid", 44}}};
  BinaryHooks binary;

  // Removes a module's BTF and everything found only through it, as on a kernel without
  // CONFIG_DEBUG_INFO_BTF_MODULES.
  void DropModuleBtf(const std::string& module) {
    module_btf.erase(module);
    for (auto* set : {&tp_btf, &fentry, &structs}) {
      for (auto it = set->begin(); it != set->end();) it = it->starts_with(module + ":") ? set->erase(it) : std::next(it);
    }
  }

  Status BpfUsable() override { return usable; }
  bool ModuleBtf(std::string_view module) override { return module_btf.contains(std::string(module)); }
  bool TpBtfAttachable(std::string_view module, std::string_view event) override { return Has(tp_btf, module, event); }
  bool FentryAttachable(std::string_view module, std::string_view function) override {
    return Has(fentry, module, function);
  }
  bool BtfHasStruct(std::string_view module, std::string_view name) override { return Has(structs, module, name); }
  std::optional<TracepointLayout> Tracepoint(std::string_view category, std::string_view event) override {
    if (category == "nvme" && event == "nvme_sq") return nvme_sq;
    return std::nullopt;
  }
  Result<BinaryHooks> ProbeBinary(const CheckedBinary&) override { return binary; }

 private:
  static bool Has(const std::set<std::string>& set, std::string_view module, std::string_view name) {
    return set.contains(std::string(name)) || set.contains(std::string(module) + ":" + std::string(name));
  }
};

}  // namespace nvmeadapt::collect
