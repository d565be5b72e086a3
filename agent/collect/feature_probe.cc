// SPDX-License-Identifier: Apache-2.0
#include "agent/collect/feature_probe.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/log.h"

namespace nvmeadapt::collect {
namespace {

constexpr const char* kTracefsRoots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

// "return 0": enough for the kernel to check the program type, the attach target and the permission.
constexpr bpf_insn kReturnZero[] = {
    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
    {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
};

// The kernel BTF object of a module, for attach_btf_obj_fd; -1 if not found.
int ModuleBtfFd(std::string_view module) {
  for (uint32_t id = 0; bpf_btf_get_next_id(id, &id) == 0;) {
    const int fd = bpf_btf_get_fd_by_id(id);
    if (fd < 0) continue;
    char name[64] = {};
    bpf_btf_info info{};
    info.name = reinterpret_cast<uintptr_t>(name);
    info.name_len = sizeof name;
    uint32_t length = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &length) == 0 && info.kernel_btf && module == name) return fd;
    close(fd);
  }
  return -1;
}

Status TrialLoad() {
  const int prog = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "na_probe", "GPL", kReturnZero, 2, nullptr);
  if (prog < 0) {
    const int err = errno;
    if (err == EPERM || err == EACCES) {
      return MakeError(ErrorCode::kPermissionDenied,
                       std::string("BPF not permitted: loading a tracing program failed with ") + strerror(err) +
                           " (needs root, or CAP_BPF with CAP_PERFMON)");
    }
    return SysError("BPF unavailable: loading a trial tracing program", "", err);
  }
  close(prog);
  const int ring = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "na_probe", 0, 0, 4096, nullptr);
  if (ring < 0) {
    const int err = errno;
    if (err == EPERM || err == EACCES)
      return MakeError(ErrorCode::kPermissionDenied, "BPF not permitted: creating a ring buffer failed");
    return MakeError(ErrorCode::kUnsupported, std::string("BPF ring buffers unavailable (kernel 5.8 or later "
                                                          "needed): ") + strerror(err));
  }
  close(ring);
  return OkStatus();
}

bool HasTracefs(const std::filesystem::path& root) {
  std::error_code ec;
  return std::filesystem::exists(root / "events", ec);
}

// libbpf attaches classic tracepoints through tracefs; mount it where the kernel offers the mount point.
std::optional<std::filesystem::path> TracefsRoot() {
  for (const char* root : kTracefsRoots) {
    if (HasTracefs(root)) return std::filesystem::path(root);
  }
  std::error_code ec;
  if (std::filesystem::is_directory(kTracefsRoots[0], ec) &&
      mount("nodev", kTracefsRoots[0], "tracefs", 0, nullptr) == 0) {
    NA_INFO("collector: mounted tracefs at " << kTracefsRoots[0]);
    return std::filesystem::path(kTracefsRoots[0]);
  }
  return std::nullopt;
}

class SystemFeatureProbe final : public FeatureProbe {
 public:
  ~SystemFeatureProbe() override {
    for (auto& [name, btf] : modules_) btf__free(btf);
    btf__free(vmlinux_);
  }

  Status BpfUsable() override {
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
      return MakeError(ErrorCode::kUnsupported,
                       "no kernel BTF: /sys/kernel/btf/vmlinux is missing (kernel built without "
                       "CONFIG_DEBUG_INFO_BTF), so CO-RE programs cannot be relocated");
    }
    return TrialLoad();
  }

  bool ModuleBtf(std::string_view module) override {
    return access(("/sys/kernel/btf/" + std::string(module)).c_str(), F_OK) == 0;
  }

  bool TpBtfAttachable(std::string_view module, std::string_view event) override {
    return TrialTracing(BPF_TRACE_RAW_TP, module, "btf_trace_" + std::string(event), BTF_KIND_TYPEDEF);
  }
  bool FentryAttachable(std::string_view module, std::string_view function) override {
    return TrialTracing(BPF_TRACE_FENTRY, module, std::string(function), BTF_KIND_FUNC);
  }
  bool BtfHasStruct(std::string_view module, std::string_view name) override {
    return Find(module, name, BTF_KIND_STRUCT).has_value();
  }

  std::optional<TracepointLayout> Tracepoint(std::string_view category, std::string_view event) override {
    const auto root = TracefsRoot();
    if (!root) return std::nullopt;
    std::ifstream in(*root / "events" / std::string(category) / std::string(event) / "format");
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    return ParseTracepointFormat(text.str());
  }

  Result<BinaryHooks> ProbeBinary(const CheckedBinary& binary) override { return ReadBinaryHooks(binary); }

 private:
  btf* Vmlinux() {
    if (!vmlinux_loaded_) {
      vmlinux_loaded_ = true;
      vmlinux_ = btf__load_vmlinux_btf();
      if (libbpf_get_error(vmlinux_)) vmlinux_ = nullptr;
    }
    return vmlinux_;
  }

  btf* Module(std::string_view module) {
    const std::string name(module);
    if (auto it = modules_.find(name); it != modules_.end()) return it->second;
    btf* loaded = nullptr;
    if (Vmlinux() != nullptr && ModuleBtf(module)) loaded = btf__load_module_btf(name.c_str(), Vmlinux());
    if (libbpf_get_error(loaded)) loaded = nullptr;
    modules_[name] = loaded;
    return loaded;
  }

  struct BtfTarget {
    int type_id = 0;
    bool in_module = false;
  };

  // Looks in vmlinux (a built-in driver) and then in the module's split BTF.
  std::optional<BtfTarget> Find(std::string_view module, std::string_view name, int kind) {
    const std::string wanted(name);
    btf* base = Vmlinux();
    if (base == nullptr) return std::nullopt;
    if (int id = btf__find_by_name_kind(base, wanted.c_str(), kind); id >= 0) return BtfTarget{id, false};
    if (module.empty()) return std::nullopt;
    btf* split = Module(module);
    if (split == nullptr) return std::nullopt;
    if (int id = btf__find_by_name_kind(split, wanted.c_str(), kind); id >= 0) return BtfTarget{id, true};
    return std::nullopt;
  }

  // Loads a no-op tracing program against the target, as libbpf-tools does before choosing fentry or
  // tp_btf: the kernel's answer covers BTF, the attach point and the permission (some kernels refuse
  // fentry while they take tp_btf).
  bool TrialTracing(bpf_attach_type type, std::string_view module, const std::string& name, int kind) {
    const std::string cache_key = std::to_string(type) + ":" + std::string(module) + ":" + name;
    if (auto it = trials_.find(cache_key); it != trials_.end()) return it->second;
    bool loaded = false;
    if (auto target = Find(module, name, kind)) {
      const int object = target->in_module ? ModuleBtfFd(module) : 0;
      if (object >= 0) {
        LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = type,
                    .attach_btf_id = static_cast<__u32>(target->type_id),
                    .attach_btf_obj_fd = static_cast<__u32>(object));
        const int fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "na_probe", "GPL", kReturnZero, 2, &opts);
        loaded = fd >= 0;
        if (fd >= 0) close(fd);
        if (object > 0) close(object);
      }
    }
    trials_[cache_key] = loaded;
    return loaded;
  }

  bool vmlinux_loaded_ = false;
  btf* vmlinux_ = nullptr;
  std::map<std::string, btf*> modules_;
  std::map<std::string, bool> trials_;
};

}  // namespace

TracepointLayout ParseTracepointFormat(std::string_view text) {
  TracepointLayout layout;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t field = line.find("field:");
    const size_t semicolon = line.find(';', field == std::string_view::npos ? 0 : field);
    const size_t offset = line.find("offset:");
    if (field == std::string_view::npos || semicolon == std::string_view::npos || offset == std::string_view::npos)
      continue;
    // "field:unsigned int qid" or "field:char disk[32]": the name is the last word, without [..].
    std::string_view decl = line.substr(field + 6, semicolon - field - 6);
    decl = decl.substr(decl.find_last_of(' ') == std::string_view::npos ? 0 : decl.find_last_of(' ') + 1);
    decl = decl.substr(0, decl.find('['));
    uint32_t value = 0;
    bool digits = false;
    for (size_t i = offset + 7; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
      value = value * 10 + static_cast<uint32_t>(line[i] - '0');
      digits = true;
    }
    if (digits && !decl.empty()) layout.offsets.emplace(std::string(decl), value);
  }
  return layout;
}

std::unique_ptr<FeatureProbe> MakeSystemFeatureProbe() { return std::make_unique<SystemFeatureProbe>(); }

}  // namespace nvmeadapt::collect
