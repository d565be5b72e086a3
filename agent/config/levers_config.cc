// SPDX-License-Identifier: Apache-2.0
#include "agent/config/levers_config.h"

#include <set>

namespace nvmeadapt::config {
namespace {

Error Refuse(const std::string& field, const std::string& why) {
  return MakeError(ErrorCode::kInvalidArgument, "levers." + field + ": " + why);
}

bool AllDigits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// Whose controller "nvme0" (the kernel's) or "uvnvme:PID:CTRL" (uvnvme's) is; nullopt for any other name.
std::optional<Source> ControllerSource(std::string_view name) {
  if (name.substr(0, 4) == "nvme" && AllDigits(name.substr(4))) return Source::kKernelNvme;
  if (name.substr(0, 7) == "uvnvme:") {
    const std::string_view rest = name.substr(7);
    const size_t colon = rest.find(':');
    if (colon != std::string_view::npos && AllDigits(rest.substr(0, colon)) && AllDigits(rest.substr(colon + 1))) {
      return Source::kUvnvme;
    }
  }
  return std::nullopt;
}

Status CheckRange(const std::string& field, uint32_t value, uint32_t low, uint32_t high) {
  if (value < low || value > high) {
    return Refuse(field, std::to_string(value) + " is outside " + std::to_string(low) + ".." + std::to_string(high));
  }
  return OkStatus();
}

Status CheckValue(const std::string& field, const std::string& value) {
  if (value.find_first_of("\n\r") != std::string::npos) return Refuse(field, "must be one line");
  return OkStatus();
}

// An attribute name: one path component of letters, digits and '_' (sysfs attribute names are).
bool IsAttributeName(std::string_view text) {
  return !text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                              std::string_view::npos;
}

// The adaptive-poll lever owns attributes of the controller and of its namespaces' queues, nothing else:
//   {sysfs}/class/nvme/{ctrl}/ATTR           {sysfs}/block/{ctrl}nN/queue/ATTR
// so whoever edits the config cannot point the root daemon's writes anywhere else under /sys.
Status CheckTemplate(const std::string& path_template) {
  const std::string field = "adaptive_poll_path_template";
  const std::string families = " (allowed: {sysfs}/class/nvme/{ctrl}/ATTR or {sysfs}/block/{ctrl}nN/queue/ATTR)";
  const std::string_view t = path_template;
  constexpr std::string_view kClass = "{sysfs}/class/nvme/{ctrl}/";
  constexpr std::string_view kBlock = "{sysfs}/block/{ctrl}n";
  constexpr std::string_view kQueue = "/queue/";
  if (t.find("..") != std::string_view::npos) return Refuse(field, "must not contain '..'" + families);
  if (t.starts_with(kClass) && IsAttributeName(t.substr(kClass.size()))) return OkStatus();
  if (t.starts_with(kBlock)) {
    const std::string_view rest = t.substr(kBlock.size());
    const size_t queue = rest.find(kQueue);
    if (queue != std::string_view::npos && AllDigits(rest.substr(0, queue)) &&
        IsAttributeName(rest.substr(queue + kQueue.size()))) {
      return OkStatus();
    }
  }
  return Refuse(field, "'" + path_template + "' is not an attribute the adaptive-poll lever owns" + families);
}

}  // namespace

Result<LeverKind> FromProto(v1::LeverKind kind, std::string_view field_path) {
  if (auto known = FromProto(kind)) return *known;
  return MakeError(ErrorCode::kInvalidArgument,
                   std::string(field_path) + ": unknown lever " + std::to_string(static_cast<int>(kind)));
}

namespace {

// The lever a field names, nullopt for AUTO.
Result<std::optional<LeverKind>> LeverNamed(v1::LeverKind kind, std::string_view field_path) {
  NA_ASSIGN_OR_RETURN(auto lever, FromProto(kind, field_path));
  return NamedLever(lever);
}

}  // namespace

namespace {

// levers.controllers: one lever per controller name, and the reconnect lever's digest declarations.
Status ControllersFromConfig(const v1::LeversConfig& in, LeverSettings& out) {
  std::set<std::string> seen;
  for (int i = 0; i < in.controllers_size(); ++i) {
    const auto& entry = in.controllers(i);
    const std::string field = "controllers[" + std::to_string(i) + "]";
    const std::optional<Source> source = ControllerSource(entry.controller());
    if (!source) {
      return Refuse(field + ".controller", "'" + entry.controller() + "' is neither nvmeN nor uvnvme:PID:CTRL");
    }
    if (!seen.insert(entry.controller()).second) return Refuse(field + ".controller", entry.controller() + " twice");
    NA_ASSIGN_OR_RETURN(auto lever, LeverNamed(entry.lever(), "levers." + field + ".lever"));
    if (entry.has_hdr_digest() != entry.has_data_digest()) {
      return Refuse(field + ".hdr_digest", "hdr_digest and data_digest are declared together or not at all");
    }
    ControllerLeverSetting setting{entry.controller(), lever, std::nullopt, std::nullopt, *source};
    if (entry.has_hdr_digest()) {
      setting.hdr_digest = entry.hdr_digest();
      setting.data_digest = entry.data_digest();
    }
    out.controllers.push_back(std::move(setting));
  }
  return OkStatus();
}

}  // namespace

Result<LeverSettings> LeverSettingsFromConfig(const v1::Config& config) {
  const v1::LeversConfig& in = config.levers();
  LeverSettings out;

  NA_ASSIGN_OR_RETURN(out.kernel_lever, LeverNamed(in.kernel_lever(), "levers.kernel_lever"));
  NA_ASSIGN_OR_RETURN(out.uvnvme_lever, LeverNamed(in.uvnvme_lever(), "levers.uvnvme_lever"));

  NA_RETURN_IF_ERROR(ControllersFromConfig(in, out));
  if (!in.nvme_cli_config().empty()) {
    if (in.nvme_cli_config().front() != '/') return Refuse("nvme_cli_config", "'" + in.nvme_cli_config() + "' is not an absolute path");
    out.nvme_cli_config = in.nvme_cli_config();
  }

  if (!in.adaptive_poll_path_template().empty()) out.adaptive_poll_path_template = in.adaptive_poll_path_template();
  NA_RETURN_IF_ERROR(CheckTemplate(out.adaptive_poll_path_template));
  if (!in.adaptive_poll_on_value().empty()) out.adaptive_poll_on_value = in.adaptive_poll_on_value();
  if (!in.adaptive_poll_off_value().empty()) out.adaptive_poll_off_value = in.adaptive_poll_off_value();
  NA_RETURN_IF_ERROR(CheckValue("adaptive_poll_on_value", out.adaptive_poll_on_value));
  NA_RETURN_IF_ERROR(CheckValue("adaptive_poll_off_value", out.adaptive_poll_off_value));
  if (out.adaptive_poll_on_value == out.adaptive_poll_off_value) {
    return Refuse("adaptive_poll_off_value", "equals adaptive_poll_on_value ('" + out.adaptive_poll_on_value + "')");
  }

  const struct {
    bool set;
    uint32_t value;
    uint32_t* target;
    const char* field;
    uint32_t low;
    uint32_t high;
  } numbers[] = {
      {in.has_gsim_delay_us(), in.gsim_delay_us(), &out.gsim_delay_us, "gsim_delay_us", 0, 500},
      {in.has_coalescing_threshold(), in.coalescing_threshold(), &out.coalescing_threshold, "coalescing_threshold", 2,
       256},
      {in.has_coalescing_time_us(), in.coalescing_time_us(), &out.coalescing_time_us, "coalescing_time_us", 100,
       25500},
      {in.has_poll_queues(), in.poll_queues(), &out.poll_queues, "poll_queues", 1, 1024},
      {in.has_admin_timeout_ms(), in.admin_timeout_ms(), &out.admin_timeout_ms, "admin_timeout_ms", 1, 600000},
      {in.has_socket_timeout_ms(), in.socket_timeout_ms(), &out.socket_timeout_ms, "socket_timeout_ms", 1, 60000},
  };
  for (const auto& n : numbers) {
    if (!n.set) continue;
    NA_RETURN_IF_ERROR(CheckRange(n.field, n.value, n.low, n.high));
    *n.target = n.value;
  }
  if (out.coalescing_time_us % 100 != 0) {
    return Refuse("coalescing_time_us", std::to_string(out.coalescing_time_us) + " is not a multiple of 100");
  }
  out.dry_run = in.dry_run();
  return out;
}

Status ValidateLevers(const v1::Config& config) {
  NA_RETURN_IF_ERROR(LeverSettingsFromConfig(config));
  return OkStatus();
}

}  // namespace nvmeadapt::config
