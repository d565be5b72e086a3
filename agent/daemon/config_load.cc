// SPDX-License-Identifier: Apache-2.0
#include "agent/daemon/config_load.h"

#include "agent/actuate/resolver.h"
#include "agent/api/api_config.h"
#include "agent/config/config_file.h"
#include "agent/config/levers_config.h"
#include "agent/config/policy_convert.h"
#include "agent/config/proto_enums.h"
#include "agent/daemon/policy_book.h"
#include "agent/metrics/metrics_options.h"

namespace nvmeadapt::daemon {
namespace {

// What ParseConfigJson leaves to the parts that own a section: the lever choices, the metrics and api sections,
// and the policy book (profiles expanded, the agent's floors), which a start would otherwise refuse only once
// the journal is restored and the collector open.
Status CheckSections(const v1::Config& config, bool metrics_on) {
  NA_ASSIGN_OR_RETURN(const config::LeverSettings levers, config::LeverSettingsFromConfig(config));
  NA_RETURN_IF_ERROR(actuate::CheckLeverChoices(levers));
  if (metrics_on) NA_RETURN_IF_ERROR(metrics::MetricsOptionsFromConfig(config.metrics()));
  NA_RETURN_IF_ERROR(api::ResolveApiConfig(config.api()));
  NA_RETURN_IF_ERROR(PolicyBook::Create(config::PoliciesOf(config)));
  return OkStatus();
}

}  // namespace

Result<v1::Config> LoadDaemonConfig(const DaemonFlags& flags) {
  v1::Config config;
  auto loaded = config::LoadConfigFile(flags.config_path);
  if (loaded) {
    config = std::move(*loaded);
  } else if (flags.config_explicit || loaded.error().code != ErrorCode::kNotFound) {
    return loaded.error();
  }
  if (flags.state_dir) config.set_state_dir(*flags.state_dir);
  if (flags.runtime_dir) config.set_runtime_dir(*flags.runtime_dir);
  if (flags.log_level) config.set_log_level(*flags.log_level);
  if (flags.default_mode) config.mutable_policy()->set_mode(config::ToProto(*flags.default_mode));
  if (config.state_dir().empty()) config.set_state_dir("/var/lib/nvme-adapt");
  if (config.runtime_dir().empty()) config.set_runtime_dir("/run");
  if (flags.metrics_listen) config.mutable_metrics()->set_listen_address(*flags.metrics_listen);
  if (flags.api_socket) config.mutable_api()->set_unix_socket(*flags.api_socket);
  if (flags.cpu_scheduling) config.set_cpu_scheduling(*flags.cpu_scheduling);
  if (config.cpu_scheduling().empty()) config.set_cpu_scheduling("batch");
  NA_RETURN_IF_ERROR(config::ValidateConfig(config));
  NA_RETURN_IF_ERROR(CheckSections(config, !flags.metrics_listen || *flags.metrics_listen != "off"));
  return config;
}

Status CheckConfigFile(const std::string& path) {
  NA_ASSIGN_OR_RETURN(const v1::Config config, config::LoadConfigFile(path));
  if (Status sections = CheckSections(config, /*metrics_on=*/true); !sections) {
    return MakeError(sections.error().code, path + ": config: " + sections.error().message);
  }
  return OkStatus();
}

}  // namespace nvmeadapt::daemon
