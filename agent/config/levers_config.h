// SPDX-License-Identifier: Apache-2.0
// The `levers` section of the config (config.proto LeversConfig) as plain settings with the defaults applied,
// and its validation: a bad value is refused with the field named ("levers.coalescing_time_us: ..."). A lever
// named for a controller it cannot serve is the levers' to refuse (agent/actuate/resolver.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/config/proto_enums.h"
#include "common/result.h"
#include "common/vocabulary.h"
#include "nvmeadapt/v1/config.pb.h"

namespace nvmeadapt::config {

struct ControllerLeverSetting {
  std::string controller;
  std::optional<LeverKind> lever;  // nullopt: AUTO, the default of the controller's source
  // The connection's digests as the operator declares them (hdr_digest, data_digest): the reconnect lever's
  // source beside nvme-cli's config, since the kernel shows neither. Both or neither.
  std::optional<bool> hdr_digest;
  std::optional<bool> data_digest;
  Source source = Source::kKernelNvme;  // whose controller the name is: nvmeN the kernel's, uvnvme:PID:CTRL uvnvme's
};

// Which lever may serve which controller is the levers' to say (agent/actuate/resolver.h, CheckLeverChoices).
struct LeverSettings {
  std::optional<LeverKind> kernel_lever;  // nullopt: AUTO
  std::optional<LeverKind> uvnvme_lever;
  std::vector<ControllerLeverSetting> controllers;
  std::string adaptive_poll_path_template = "{sysfs}/class/nvme/{ctrl}/adaptive_poll";
  std::string adaptive_poll_on_value = "1";
  std::string adaptive_poll_off_value = "0";
  uint32_t gsim_delay_us = 100;
  uint32_t coalescing_threshold = 8;
  uint32_t coalescing_time_us = 100;
  uint32_t poll_queues = 1;
  uint32_t admin_timeout_ms = 5000;
  uint32_t socket_timeout_ms = 2000;
  bool dry_run = false;
  std::string nvme_cli_config = "/etc/nvme/config.json";
};

// Validates config.levers and lays it over the defaults.
Result<LeverSettings> LeverSettingsFromConfig(const v1::Config& config);
Status ValidateLevers(const v1::Config& config);

// As FromProto(v1::LeverKind) (proto_enums.h), refusing a number this build does not know with the field named.
Result<LeverKind> FromProto(v1::LeverKind kind, std::string_view field_path);

}  // namespace nvmeadapt::config
